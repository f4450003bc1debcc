//go:build tools

// Package tools pins kubectl (k8s.io/kubernetes/cmd/kubectl) at the control plane's newest
// release: the benchmarks and the kubectl-parity tests compare the plugin with it.
package tools

import _ "k8s.io/kubernetes/cmd/kubectl"
