//go:build tools

// Package tools pins the control-plane programs built by scripts/cluster, so that
// `go mod tidy` keeps every module they need in go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
