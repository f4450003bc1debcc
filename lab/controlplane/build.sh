#!/usr/bin/env bash
# Builds the lab's Kubernetes programs of one release from its Go modules into a cache outside the
# repository, keyed by that release and its pin's go.sum hash, so a second run (or a second clone on
# the same machine) does not rebuild. Prints the bin directory as its last line of stdout.
#
# The servers are one binary, appstor-kube (cmd/appstor-kube), in the way of Kubernetes' former
# hyperkube and of k3s: etcd, kube-apiserver and kube-controller-manager, and, in the newest pin,
# kube-scheduler and kubelet too; each is a link to it by that name. Most of their packages are
# shared, and one link of one binary costs a fraction of five. In the newest pin, which holds every
# program of the lab in one module graph, the node's CSI sidecars (csi-provisioner, csi-resizer) are
# built in the same run, so that go's build cache compiles the packages they share with the servers
# once; the rest of the lab's programs (PROGRAM below) reuse that cache the same way.
#
#   build.sh [SPEC]          SPEC: a minor (1.32), an exact release (1.32.9 or v1.32.9, or a
#                            pre-release such as v1.38.0-beta.0), oldest, newest (the default), or
#                            prerelease (the newest pre-release pin whose minor has no release pinned)
#   build.sh --program NAME [windows]
#                            one more program of the newest pin, into the same folder: csi-attacher,
#                            csi-sanity, csi-snapshotter and snapshot-controller (external-snapshotter),
#                            kubectl (windows: kubectl.exe for windows/amd64, in its own folder),
#                            e2e.test or agnhost (Kubernetes' e2e specs, ../specs)
#   build.sh --resolve SPEC  prints the release SPEC names, builds nothing
#   build.sh --list          prints "MINOR RELEASE" for every pinned minor, oldest first
#   build.sh --modfile SPEC  prints the pin's .mod file that SPEC builds from
#
# The pinned release of each supported minor is versions/MINOR.mod (with its .sum), written by
# pin.sh; go builds from the lab's root (../go.mod) with -modfile. A release that is not pinned (another patch of a
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

program=""
program_os=""
case "${1:-}" in
  --list) list; exit 0 ;;
  --resolve) resolve "${2:-}"; echo "$release"; exit 0 ;;
  --modfile) resolve "${2:-}"; echo "$modfile"; exit 0 ;;
  --program)
    program="${2:-}"; program_os="${3:-}"
    case "$program" in
      csi-attacher | csi-sanity | csi-snapshotter | snapshot-controller | kubectl | e2e.test | agnhost) ;;
      *) die "--program takes csi-attacher, csi-sanity, csi-snapshotter, snapshot-controller, kubectl, e2e.test or agnhost, not \"$program\"" ;;
    esac
    [[ -z "$program_os" || "$program/$program_os" == kubectl/windows ]] || die "only kubectl is built for windows"
    set -- newest
    ;;
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
# The newest pin holds the node and the rest of the lab (pin.sh); the others the control plane alone.
lab=0
grep -q '^[[:space:]]*github.com/kubernetes-csi/external-provisioner/v6 ' "$modfile" && lab=1
servers=(etcd kube-apiserver kube-controller-manager)
sidecars=()
if ((lab)); then servers+=(kube-scheduler kubelet); sidecars=(csi-provisioner csi-resizer); fi
[[ -z "$program" ]] || ((lab)) || die "the newest pin ($modfile) does not hold $program: re-pin it with pin.sh"
[[ "$program_os" != windows ]] || bin="${bin%/bin}/windows-amd64"
# shellcheck source-path=SCRIPTDIR
source "$here/ldflags.sh"
ldflags="$(version_ldflags "$version")"
# The pin's own Go toolchain, if it names one, for this build only (otherwise the machine's Go).
toolchain="$(awk '$1=="toolchain" {print $2; exit}' "$modfile")"
[[ -z "$toolchain" ]] || export GOTOOLCHAIN="$toolchain"

built() {
  local f
  if [[ -n "$program" ]]; then [[ -x "$bin/$program${program_os:+.exe}" ]]; return; fi
  for f in appstor-kube "${servers[@]}" "${sidecars[@]}"; do [[ -x "$bin/$f" ]] || return 1; done
}
if built; then echo "$bin"; exit 0; fi
mkdir -p "$(dirname "$bin")"
# One build at a time (worktrees, lanes and test runs share the cache); a waiter finds it built.
exec 9>"${bin%/bin}.lock"
flock 9
if built; then echo "$bin"; exit 0; fi

