//go:build tools

// Package tools pins the Prometheus Operator, whose operator program the owner tests run.
package tools

import _ "github.com/prometheus-operator/prometheus-operator/cmd/operator"
