package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

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
	caps := []*csi.ControllerServiceCapability{
		capability(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME),
		capability(csi.ControllerServiceCapability_RPC_EXPAND_VOLUME),
		// Copy-on-write copies of a volume's file (snapshot.go).
		capability(csi.ControllerServiceCapability_RPC_CLONE_VOLUME),
		capability(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT),
		capability(csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS),
		capability(csi.ControllerServiceCapability_RPC_GET_SNAPSHOT),
	}
	if c.d.cfg.attachRequired {
		caps = append(caps, capability(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME))
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (c *controller) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	d := c.d
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	a, err := parseCapabilities(req.GetVolumeCapabilities())
	if err != nil {
		return nil, err
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
	content := req.GetVolumeContentSource()
	if content != nil && content.GetSnapshot() == nil && content.GetVolume() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume_content_source names neither a snapshot nor a volume")
	}

	d.lock()
	defer d.unlock()
	id := volumeID(req.GetName())
	v, err := d.load(id)
	if err != nil {
		return nil, err
	}
	if v != nil {
		// Created before (a retry): the same volume if it still fits the request.
		// A copy has its source's filesystem whatever the default.
		def := d.cfg.defaultFSType
		if content != nil {
			def = v.FSType
		}
		if !fits(v.CapacityBytes, req.GetCapacityRange()) || !a.serves(v, def) {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists with %d bytes of %s, which does not fit this request", req.GetName(), v.CapacityBytes, v.mode())
		}
		if v.SourceSnapshot != content.GetSnapshot().GetSnapshotId() || v.SourceVolume != content.GetVolume().GetVolumeId() {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists with another content source", req.GetName())
		}
		if d.cfg.zoned() && !allows(req.GetAccessibilityRequirements(), zoneTopologyKey, v.Zone) {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists in zone %s, which this request does not allow", req.GetName(), v.Zone)
		}
		return &csi.CreateVolumeResponse{Volume: c.csiVolume(v)}, nil
	}

	v = &volume{ID: id, Name: req.GetName(), Block: a.block, FSType: a.fsType, ExpandAtMount: expandAtMount}
	// A copy (a clone or a restore) is a reflinked copy of its source's file: the source's mode,
	// filesystem and size, at least; it grows to the size asked for (the filesystem when it is
	// next mounted, as after an offline expansion).
	var from string
	var least int64
	switch {
	case content.GetSnapshot() != nil:
		s, err := d.loadSnapshot(content.GetSnapshot().GetSnapshotId())
		if err != nil {
			return nil, err
		}
		if s == nil {
			return nil, status.Errorf(codes.NotFound, "snapshot %s does not exist", content.GetSnapshot().GetSnapshotId())
		}
		if err := a.copies(s.Block, s.FSType); err != nil {
			return nil, err
		}
		from, least = d.backingFile(s.ID), s.SizeBytes
		v.FSType, v.FSBytes, v.SourceSnapshot = s.FSType, s.FSBytes, s.ID
		// Snapshots are the region's, as a cloud's are: a restore goes to any zone.
		if v.Zone, err = c.placement(req.GetAccessibilityRequirements()); err != nil {
			return nil, err
		}
	case content.GetVolume() != nil:
		src, err := d.mustLoad(content.GetVolume().GetVolumeId())
		if err != nil {
			return nil, err
		}
		if err := a.copies(src.Block, src.FSType); err != nil {
			return nil, err
		}
		from, least = d.backingFile(src.ID), src.CapacityBytes
		v.FSType, v.FSBytes, v.SourceVolume = src.FSType, src.FSBytes, src.ID
		// A clone is a disk of its source's zone, as a cloud's copy of a disk is.
		if d.cfg.zoned() {
			if !allows(req.GetAccessibilityRequirements(), zoneTopologyKey, src.Zone) {
				return nil, status.Errorf(codes.ResourceExhausted, "volume %s is in zone %s, which the requisite topology does not include: a clone is made in its source's zone", src.ID, src.Zone)
			}
			v.Zone = src.Zone
		} else if v.Zone, err = c.placement(req.GetAccessibilityRequirements()); err != nil {
			return nil, err
		}
	default:
		if !a.block && v.FSType == "" {
			v.FSType = d.cfg.defaultFSType
		}
		if v.Zone, err = c.placement(req.GetAccessibilityRequirements()); err != nil {
			return nil, err
		}
	}
	size, err := sizeFor(req.GetCapacityRange(), v.minSize(), v.mode())
	if err != nil {
		return nil, err
	}
	if size < least {
		if limit := req.GetCapacityRange().GetLimitBytes(); limit > 0 && limit < least {
			return nil, status.Errorf(codes.OutOfRange, "the source has %d bytes, more than the limit of %d bytes", least, limit)
		}
		size = least
	}
	v.CapacityBytes = size
	if from == "" {
		v.FSBytes = size
	}
	// The metadata is written last: a backing file without it is a creation that did not finish,
	// and is made again from scratch.
	file := d.backingFile(id)
	if from != "" {
		err = d.copyFile(from, file, v.SourceVolume)
		if err == nil && size > least {
			err = os.Truncate(file, size)
		}
	} else {
		var f *os.File
		f, err = os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		if err == nil {
			err = f.Truncate(size) // sparse: takes the disk space the data takes
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err == nil && !v.Block {
			err = mkfs(v.FSType, file)
		}
	}
	if err != nil {
		os.Remove(file)
		return nil, status.Errorf(codes.Internal, "creating volume %q: %v", req.GetName(), err)
	}
	if err := d.save(v); err != nil {
		os.Remove(file)
		return nil, err
	}
	return &csi.CreateVolumeResponse{Volume: c.csiVolume(v)}, nil
}

// copyFile reflinks a source's file (a snapshot's, or the volume sourceVolume's, quiesced first:
// it may be in use) to dst.
func (d *driver) copyFile(from, dst, sourceVolume string) error {
	if sourceVolume == "" {
		return reflink(from, dst)
	}
	src, err := d.mustLoad(sourceVolume)
	if err != nil {
		return err
	}
	start := time.Now()
	consistency, thaw, err := d.quiesce(src)
	if err != nil {
		return err
	}
	quiesced := time.Now()
	err = reflink(from, dst)
	thaw()
	if err == nil {
		log.Printf("cloned volume %s (%d bytes) to %s: quiesced in %s, reflinked in %s, %s", src.ID, src.CapacityBytes, filepath.Base(dst),
			quiesced.Sub(start).Round(time.Microsecond), time.Since(quiesced).Round(time.Microsecond), consistency)
	}
	return err
}

func (c *controller) csiVolume(v *volume) *csi.Volume {
	segments := map[string]string{nodeTopologyKey: c.d.cfg.nodeID}
	if c.d.cfg.zoned() {
		segments = map[string]string{zoneTopologyKey: v.Zone}
	}
	var content *csi.VolumeContentSource
	switch {
	case v.SourceSnapshot != "":
		content = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: v.SourceSnapshot}}}
	case v.SourceVolume != "":
		content = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: v.SourceVolume}}}
	}
	return &csi.Volume{
		VolumeId:           v.ID,
		CapacityBytes:      v.CapacityBytes,
		AccessibleTopology: []*csi.Topology{{Segments: segments}},
		ContentSource:      content,
	}
}

