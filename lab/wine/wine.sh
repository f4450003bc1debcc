#!/usr/bin/env bash
# The Windows check's runtime: wine 10 of Debian trixie, in a chroot made with debootstrap from
# Debian's own packages, because Debian 12's wine 8 cannot start Node.js 24 (V8 aborts in
# SegmentedTable::InitializeTable). Made once into the cache (about a minute and 1.6 GB here) and
# removed by nothing but `wine.sh clean`. test/e2e/packaging.test.ts runs the release's windows/amd64
# binary with it.
#
#   wine.sh build   makes the chroot once (debootstrap --variant=minbase trixie, then wine64 and a
#                   wine prefix made by wineboot) into ${APPSTORAGE_CACHE:-~/.cache/kubectl-appstorage}/wine/;
#                   prints its folder (last line). Needs root and debootstrap (apt-get install debootstrap).
#   wine.sh run DIR [--kube KUBEDIR] [NAME=VALUE...] -- PROGRAM [ARGS...]
#                   runs the Windows program PROGRAM (a path under DIR, or a program of wine's such as
#                   cmd) with wine, in a mount and pid namespace of its own: the chroot read-only under
#                   a writable layer that goes with the run (so runs never change the cache, and runs
#                   side by side do not share a wine prefix), DIR bound at the same path (Z:\ and the
#                   path in Windows), KUBEDIR bound as the Windows user's C:\users\root\.kube (where
#                   kubectl looks for its config: wine sets USERPROFILE to C:\users\root, as Windows
#                   sets it, whatever the environment says), NAME=VALUE in the program's environment
#                   (wine passes the environment on; WINEPATH=Z:\... adds to the Windows PATH). Exits with the
#                   program's exit code. Its stdin, stdout and stderr are the caller's: stdout and
#                   stderr must be files or a terminal, not pipes (under wine, Node.js fails on a pipe
#                   with EBADF). The network is the host's, so 127.0.0.1 is this machine.
#   wine.sh clean   removes every chroot this script made.
#
# The Debian mirror is the one this machine's apt uses (its sources' first Debian archive), or
# APPSTORAGE_DEBIAN_MIRROR.
set -euo pipefail
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}/wine"
suite=trixie
packages=(wine64)
die() { echo "wine: $*" >&2; exit 1; }
log() { echo "wine: $*" >&2; }

# What the chroot is made of: a change here makes a new one (the old stays until clean).
key="$(echo "$suite minbase ${packages[*]} prefix hardlinked 1" | sha256sum | cut -c1-12)"
dir="$cache/$suite-$key"

# The mirror of this machine's apt sources (deb822 .sources or one-line sources.list), without the
# security archive; Debian's own redirector when none is found.
mirror() {
  [[ -n "${APPSTORAGE_DEBIAN_MIRROR:-}" ]] && { echo "$APPSTORAGE_DEBIAN_MIRROR"; return; }
  local m
  m="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '$1 == "URIs:" {print $2}' | grep -v -- '-security' | head -n 1 || true)"
  [[ -n "$m" ]] || m="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '$1 == "deb" && $2 ~ /^https?:/ {print $2}' | grep -v -- '-security' | grep '/debian/\?$' | head -n 1 || true)"
  echo "${m:-http://deb.debian.org/debian}"
}

# in_chroot ROOT CMD...: CMD in the chroot, with /dev, /proc and a fresh /tmp, in a mount namespace
# of its own (nothing stays mounted on the host).
in_chroot() {
  local root=$1; shift
  unshare --mount --pid --fork --propagation private bash -c '
    root=$1; shift
    mount --rbind /dev "$root/dev" && mount -t proc proc "$root/proc" && mount -t tmpfs tmpfs "$root/tmp" || exit 1
    exec chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"' in_chroot "$root" "$@"
}

