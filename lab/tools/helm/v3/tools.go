//go:build tools

// Package tools pins Helm 3 (helm.sh/helm/v3/cmd/helm, release in go.mod): the e2e and node
// tests install, upgrade and template a chart with the Helm users have.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