// placement is the zone of a new volume (empty without zones), as a cloud's driver picks it: the
// first preferred zone the requisite allows (the provisioner puts the chosen node's zone first for
// a WaitForFirstConsumer claim), else the first requisite zone, else this node's zone, else the
// first zone a node registered. Without zones it refuses a volume that must be reachable from
// nodes other than this one.
func (c *controller) placement(ar *csi.TopologyRequirement) (string, error) {
	cfg := c.d.cfg
	if !cfg.zoned() {
		if allows(ar, nodeTopologyKey, cfg.nodeID) {
			return "", nil
		}
		return "", status.Errorf(codes.ResourceExhausted, "this driver provisions on node %s only, which the requisite topology does not include", cfg.nodeID)
	}
	for _, t := range ar.GetPreferred() {
		if z := t.GetSegments()[zoneTopologyKey]; z != "" && allows(ar, zoneTopologyKey, z) {
			return z, nil
		}
	}
	for _, t := range ar.GetRequisite() {
		if z := t.GetSegments()[zoneTopologyKey]; z != "" {
			return z, nil
		}
	}
	if len(ar.GetRequisite()) > 0 {
		return "", status.Errorf(codes.InvalidArgument, "the requisite topology names no %s", zoneTopologyKey)
	}
	if cfg.zone != "" {
		return cfg.zone, nil
	}
	zones, err := c.d.zones()
	if err != nil {
		return "", err
	}
	if len(zones) == 0 {
		return "", status.Error(codes.Unavailable, "no node has registered a zone yet: start a node part (--mode node --zone ZONE)")
	}
	return zones[0], nil
}

