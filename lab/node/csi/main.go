// appstorage-csi-driver: the CSI driver of the project's local node. Each volume is a sparse file of
// exactly the claim's size, formatted (xfs or ext4) and mounted through a loop device, so `df` in a pod
// shows the claim's capacity and shows it grow after an expansion; a raw block volume
// (volumeMode: Block) is the loop device itself, bind-mounted where the pod's device goes.
// Clones and snapshots are copy-on-write copies of a volume's file (FICLONE), which cost the same
// whatever the volume's size, as a cloud's do: the volumes' folder (--state-dir/volumes) must be on
// a filesystem with reflinks, which lab/node/csi.sh makes (an XFS with reflink=1 on a loop device).
//
// With --mode all (one node) it serves the identity, controller and node services on one socket: the
// sidecars and kubelet all talk to the same process. With several nodes it takes the shape of a
// cloud's block-storage driver: one --mode controller part beside the sidecars, and a --mode node
// part in each node, all sharing --state-dir (the "cloud's" disks); each node part reports its
// --zone, a volume lives in one zone, and with --attach-required a volume is attached to one node at
// a time (ControllerPublishVolume) before that node stages it (NodeStageVolume).
// A node part registers itself with kubelet through kubelet's plugin registration socket, which is
// node-driver-registrar's job elsewhere.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

const (
	driverName    = "csi.appstorage.local"
	driverVersion = "0.1.0"
	// The topology keys kubelet copies into the node's labels (from NodeGetInfo) and the provisioner
	// reads back from CSINode: without zones the key only says "this node"; with zones it is the
	// well-known zone label, which the nodes carry already.
	nodeTopologyKey = "topology.csi.appstorage.local/node"
	zoneTopologyKey = "topology.kubernetes.io/zone"
)

type config struct {
	nodeID        string
	stateDir      string
	kubeletRoot   string
	expandAtMount bool
	defaultFSType string
	// mode is all, controller or node: the services this process serves.
	mode string
	// zone is the node's zone (node and all modes). Volumes have zones when it is set, and always in
	// the controller mode, which serves nodes of several zones.
	zone           string
	attachRequired bool
}

func (c config) serves(service string) bool { return c.mode == "all" || c.mode == service }

// zoned says whether volumes live in zones (topology key topology.kubernetes.io/zone) or on this
// one node.
func (c config) zoned() bool { return c.zone != "" || c.mode == "controller" }

func (c config) topologyKey() string {
	if c.zoned() {
		return zoneTopologyKey
	}
	return nodeTopologyKey
}

