package main

// Snapshots: a snapshot is a reflinked copy of a volume's backing file (reflink, volume.go), cut
// while the volume's filesystem is frozen when it is mounted where the driver sees it, else
// crash-consistent (quiesce). It shares every block with the volume until either is written, so it
// costs the same whatever the volume's size, and it outlives its volume, as a cloud's snapshot does.
// A volume restored from it (CreateVolume with a snapshot source) is a reflinked copy of it again.

import (
	"context"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func (c *controller) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	d := c.d
	switch {
	case req.GetName() == "":
		return nil, status.Error(codes.InvalidArgument, "name is required")
	case req.GetSourceVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "source_volume_id is required")
	}
	for k := range req.GetParameters() {
		if !strings.HasPrefix(k, "csi.storage.k8s.io/") { // the snapshotter's own (--extra-create-metadata)
			return nil, status.Errorf(codes.InvalidArgument, "unknown parameter %q (snapshots take none)", k)
		}
	}
	d.lock()
	defer d.unlock()
	id := snapshotID(req.GetName())
	s, err := d.loadSnapshot(id)
	if err != nil {
		return nil, err
	}
	if s != nil {
		// Cut before (a retry): the same snapshot if it is of the same volume.
		if s.SourceVolume != req.GetSourceVolumeId() {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %q exists of volume %s, not of %s", req.GetName(), s.SourceVolume, req.GetSourceVolumeId())
		}
		return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(s)}, nil
	}
	v, err := d.mustLoad(req.GetSourceVolumeId())
	if err != nil {
		return nil, err
	}
	start := time.Now()
	consistency, thaw, err := d.quiesce(v)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "snapshot %q of volume %s: %v", req.GetName(), v.ID, err)
	}
	quiesced := time.Now()
	err = reflink(d.backingFile(v.ID), d.backingFile(id))
	thaw()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "snapshot %q of volume %s: %v", req.GetName(), v.ID, err)
	}
	reflinked := time.Now()
	// The metadata is written last, as a volume's: a file without it is a snapshot that did not finish.
	s = &snapshot{ID: id, Name: req.GetName(), SourceVolume: v.ID, SizeBytes: v.CapacityBytes, FSBytes: v.FSBytes,
		FSType: v.FSType, Block: v.Block, CreatedAt: time.Now().UnixNano(), Consistency: consistency}
	if err := d.saveSnapshot(s); err != nil {
		os.Remove(d.backingFile(id))
		return nil, err
	}
	log.Printf("snapshot %s of volume %s (%d bytes): quiesced in %s, reflinked in %s, %s", id, v.ID, v.CapacityBytes,
		quiesced.Sub(start).Round(time.Microsecond), reflinked.Sub(quiesced).Round(time.Microsecond), consistency)
	return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(s)}, nil
}

func csiSnapshot(s *snapshot) *csi.Snapshot {
	return &csi.Snapshot{
		SnapshotId:     s.ID,
		SourceVolumeId: s.SourceVolume,
		SizeBytes:      s.SizeBytes,
		CreationTime:   timestamppb.New(time.Unix(0, s.CreatedAt)),
		ReadyToUse:     true, // a reflink is complete when the call returns: nothing to upload
	}
}

func (c *controller) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	d := c.d
	id := req.GetSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot_id is required")
	}
	if !snapshotIDPattern.MatchString(id) {
		return &csi.DeleteSnapshotResponse{}, nil // not one of ours: gone
	}
	d.lock()
	defer d.unlock()
	// Volumes restored from it share blocks with it, not the file: they stay whole.
	for _, f := range []string{d.backingFile(id), d.metaFile(id)} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return nil, status.Errorf(codes.Internal, "deleting snapshot %s: %v", id, err)
		}
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

func (c *controller) GetSnapshot(_ context.Context, req *csi.GetSnapshotRequest) (*csi.GetSnapshotResponse, error) {
	d := c.d
	if req.GetSnapshotId() == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot_id is required")
	}
	d.lock()
	s, err := d.loadSnapshot(req.GetSnapshotId())
	d.unlock()
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, status.Errorf(codes.NotFound, "snapshot %s does not exist", req.GetSnapshotId())
	}
	return &csi.GetSnapshotResponse{Snapshot: csiSnapshot(s)}, nil
}

// ListSnapshots pages through the snapshots in the order of their ids; a page's next_token is the
// index of the next entry.
func (c *controller) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	d := c.d
	if req.GetMaxEntries() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "max_entries %d is negative", req.GetMaxEntries())
	}
	d.lock()
	all, err := d.snapshots()
	d.unlock()
	if err != nil {
		return nil, err
	}
	var entries []*csi.ListSnapshotsResponse_Entry
	for _, s := range all {
		if (req.GetSnapshotId() != "" && s.ID != req.GetSnapshotId()) || (req.GetSourceVolumeId() != "" && s.SourceVolume != req.GetSourceVolumeId()) {
			continue
		}
		entries = append(entries, &csi.ListSnapshotsResponse_Entry{Snapshot: csiSnapshot(s)})
	}
	start := 0
	if token := req.GetStartingToken(); token != "" {
		n, err := strconv.Atoi(token)
		if err != nil || n < 0 || n > len(entries) {
			return nil, status.Errorf(codes.Aborted, "starting_token %q is not one this driver gave", token)
		}
		start = n
	}
	end, next := len(entries), ""
	if max := int(req.GetMaxEntries()); max > 0 && start+max < end {
		end, next = start+max, strconv.Itoa(start+max)
	}
	return &csi.ListSnapshotsResponse{Entries: entries[start:end], NextToken: next}, nil
}