// allows says whether a topology requirement lets a volume live where key has value: an empty
// requisite allows anything.
func allows(ar *csi.TopologyRequirement, key, value string) bool {
	if len(ar.GetRequisite()) == 0 {
		return true
	}
	for _, t := range ar.GetRequisite() {
		if t.GetSegments()[key] == value {
			return true
		}
	}
	return false
}

func (c *controller) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	d := c.d
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	d.lock()
	defer d.unlock()
	v, err := d.load(id)
	if err != nil {
		return nil, err
	}
	if v == nil {
		// Not one of ours, or deleted before. A backing file without metadata is a creation that
		// did not finish: remove it too.
		if idPattern.MatchString(id) {
			os.Remove(d.backingFile(id))
		}
		return &csi.DeleteVolumeResponse{}, nil
	}
	if len(v.Attached) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still attached to node %s", id, strings.Join(attachedNodes(v), ", "))
	}
	if d.cfg.attachRequired {
		// The nodes' mounts are in their own mount tables, out of this part's sight; a loop device
		// left means a node still has the volume staged.
		devs, err := loops(d.backingFile(id))
		if err != nil {
			return nil, status.Errorf(codes.Internal, "volume %s: %v", id, err)
		}
		if len(devs) > 0 {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still in use on a node (%s)", id, strings.Join(devs, ", "))
		}
	} else {
		busy, err := d.detachUnused(d.backingFile(id))
		if err != nil {
			return nil, status.Errorf(codes.Internal, "volume %s: %v", id, err)
		}
		if len(busy) > 0 {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still mounted (%s)", id, strings.Join(busy, ", "))
		}
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
	d.lock()
	defer d.unlock()
	v, err := d.mustLoad(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	size, err := sizeFor(req.GetCapacityRange(), v.minSize(), v.mode())
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
	d.lock()
	v, err := d.mustLoad(req.GetVolumeId())
	d.unlock()
	if err != nil {
		return nil, err
	}
	if a, err := parseCapabilities(req.GetVolumeCapabilities()); err != nil || !a.serves(v, v.FSType) {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: fmt.Sprintf("unsupported: volume %s is a single-node %s volume", v.ID, v.mode())}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters()}}, nil
}

// access is what a set of volume capabilities asks for: a raw block device, or a filesystem
// (fsType: empty when they name none).
type access struct {
	block  bool
	fsType string
}

// parseCapabilities accepts single-node volumes, raw block or mounted, and returns what they ask for.
func parseCapabilities(caps []*csi.VolumeCapability) (access, error) {
	var a access
	if len(caps) == 0 {
		return a, status.Error(codes.InvalidArgument, "volume_capabilities are required")
	}
	for i, c := range caps {
		block := c.GetBlock() != nil
		if !block && c.GetMount() == nil {
			return a, status.Error(codes.InvalidArgument, "a volume capability needs an access type (mount or block)")
		}
		if i > 0 && block != a.block {
			return a, status.Error(codes.InvalidArgument, "the volume capabilities ask for a raw block device and a filesystem")
		}
		a.block = block
		switch c.GetAccessMode().GetMode() {
		case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		default:
			return a, status.Errorf(codes.InvalidArgument, "access mode %s is not supported: this driver serves one node", c.GetAccessMode().GetMode())
		}
		if t := c.GetMount().GetFsType(); t != "" {
			if _, ok := minSize[t]; !ok {
				return a, status.Errorf(codes.InvalidArgument, "filesystem %q is not supported: use xfs or ext4", t)
			}
			if a.fsType != "" && a.fsType != t {
				return a, status.Error(codes.InvalidArgument, "the volume capabilities ask for two filesystems")
			}
			a.fsType = t
		}
	}
	return a, nil
}

// serves says whether a volume is what the capabilities ask for; a filesystem they do not name is
// defaultFSType.
func (a access) serves(v *volume, defaultFSType string) bool {
	if a.block || v.Block {
		return a.block == v.Block
	}
	fsType := a.fsType
	if fsType == "" {
		fsType = defaultFSType
	}
	return fsType == v.FSType
}

// copies says whether a copy of a source (a snapshot or a volume) can be what the capabilities
// ask for: a copy keeps its source's mode and filesystem.
func (a access) copies(block bool, fsType string) error {
	switch {
	case a.block != block && block:
		return status.Error(codes.InvalidArgument, "the source is a raw block volume: its copy cannot be a filesystem")
	case a.block != block:
		return status.Errorf(codes.InvalidArgument, "the source is a %s filesystem: its copy cannot be a raw block volume", fsType)
	case !a.block && a.fsType != "" && a.fsType != fsType:
		return status.Errorf(codes.InvalidArgument, "the source is a %s filesystem: its copy cannot be %s", fsType, a.fsType)
	}
	return nil
}

