#!/usr/bin/env bash
# The node's images, made here (no registry): appstorage.local/pause:1 (a tiny static C program that
# waits for a signal) and appstorage.local/workload:1 (Debian's busybox-static with its applets as
# links: sh, sleep, dd, df, sha256sum, cp, tar, find, ...). Each is a one-layer OCI image archive
# (a rootfs tarball, its config and its manifest), imported with ctr. build and load also make and
# import the databases' images of db-images.sh (appstorage.local/postgres:15, appstorage.local/etcd:3.4,
# from Debian's packages).
#
#   images.sh build         makes both archives once into the cache; prints their folder (last line)
#   images.sh load SOCKET   imports them into containerd's k8s.io namespace (what kubelet sees)
#
# apt: busybox-static gcc libc6-dev (db-images.sh: apt-get download)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}/node"
die() { echo "images: $*" >&2; exit 1; }

# The pause program: PID 1 of every pod sandbox; exits on SIGINT/SIGTERM, reaps zombies.
pause_c='#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void quit(int s) { (void)s; _exit(0); }
static void reap(int s) { (void)s; while (waitpid(-1, 0, WNOHANG) > 0) {} }
int main(void) {
  signal(SIGINT, quit); signal(SIGTERM, quit); signal(SIGCHLD, reap);
  for (;;) pause();
}'

# The archive format, shared with db-images.sh.
# shellcheck source=lab/node/oci.sh
source "$here/oci.sh"

build() {
  [[ -x /bin/busybox && " $(/bin/busybox --list | tr "\n" " ") " == *" sha256sum "* ]] || die "busybox-static is missing; install it: apt-get install busybox-static"
  command -v gcc >/dev/null || die "gcc is missing (it builds the pause program); install it: apt-get install gcc libc6-dev"
  local key out tmp
  key="$( { echo "$pause_c"; sha /bin/busybox; sha "$here/images.sh"; sha "$here/oci.sh"; } | sha256sum | cut -c1-12)"
  out="$cache/images-$key"
  if [[ ! -f "$out/workload.tar" || ! -f "$out/pause.tar" ]]; then
    tmp="$out.tmp.$$"; mkdir -p "$tmp/pause/rootfs" "$tmp/workload/rootfs/bin" "$tmp/workload/rootfs/tmp"
    echo "$pause_c" > "$tmp/pause.c"
    gcc -static -Os -s -o "$tmp/pause/rootfs/pause" "$tmp/pause.c" || die "compiling the pause program failed"
    oci appstorage.local/pause 1 "$tmp/pause/rootfs" "$tmp/pause.tar" '["/pause"]' null
    cp /bin/busybox "$tmp/workload/rootfs/bin/busybox"
    local a
    for a in $(/bin/busybox --list); do [[ "$a" == busybox ]] || ln -s busybox "$tmp/workload/rootfs/bin/$a"; done
    chmod 1777 "$tmp/workload/rootfs/tmp"
    oci appstorage.local/workload 1 "$tmp/workload/rootfs" "$tmp/workload.tar" null '["sh"]'
    mkdir -p "$out"; mv "$tmp/pause.tar" "$tmp/workload.tar" "$out/"; rm -rf "$tmp"
  fi
  bash "$here/db-images.sh" build >/dev/null
  echo "$out"
}

load() {
  local sock=${1:?usage: images.sh load SOCKET} dir f
  dir="$(build | tail -n 1)"
  for f in pause workload; do
    ctr --address "$sock" --namespace k8s.io images import "$dir/$f.tar" >/dev/null ||
      die "importing $dir/$f.tar into containerd failed"
  done
  bash "$here/db-images.sh" load "$sock"
}

case "${1:-}" in
  build) build ;;
  load) shift; load "$@" ;;
  *) die "usage: images.sh build | load SOCKET" ;;
esac
