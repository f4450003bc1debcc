package main

// Clones, snapshots and raw block volumes on real volumes (root, loop devices, an XFS with
// reflinks): a snapshot or a clone of a volume in use holds what was written before it and nothing
// after, a restore into a bigger volume grows its filesystem, a clone mounts beside its source
// (the same XFS UUID), and a raw block volume keeps its bytes through a snapshot.
// csi-sanity covers the calls' contract; this covers the data.

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
)

// reflinkPool makes STATE/volumes an XFS with reflinks on a sparse file of size bytes, as csi.sh
// does, and returns STATE.
func reflinkPool(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes loop devices and mounts")
	}
	state := t.TempDir()
	img, vol := filepath.Join(state, "pool.img"), filepath.Join(state, "volumes")
	if err := os.MkdirAll(vol, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"mkfs.xfs", "-q", "-m", "reflink=1", img}, {"mount", "-o", "loop,discard", img, vol}} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", vol).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", vol, err, out)
		}
	})
	return state
}

var (
	mountCap = &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	blockCap = &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
)

type harness struct {
	t   *testing.T
	ctx context.Context
	dir string
	c   *controller
	n   *node
}

func newHarness(t *testing.T, poolSize int64) *harness {
	state := reflinkPool(t, poolSize)
	d, err := newDriver(config{nodeID: "n1", stateDir: state, defaultFSType: "xfs", mode: "all"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.lockFile.Close() }) // before the pool is unmounted: it is a file of the pool
	return &harness{t: t, ctx: context.Background(), dir: state, c: &controller{d: d}, n: &node{d: d}}
}

func (h *harness) create(name string, size int64, capability *csi.VolumeCapability, source *csi.VolumeContentSource) string {
	h.t.Helper()
	r, err := h.c.CreateVolume(h.ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{capability},
		CapacityRange: &csi.CapacityRange{RequiredBytes: size}, VolumeContentSource: source})
	if err != nil {
		h.t.Fatalf("CreateVolume %s: %v", name, err)
	}
	id := r.Volume.VolumeId
	h.t.Cleanup(func() { h.c.DeleteVolume(h.ctx, &csi.DeleteVolumeRequest{VolumeId: id}) })
	return id
}

// publish publishes a volume at a fresh target and returns it (a folder, or a file for raw block).
func (h *harness) publish(id string, capability *csi.VolumeCapability) string {
	h.t.Helper()
	target := filepath.Join(h.dir, "pods", id+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if _, err := h.n.NodePublishVolume(h.ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: capability}); err != nil {
		h.t.Fatalf("NodePublishVolume %s: %v", id, err)
	}
	h.t.Cleanup(func() {
		h.n.NodeUnpublishVolume(h.ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
	})
	return target
}

func (h *harness) unpublish(id, target string) {
	h.t.Helper()
	if _, err := h.n.NodeUnpublishVolume(h.ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
		h.t.Fatalf("NodeUnpublishVolume %s: %v", id, err)
	}
}

func (h *harness) snapshot(name, volumeID string) string {
	h.t.Helper()
	r, err := h.c.CreateSnapshot(h.ctx, &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: volumeID})
	if err != nil {
		h.t.Fatalf("CreateSnapshot %s: %v", name, err)
	}
	id := r.Snapshot.SnapshotId
	h.t.Cleanup(func() { h.c.DeleteSnapshot(h.ctx, &csi.DeleteSnapshotRequest{SnapshotId: id}) })
	return id
}

func fromSnapshot(id string) *csi.VolumeContentSource {
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id}}}
}

func fromVolume(id string) *csi.VolumeContentSource {
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: id}}}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	// Written and not synced: a snapshot of a frozen filesystem must hold it all the same.
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestSnapshotsAndClonesOfAVolumeInUse(t *testing.T) {
	h := newHarness(t, 8<<30)
	src := h.create("pvc-src", 512*mib, mountCap, nil)
	mnt := h.publish(src, mountCap)
	writeFile(t, filepath.Join(mnt, "before"), "written before")

	snap := h.snapshot("snap-1", src)
	clone := h.create("pvc-clone", 512*mib, mountCap, fromVolume(src))
	writeFile(t, filepath.Join(mnt, "after"), "written after")

	// A restore bigger than its snapshot grows its filesystem when mounted; the clone mounts beside
	// its source, whose XFS UUID it shares.
	restored := h.create("pvc-restored", 1024*mib, mountCap, fromSnapshot(snap))
	for _, tc := range []struct{ name, id string }{{"restore", restored}, {"clone", clone}} {
		m := h.publish(tc.id, mountCap)
		if got := readFile(t, filepath.Join(m, "before")); got != "written before" {
			t.Errorf("%s: a file written before the copy reads %q", tc.name, got)
		}
		if got := readFile(t, filepath.Join(m, "after")); got != "<none>" {
			t.Errorf("%s: a file written after the copy is there: %q", tc.name, got)
		}
		// The copy is a volume of its own: writes do not reach the source.
		writeFile(t, filepath.Join(m, "mine"), tc.name)
	}
	if got := readFile(t, filepath.Join(mnt, "mine")); got != "<none>" {
		t.Errorf("a write to a copy reached its source: %q", got)
	}
	if size := fsSize(t, h.publishedPath(restored)); size < 900*mib {
		t.Errorf("a 1 GiB restore of a 512 MiB snapshot has a %d MiB filesystem", size/mib)
	}
	s, err := h.c.d.loadSnapshot(snap)
	if err != nil || s.Consistency != "frozen (fsfreeze "+mnt+")" {
		t.Errorf("a snapshot of a mounted volume: %+v, %v; want it frozen", s, err)
	}

	// A snapshot outlives its volume, and so does what was restored from it.
	h.unpublish(src, mnt)
	if _, err := h.c.DeleteVolume(h.ctx, &csi.DeleteVolumeRequest{VolumeId: src}); err != nil {
		t.Fatal(err)
	}
	again := h.create("pvc-again", 512*mib, mountCap, fromSnapshot(snap))
	if got := readFile(t, filepath.Join(h.publish(again, mountCap), "before")); got != "written before" {
		t.Errorf("a restore after the source was deleted reads %q", got)
	}
}

