package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/mount-utils"
)

const mib = 1 << 20

// The smallest filesystem each mkfs makes: mkfs.xfs refuses less than 300 MiB. A smaller claim gets
// this much, and says so in its capacity, as a cloud disk rounded up to its provider's minimum does.
var minSize = map[string]int64{"xfs": 300 * mib, "ext4": 16 * mib}

// volume is one volume's metadata, kept next to its backing file.
type volume struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// CapacityBytes is the backing file's size: the volume's size as the controller made it.
	CapacityBytes int64 `json:"capacityBytes"`
	// FSBytes is the size the filesystem was made or last grown to; below CapacityBytes, the volume
	// waits for a node expansion.
	FSBytes       int64  `json:"fsBytes"`
	FSType        string `json:"fsType"`
	ExpandAtMount bool   `json:"expandAtMount"`
	// Zone is where the volume lives (empty without zones): only nodes of that zone reach it.
	Zone string `json:"zone,omitempty"`
	// Attached holds the nodes the volume is attached to (ControllerPublishVolume), each with
	// whether read-only. A single-node volume has at most one.
	Attached map[string]bool `json:"attached,omitempty"`
}

// nodeInfo is what a node part says of its node (STATE_DIR/nodes/NODE.json), for the controller.
type nodeInfo struct {
	ID   string `json:"id"`
	Zone string `json:"zone,omitempty"`
}

type driver struct {
	cfg        config
	volumesDir string
	nodesDir   string
	mounter    mount.Interface
	// One lock for every call, held across the processes that share the state directory (the
	// controller part and the node parts): the sidecars and kubelets may call at once, and a
	// volume's file, metadata, loop device and mounts must change together.
	mu       sync.Mutex
	lockFile *os.File
}

func newDriver(cfg config) (*driver, error) {
	dir, err := filepath.Abs(filepath.Join(cfg.stateDir, "volumes"))
	if err != nil {
		return nil, err
	}
	nodes := filepath.Join(filepath.Dir(dir), "nodes")
	for _, d := range []string{dir, nodes} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &driver{cfg: cfg, volumesDir: dir, nodesDir: nodes, mounter: mount.New(""), lockFile: f}, nil
}

func (d *driver) lock() {
	d.mu.Lock()
	for {
		err := unix.Flock(int(d.lockFile.Fd()), unix.LOCK_EX)
		if err == nil {
			return
		}
		if err != unix.EINTR {
			panic(fmt.Sprintf("locking %s: %v", d.lockFile.Name(), err))
		}
	}
}

func (d *driver) unlock() {
	unix.Flock(int(d.lockFile.Fd()), unix.LOCK_UN)
	d.mu.Unlock()
}

// register writes this node's entry of the node inventory.
func (d *driver) register() error {
	data, err := json.Marshal(nodeInfo{ID: d.cfg.nodeID, Zone: d.cfg.zone})
	if err != nil {
		return err
	}
	file := filepath.Join(d.nodesDir, d.cfg.nodeID+".json")
	if err := os.WriteFile(file+".tmp", data, 0o600); err != nil {
		return err
	}
	return os.Rename(file+".tmp", file)
}

var nodePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// node returns the node with this id from the inventory, or nil when no node part registered it.
func (d *driver) node(id string) (*nodeInfo, error) {
	if !nodePattern.MatchString(id) {
		return nil, nil
	}
	data, err := os.ReadFile(filepath.Join(d.nodesDir, id+".json"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reading node %s: %v", id, err)
	}
	var n nodeInfo
	if err := json.Unmarshal(data, &n); err != nil {
		return nil, status.Errorf(codes.Internal, "node %s: %v", id, err)
	}
	return &n, nil
}

// zones lists the zones of the registered nodes, sorted.
func (d *driver) zones() ([]string, error) {
	entries, err := os.ReadDir(d.nodesDir)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reading the nodes: %v", err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		n, err := d.node(id)
		if err != nil {
			return nil, err
		}
		if n != nil && n.Zone != "" {
			seen[n.Zone] = true
		}
	}
	var zones []string
	for z := range seen {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	return zones, nil
}

var idPattern = regexp.MustCompile(`^av-[0-9a-f]{20}$`)

// volumeID is derived from the volume's name, so that CreateVolume retried with the same name finds
// the same volume (the provisioner retries after timeouts).
func volumeID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "av-" + hex.EncodeToString(sum[:10])
}

