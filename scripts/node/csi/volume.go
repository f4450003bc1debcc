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
	"strings"
	"sync"

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
}

type driver struct {
	cfg        config
	volumesDir string
	mounter    mount.Interface
	// One lock for every call: the sidecars and kubelet may call at once, and a volume's file, loop
	// device and mounts must change together. A one-node driver needs no finer locking.
	mu sync.Mutex
}

func newDriver(cfg config) *driver {
	dir, err := filepath.Abs(filepath.Join(cfg.stateDir, "volumes"))
	if err != nil {
		panic(err)
	}
	return &driver{cfg: cfg, volumesDir: dir, mounter: mount.New("")}
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
