#!/usr/bin/env bash
# Builds krew (sigs.k8s.io/krew/cmd/krew, release pinned in go.mod) as kubectl-krew, and krew's
# manifest validator (cmd/validate-krew-manifest, what krew-index runs on every manifest), into a
# cache outside the repository, for the packaging test that validates the rendered manifest and
# installs and upgrades the release the way users do. Prints the bin directory as its last line.
# Run by scripts/setup; the test runs it too when the cache is empty.
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source-path=SCRIPTDIR
source ../build-once.sh
version="$(go list -m -f '{{.Version}}' sigs.k8s.io/krew)"
build_into() {
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$version" -o "$1/kubectl-krew" sigs.k8s.io/krew/cmd/krew
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$1/validate-krew-manifest" sigs.k8s.io/krew/cmd/validate-krew-manifest
}
build_once "$cache/krew/$version/bin" "krew $version" "under a minute" kubectl-krew validate-krew-manifest
