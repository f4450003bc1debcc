package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

// blockMinSize is the smallest raw block volume: a MiB, the unit of every size here.
const blockMinSize = mib

// volume is one volume's metadata, kept next to its backing file.
type volume struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// CapacityBytes is the backing file's size: the volume's size as the controller made it.
	CapacityBytes int64 `json:"capacityBytes"`
	// FSBytes is the size the filesystem was made or last grown to; below CapacityBytes, the volume
	// waits for a node expansion.
	FSBytes int64 `json:"fsBytes"`
	// FSType is the filesystem (xfs or ext4); empty for a raw block volume.
	FSType        string `json:"fsType"`
	Block         bool   `json:"block,omitempty"`
	ExpandAtMount bool   `json:"expandAtMount"`
	// SourceVolume or SourceSnapshot: what the volume was cloned or restored from, if anything.
	SourceVolume   string `json:"sourceVolume,omitempty"`
	SourceSnapshot string `json:"sourceSnapshot,omitempty"`
	// Zone is where the volume lives (empty without zones): only nodes of that zone reach it.
	Zone string `json:"zone,omitempty"`
	// Attached holds the nodes the volume is attached to (ControllerPublishVolume), each with
	// whether read-only. A single-node volume has at most one.
	Attached map[string]bool `json:"attached,omitempty"`
}

// mode says what a volume is: its filesystem, or a raw block device.
func (v *volume) mode() string {
	if v.Block {
		return "raw block"
	}
	return v.FSType
}

// snapshot is one snapshot's metadata, kept next to its file: a reflinked copy of the source
// volume's backing file, as it was when the snapshot was cut.
type snapshot struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	SourceVolume string `json:"sourceVolume"`
	// SizeBytes is the source's size when the snapshot was cut: a volume restored from it is at
	// least this big.
	SizeBytes int64  `json:"sizeBytes"`
	FSBytes   int64  `json:"fsBytes"`
	FSType    string `json:"fsType"`
	Block     bool   `json:"block,omitempty"`
	// CreatedAt in nanoseconds since the epoch (CSI's creation_time).
	CreatedAt int64 `json:"createdAt"`
	// Consistency says how the copy was taken (frozen filesystem, or crash-consistent and why).
	Consistency string `json:"consistency"`
}

// nodeInfo is what a node part says of its node (STATE_DIR/nodes/NODE.json), for the controller.
type nodeInfo struct {
	ID   string `json:"id"`
	Zone string `json:"zone,omitempty"`
	// PID is the node part's process: its mount table (/proc/PID/mountinfo) is the node's, where
	// the controller part finds a volume's filesystem to freeze it for a snapshot or a clone.
	PID int `json:"pid,omitempty"`
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
	data, err := json.Marshal(nodeInfo{ID: d.cfg.nodeID, Zone: d.cfg.zone, PID: os.Getpid()})
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

// nodes lists the registered nodes.
func (d *driver) nodes() ([]nodeInfo, error) {
	entries, err := os.ReadDir(d.nodesDir)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reading the nodes: %v", err)
	}
	var nodes []nodeInfo
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		n, err := d.node(id)
		if err != nil {
			return nil, err
		}
		if n != nil {
			nodes = append(nodes, *n)
		}
	}
	return nodes, nil
}

// zones lists the zones of the registered nodes, sorted.
func (d *driver) zones() ([]string, error) {
	nodes, err := d.nodes()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		if n.Zone != "" {
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

var (
	idPattern         = regexp.MustCompile(`^av-[0-9a-f]{20}$`)
	snapshotIDPattern = regexp.MustCompile(`^as-[0-9a-f]{20}$`)
)

// volumeID is derived from the volume's name, so that CreateVolume retried with the same name finds
// the same volume (the provisioner retries after timeouts).
func volumeID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "av-" + hex.EncodeToString(sum[:10])
}

// snapshotID is derived from the snapshot's name in the same way (CSI names volumes and snapshots
// apart: the same name may be both).
func snapshotID(name string) string {
	sum := sha256.Sum256([]byte("snapshot\x00" + name))
	return "as-" + hex.EncodeToString(sum[:10])
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

// loadSnapshot returns the snapshot with this id, or nil when there is none.
func (d *driver) loadSnapshot(id string) (*snapshot, error) {
	if !snapshotIDPattern.MatchString(id) {
		return nil, nil
	}
	data, err := os.ReadFile(d.metaFile(id))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reading snapshot %s: %v", id, err)
	}
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, status.Errorf(codes.Internal, "snapshot %s: %v", id, err)
	}
	return &s, nil
}

// snapshots lists every snapshot, sorted by id (the order ListSnapshots pages through).
func (d *driver) snapshots() ([]*snapshot, error) {
	entries, err := os.ReadDir(d.volumesDir)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reading the snapshots: %v", err)
	}
	var all []*snapshot
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !snapshotIDPattern.MatchString(id) {
			continue
		}
		s, err := d.loadSnapshot(id)
		if err != nil {
			return nil, err
		}
		if s != nil {
			all = append(all, s)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	return all, nil
}

// save writes the metadata atomically (a crash leaves the old or the new file, never half of one).
func (d *driver) save(v *volume) error { return d.writeMeta(v.ID, v) }

func (d *driver) saveSnapshot(s *snapshot) error { return d.writeMeta(s.ID, s) }

