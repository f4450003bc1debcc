//go:build tools

// Package tools pins actionlint, which test/unit/workflow.test.ts runs on the release workflow
// (.github/workflows/release.yml): GitHub Actions cannot run here, so the workflow is checked
// statically in npm test.
package tools

import (
	_ "github.com/rhysd/actionlint/cmd/actionlint"
)