# go_build WHAT ARGS...: a go build (or go test -c) from the lab's root with this pin, into $tmp.
tmp="$bin.tmp.$$"
go_build() {
  local what=$1; shift
  (cd "$here/.." && CGO_ENABLED=0 "$@") >&2 || { rm -rf "$tmp"; die "building $what $version failed (see above)"; }
}
# version_of MODULE: the version of MODULE in this pin (the sidecars' -X main.version).
version_of() { (cd "$here/.." && go list -modfile="$modfile" -m -f '{{.Version}}' "$1"); }
start=$SECONDS
rm -rf "$bin".tmp.* # what a failed or killed build left (the lock is held)
mkdir -p "$tmp"
if [[ -n "$program" ]]; then
  echo "building $program $version${program_os:+ for $program_os} into $bin (first time only; quick when go's build cache holds the servers' packages)" >&2
  case "$program" in
    csi-attacher) m=github.com/kubernetes-csi/external-attacher/v4
      go_build "$program" go build -modfile="$modfile" -trimpath -ldflags "-s -w -X main.version=$(version_of "$m")" -o "$tmp/" "$m/cmd/csi-attacher" ;;
    csi-sanity) m=github.com/kubernetes-csi/csi-test/v5
      go_build "$program" go build -modfile="$modfile" -trimpath -ldflags "-s -w -X main.VERSION=$(version_of "$m")" -o "$tmp/" "$m/cmd/csi-sanity" ;;
    csi-snapshotter | snapshot-controller) m=github.com/kubernetes-csi/external-snapshotter/v8
      go_build "$program" go build -modfile="$modfile" -trimpath -ldflags "-s -w -X main.version=$(version_of "$m")" -o "$tmp/" "$m/cmd/$program" ;;
    kubectl) go_build "$program" env GOOS="${program_os:-linux}" GOARCH=amd64 go build -modfile="$modfile" -trimpath -ldflags "$ldflags" -o "$tmp/" k8s.io/kubernetes/cmd/kubectl ;;
    e2e.test) go_build "$program" go test -c -modfile="$modfile" -trimpath -ldflags "$ldflags" -o "$tmp/e2e.test" ./specs ;;
    # Static, so that it runs in an image with nothing else in it.
    agnhost) go_build "$program" go build -modfile="$modfile" -trimpath -ldflags "$ldflags" -o "$tmp/" k8s.io/kubernetes/test/images/agnhost ;;
  esac
  mkdir -p "$bin"
  mv "$tmp"/* "$bin/" && rmdir "$tmp"
  echo "built $program $version in $((SECONDS - start))s" >&2
  echo "$bin"
  exit 0
fi
echo "building ${servers[*]}${sidecars[*]:+ and ${sidecars[*]}} $version into $bin${toolchain:+ with $toolchain} (first time only, about 8 minutes on 2 cores)" >&2
tags=""
((lab)) && tags=node
go_build "the servers" go build -modfile="$modfile" -tags "$tags" -trimpath -ldflags "$ldflags" -o "$tmp/" ./controlplane/cmd/appstor-kube
for f in "${servers[@]}"; do ln -s appstor-kube "$tmp/$f"; done
# Each sidecar apart: -X main.version differs; their packages come from the cache the servers filled.
for f in "${sidecars[@]}"; do
  case "$f" in
    csi-provisioner) m=github.com/kubernetes-csi/external-provisioner/v6 ;;
    csi-resizer) m=github.com/kubernetes-csi/external-resizer/v2 ;;
  esac
  go_build "$f" go build -modfile="$modfile" -trimpath -ldflags "-s -w -X main.version=$(version_of "$m")" -o "$tmp/" "$m/cmd/$f"
done
# Programs of an earlier build of this pin (--program) stay.
if [[ -d "$bin" ]]; then
  for f in "$bin"/*; do [[ -e "$tmp/$(basename "$f")" ]] || mv "$f" "$tmp/"; done
fi
rm -rf "$bin" && mv "$tmp" "$bin"
echo "built ${servers[*]}${sidecars[*]:+ and ${sidecars[*]}} $version in $((SECONDS - start))s" >&2
echo "$bin"
