#!/usr/bin/env bash
# Builds kubectl from the pinned Kubernetes release (k8s.io/kubernetes/cmd/kubectl at the version
# of the newest control plane pin, checked below) into a cache outside the repository. The
# benchmarks and the kubectl-parity tests compare the plugin with this kubectl; the machine's
# kubectl stays for plugin discovery. Prints the bin directory as its last line. Run by
# scripts/setup (npm run setup, which npm test and .ci/run run).
#   build.sh            kubectl for this machine (linux/amd64)
#   build.sh windows    kubectl.exe for windows/amd64, which the Windows check runs under wine
#                       (test/e2e/packaging.test.ts: plugin discovery and the completion shim)
# To move it with the control plane: copy lab/controlplane/versions/MINOR.mod here as go.mod
# (module kubectl-appstorage/kubectl, without etcd), keep tools.go, and run go mod tidy: that is
# lab/tools/kubectl/pin.sh, which lab/controlplane/pin.sh runs when it pins a newest release.
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source-path=SCRIPTDIR
source ../../controlplane/ldflags.sh
version="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
newest="$(../../controlplane/build.sh --resolve newest)"
[[ "$version" == "$newest" ]] || { echo "kubectl: lab/tools/kubectl pins k8s.io/kubernetes $version, the control plane's newest pin is $newest: re-pin it with lab/tools/kubectl/pin.sh" >&2; exit 1; }
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}"
bin="$cache/kubectl/$version-$(sha256sum go.sum | cut -c1-12)/bin"
exe=kubectl goos=linux
case "${1:-}" in
  "") ;;
  windows) bin="${bin%/bin}/windows-amd64"; exe=kubectl.exe goos=windows ;;
  *) echo "usage: lab/tools/kubectl/build.sh [windows]" >&2; exit 2 ;;
esac
if [[ -x "$bin/$exe" ]]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$(dirname "$bin")"
# One build at a time (worktrees and test runs share the cache); a waiter finds it built.
exec 9>"$(dirname "$bin").lock"
flock 9
if [[ ! -x "$bin/$exe" ]]; then
  ldflags="$(version_ldflags "$version")"
  start=$SECONDS
  echo "building kubectl $version for $goos/amd64 into $bin (first time only, a few minutes on 2 cores)" >&2
  rm -rf "$bin.tmp" && mkdir -p "$bin.tmp"
  CGO_ENABLED=0 GOOS=$goos GOARCH=amd64 go build -trimpath -ldflags "$ldflags" -o "$bin.tmp/$exe" k8s.io/kubernetes/cmd/kubectl >&2
  rm -rf "$bin" && mv "$bin.tmp" "$bin"
  echo "built kubectl $version for $goos/amd64 in $((SECONDS - start))s" >&2
fi
echo "$bin"
