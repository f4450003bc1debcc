// appstorage-csi-driver: the CSI driver of the project's local node. Each volume is a sparse file of
// exactly the claim's size, formatted (xfs or ext4) and mounted through a loop device, so `df` in a pod
// shows the claim's capacity and shows it grow after an expansion.
//
// It serves the identity, controller and node services on one socket (one node: the sidecars and
// kubelet all talk to the same process), and registers itself with kubelet through kubelet's
// plugin registration socket, which is node-driver-registrar's job elsewhere.
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
	// The topology key kubelet copies into the node's labels (from NodeGetInfo) and the provisioner
	// reads back from CSINode; with one node it only says "this node".
	topologyKey = "topology.csi.appstorage.local/node"
)

type config struct {
	nodeID        string
	stateDir      string
	kubeletRoot   string
	expandAtMount bool
	defaultFSType string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.nodeID, "node-id", "", "the node's name (NodeGetInfo's node_id and topology value)")
	flag.StringVar(&cfg.stateDir, "state-dir", "", "where the volumes' backing files and metadata live")
	flag.StringVar(&cfg.kubeletRoot, "kubelet-root", "/var/lib/kubelet", "kubelet's --root-dir: the sockets go under its plugins and plugins_registry folders")
	flag.BoolVar(&cfg.expandAtMount, "expand-at-mount", false, "grow a filesystem only when it is mounted (NodePublishVolume), never while a pod uses it: an expanded claim then stays FileSystemResizePending until its pod restarts (a StorageClass parameter expansion=online|at-mount overrides this per volume)")
	flag.StringVar(&cfg.defaultFSType, "default-fstype", "xfs", "filesystem when the request names none (xfs or ext4)")
	flag.Parse()
	if cfg.nodeID == "" || cfg.stateDir == "" {
		log.Fatal("--node-id and --state-dir are required")
	}
	if _, ok := minSize[cfg.defaultFSType]; !ok {
		log.Fatalf("--default-fstype %q: use xfs or ext4", cfg.defaultFSType)
	}
	if err := os.MkdirAll(filepath.Join(cfg.stateDir, "volumes"), 0o700); err != nil {
		log.Fatal(err)
	}

	csiSock := filepath.Join(cfg.kubeletRoot, "plugins", driverName, "csi.sock")
	regSock := filepath.Join(cfg.kubeletRoot, "plugins_registry", driverName+"-reg.sock")

	d := newDriver(cfg)
	csiServer := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	csi.RegisterIdentityServer(csiServer, &identity{})
	csi.RegisterControllerServer(csiServer, &controller{d: d})
	csi.RegisterNodeServer(csiServer, &node{d: d})
	csiListener, err := listenUnix(csiSock)
	if err != nil {
		log.Fatal(err)
	}

	regServer := grpc.NewServer()
	registerapi.RegisterRegistrationServer(regServer, &registration{endpoint: csiSock})
	// Listen for kubelet only once the CSI socket is up: kubelet calls the driver as soon as it
	// has registered it.
	regListener, err := listenUnix(regSock)
	if err != nil {
		log.Fatal(err)
	}

	go serve(csiServer, csiListener)
	go serve(regServer, regListener)
	log.Printf("%s %s serving %s (kubelet registration %s), node %s, volumes in %s, expand at mount: %v",
		driverName, driverVersion, csiSock, regSock, cfg.nodeID, d.volumesDir, cfg.expandAtMount)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	// Stop the registration first, so kubelet stops sending calls that would be cut short.
	regServer.Stop()
	csiServer.GracefulStop()
	os.Remove(regSock)
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
