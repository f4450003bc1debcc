package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/mount-utils"
)

// node publishes a volume by mounting its loop device at the target path. There is no staging step
// (no STAGE_UNSTAGE_VOLUME): a loop device costs nothing to set up per publish.
type node struct {
	csi.UnimplementedNodeServer
	d *driver
}

func (n *node) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{
		NodeId:             n.d.cfg.nodeID,
		AccessibleTopology: &csi.Topology{Segments: map[string]string{topologyKey: n.d.cfg.nodeID}},
	}, nil
}

func (n *node) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	capability := func(t csi.NodeServiceCapability_RPC_Type) *csi.NodeServiceCapability {
		return &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}}}
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{
		capability(csi.NodeServiceCapability_RPC_EXPAND_VOLUME),
		capability(csi.NodeServiceCapability_RPC_GET_VOLUME_STATS),
	}}, nil
}

func (n *node) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	d := n.d
	target := req.GetTargetPath()
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	case target == "":
		return nil, status.Error(codes.InvalidArgument, "target_path is required")
	case req.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "volume_capability is required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.mustLoad(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if _, err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}, v.FSType); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "target_path %s: %v", target, err)
	}
	if mounted, err := d.mounter.IsMountPoint(target); err != nil {
		return nil, status.Errorf(codes.Internal, "target_path %s: %v", target, err)
	} else if mounted {
		return &csi.NodePublishVolumeResponse{}, nil // published before (a retry)
	}

	file := d.backingFile(v.ID)
	dev, err := attach(file)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	mountedDevs, err := d.mountedDevices()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	// A volume is mounted at its full size: a filesystem that waits for a node expansion grows here.
	// ext4 grows before it is mounted (an offline resize2fs needs no privilege beyond the device);
	// xfs only grows mounted, so right after the mount below. Elsewhere the volume is already in use
	// (mounted for another target) and this is no longer "at mount".
	grow := v.FSBytes < v.CapacityBytes && !mountedDevs[dev]
	if grow && v.FSType == "ext4" {
		if err := growExt4Offline(dev); err != nil {
			d.detachUnused(file)
			return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
		}
		if err := d.grown(v); err != nil {
			return nil, err
		}
	}

	options := append([]string{}, req.GetVolumeCapability().GetMount().GetMountFlags()...)
	if req.GetReadonly() {
		options = append(options, "ro")
	}
	// Mounted for another target already (a second pod on this node, such as a copy pod): a bind
	// mount of that mount, read-only if asked (the kernel refuses a second mount of the same
	// device with other read-only flags), as drivers with a staging path do.
	if mountedDevs[dev] {
		from, err := d.mountPointOf(dev)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
		}
		if err := d.mounter.Mount(from, target, "", append([]string{"bind"}, options...)); err != nil {
			return nil, status.Errorf(codes.Internal, "volume %s: bind mount of %s: %v", v.ID, from, err)
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := d.mounter.Mount(dev, target, v.FSType, options); err != nil {
		d.detachUnused(file)
		return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	if grow && v.FSType == "xfs" && !req.GetReadonly() {
		if _, err := run("xfs_growfs", target); err != nil {
			log.Printf("volume %s: growing at mount: %v", v.ID, err)
		} else if err := d.grown(v); err != nil {
			return nil, err
		}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// mountPointOf is a path where the device is mounted.
func (d *driver) mountPointOf(dev string) (string, error) {
	mps, err := d.mounter.List()
	if err != nil {
		return "", err
	}
	for _, mp := range mps {
		if mp.Device == dev {
			return mp.Path, nil
		}
	}
	return "", fmt.Errorf("%s is not mounted", dev)
}

func (d *driver) grown(v *volume) error {
	v.FSBytes = v.CapacityBytes
	return d.save(v)
}

func growExt4Offline(dev string) error {
	// resize2fs refuses an unmounted filesystem that was not checked since it was last mounted.
	if _, err := run("e2fsck", "-f", "-p", dev); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() > 1 { // 1: errors corrected
			return err
		}
	}
	_, err := run("resize2fs", dev)
	return err
}

func (n *node) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	d := n.d
	target := req.GetTargetPath()
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	case target == "":
		return nil, status.Error(codes.InvalidArgument, "target_path is required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.mustLoad(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	// Unmounts target if it is a mount point and removes the folder (the CO made its parent only).
	if err := mount.CleanupMountPoint(target, d.mounter, true); err != nil {
		return nil, status.Errorf(codes.Internal, "target_path %s: %v", target, err)
	}
	// The last unmount frees the loop device.
	if _, err := d.detachUnused(d.backingFile(v.ID)); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// NodeExpandVolume grows the filesystem of a volume that is in use. In the expand-at-mount mode it
// refuses with FAILED_PRECONDITION, which is the CSI answer of a filesystem that cannot grow while
// published: kubelet then stops trying until the volume is mounted again, and the claim keeps its
// FileSystemResizePending condition until its pod restarts.
func (n *node) NodeExpandVolume(_ context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	d := n.d
	path := req.GetVolumePath()
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	case path == "":
		return nil, status.Error(codes.InvalidArgument, "volume_path is required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.mustLoad(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	dev, err := d.publishedDevice(v, path)
	if err != nil {
		return nil, err
	}
	if v.FSBytes >= v.CapacityBytes {
		// Grown when it was mounted, or nothing to grow.
		return &csi.NodeExpandVolumeResponse{CapacityBytes: v.CapacityBytes}, nil
	}
	if v.ExpandAtMount {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is in use, and this driver grows filesystems only when they are mounted: restart the pod that uses it", v.ID)
	}
	if _, err := run("losetup", "--set-capacity", dev); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	switch v.FSType {
	case "xfs":
		_, err = run("xfs_growfs", path)
	case "ext4":
		if _, err = run("resize2fs", dev); err != nil && strings.Contains(err.Error(), "Permission denied") {
			// The kernel grows a mounted ext4 only for a process with CAP_SYS_RESOURCE.
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s: ext4 cannot grow while mounted here (resize2fs needs CAP_SYS_RESOURCE); it grows when mounted again", v.ID)
		}
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	if err := d.grown(v); err != nil {
		return nil, err
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: v.CapacityBytes}, nil
}

// publishedDevice returns the volume's loop device when it is mounted at path.
func (d *driver) publishedDevice(v *volume, path string) (string, error) {
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return "", status.Errorf(codes.NotFound, "volume_path %s does not exist", path)
	}
	dev, refs, err := mount.GetDeviceNameFromMount(d.mounter, path)
	if err != nil {
		return "", status.Errorf(codes.Internal, "volume_path %s: %v", path, err)
	}
	devs, err := loops(d.backingFile(v.ID))
	if err != nil {
		return "", status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	if refs == 0 || !slices.Contains(devs, dev) {
		return "", status.Errorf(codes.NotFound, "volume %s is not published at %s", v.ID, path)
	}
	return dev, nil
}

func (n *node) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	d := n.d
	path := req.GetVolumePath()
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	case path == "":
		return nil, status.Error(codes.InvalidArgument, "volume_path is required")
	}
	d.mu.Lock()
	v, err := d.mustLoad(req.GetVolumeId())
	if err == nil {
		_, err = d.publishedDevice(v, path)
	}
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return nil, status.Errorf(codes.Internal, "volume_path %s: %v", path, err)
	}
	bsize := int64(st.Bsize)
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: int64(st.Blocks) * bsize, Available: int64(st.Bavail) * bsize,
			Used: int64(st.Blocks-st.Bfree) * bsize},
		{Unit: csi.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree), Used: int64(st.Files - st.Ffree)},
	}}, nil
}
