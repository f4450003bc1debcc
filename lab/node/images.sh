#!/usr/bin/env bash
# The node's images, made here (no registry): appstorage.local/pause:1 (a tiny static C program that
# waits for a signal), appstorage.local/workload:1 (Debian's busybox-static with its applets as
# links: sh, sleep, dd, df, sha256sum, cp, tar, find, ...) and appstorage.local/copy:1, the tests'
# --copy-image of --migrate-existing: the workload's busybox applets, and Debian's rsync, getfattr,
# setfattr, getfacl and setfacl with the libraries they load (the dynamic loader among them), copied
# from this machine. Each is a one-layer OCI image archive (a rootfs tarball, its config and its
# manifest), imported with ctr. build and load also make and import the databases' images of
# db-images.sh (appstorage.local/postgres:15, appstorage.local/etcd:3.4, from Debian's packages).
#
#   images.sh build         makes the archives once into the cache; prints their folder (last line)
#   images.sh load SOCKET   imports them into containerd's k8s.io namespace (what kubelet sees)
#
# apt: busybox-static gcc libc6-dev rsync acl attr (db-images.sh: apt-get download)
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

# The tools of the copy image beside busybox's applets (the copy script's rsync; the tests' xattr and ACL tools).
copy_tools=(rsync getfattr setfattr getfacl setfacl)

# busybox_rootfs DIR: busybox and a link per applet in DIR/bin, and a /tmp.
busybox_rootfs() {
  local a
  mkdir -p "$1/bin" "$1/tmp"
  cp /bin/busybox "$1/bin/busybox"
  for a in $(/bin/busybox --list); do [[ "$a" == busybox ]] || ln -s busybox "$1/bin/$a"; done
  chmod 1777 "$1/tmp"
}

# copy_rootfs DIR: busybox_rootfs, and the copy tools with every library they load, at the paths
# the host has them (the loader finds them there as on the host).
copy_rootfs() {
  local t path lib
  busybox_rootfs "$1"
  for t in "${copy_tools[@]}"; do
    path="$(command -v "$t")"
    rm -f "$1/bin/$t"
    cp "$path" "$1/bin/$t"
    for lib in $(ldd "$path" | awk '/=>/ { print $3 } /^\t\// { print $1 }'); do
      mkdir -p "$1$(dirname "$lib")"
      cp -L "$lib" "$1$lib"
    done
  done
}

build() {
  [[ -x /bin/busybox && " $(/bin/busybox --list | tr "\n" " ") " == *" sha256sum "* ]] || die "busybox-static is missing; install it: apt-get install busybox-static"
  command -v gcc >/dev/null || die "gcc is missing (it builds the pause program); install it: apt-get install gcc libc6-dev"
  local t key out tmp
  for t in "${copy_tools[@]}"; do command -v "$t" >/dev/null || die "$t is missing (the copy image has it); install it: apt-get install rsync acl attr"; done
  key="$( { echo "$pause_c"; sha /bin/busybox; sha "$here/images.sh"; sha "$here/oci.sh"; for t in "${copy_tools[@]}"; do sha "$(command -v "$t")"; ldd "$(command -v "$t")"; done; } | sha256sum | cut -c1-12)"
  out="$cache/images-$key"
  if [[ ! -f "$out/workload.tar" || ! -f "$out/pause.tar" || ! -f "$out/copy.tar" ]]; then
    tmp="$out.tmp.$$"; mkdir -p "$tmp/pause/rootfs"
    echo "$pause_c" > "$tmp/pause.c"
    gcc -static -Os -s -o "$tmp/pause/rootfs/pause" "$tmp/pause.c" || die "compiling the pause program failed"
    oci appstorage.local/pause 1 "$tmp/pause/rootfs" "$tmp/pause.tar" '["/pause"]' null
    busybox_rootfs "$tmp/workload/rootfs"
    oci appstorage.local/workload 1 "$tmp/workload/rootfs" "$tmp/workload.tar" null '["sh"]'
    copy_rootfs "$tmp/copy/rootfs"
    # The tools must run from the image's own files alone (a library left out fails here, not in a pod).
    chroot "$tmp/copy/rootfs" /bin/rsync --version >/dev/null || die "rsync does not run in the copy image's rootfs (a library missing?)"
    chroot "$tmp/copy/rootfs" /bin/getfattr --version >/dev/null || die "getfattr does not run in the copy image's rootfs"
    oci appstorage.local/copy 1 "$tmp/copy/rootfs" "$tmp/copy.tar" null '["sh"]'
    mkdir -p "$out"; mv "$tmp/pause.tar" "$tmp/workload.tar" "$tmp/copy.tar" "$out/"; rm -rf "$tmp"
  fi
  bash "$here/db-images.sh" build >/dev/null
  echo "$out"
}

load() {
  local sock=${1:?usage: images.sh load SOCKET} dir f
  dir="$(build | tail -n 1)"
  for f in pause workload copy; do
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
