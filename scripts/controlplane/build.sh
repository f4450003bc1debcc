#!/usr/bin/env bash
# Builds etcd, kube-apiserver and kube-controller-manager at the release pinned in go.mod
# into a cache outside the repository, keyed by that release and the go.sum hash, so a
# second run (or a second clone on the same machine) does not rebuild.
# Prints the bin directory as its last line of stdout.
set -euo pipefail
cd "$(dirname "$0")"
version="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
sum="$(sha256sum go.sum | cut -c1-12)"
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}"
bin="$cache/controlplane/${version}-${sum}/bin"
if [[ -x "$bin/kube-apiserver" && -x "$bin/kube-controller-manager" && -x "$bin/etcd" ]]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$bin.tmp"
major="${version#v}"; major="${major%%.*}"
minor="${version#v*.}"; minor="${minor%%.*}"
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=$version"
start=$SECONDS
echo "building control plane $version into $bin (first time only, about 10 minutes on 2 cores)" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin.tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager ./cmd/etcd >&2
rm -rf "$bin" && mv "$bin.tmp" "$bin"
echo "built control plane $version in $((SECONDS - start))s" >&2
echo "$bin"
