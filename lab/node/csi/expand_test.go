package main

// The two expansion modes on real volumes (root, loop devices, xfs and ext4): what a pod's `df`
// shows after the controller grew a volume in use, and after its pod restarted. csi-sanity covers
// the rest of the CSI calls; it knows nothing of the expand-at-mount mode.

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestExpansion(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes loop devices and mounts")
	}
	for _, tc := range []struct {
		fsType        string
		expandAtMount bool
		// Whether the filesystem grows while mounted: ext4 needs CAP_SYS_RESOURCE to grow online.
		online bool
	}{
		{"xfs", false, true},
		{"xfs", true, false},
		{"ext4", true, false},
		{"ext4", false, hasCapSysResource()},
	} {
		name := tc.fsType
		if tc.expandAtMount {
			name += "/at-mount"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			d, err := newDriver(config{nodeID: "n1", stateDir: dir, defaultFSType: tc.fsType, expandAtMount: tc.expandAtMount, mode: "all"})
			if err != nil {
				t.Fatal(err)
			}
			c, n := &controller{d: d}, &node{d: d}
			capability := &csi.VolumeCapability{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
				AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			}
			created, err := c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{capability},
				CapacityRange: &csi.CapacityRange{RequiredBytes: 512 * mib}})
			if err != nil {
				t.Fatal(err)
			}
			id := created.Volume.VolumeId
			target := filepath.Join(dir, "pod", "mount")
			publish := func() {
				t.Helper()
				if _, err := n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: capability}); err != nil {
					t.Fatal(err)
				}
			}
			unpublish := func() {
				t.Helper()
				if _, err := n.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
					t.Fatal(err)
				}
			}
			publish()
			defer func() {
				n.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
				c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
			}()
			before := fsSize(t, target)
			if before > 512*mib || before < 400*mib {
				t.Fatalf("a 512 MiB volume has a %d MiB filesystem", before/mib)
			}

			expanded, err := c.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: id, CapacityRange: &csi.CapacityRange{RequiredBytes: 1024 * mib}})
			if err != nil {
				t.Fatal(err)
			}
			if expanded.CapacityBytes != 1024*mib || !expanded.NodeExpansionRequired {
				t.Fatalf("ControllerExpandVolume: %v", expanded)
			}
			_, err = n.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: id, VolumePath: target})
			if tc.online {
				if err != nil {
					t.Fatal(err)
				}
				if after := fsSize(t, target); after < before+400*mib {
					t.Fatalf("online expansion: %d MiB before, %d MiB after", before/mib, after/mib)
				}
				return
			}
			// In use: refused as CSI says for a filesystem that cannot grow while published, which
			// is what keeps kubelet from retrying until the volume is mounted again.
			if status.Code(err) != codes.FailedPrecondition {
				t.Fatalf("NodeExpandVolume in use: %v, want FailedPrecondition", err)
			}
			if after := fsSize(t, target); after != before {
				t.Fatalf("the filesystem changed while in use: %d MiB before, %d MiB after", before/mib, after/mib)
			}
			// The pod restarts: the filesystem grows when mounted, and the NodeExpandVolume that kubelet
			// sends after the mount finds nothing left to do.
			unpublish()
			publish()
			if after := fsSize(t, target); after < before+400*mib {
				t.Fatalf("expansion at mount: %d MiB before, %d MiB after", before/mib, after/mib)
			}
			if _, err := n.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: id, VolumePath: target}); err != nil {
				t.Fatalf("NodeExpandVolume after the mount: %v", err)
			}
		})
	}
}

// fsSize is the filesystem's size as df shows it.
func fsSize(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks) * int64(st.Bsize)
}

func hasCapSysResource() bool {
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[0].Effective&(1<<unix.CAP_SYS_RESOURCE) != 0
}
