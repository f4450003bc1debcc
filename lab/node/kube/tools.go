//go:build tools

// Package tools pins the node's Kubernetes programs (kubelet, kube-scheduler), so that
// `go mod tidy` keeps every module they need in go.sum. etcdmain is imported only because the
// control plane's pin has it: with it the module graph, and so every shared dependency's version,
// is the control plane's, and go's build cache serves the packages both build.
package tools

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
