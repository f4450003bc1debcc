// The node's CSI driver (lab/node/csi.sh builds it). Its own module, so the plugin's npm build
// and the control plane's Go pins never see its dependencies.
module kubectl-appstorage/node/csi

go 1.26.0

require (
	github.com/container-storage-interface/spec v1.12.0
	golang.org/x/sys v0.47.0
	google.golang.org/grpc v1.82.1
	google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af
	k8s.io/kubelet v0.37.2
	k8s.io/mount-utils v0.37.2
)

require (
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/moby/sys/mountinfo v0.7.2 // indirect
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/text v0.40.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260526163538-3dc84a4a5aaa // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/utils v0.0.0-20260626114624-be93311217bd // indirect
)
