package main

import (
	"context"
	"os"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The size of a volume asked for without a size (CSI allows it; a claim always has one).
const defaultSize = 1 << 30

type controller struct {
	csi.UnimplementedControllerServer
	d *driver
}

func (c *controller) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	capability := func(t csi.ControllerServiceCapability_RPC_Type) *csi.ControllerServiceCapability {
		return &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
			Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}}
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{
		capability(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME),
		capability(csi.ControllerServiceCapability_RPC_EXPAND_VOLUME),
	}}, nil
}

func (c *controller) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	d := c.d
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	fsType, err := checkCapabilities(req.GetVolumeCapabilities(), d.cfg.defaultFSType)
	if err != nil {
		return nil, err
	}
	if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "this driver cannot create a volume from a snapshot or another volume")
	}
	expandAtMount := d.cfg.expandAtMount
	for k, v := range req.GetParameters() {
		switch {
		case strings.HasPrefix(k, "csi.storage.k8s.io/"): // the provisioner's own (--extra-create-metadata)
		case k == "expansion" && (v == "online" || v == "at-mount"):
			expandAtMount = v == "at-mount"
		case k == "expansion":
			return nil, status.Errorf(codes.InvalidArgument, "parameter expansion=%q: use online or at-mount", v)
		default:
			return nil, status.Errorf(codes.InvalidArgument, "unknown parameter %q (this driver knows expansion=online|at-mount)", k)
		}
	}
	if err := c.checkTopology(req.GetAccessibilityRequirements()); err != nil {
		return nil, err
	}
	size, err := sizeFor(req.GetCapacityRange(), fsType)
	if err != nil {
		return nil, err
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	id := volumeID(req.GetName())
	v, err := d.load(id)
	if err != nil {
		return nil, err
	}
	if v != nil {
		// Created before (a retry): the same volume if it still fits the request.
		if !fits(v.CapacityBytes, req.GetCapacityRange()) || v.FSType != fsType {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists with %d bytes of %s, which does not fit this request", req.GetName(), v.CapacityBytes, v.FSType)
		}
		return &csi.CreateVolumeResponse{Volume: c.csiVolume(v)}, nil
	}
	// The metadata is written last: a backing file without it is a creation that did not finish,
	// and is made again from scratch.
	file := d.backingFile(id)
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		err = f.Truncate(size) // sparse: takes the disk space the data takes
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = mkfs(fsType, file)
	}
	if err != nil {
		os.Remove(file)
		return nil, status.Errorf(codes.Internal, "creating volume %q: %v", req.GetName(), err)
	}
	v = &volume{ID: id, Name: req.GetName(), CapacityBytes: size, FSBytes: size, FSType: fsType, ExpandAtMount: expandAtMount}
	if err := d.save(v); err != nil {
		os.Remove(file)
		return nil, err
	}
	return &csi.CreateVolumeResponse{Volume: c.csiVolume(v)}, nil
}

func (c *controller) csiVolume(v *volume) *csi.Volume {
	return &csi.Volume{
		VolumeId:           v.ID,
		CapacityBytes:      v.CapacityBytes,
		AccessibleTopology: []*csi.Topology{{Segments: map[string]string{topologyKey: c.d.cfg.nodeID}}},
	}
}

// checkTopology refuses a volume that must be reachable from nodes other than this one.
func (c *controller) checkTopology(ar *csi.TopologyRequirement) error {
	if len(ar.GetRequisite()) == 0 {
		return nil
	}
	for _, t := range ar.GetRequisite() {
		if t.GetSegments()[topologyKey] == c.d.cfg.nodeID {
			return nil
		}
	}
	return status.Errorf(codes.ResourceExhausted, "this driver provisions on node %s only, which the requisite topology does not include", c.d.cfg.nodeID)
}

func (c *controller) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	d := c.d
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !idPattern.MatchString(id) {
		return &csi.DeleteVolumeResponse{}, nil // not one of ours, so already gone
	}
	busy, err := d.detachUnused(d.backingFile(id))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", id, err)
	}
	if len(busy) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still mounted (%s)", id, strings.Join(busy, ", "))
	}
	for _, f := range []string{d.backingFile(id), d.metaFile(id)} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return nil, status.Errorf(codes.Internal, "deleting volume %s: %v", id, err)
		}
	}
	return &csi.DeleteVolumeResponse{}, nil
}

