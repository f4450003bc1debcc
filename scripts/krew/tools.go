//go:build tools

// Package tools pins krew, which the packaging e2e test builds to install the release
// archive the way users do (kubectl krew install --manifest --archive).
package tools

import (
	_ "sigs.k8s.io/krew/cmd/krew"
)