func main() {
	var cfg config
	flag.StringVar(&cfg.nodeID, "node-id", "", "the node's name (NodeGetInfo's node_id and topology value)")
	flag.StringVar(&cfg.stateDir, "state-dir", "", "where the volumes' backing files and metadata live")
	flag.StringVar(&cfg.kubeletRoot, "kubelet-root", "/var/lib/kubelet", "kubelet's --root-dir: the sockets go under its plugins and plugins_registry folders")
	flag.BoolVar(&cfg.expandAtMount, "expand-at-mount", false, "grow a filesystem only when it is mounted (NodePublishVolume), never while a pod uses it: an expanded claim then stays FileSystemResizePending until its pod restarts (a StorageClass parameter expansion=online|at-mount overrides this per volume)")
	flag.StringVar(&cfg.defaultFSType, "default-fstype", "xfs", "filesystem when the request names none (xfs or ext4)")
	flag.StringVar(&cfg.mode, "mode", "all", "the services to serve: all (one node), controller (beside the sidecars) or node (in a node, for its kubelet)")
	flag.StringVar(&cfg.zone, "zone", "", "the node's zone (topology.kubernetes.io/zone); volumes then live in zones")
	flag.BoolVar(&cfg.attachRequired, "attach-required", false, "attach a volume to one node at a time (ControllerPublishVolume) before the node stages it (NodeStageVolume), as a cloud's disks")
	flag.Parse()
	if cfg.nodeID == "" || cfg.stateDir == "" {
		log.Fatal("--node-id and --state-dir are required")
	}
	if cfg.mode != "all" && cfg.mode != "controller" && cfg.mode != "node" {
		log.Fatalf("--mode %q: use all, controller or node", cfg.mode)
	}
	if cfg.mode == "controller" && cfg.zone != "" {
		log.Fatal("--zone is a node's: the controller serves every zone")
	}
	if _, ok := minSize[cfg.defaultFSType]; !ok {
		log.Fatalf("--default-fstype %q: use xfs or ext4", cfg.defaultFSType)
	}

	csiSock := filepath.Join(cfg.kubeletRoot, "plugins", driverName, "csi.sock")
	regSock := filepath.Join(cfg.kubeletRoot, "plugins_registry", driverName+"-reg.sock")

	d, err := newDriver(cfg)
	if err != nil {
		log.Fatal(err)
	}
	csiServer := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	csi.RegisterIdentityServer(csiServer, &identity{cfg: cfg})
	if cfg.serves("controller") {
		csi.RegisterControllerServer(csiServer, &controller{d: d})
	}
	if cfg.serves("node") {
		csi.RegisterNodeServer(csiServer, &node{d: d})
		// The controller part learns the nodes and their zones from here (ControllerPublishVolume
		// of an unknown node is NotFound; a node of another zone than the volume's is refused).
		if err := d.register(); err != nil {
			log.Fatal(err)
		}
	}
	csiListener, err := listenUnix(csiSock)
	if err != nil {
		log.Fatal(err)
	}
	go serve(csiServer, csiListener)

	// Only a node part registers with a kubelet. Listen for kubelet only once the CSI socket is up:
	// kubelet calls the driver as soon as it has registered it.
	var regServer *grpc.Server
	if cfg.serves("node") {
		regServer = grpc.NewServer()
		registerapi.RegisterRegistrationServer(regServer, &registration{endpoint: csiSock})
		regListener, err := listenUnix(regSock)
		if err != nil {
			log.Fatal(err)
		}
		go serve(regServer, regListener)
	}
	log.Printf("%s %s (%s) serving %s, node %s, zone %q, attach required: %v, volumes in %s, expand at mount: %v",
		driverName, driverVersion, cfg.mode, csiSock, cfg.nodeID, cfg.zone, cfg.attachRequired, d.volumesDir, cfg.expandAtMount)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	// Stop the registration first, so kubelet stops sending calls that would be cut short.
	if regServer != nil {
		regServer.Stop()
		os.Remove(regSock)
	}
	csiServer.GracefulStop()
	os.Remove(csiSock)
	log.Print("stopped")
}

// listenUnix removes a socket left behind by a killed instance, then listens on path.
func listenUnix(path string) (net.Listener, error) {
	if len(path) > 107 { // sun_path holds 108 bytes with the terminating NUL
		return nil, fmt.Errorf("socket path %s is %d bytes, more than a Unix socket takes (107): use a shorter --kubelet-root", path, len(path))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return net.Listen("unix", path)
}

func serve(s *grpc.Server, l net.Listener) {
	if err := s.Serve(l); err != nil {
		log.Fatal(err)
	}
}

// logCalls logs every call with its outcome: the log is what tells why a claim does not bind or grow.
func logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		log.Printf("%s(%s): %v", info.FullMethod, brief(req), err)
	} else if info.FullMethod != "/csi.v1.Identity/Probe" {
		log.Printf("%s(%s): ok", info.FullMethod, brief(req))
	}
	return resp, err
}

func brief(req any) string {
	type volumeRequest interface{ GetVolumeId() string }
	type nameRequest interface{ GetName() string }
	switch r := req.(type) {
	case volumeRequest:
		return r.GetVolumeId()
	case nameRequest:
		return r.GetName()
	}
	return fmt.Sprintf("%T", req)
}