cmd_build() {
  ((EUID == 0)) || die "the chroot is made as root (debootstrap, chroot, unshare --mount); run it as root"
  command -v debootstrap >/dev/null || die "debootstrap is missing; install it: apt-get install debootstrap"
  mkdir -p "$cache"
  exec 9>"$cache/build.lock"
  flock 9
  if [[ ! -f "$dir/ready" ]]; then
    local tmp="$dir.tmp.$$" start=$SECONDS m
    rm -rf "$dir".tmp.* # what a failed or killed build left (the lock is held)
    m="$(mirror)"
    log "making Debian $suite (minbase) with ${packages[*]} from $m into $dir (first time only, about a minute and 1.6 GB)"
    debootstrap --variant=minbase "$suite" "$tmp/root" "$m" >"$tmp.log" 2>&1 ||
      { tail -n 20 "$tmp.log" >&2; rm -rf "$tmp" "$tmp.log"; die "debootstrap $suite from $m failed (log above)"; }
    rm -f "$tmp.log"
    in_chroot "$tmp/root" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${packages[*]} </dev/null >/dev/null && apt-get clean && rm -rf /var/lib/apt/lists/*" >&2 ||
      { rm -rf "$tmp"; die "installing ${packages[*]} in the chroot failed (see above)"; }
    # The wine prefix, made once here rather than by every run (a few seconds each). wineboot copies
    # wine's Windows DLLs into it (about 700 MB): hard links to the installed ones instead.
    in_chroot "$tmp/root" sh -c 'WINEDEBUG=-all WINEPREFIX=/root/.wine XDG_RUNTIME_DIR=/tmp /usr/lib/wine/wine64 wineboot --init && /usr/lib/wine/wineserver -w && hardlink -c -q /usr/lib/x86_64-linux-gnu/wine /root/.wine/drive_c/windows' >/dev/null 2>&1 ||
      { rm -rf "$tmp"; die "wineboot failed in the chroot"; }
    in_chroot "$tmp/root" /usr/lib/wine/wine64 --version > "$tmp/wine-version" 2>/dev/null ||
      { rm -rf "$tmp"; die "wine does not run in the chroot"; }
    mkdir "$tmp/layer" # where each run mounts its own layer (in its own mount namespace)
    touch "$tmp/ready"
    rm -rf "$dir" && mv "$tmp" "$dir"
    log "made $dir ($(cat "$dir/wine-version"), $(du -sh "$dir" | cut -f1)) in $((SECONDS - start))s"
  fi
  exec 9>&-
  echo "$dir"
}

cmd_run() {
  local usage="usage: wine.sh run DIR [--kube KUBEDIR] [NAME=VALUE...] -- PROGRAM [ARGS...]"
  [[ $# -ge 3 ]] || die "$usage"
  ((EUID == 0)) || die "wine.sh run needs root (chroot, unshare --mount); run it as root"
  [[ -f "$dir/ready" ]] || die "no chroot in $dir; make it first: lab/wine/wine.sh build"
  local bind=$1; shift
  [[ -d "$bind" ]] || die "$bind is not a folder"
  bind="$(cd "$bind" && pwd)"
  local kube="" env=()
  if [[ "${1:-}" == --kube ]]; then
    [[ -d "${2:-}" ]] || die "--kube needs a folder; $usage"
    kube="$(cd "$2" && pwd)"; shift 2
  fi
  while (($#)) && [[ "$1" != -- ]]; do
    [[ "$1" == *=* ]] || die "\"$1\" is not NAME=VALUE; $usage"
    env+=("$1"); shift
  done
  [[ "${1:-}" == -- && $# -ge 2 ]] || die "$usage"
  shift
  # The run's own layer over the chroot, on a tmpfs of its mount namespace: it goes with the run.
  unshare --mount --pid --fork --propagation private bash -c '
    set -e
    lower=$1/root layer=$1/layer bind=$2 kube=$3; shift 3
    mount -t tmpfs tmpfs "$layer" && mkdir "$layer/upper" "$layer/work" "$layer/root"
    mount -t overlay overlay -o "lowerdir=$lower,upperdir=$layer/upper,workdir=$layer/work" "$layer/root"
    root=$layer/root
    mount --rbind /dev "$root/dev"; mount -t proc proc "$root/proc"; mount -t tmpfs tmpfs "$root/tmp"
    mkdir -p "$root$bind" && mount --bind "$bind" "$root$bind"
    if [[ -n "$kube" ]]; then
      mkdir -p "$root/root/.wine/drive_c/users/root/.kube" && mount --bind "$kube" "$root/root/.wine/drive_c/users/root/.kube"
    fi
    mkdir -m 700 "$root/tmp/xdg"
    exec chroot "$root" /bin/sh -c "cd \"\$0\" && exec \"\$@\"" "$bind" env -i HOME=/root PATH=/usr/bin:/bin LANG=C.UTF-8 \
      WINEDEBUG=-all WINEPREFIX=/root/.wine XDG_RUNTIME_DIR=/tmp/xdg "$@"' wine-run "$dir" "$bind" "$kube" "${env[@]}" /usr/lib/wine/wine64 "$@"
}

cmd_clean() {
  [[ -d "$cache" ]] || { log "nothing to remove"; return 0; }
  mkdir -p "$cache"
  exec 9>"$cache/build.lock"
  flock 9
  log "removing $cache ($(du -sh "$cache" | cut -f1))"
  rm -rf --one-file-system "${cache:?}"/*
}

case "${1:-}" in
  build) cmd_build ;;
  run) shift; cmd_run "$@" ;;
  clean) cmd_clean ;;
  *) echo "usage: lab/wine/wine.sh build | run DIR [--kube KUBEDIR] [NAME=VALUE...] -- PROGRAM [ARGS...] | clean" >&2; exit 2 ;;
esac
