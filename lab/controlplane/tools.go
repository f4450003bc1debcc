//go:build tools

// Package tools names the lab's programs that are built from other modules, so that the newest pin
// (versions/MINOR.mod, tidied by pin.sh) holds their modules, at the versions the servers use: one
// module graph, so go's build cache compiles every package they share once. The servers themselves
// are cmd/appstor-kube, and Kubernetes' e2e specs ../specs.
package tools

import (
	_ "github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity"                      // checks the node's CSI driver
	_ "github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher"           // the zones' driver attaches volumes
	_ "github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner"     // the node's CSI sidecars
	_ "github.com/kubernetes-csi/external-resizer/v2/cmd/csi-resizer"             //
	_ "github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter"     // the node's snapshots: the sidecar
	_ "github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller" // and the cluster's controller
	_ "k8s.io/kubernetes/cmd/kubectl"                                             // the benchmarks' and parity tests' kubectl
)
