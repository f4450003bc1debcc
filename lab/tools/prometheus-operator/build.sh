#!/usr/bin/env bash
# Builds the Prometheus Operator (github.com/prometheus-operator/prometheus-operator/cmd/operator,
# release pinned in go.mod) into a cache outside the repository, as prometheus-operator: the owner
# tests run the real operator against the test control plane, to show that --pause-owner's pause
# (spec.paused) holds it off a StatefulSet it controls. Prints the bin directory as its last line.
# Run by scripts/setup; the test runs it too when the cache is empty.
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source-path=SCRIPTDIR
source ../build-once.sh
version="$(go list -m -f '{{.Version}}' github.com/prometheus-operator/prometheus-operator)"
build_into() {
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$1/prometheus-operator" github.com/prometheus-operator/prometheus-operator/cmd/operator
}
build_once "$cache/prometheus-operator/$version-$(sha256sum go.sum | cut -c1-12)/bin" "the Prometheus Operator $version" "a few minutes on 2 cores" prometheus-operator