func (d *driver) writeMeta(id string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := d.metaFile(id) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return status.Errorf(codes.Internal, "saving %s: %v", id, err)
	}
	if err := os.Rename(tmp, d.metaFile(id)); err != nil {
		return status.Errorf(codes.Internal, "saving %s: %v", id, err)
	}
	return nil
}

// reflink makes dst a copy-on-write copy of src (the FICLONE ioctl): the two files share every
// block until one of them is written, so the copy costs the same for a 1 GiB and a 10 GiB volume.
// Only a filesystem with reflinks does it (XFS made with reflink=1, Btrfs): csi.sh puts the volumes
// on such an XFS. Anywhere else this fails rather than copy byte by byte, which would cost time in
// proportion to the size, the very thing a clone of a cloud disk does not.
func reflink(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	err = unix.IoctlFileClone(int(out.Fd()), int(in.Fd()))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY) {
			return fmt.Errorf("%s cannot be cloned copy-on-write (FICLONE: %w): the volumes' folder must be on a filesystem with reflinks, such as XFS made with mkfs.xfs -m reflink=1 (lab/node/csi.sh makes one)", src, err)
		}
		return fmt.Errorf("cloning %s: %w", src, err)
	}
	return nil
}

// devMount is a mount of a block device: a filesystem mounted from it, or (raw) the device node
// itself bind-mounted at a path, which is how a raw block volume is published.
type devMount struct {
	dev, path string
	raw, ro   bool
}

// deviceMounts lists the mounts of block devices in a mount table (/proc/self/mountinfo, or
// /proc/PID/mountinfo for another process's mount namespace).
func deviceMounts(mountinfo string) ([]devMount, error) {
	infos, err := mount.ParseMountInfo(mountinfo)
	if err != nil {
		return nil, err
	}
	var mounts []devMount
	for _, m := range infos {
		ro := slices.Contains(m.MountOptions, "ro")
		switch {
		case m.FsType == "devtmpfs" && m.Root != "/":
			mounts = append(mounts, devMount{dev: "/dev" + m.Root, path: m.MountPoint, raw: true, ro: ro})
		case strings.HasPrefix(m.Source, "/dev/"):
			mounts = append(mounts, devMount{dev: m.Source, path: m.MountPoint, ro: ro})
		}
	}
	return mounts, nil
}

// quiesce makes the volume's backing file hold what its users wrote, for a snapshot or a clone,
// and returns how consistent a copy taken now is and the function that lets the users go on.
// Every loop device of the volume is flushed (fsync: what a raw block user wrote reaches the
// file). A filesystem mounted read-write where this process sees it, in its own mount table or in
// a node part's (/proc/PID/root of a registered node part: the zones' nodes have mount namespaces
// of their own), is frozen (fsfreeze: its data and journal on the disk, new writes wait) until the
// copy is made: the copy is then a clean filesystem. Anything else (a raw block volume in use, or a
// filesystem mounted where no part of the driver sees it) is copied crash-consistent, as a cloud
// snapshots a disk in use: as if the machine had lost power at that moment.
func (d *driver) quiesce(v *volume) (consistency string, thaw func(), err error) {
	thaw = func() {}
	devs, err := loops(d.backingFile(v.ID))
	if err != nil {
		return "", thaw, err
	}
	if len(devs) == 0 {
		return "not in use", thaw, nil
	}
	for _, dev := range devs {
		f, err := os.Open(dev)
		if err != nil {
			return "", thaw, fmt.Errorf("flushing %s: %w", dev, err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return "", thaw, fmt.Errorf("flushing %s: %w", dev, err)
		}
	}
	if v.Block {
		return "crash-consistent (a raw block device in use: flushed, not frozen)", thaw, nil
	}
	// The mount tables to look in: this process's, and every registered node part's.
	roots := []string{""}
	tables := []string{"/proc/self/mountinfo"}
	nodes, err := d.nodes()
	if err != nil {
		return "", thaw, err
	}
	for _, n := range nodes {
		if n.PID > 0 && n.PID != os.Getpid() {
			roots = append(roots, fmt.Sprintf("/proc/%d/root", n.PID))
			tables = append(tables, fmt.Sprintf("/proc/%d/mountinfo", n.PID))
		}
	}
	for i, table := range tables {
		mounts, err := deviceMounts(table)
		if err != nil {
			continue // a node part that is gone
		}
		for _, m := range mounts {
			if m.raw || m.ro || !slices.Contains(devs, m.dev) {
				continue
			}
			path := roots[i] + m.path
			if _, err := run("fsfreeze", "--freeze", path); err != nil {
				log.Printf("volume %s: cannot freeze %s, copying it crash-consistent: %v", v.ID, path, err)
				return "crash-consistent (fsfreeze failed)", thaw, nil
			}
			return "frozen (fsfreeze " + m.path + ")", func() {
				if _, err := run("fsfreeze", "--unfreeze", path); err != nil {
					log.Printf("volume %s: UNFREEZING %s FAILED, its writers wait: %v", v.ID, path, err)
				}
			}, nil
		}
	}
	return "crash-consistent (in use where no part of this driver sees its mounts)", thaw, nil
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

// mountedDevices is the set of devices mounted anywhere in this mount table, as filesystems or
// (raw block volumes) as device nodes.
func (d *driver) mountedDevices() (map[string]bool, error) {
	mounts, err := deviceMounts("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	in := map[string]bool{}
	for _, m := range mounts {
		in[m.dev] = true
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