// publishedPath is where the harness published a volume last.
func (h *harness) publishedPath(id string) string {
	h.t.Helper()
	matches, _ := filepath.Glob(filepath.Join(h.dir, "pods", id+"-*"))
	if len(matches) == 0 {
		h.t.Fatalf("volume %s is not published", id)
	}
	return matches[len(matches)-1]
}

func TestRawBlockSnapshot(t *testing.T) {
	h := newHarness(t, 2<<30)
	src := h.create("pvc-block", 64*mib, blockCap, nil)
	dev := h.publish(src, blockCap)
	data := make([]byte, 4*mib)
	rand.Read(data)
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 8*mib); err != nil {
		t.Fatal(err)
	}
	f.Close() // not synced: the snapshot flushes the device
	snap := h.snapshot("snap-block", src)
	if _, err := h.c.CreateVolume(h.ctx, &csi.CreateVolumeRequest{Name: "pvc-wrong-mode", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
		VolumeContentSource: fromSnapshot(snap)}); err == nil {
		t.Error("a raw block snapshot restored as a filesystem")
	}
	restored := h.create("pvc-block-restored", 128*mib, blockCap, fromSnapshot(snap))
	got, err := os.ReadFile(h.publish(restored, blockCap))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 128*mib || !bytes.Equal(got[8*mib:12*mib], data) {
		t.Errorf("the restored device has %d bytes, the written ones equal: %v", len(got), bytes.Equal(got[8*mib:12*mib], data))
	}
}

// TestCloneTime measures a clone and a snapshot of a full 1 GiB and a full 10 GiB volume, mounted
// (frozen for the copy) and not: copy-on-write, they take the same time. It writes 11 GiB, so it
// runs only when asked: APPSTORAGE_CLONE_BENCH=1 go test -run TestCloneTime -v.
func TestCloneTime(t *testing.T) {
	if os.Getenv("APPSTORAGE_CLONE_BENCH") == "" {
		t.Skip("set APPSTORAGE_CLONE_BENCH=1 to measure (writes 11 GiB)")
	}
	h := newHarness(t, 40<<30)
	for _, gib := range []int64{1, 10} {
		name := strconv.FormatInt(gib, 10) + "gib"
		src := h.create("pvc-"+name, gib<<30, mountCap, nil)
		mnt := h.publish(src, mountCap)
		start := time.Now()
		// Fill the filesystem with data (not zeros, not sparse) to 80% of the volume (XFS
		// preallocates beyond what is written).
		f, err := os.Create(filepath.Join(mnt, "data"))
		if err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 8*mib)
		rand.Read(chunk)
		fill := gib << 30 * 8 / 10
		for written := int64(0); written < fill; written += int64(len(chunk)) {
			if _, err = f.Write(chunk); err != nil {
				break
			}
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d GiB volume: wrote %d MiB in %s", gib, fill/mib, time.Since(start).Round(time.Millisecond))
		// Right after the writes, the freeze writes back what the page cache still holds; after a
		// sync, and unmounted, only the copy is left.
		for i, state := range []string{"mounted, just written", "mounted, synced", "not mounted"} {
			switch i {
			case 1:
				unix.Sync()
			case 2:
				h.unpublish(src, mnt)
			}
			suffix := strconv.Itoa(i)
			start := time.Now()
			h.create("pvc-clone-"+name+"-"+suffix, gib<<30, mountCap, fromVolume(src))
			clone := time.Since(start)
			start = time.Now()
			h.snapshot("snap-"+name+"-"+suffix, src)
			snap := time.Since(start)
			t.Logf("%d GiB volume, %s: CreateVolume (clone) %s, then CreateSnapshot %s", gib, state, clone.Round(time.Microsecond), snap.Round(time.Microsecond))
		}
	}
}
