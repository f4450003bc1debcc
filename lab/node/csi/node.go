package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/mount-utils"
)

// node publishes a volume by mounting its loop device at the target path. Without --attach-required
// there is no staging step (no STAGE_UNSTAGE_VOLUME): a loop device costs nothing to set up per
// publish. With it, as a cloud's block storage: NodeStageVolume makes the loop device (the disk
// appearing on the node once attached) and mounts it at the staging path, NodePublishVolume bind
// mounts that into each pod, and NodeUnstageVolume unmounts and detaches it.
type node struct {
	csi.UnimplementedNodeServer
	d *driver
}

func (n *node) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	cfg := n.d.cfg
	value := cfg.nodeID
	if cfg.zoned() {
		value = cfg.zone
	}
	return &csi.NodeGetInfoResponse{
		NodeId:             cfg.nodeID,
		AccessibleTopology: &csi.Topology{Segments: map[string]string{cfg.topologyKey(): value}},
	}, nil
}

func (n *node) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	capability := func(t csi.NodeServiceCapability_RPC_Type) *csi.NodeServiceCapability {
		return &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}}}
	}
	caps := []*csi.NodeServiceCapability{
		capability(csi.NodeServiceCapability_RPC_EXPAND_VOLUME),
		capability(csi.NodeServiceCapability_RPC_GET_VOLUME_STATS),
	}
	if n.d.cfg.attachRequired {
		caps = append(caps, capability(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME))
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

// NodeStageVolume mounts an attached volume at the staging path of this node.
func (n *node) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	d := n.d
	staging := req.GetStagingTargetPath()
	switch {
	case !d.cfg.attachRequired:
		return nil, status.Error(codes.Unimplemented, "this driver stages volumes only with --attach-required")
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	case staging == "":
		return nil, status.Error(codes.InvalidArgument, "staging_target_path is required")
	case req.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "volume_capability is required")
	}
	d.lock()
	defer d.unlock()
	v, err := d.mustLoad(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if err := checkAccess([]*csi.VolumeCapability{req.GetVolumeCapability()}, v); err != nil {
		return nil, err
	}
	// Attached to another node: the disk is not on this one. (Attached to none is let through:
	// kubelet stages only once its VolumeAttachment is attached, and csi-sanity's node specs stage
	// without a ControllerPublishVolume.)
	if _, ok := v.Attached[d.cfg.nodeID]; !ok && len(v.Attached) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is attached to node %s, not to node %s", v.ID, strings.Join(attachedNodes(v), ", "), d.cfg.nodeID)
	}
	if v.Block {
		// A raw block volume's staging is its device appearing on the node (the loop device);
		// each pod gets the device node itself (NodePublishVolume). Nothing is mounted.
		if _, err := attach(d.backingFile(v.ID)); err != nil {
			return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
		}
		return &csi.NodeStageVolumeResponse{}, nil
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "staging_target_path %s: %v", staging, err)
	}
	if mounted, err := d.mounter.IsMountPoint(staging); err != nil {
		return nil, status.Errorf(codes.Internal, "staging_target_path %s: %v", staging, err)
	} else if mounted {
		return &csi.NodeStageVolumeResponse{}, nil // staged before (a retry)
	}
	if err := d.mountDevice(v, staging, req.GetVolumeCapability().GetMount().GetMountFlags()); err != nil {
		return nil, err
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

// NodeUnstageVolume unmounts the staging path and detaches the loop device; it refuses while a pod
// of this node still has the volume published.
func (n *node) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	d := n.d
	staging := req.GetStagingTargetPath()
	switch {
	case !d.cfg.attachRequired:
		return nil, status.Error(codes.Unimplemented, "this driver stages volumes only with --attach-required")
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	case staging == "":
		return nil, status.Error(codes.InvalidArgument, "staging_target_path is required")
	}
	d.lock()
	defer d.unlock()
	v, err := d.mustLoad(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	file := d.backingFile(v.ID)
	devs, err := loops(file)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	mounts, err := deviceMounts("/proc/self/mountinfo")
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	for _, m := range mounts {
		if slices.Contains(devs, m.dev) && filepath.Clean(m.path) != filepath.Clean(staging) {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still published at %s: unpublish it first", v.ID, m.path)
		}
	}
	if err := mount.CleanupMountPoint(staging, d.mounter, true); err != nil {
		return nil, status.Errorf(codes.Internal, "staging_target_path %s: %v", staging, err)
	}
	if _, err := d.detachUnused(file); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	if err := waitDetached(file); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
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
	case d.cfg.attachRequired && req.GetStagingTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "staging_target_path is required: this driver stages volumes")
	}
	d.lock()
	defer d.unlock()
	v, err := d.mustLoad(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if err := checkAccess([]*csi.VolumeCapability{req.GetVolumeCapability()}, v); err != nil {
		return nil, err
	}
	if v.Block {
		if err := d.publishBlock(v, target, req.GetReadonly()); err != nil {
			return nil, err
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "target_path %s: %v", target, err)
	}
	if mounted, err := d.mounter.IsMountPoint(target); err != nil {
		return nil, status.Errorf(codes.Internal, "target_path %s: %v", target, err)
	} else if mounted {
		return &csi.NodePublishVolumeResponse{}, nil // published before (a retry)
	}

	options := append([]string{}, req.GetVolumeCapability().GetMount().GetMountFlags()...)
	if req.GetReadonly() {
		options = append(options, "ro")
	}
	if d.cfg.attachRequired {
		// Staged by NodeStageVolume: each pod gets a bind mount of the staging path.
		staging := req.GetStagingTargetPath()
		if mounted, err := d.mounter.IsMountPoint(staging); err != nil || !mounted {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s (NodeStageVolume first)", v.ID, staging)
		}
		if err := d.mounter.Mount(staging, target, "", append([]string{"bind"}, options...)); err != nil {
			return nil, status.Errorf(codes.Internal, "volume %s: bind mount of %s: %v", v.ID, staging, err)
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}

	// Mounted for another target already (a second pod on this node, such as a copy pod): a bind
	// mount of that mount, read-only if asked (the kernel refuses a second mount of the same
	// device with other read-only flags), as drivers with a staging path do.
	devs, err := loops(d.backingFile(v.ID))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	for _, dev := range devs {
		from, err := d.mountPointOf(dev)
		if err != nil {
			continue
		}
		if err := d.mounter.Mount(from, target, "", append([]string{"bind"}, options...)); err != nil {
			return nil, status.Errorf(codes.Internal, "volume %s: bind mount of %s: %v", v.ID, from, err)
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := d.mountDevice(v, target, options); err != nil {
		return nil, err
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// publishBlock publishes a raw block volume: its loop device node bind-mounted at target, a file
// (the CO makes its folder), as a cloud's driver publishes a disk's device.
func (d *driver) publishBlock(v *volume, target string, readonly bool) error {
	file := d.backingFile(v.ID)
	var dev string
	if d.cfg.attachRequired {
		devs, err := loops(file)
		if err != nil {
			return status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
		}
		if len(devs) == 0 {
			return status.Errorf(codes.FailedPrecondition, "volume %s is not staged on this node (NodeStageVolume first)", v.ID)
		}
		dev = devs[0]
	} else {
		var err error
		if dev, err = attach(file); err != nil {
			return status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
		}
	}
	mounts, err := deviceMounts("/proc/self/mountinfo")
	if err != nil {
		return status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	for _, m := range mounts {
		if filepath.Clean(m.path) != filepath.Clean(target) {
			continue
		}
		if m.dev != dev {
			return status.Errorf(codes.AlreadyExists, "target_path %s holds %s, not volume %s", target, m.dev, v.ID)
		}
		if m.ro != readonly {
			return status.Errorf(codes.AlreadyExists, "volume %s is published at %s with readonly=%v already", v.ID, target, m.ro)
		}
		return nil // published before (a retry)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return status.Errorf(codes.Internal, "target_path %s: %v", target, err)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o640)
	if err != nil {
		return status.Errorf(codes.Internal, "target_path %s: a raw block volume is published at a file: %v", target, err)
	}
	f.Close()
	options := []string{"bind"}
	if readonly {
		options = append(options, "ro")
	}
	if err := d.mounter.Mount(dev, target, "", options); err != nil {
		os.Remove(target)
		if !d.cfg.attachRequired {
			d.detachUnused(file)
		}
		return status.Errorf(codes.Internal, "volume %s: bind mount of %s: %v", v.ID, dev, err)
	}
	return nil
}

// mountDevice mounts the volume's loop device (made if it has none) at target, at its full size: a
// filesystem that waits for a node expansion grows here. ext4 grows before it is mounted (an
// offline resize2fs needs no privilege beyond the device); xfs only grows mounted, so right after
// the mount. The caller has made sure the volume is not mounted anywhere else.
func (d *driver) mountDevice(v *volume, target string, options []string) error {
	file := d.backingFile(v.ID)
	dev, err := attach(file)
	if err != nil {
		return status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	grow := v.FSBytes < v.CapacityBytes
	if grow && v.FSType == "ext4" {
		if err := growExt4Offline(dev); err != nil {
			d.detachUnused(file)
			return status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
		}
		if err := d.grown(v); err != nil {
			return err
		}
	}
	if v.FSType == "xfs" {
		// A clone or a restore has its source's XFS UUID, and XFS refuses to mount a UUID that is
		// mounted already (the source's, on this node): nouuid, as cloud drivers mount XFS.
		options = append(slices.Clip(options), "nouuid")
	}
	if err := d.mounter.Mount(dev, target, v.FSType, options); err != nil {
		d.detachUnused(file)
		return status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	if grow && v.FSType == "xfs" && !slices.Contains(options, "ro") {
		if _, err := run("xfs_growfs", target); err != nil {
			log.Printf("volume %s: growing at mount: %v", v.ID, err)
		} else if err := d.grown(v); err != nil {
			return err
		}
	}
	return nil
}

// mountPointOf is a path where the device is mounted.
func (d *driver) mountPointOf(dev string) (string, error) {
	mounts, err := deviceMounts("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	for _, m := range mounts {
		if m.dev == dev && !m.raw {
			return m.path, nil
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
	d.lock()
	defer d.unlock()
	v, err := d.mustLoad(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	// Unmounts target if it is a mount point and removes the folder (the CO made its parent only).
	if err := mount.CleanupMountPoint(target, d.mounter, true); err != nil {
		return nil, status.Errorf(codes.Internal, "target_path %s: %v", target, err)
	}
	// Without staging, the last unmount frees the loop device; with it, NodeUnstageVolume does.
	if !d.cfg.attachRequired {
		if _, err := d.detachUnused(d.backingFile(v.ID)); err != nil {
			return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
		}
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
	d.lock()
	defer d.unlock()
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
	if v.Block {
		// A raw block device grows when its loop device re-reads the file's size.
		if _, err := run("losetup", "--set-capacity", dev); err != nil {
			return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
		}
		if err := d.grown(v); err != nil {
			return nil, err
		}
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
	mounts, err := deviceMounts("/proc/self/mountinfo")
	if err != nil {
		return "", status.Errorf(codes.Internal, "volume_path %s: %v", path, err)
	}
	devs, err := loops(d.backingFile(v.ID))
	if err != nil {
		return "", status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		resolved = path
	}
	for _, m := range mounts {
		if filepath.Clean(m.path) == filepath.Clean(resolved) && slices.Contains(devs, m.dev) {
			return m.dev, nil
		}
	}
	return "", status.Errorf(codes.NotFound, "volume %s is not published at %s", v.ID, path)
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
	d.lock()
	v, err := d.mustLoad(req.GetVolumeId())
	if err == nil {
		_, err = d.publishedDevice(v, path)
	}
	d.unlock()
	if err != nil {
		return nil, err
	}
	if v.Block {
		// A raw block device: its size, what kubelet reports of a block volume.
		return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES, Total: v.CapacityBytes}}}, nil
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
