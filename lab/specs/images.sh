#!/usr/bin/env bash
# The images Kubernetes' e2e specs run (run.sh's StatefulSet and external storage specs), made here:
# no image registry is reachable from this machine or its nodes, so nothing can be pulled. Their
# names are those of test/utils/image/manifest.go at the pinned release with every registry mapped
# to appstorage.local/e2e (repo-list.yaml, which run.sh hands the specs as KUBE_TEST_REPO_LIST), and
# each tag is the manifest's:
#
#   appstorage.local/e2e/agnhost:2.66.1 and :2.55   agnhost built from source, test/images/agnhost of
#       the pinned k8s.io/kubernetes module (it has no module of its own; build.sh builds it, static).
#       Both tags are the same build: the StatefulSet specs' webserver is AgnhostPrev (2.55) running
#       test-webserver, whose readiness probe reads /localhost.crt, so the image carries the
#       module's porter/localhost.crt and .key at / as the real image does. Under it, busybox for
#       sh, mv, ls, ... (the real image is alpine with bash, curl, iproute2, ...: not here).
#   appstorage.local/e2e/busybox:1.37.0-2           Debian's busybox-static (/bin/busybox) with its
#       applets as links, /tmp, and the passwd/group files the fsGroup and user specs read.
#   appstorage.local/e2e/nginx:1.27.0-2 and :1.28.0-2   a STAND-IN, not nginx: there is no nginx
#       on this machine and no registry to get one. The busybox image above, serving
#       /usr/share/nginx/html on port 80 with busybox's httpd as its default command. The specs
#       chosen here use it as a shell only (the storage suite's "volumes should allow exec of files
#       on the volume" runs /bin/sh in it); a spec that needs nginx's own behaviour would fail.
#   appstorage.local/e2e/glibc-dns-testing:2.1.1    a STAND-IN as well: a second name of the busybox
#       image above (the real one is Debian with dnsutils). The storage suite's multiVolume
#       "concurrently access the single volume" specs run it as a shell to write and read files (dd,
#       sha256sum), which busybox does; no chosen spec resolves names with it.
#   appstorage.local/e2e/pause:3.10.2               a second name of the nodes' own sandbox image
#       appstorage.local/pause:1 (lab/node/images.sh: a tiny program that waits for a signal),
#       tagged in each node's containerd, not built here.
#
# Images the chosen specs do not run (nfs, iscsi, sample-apiserver, ...) are not made: a spec
# that needs one fails with ErrImagePull, which run.sh's report names.
#
#   images.sh build        makes the archives once into the cache; prints their folder (last line)
#   images.sh load STATE   imports them into every node's containerd (k8s.io namespace, what kubelet
#                          sees) of the cluster in STATE (lab/node/nodes.sh), and tags the pause
#   images.sh repo-list    prints the path of repo-list.yaml (KUBE_TEST_REPO_LIST)
#
# apt: busybox-static
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}/e2e"
registry=appstorage.local/e2e
die() { echo "e2e images: $*" >&2; exit 1; }

sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }

# The registries of manifest.go's RegistryList, all but invalidRegistry (which specs use to get an
# image that cannot exist) mapped to ours.
repo_list() {
  local key
  for key in promoterE2eRegistry buildImageRegistry gcEtcdRegistry gcRegistry sigStorageRegistry \
    privateRegistry dockerLibraryRegistry cloudProviderGcpRegistry; do
    echo "$key: $registry"
  done
}

