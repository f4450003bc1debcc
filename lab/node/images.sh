#!/usr/bin/env bash
# The node's images, made here (no registry): appstorage.local/pause:1 (a tiny static C program that
# waits for a signal), appstorage.local/workload:1 (Debian's busybox-static with its applets as
# links: sh, sleep, dd, df, sha256sum, cp, tar, find, ...) and appstorage.local/copy:1, the tests'
# --copy-image of --migrate-existing: the workload's busybox applets, and Debian's rsync, getfattr,
# setfattr, getfacl and setfacl with the libraries they load (the dynamic loader among them), copied
# from this machine. Each is a one-layer OCI image archive (a rootfs tarball, its config and its
# manifest), imported with ctr.
#
#   images.sh build         makes the archives once into the cache; prints their folder (last line)
#   images.sh load SOCKET   imports them into containerd's k8s.io namespace (what kubelet sees)
#
# apt: busybox-static gcc libc6-dev rsync acl attr
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

sha() { sha256sum "$1" | cut -d' ' -f1; }

# oci NAME TAG ROOTFS OUT ENTRYPOINT_JSON CMD_JSON: writes the OCI archive OUT of ROOTFS.
oci() {
  local name=$1 tag=$2 rootfs=$3 out=$4 entry=$5 cmd=$6 d layer diff cfg man
  d="$(mktemp -d)"; mkdir -p "$d/blobs/sha256"
  # Same bytes every time (sorted, no times, no owners): the same image id on every machine.
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$rootfs" -cf "$d/layer.tar" .
  diff="$(sha "$d/layer.tar")"; mv "$d/layer.tar" "$d/blobs/sha256/$diff"
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s,"Cmd":%s,"Env":["PATH=/bin"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$entry" "$cmd" "$diff" > "$d/config.json"
  cfg="$(sha "$d/config.json")"; mv "$d/config.json" "$d/blobs/sha256/$cfg"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%d}]}' \
    "$cfg" "$(stat -c %s "$d/blobs/sha256/$cfg")" "$diff" "$(stat -c %s "$d/blobs/sha256/$diff")" > "$d/manifest.json"
  man="$(sha "$d/manifest.json")"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%d,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s:%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$man" "$(stat -c %s "$d/manifest.json")" "$name" "$tag" "$tag" > "$d/index.json"
  mv "$d/manifest.json" "$d/blobs/sha256/$man"
  echo '{"imageLayoutVersion":"1.0.0"}' > "$d/oci-layout"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$d" -cf "$out" oci-layout index.json blobs
  rm -rf "$d"
}

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
  key="$( { echo "$pause_c"; sha /bin/busybox; sha "$here/images.sh"; for t in "${copy_tools[@]}"; do sha "$(command -v "$t")"; ldd "$(command -v "$t")"; done; } | sha256sum | cut -c1-12)"
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
  echo "$out"
}

load() {
  local sock=${1:?usage: images.sh load SOCKET} dir f
  dir="$(build | tail -n 1)"
  for f in pause workload copy; do
    ctr --address "$sock" --namespace k8s.io images import "$dir/$f.tar" >/dev/null ||
      die "importing $dir/$f.tar into containerd failed"
  done
}

case "${1:-}" in
  build) build ;;
  load) shift; load "$@" ;;
  *) die "usage: images.sh build | load SOCKET" ;;
esac
