#!/usr/bin/env bash
# Builds etcd, kube-apiserver and kube-controller-manager of one Kubernetes release into a cache
# outside the repository, keyed by that release and its go.sum hash, so a second run (or a second
# clone on the same machine) does not rebuild. Prints the bin directory as its last line of stdout.
#
#   build.sh [SPEC]          SPEC: a minor (1.32), an exact release (1.32.9 or v1.32.9, or a
#                            pre-release such as v1.38.0-beta.0), oldest, newest (the default), or
#                            prerelease (the newest pre-release pin whose minor has no release pinned)
#   build.sh --resolve SPEC  prints the release SPEC names, builds nothing
#   build.sh --list          prints "MINOR RELEASE" for every pinned minor, oldest first
#
# The pinned release of each supported minor is versions/MINOR.mod (with its .sum), written by
# pin.sh; go builds from it with -modfile. A release that is not pinned (another patch of a
# minor) is pinned on the fly into the cache, through the module proxy.
# A pre-release of a minor not yet released is pinned in versions/prerelease/MINOR.mod: only its
# minor or its exact release asks for it; it is never newest, oldest or in --list (so neither CI
# nor npm test builds it). A pin's toolchain line (pin.sh writes one when a release needs a newer
# Go) is the GOTOOLCHAIN of that pin's build alone.
set -euo pipefail
cd "$(dirname "$0")"
here="$(pwd)"
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}"
oldest_supported=32

die() { echo "controlplane: $*" >&2; exit 1; }

pinned_release() { awk '($1=="require" && $2=="k8s.io/kubernetes") {print $3; exit} ($1=="k8s.io/kubernetes" && $2 ~ /^v/) {print $2; exit}' "$1"; }

list() {
  local f
  for f in versions/*.mod; do echo "$(basename "$f" .mod) $(pinned_release "$f")"; done | sort -V
}

supported() { list | awk '{printf "%s%s (%s)", (NR>1 ? ", " : ""), $1, $2}'; }

# resolve SPEC: sets release and modfile (empty modfile: not pinned here).
resolve() {
  local spec="${1:-newest}" minor
  case "$spec" in
    newest) minor="$(list | tail -n 1 | cut -d' ' -f1)" ;;
    oldest) minor="$(list | head -n 1 | cut -d' ' -f1)" ;;
    prerelease)
      local f
      for f in versions/prerelease/*.mod; do
        [[ -f "$f" && ! -f "versions/$(basename "$f")" ]] && modfile="$here/$f"
      done
      [[ -n "${modfile:-}" ]] || die "no pre-release is pinned (none in lab/controlplane/versions/prerelease, or its minor has a release pinned: $(supported)); pin one with GOTOOLCHAIN=goX.Y.Z lab/controlplane/pin.sh v1.MINOR.0-beta.N"
      release="$(pinned_release "$modfile")"
      return 0
      ;;
    *)
      spec="${spec#v}"
      [[ "$spec" =~ ^1\.([0-9]+)(\.[0-9]+(-(alpha|beta|rc)\.[0-9]+)?)?$ ]] ||
        die "\"$1\" is not a Kubernetes version; give a minor such as 1.32, a release such as 1.32.9 or 1.38.0-beta.0, oldest, newest or prerelease (pinned: $(supported))"
      ((BASH_REMATCH[1] >= oldest_supported)) || die "Kubernetes $spec is older than 1.$oldest_supported, the oldest this project supports (pinned: $(supported))"
      minor="1.${BASH_REMATCH[1]}"
      if [[ -n "${BASH_REMATCH[2]}" ]]; then
        release="v$spec"
        modfile=""
        local f
        for f in "versions/$minor.mod" "versions/prerelease/$minor.mod"; do
          if [[ -f "$f" && "$(pinned_release "$f")" == "$release" ]]; then modfile="$here/$f"; fi
        done
        return 0
      fi
      if [[ ! -f "versions/$minor.mod" && -f "versions/prerelease/$minor.mod" ]]; then
        modfile="$here/versions/prerelease/$minor.mod"
        release="$(pinned_release "$modfile")"
        return 0
      fi
      [[ -f "versions/$minor.mod" ]] ||
        die "Kubernetes $minor is not pinned (pinned: $(supported)); give an exact release such as $minor.0 to build it once, or pin it with lab/controlplane/pin.sh v$minor.PATCH (a pre-release such as v$minor.0-beta.0 is pinned into versions/prerelease)"
      ;;
  esac
  modfile="$here/versions/$minor.mod"
  release="$(pinned_release "$modfile")"
}

case "${1:-}" in
  --list) list; exit 0 ;;
  --resolve) resolve "${2:-}"; echo "$release"; exit 0 ;;
esac
resolve "${1:-}"

if [[ -z "$modfile" ]]; then
  # Not pinned in the repository: pin it once into the cache (needs the module proxy).
  modfile="$cache/controlplane/pins/$release.mod"
  if [[ ! -f "${modfile%.mod}.sum" ]]; then
    echo "pinning $release into $modfile (it is not pinned in lab/controlplane/versions)" >&2
    ./pin.sh "$release" "$modfile.tmp.mod" >&2 ||
      { rm -f "$modfile.tmp.mod" "$modfile.tmp.sum"; die "cannot pin k8s.io/kubernetes $release through the module proxy (see above); use a pinned release: $(supported)"; }
    mv "$modfile.tmp.sum" "${modfile%.mod}.sum" && mv "$modfile.tmp.mod" "$modfile"
  fi
fi

version="$release"
sum="$(sha256sum "${modfile%.mod}.sum" | cut -c1-12)"
bin="$cache/controlplane/${version}-${sum}/bin"
if [[ -x "$bin/kube-apiserver" && -x "$bin/kube-controller-manager" && -x "$bin/etcd" ]]; then
  echo "$bin"
  exit 0
fi
tmp="$bin.tmp.$$"
mkdir -p "$tmp"
major="${version#v}"; major="${major%%.*}"
minor="${version#v*.}"; minor="${minor%%.*}"
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=$version"
# The pin's own Go toolchain, if it names one, for this build only (otherwise the machine's Go).
toolchain="$(awk '$1=="toolchain" {print $2; exit}' "$modfile")"
[[ -z "$toolchain" ]] || export GOTOOLCHAIN="$toolchain"
start=$SECONDS
echo "building control plane $version into $bin${toolchain:+ with $toolchain} (first time only, about 10 minutes on 2 cores)" >&2
CGO_ENABLED=0 go build -modfile="$modfile" -trimpath -ldflags "$ldflags" -o "$tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager ./cmd/etcd >&2 ||
  { rm -rf "$tmp"; die "building $version failed (see above)"; }
rm -rf "$bin" && mv "$tmp" "$bin"
echo "built control plane $version in $((SECONDS - start))s" >&2
echo "$bin"