func (d *driver) backingFile(id string) string { return filepath.Join(d.volumesDir, id+".img") }
func (d *driver) metaFile(id string) string    { return filepath.Join(d.volumesDir, id+".json") }

// load returns the volume with this id, or nil when there is none (an id not of this driver's form
// is none: it never reaches a path).
func (d *driver) load(id string) (*volume, error) {
	if !idPattern.MatchString(id) {
		return nil, nil
	}
	data, err := os.ReadFile(d.metaFile(id))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reading volume %s: %v", id, err)
	}
	var v volume
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", id, err)
	}
	return &v, nil
}

// mustLoad is load for calls on a volume that has to exist.
func (d *driver) mustLoad(id string) (*volume, error) {
	v, err := d.load(id)
	if err == nil && v == nil {
		err = status.Errorf(codes.NotFound, "volume %s does not exist", id)
	}
	return v, err
}

// save writes the metadata atomically (a crash leaves the old or the new file, never half of one).
func (d *driver) save(v *volume) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := d.metaFile(v.ID) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return status.Errorf(codes.Internal, "saving volume %s: %v", v.ID, err)
	}
	if err := os.Rename(tmp, d.metaFile(v.ID)); err != nil {
		return status.Errorf(codes.Internal, "saving volume %s: %v", v.ID, err)
	}
	return nil
}

func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func mkfs(fsType, file string) error {
	var err error
	switch fsType {
	case "xfs":
		_, err = run("mkfs.xfs", "-q", "-f", file)
	case "ext4":
		_, err = run("mkfs.ext4", "-F", "-q", file)
	}
	return err
}

// loops lists the loop devices backed by file.
func loops(file string) ([]string, error) {
	out, err := run("losetup", "--noheadings", "--output", "NAME", "--associated", file)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// attach returns the volume's loop device, making one if it has none. A volume has one loop device
// however many targets it is mounted at: one filesystem must never be mounted through two devices.
func attach(file string) (string, error) {
	devs, err := loops(file)
	if err != nil {
		return "", err
	}
	if len(devs) == 0 {
		out, err := run("losetup", "--find", "--show", file)
		return strings.TrimSpace(out), err
	}
	// The file may have grown since the device was made (ControllerExpandVolume): re-read its size.
	_, err = run("losetup", "--set-capacity", devs[0])
	return devs[0], err
}

// mountedDevices is the set of devices mounted anywhere.
func (d *driver) mountedDevices() (map[string]bool, error) {
	mps, err := d.mounter.List()
	if err != nil {
		return nil, err
	}
	in := map[string]bool{}
	for _, mp := range mps {
		in[mp.Device] = true
	}
	return in, nil
}

// detachUnused detaches the volume's loop devices that nothing mounts any more, and returns the
// devices still mounted.
func (d *driver) detachUnused(file string) ([]string, error) {
	devs, err := loops(file)
	if err != nil || len(devs) == 0 {
		return nil, err
	}
	mounted, err := d.mountedDevices()
	if err != nil {
		return nil, err
	}
	var busy []string
	for _, dev := range devs {
		if mounted[dev] {
			busy = append(busy, dev)
			continue
		}
		if _, err := run("losetup", "--detach", dev); err != nil {
			return nil, err
		}
	}
	return busy, nil
}

// waitDetached waits for the volume's loop devices to be gone: the kernel may defer a detach while
// the device is still being released, and a volume reported unstaged must be free to be attached
// to another node at once.
func waitDetached(file string) error {
	for i := 0; i < 100; i++ {
		if devs, err := loops(file); err != nil || len(devs) == 0 {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the loop devices of %s were detached but are still there after 10 s", file)
}
