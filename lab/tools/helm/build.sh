#!/usr/bin/env bash
# Builds Helm 4 and Helm 3 (helm.sh/helm/v4 and /v3, the newest releases the Go module proxy
# serves, pinned in v4/go.mod and v3/go.mod) into a cache outside the repository, as helm4 and
# helm3: the tests install, upgrade and template a chart with the Helm users have. Prints the bin
# directory as its last line. Run by scripts/setup; the Helm tests run it too when the cache is empty.
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source-path=SCRIPTDIR
source ../build-once.sh
v4="$(cd v4 && go list -m -f '{{.Version}}' helm.sh/helm/v4)"
v3="$(cd v3 && go list -m -f '{{.Version}}' helm.sh/helm/v3)"
build_into() {
  (cd v4 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$v4" -o "$1/helm4" helm.sh/helm/v4/cmd/helm)
  (cd v3 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$v3" -o "$1/helm3" helm.sh/helm/v3/cmd/helm)
}
build_once "$cache/helm/$v4-$v3-$(cat v4/go.sum v3/go.sum | sha256sum | cut -c1-12)/bin" "helm $v4 and $v3" "a few minutes on 2 cores" helm4 helm3