// checkAccess refuses capabilities of the other mode than the volume's (a node may name another
// filesystem than the volume's: it gets the volume's).
func checkAccess(caps []*csi.VolumeCapability, v *volume) error {
	a, err := parseCapabilities(caps)
	if err != nil {
		return err
	}
	if a.block != v.Block {
		return status.Errorf(codes.InvalidArgument, "volume %s is a %s volume, which these capabilities do not ask for", v.ID, v.mode())
	}
	return nil
}

// minSize is the smallest size of a volume of this mode.
func (v *volume) minSize() int64 {
	if v.Block {
		return blockMinSize
	}
	return minSize[v.FSType]
}

// sizeFor is the size of a volume for a capacity range: the required bytes rounded up to a MiB,
// and at least least (the mode's minimum; what names it in messages).
func sizeFor(r *csi.CapacityRange, least int64, what string) (int64, error) {
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
	if size < least {
		size = least
	}
	if limit > 0 && size > limit {
		return 0, status.Errorf(codes.OutOfRange, "a %s volume in whole MiB of at least %d bytes does not fit the limit of %d bytes", what, least, limit)
	}
	return size, nil
}

func fits(size int64, r *csi.CapacityRange) bool {
	return size >= r.GetRequiredBytes() && (r.GetLimitBytes() == 0 || size <= r.GetLimitBytes())
}

func attachedNodes(v *volume) []string {
	var nodes []string
	for n := range v.Attached {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	return nodes
}

// ControllerPublishVolume attaches a volume to a node, as a cloud attaches a disk: only to a node of
// the volume's zone, and a single-node volume to one node at a time.
func (c *controller) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	d := c.d
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	case req.GetNodeId() == "":
		return nil, status.Error(codes.InvalidArgument, "node_id is required")
	case req.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "volume_capability is required")
	}
	d.lock()
	defer d.unlock()
	v, err := d.mustLoad(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	n, err := d.node(req.GetNodeId())
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, status.Errorf(codes.NotFound, "node %s is not known: no node part of this driver registered it", req.GetNodeId())
	}
	if err := checkAccess([]*csi.VolumeCapability{req.GetVolumeCapability()}, v); err != nil {
		return nil, err
	}
	if v.Zone != "" && n.Zone != v.Zone {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is in zone %s and node %s in zone %q: a volume attaches only to nodes of its zone", v.ID, v.Zone, n.ID, n.Zone)
	}
	readonly := req.GetReadonly()
	if ro, ok := v.Attached[n.ID]; ok {
		if ro != readonly {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s is attached to node %s with readonly=%v already", v.ID, n.ID, ro)
		}
		return &csi.ControllerPublishVolumeResponse{}, nil
	}
	if len(v.Attached) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is attached to node %s: a single-node volume attaches to one node at a time", v.ID, strings.Join(attachedNodes(v), ", "))
	}
	if v.Attached == nil {
		v.Attached = map[string]bool{}
	}
	v.Attached[n.ID] = readonly
	if err := d.save(v); err != nil {
		return nil, err
	}
	return &csi.ControllerPublishVolumeResponse{}, nil
}

// ControllerUnpublishVolume detaches a volume from a node (from every node without node_id). It
// refuses while the node still has the volume staged: a cloud would cut a disk off under its
// filesystem, which is the data loss this project's tests look for.
func (c *controller) ControllerUnpublishVolume(_ context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	d := c.d
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	d.lock()
	defer d.unlock()
	v, err := d.load(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if v == nil {
		return &csi.ControllerUnpublishVolumeResponse{}, nil // gone, so detached from every node
	}
	nodes := attachedNodes(v)
	if id := req.GetNodeId(); id != "" {
		if _, ok := v.Attached[id]; !ok {
			return &csi.ControllerUnpublishVolumeResponse{}, nil
		}
		nodes = []string{id}
	}
	if len(nodes) == 0 {
		return &csi.ControllerUnpublishVolumeResponse{}, nil
	}
	devs, err := loops(d.backingFile(v.ID))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", v.ID, err)
	}
	if len(devs) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still staged on node %s (%s): unstage it first", v.ID, strings.Join(nodes, ", "), strings.Join(devs, ", "))
	}
	for _, n := range nodes {
		delete(v.Attached, n)
	}
	if err := d.save(v); err != nil {
		return nil, err
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}
