#!/usr/bin/env bash
# Builds Helm 4 and Helm 3 (helm.sh/helm/v4 and /v3, the newest releases the Go module proxy
# serves, pinned in v4/go.mod and v3/go.mod) into a cache outside the repository, as helm4 and
# helm3: the tests install, upgrade and template a chart with the Helm users have. Prints the bin
# directory as its last line. Run by scripts/setup; the Helm tests run it too when the cache is empty.
set -euo pipefail
cd "$(dirname "$0")"
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}"
v4="$(cd v4 && go list -m -f '{{.Version}}' helm.sh/helm/v4)"
v3="$(cd v3 && go list -m -f '{{.Version}}' helm.sh/helm/v3)"
bin="$cache/helm/$v4-$v3-$(cat v4/go.sum v3/go.sum | sha256sum | cut -c1-12)/bin"
if [[ -x "$bin/helm4" && -x "$bin/helm3" ]]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$(dirname "$bin")"
# One build at a time (worktrees and test runs share the cache); a waiter finds it built.
exec 9>"$(dirname "$bin").lock"
flock 9
if [[ ! -x "$bin/helm4" || ! -x "$bin/helm3" ]]; then
  start=$SECONDS
  echo "building helm $v4 and $v3 into $bin (first time only, a few minutes on 2 cores)" >&2
  rm -rf "$bin.tmp" && mkdir -p "$bin.tmp"
  (cd v4 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$v4" -o "$bin.tmp/helm4" helm.sh/helm/v4/cmd/helm) >&2
  (cd v3 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$v3" -o "$bin.tmp/helm3" helm.sh/helm/v3/cmd/helm) >&2
  rm -rf "$bin" && mv "$bin.tmp" "$bin"
  echo "built helm $v4 and $v3 in $((SECONDS - start))s" >&2
fi
echo "$bin"