# archive REF ROOTFS OUT ENTRYPOINT CMD: a one-layer OCI image archive of the folder ROOTFS, named
# REF (what ctr import records), with ENTRYPOINT and CMD as JSON (or null).
archive() {
  local ref=$1 rootfs=$2 out=$3 entrypoint=$4 cmd=$5 dir blobs layer config manifest
  dir="$(mktemp -d)"; blobs="$dir/blobs/sha256"; mkdir -p "$blobs"
  # No times, owners or order from this machine: the same bytes, so the same image id, every build.
  tar -C "$rootfs" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$dir/layer" .
  layer="$(sha "$dir/layer")"; mv "$dir/layer" "$blobs/$layer"
  cat > "$dir/config" <<JSON
{"architecture":"amd64","os":"linux","config":{"Entrypoint":$entrypoint,"Cmd":$cmd,"Env":["PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:$layer"]}}
JSON
  config="$(sha "$dir/config")"; mv "$dir/config" "$blobs/$config"
  cat > "$dir/manifest" <<JSON
{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:$config","size":$(size "$blobs/$config")},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:$layer","size":$(size "$blobs/$layer")}]}
JSON
  manifest="$(sha "$dir/manifest")"
  cat > "$dir/index.json" <<JSON
{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:$manifest","size":$(size "$dir/manifest"),"annotations":{"io.containerd.image.name":"$ref","org.opencontainers.image.ref.name":"${ref##*:}"}}]}
JSON
  mv "$dir/manifest" "$blobs/$manifest"
  echo '{"imageLayoutVersion":"1.0.0"}' > "$dir/oci-layout"
  tar -C "$dir" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$out" oci-layout index.json blobs
  rm -rf "$dir"
}

# busybox_rootfs DIR: busybox and its applets under DIR/bin, and what a minimal distribution has.
busybox_rootfs() {
  local root=$1 applet
  mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root" "$root/home"
  cp /bin/busybox "$root/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [[ "$applet" == busybox ]] || ln -s busybox "$root/bin/$applet"
  done
  # Specs look in /usr/bin and /sbin too (e.g. /usr/bin/env, /sbin/ip).
  ln -s bin "$root/sbin"; mkdir -p "$root/usr"; ln -s ../bin "$root/usr/bin"; ln -s ../bin "$root/usr/sbin"
  chmod 1777 "$root/tmp"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
  echo 'hosts: files dns' > "$root/etc/nsswitch.conf"
}

build() {
  # grep reads the whole list (not -q): its early exit would fail the pipe (pipefail).
  [[ -x /bin/busybox ]] && /bin/busybox --list | grep -x mv >/dev/null || die "busybox-static is missing; install it: apt-get install busybox-static"
  local bin module key out tmp
  bin="$("$here/build.sh" agnhost | tail -n 1)"
  module="$(cd "$here/.." && go list -modfile="$(bash "$here/../controlplane/build.sh" --modfile newest)" -m -f '{{.Dir}}' k8s.io/kubernetes)"
  key="$( { sha /bin/busybox; sha "$bin/agnhost"; sha "$here/images.sh"; } | sha256sum | cut -c1-12)"
  out="$cache/images-$key"
  if [[ ! -f "$out/agnhost.tar" || ! -f "$out/busybox.tar" || ! -f "$out/nginx.tar" ]]; then
    tmp="$out.tmp.$$"; rm -rf "$tmp"; mkdir -p "$tmp"
    busybox_rootfs "$tmp/busybox"
    archive "$registry/busybox:1.37.0-2" "$tmp/busybox" "$tmp/busybox.tar" null '["sh"]'
    busybox_rootfs "$tmp/nginx"
    mkdir -p "$tmp/nginx/usr/share/nginx/html"
    echo '<html><body>stand-in for nginx: busybox httpd (lab/specs/images.sh)</body></html>' > "$tmp/nginx/usr/share/nginx/html/index.html"
    archive "$registry/nginx:1.27.0-2" "$tmp/nginx" "$tmp/nginx.tar" null '["httpd","-f","-p","80","-h","/usr/share/nginx/html"]'
    busybox_rootfs "$tmp/agnhost"
    cp "$bin/agnhost" "$tmp/agnhost/agnhost"; ln -s agnhost "$tmp/agnhost/agnhost-2"
    cp "$module/test/images/agnhost/porter/localhost.crt" "$module/test/images/agnhost/porter/localhost.key" "$tmp/agnhost/"
    chmod 0644 "$tmp/agnhost/localhost.crt" "$tmp/agnhost/localhost.key"
    mkdir -p "$tmp/agnhost/uploads"
    archive "$registry/agnhost:2.66.1" "$tmp/agnhost" "$tmp/agnhost.tar" '["/agnhost"]' '["pause"]'
    mkdir -p "$out"; mv "$tmp/agnhost.tar" "$tmp/busybox.tar" "$tmp/nginx.tar" "$out/"; rm -rf "$tmp"
  fi
  echo "$out"
}

# ctr_in STATE NODE ARGS...: ctr against NODE's containerd, in NODE's namespaces, where kubelet looks.
ctr_in() {
  local state=$1 node=$2; shift 2
  bash "$here/../node/nodes.sh" exec "$state" "$node" \
    ctr --address "$state/nodes/$node/containerd/containerd.sock" --namespace k8s.io "$@"
}

# alias_image STATE NODE FROM TO: TO names FROM's image. Left alone when it already does, so specs
# running meanwhile never find TO missing; ctr tag refuses an existing name, so a TO of an older
# build (only ever one of our names) is dropped first.
alias_image() {
  local state=$1 node=$2 from=$3 to=$4 digest have
  digest="$(ctr_in "$state" "$node" images ls "name==$from" | awk 'NR == 2 {print $3}')"
  [[ -n "$digest" ]] || return 1
  have="$(ctr_in "$state" "$node" images ls "name==$to" | awk 'NR == 2 {print $3}')"
  [[ "$have" == "$digest" ]] && return 0
  [[ -z "$have" ]] || ctr_in "$state" "$node" images rm "$to" >/dev/null
  ctr_in "$state" "$node" images tag "$from" "$to" >/dev/null
}

load() {
  local state=${1:?usage: images.sh load STATE (the cluster folder, e.g. ~/.cache/kubectl-appstorage/cluster-zones)} dir node f
  [[ -d "$state/nodes" ]] || die "$state has no nodes (lab/node/nodes.sh); give the cluster's folder"
  dir="$(build | tail -n 1)"
  for node in $(bash "$here/../node/nodes.sh" names "$state"); do
    for f in busybox agnhost nginx; do
      ctr_in "$state" "$node" images import "$dir/$f.tar" >/dev/null || die "importing $f into $node's containerd failed"
    done
    alias_image "$state" "$node" "$registry/agnhost:2.66.1" "$registry/agnhost:2.55" ||
      die "tagging agnhost:2.55 in $node's containerd failed"
    alias_image "$state" "$node" "$registry/nginx:1.27.0-2" "$registry/nginx:1.28.0-2" ||
      die "tagging nginx:1.28.0-2 in $node's containerd failed"
    alias_image "$state" "$node" "$registry/busybox:1.37.0-2" "$registry/glibc-dns-testing:2.1.1" ||
      die "tagging glibc-dns-testing:2.1.1 in $node's containerd failed"
    alias_image "$state" "$node" appstorage.local/pause:1 "$registry/pause:3.10.2" ||
      die "$node's containerd has no appstorage.local/pause:1 (lab/node/images.sh load) to tag as pause:3.10.2"
    echo "e2e images loaded into $node" >&2
  done
}

case "${1:-}" in
  build) build ;;
  load) shift; load "$@" ;;
  repo-list) mkdir -p "$cache" && repo_list > "$cache/repo-list.yaml" && echo "$cache/repo-list.yaml" ;;
  *) die "usage: images.sh build | load STATE | repo-list" ;;
esac
