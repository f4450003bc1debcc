//go:build tools

// Package tools pins krew, which the packaging e2e test builds to install the release
// archive the way users do (kubectl krew install, upgrade), and krew's manifest validator.
package tools

import (
	_ "sigs.k8s.io/krew/cmd/krew"
	_ "sigs.k8s.io/krew/cmd/validate-krew-manifest"
)