// ControllerExpandVolume grows the backing file, also while it is mounted; the filesystem grows on
// the node (NodeExpandVolume, or NodePublishVolume in the expand-at-mount mode).
func (c *controller) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	d := c.d
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	if req.GetCapacityRange() == nil {
		return nil, status.Error(codes.InvalidArgument, "capacity_range is required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.mustLoad(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	size, err := sizeFor(req.GetCapacityRange(), v.FSType)
	if err != nil {
		return nil, err
	}
	// Never shrink: a smaller size than the volume has is already satisfied.
	if size > v.CapacityBytes {
		if err := os.Truncate(d.backingFile(v.ID), size); err != nil {
			return nil, status.Errorf(codes.Internal, "growing volume %s: %v", v.ID, err)
		}
		v.CapacityBytes = size
		if err := d.save(v); err != nil {
			return nil, err
		}
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: v.CapacityBytes, NodeExpansionRequired: v.FSBytes < v.CapacityBytes}, nil
}

func (c *controller) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	d := c.d
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume_capabilities are required")
	}
	d.mu.Lock()
	v, err := d.mustLoad(req.GetVolumeId())
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if fsType, err := checkCapabilities(req.GetVolumeCapabilities(), v.FSType); err != nil || fsType != v.FSType {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: "unsupported: this driver serves single-node mount volumes of the volume's own filesystem"}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters()}}, nil
}

// checkCapabilities accepts mount volumes on this one node, and returns the filesystem they ask for.
func checkCapabilities(caps []*csi.VolumeCapability, defaultFSType string) (string, error) {
	if len(caps) == 0 {
		return "", status.Error(codes.InvalidArgument, "volume_capabilities are required")
	}
	fsType := ""
	for _, c := range caps {
		if c.GetBlock() != nil {
			return "", status.Error(codes.InvalidArgument, "raw block volumes are not supported: ask for a mount volume")
		}
		if c.GetMount() == nil {
			return "", status.Error(codes.InvalidArgument, "a volume capability needs an access type (mount)")
		}
		switch c.GetAccessMode().GetMode() {
		case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		default:
			return "", status.Errorf(codes.InvalidArgument, "access mode %s is not supported: this driver serves one node", c.GetAccessMode().GetMode())
		}
		if t := c.GetMount().GetFsType(); t != "" {
			if _, ok := minSize[t]; !ok {
				return "", status.Errorf(codes.InvalidArgument, "filesystem %q is not supported: use xfs or ext4", t)
			}
			if fsType != "" && fsType != t {
				return "", status.Error(codes.InvalidArgument, "the volume capabilities ask for two filesystems")
			}
			fsType = t
		}
	}
	if fsType == "" {
		fsType = defaultFSType
	}
	return fsType, nil
}

// sizeFor is the size of a volume for a capacity range: the required bytes rounded up to a MiB,
// and at least the filesystem's minimum.
func sizeFor(r *csi.CapacityRange, fsType string) (int64, error) {
	required, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if required < 0 || limit < 0 || (limit > 0 && required > limit) {
		return 0, status.Errorf(codes.InvalidArgument, "capacity range [%d, %d] is invalid", required, limit)
	}
	size := (required + mib - 1) / mib * mib
	if required == 0 {
		size = defaultSize
		if limit > 0 && size > limit {
			size = limit / mib * mib
		}
	}
	if size < minSize[fsType] {
		size = minSize[fsType]
	}
	if limit > 0 && size > limit {
		return 0, status.Errorf(codes.OutOfRange, "a %s volume in whole MiB of at least %d bytes does not fit the limit of %d bytes", fsType, minSize[fsType], limit)
	}
	return size, nil
}

func fits(size int64, r *csi.CapacityRange) bool {
	return size >= r.GetRequiredBytes() && (r.GetLimitBytes() == 0 || size <= r.GetLimitBytes())
}
