#!/usr/bin/env bash
# Builds krew (sigs.k8s.io/krew/cmd/krew, release pinned in go.mod) as kubectl-krew, and krew's
# manifest validator (cmd/validate-krew-manifest, what krew-index runs on every manifest), into a
# cache outside the repository, for the packaging test that validates the rendered manifest and
# installs and upgrades the release the way users do. Prints the bin directory as its last line.
# Run by scripts/setup; the test runs it too when the cache is empty.
set -euo pipefail
cd "$(dirname "$0")"
version="$(go list -m -f '{{.Version}}' sigs.k8s.io/krew)"
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}"
bin="$cache/krew/$version/bin"
if [[ -x "$bin/kubectl-krew" && -x "$bin/validate-krew-manifest" ]]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$bin.tmp"
echo "building krew $version into $bin (first time only, under a minute)" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$version" \
  -o "$bin.tmp/kubectl-krew" sigs.k8s.io/krew/cmd/krew >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin.tmp/validate-krew-manifest" sigs.k8s.io/krew/cmd/validate-krew-manifest >&2
rm -rf "$bin" && mv "$bin.tmp" "$bin"
echo "$bin"
