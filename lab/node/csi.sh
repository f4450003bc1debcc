#!/usr/bin/env bash
# The node's storage: the project's own CSI driver (lab/node/csi, driver name csi.appstorage.local)
# and the real kubernetes-csi sidecars external-provisioner and external-resizer, programs of the
# lab's newest pin built beside its servers (lab/controlplane/build.sh); csi-sanity (csi-test) checks
# the driver.
#
#   csi.sh build
#       builds appstorage-csi-driver (once; cached under ${APPSTORAGE_CACHE:-~/.cache/kubectl-appstorage}/node/),
#       links csi-provisioner and csi-resizer beside it, and prints that bin directory (last line).
#   csi.sh build-sanity
#       builds csi-sanity (once; only the node suite's csi-sanity test needs it, so the demo never
#       builds it) and prints its bin directory (last line).
#   csi.sh up STATE_DIR KUBECONFIG NODE_NAME KUBELET_ROOT [--expand-at-mount]
#       starts the driver (CSI socket KUBELET_ROOT/plugins/csi.appstorage.local/csi.sock, kubelet
#       registration socket KUBELET_ROOT/plugins_registry/csi.appstorage.local-reg.sock, volumes in
#       STATE_DIR/volumes), csi-provisioner and csi-resizer (logs STATE_DIR/logs/NAME.log, pids
#       STATE_DIR/run/NAME.pid), then applies the CSIDriver and the storage classes appstorage-csi
#       (default, expandable), appstorage-csi-b (expandable) and appstorage-csi-fixed (not expandable),
#       all WaitForFirstConsumer. KUBECONFIG must be a cluster admin (system:masters): the sidecars
#       run with it, so no RBAC objects are created. --expand-at-mount: the driver grows a filesystem
#       only when the volume is mounted, never while a pod uses it, so an expanded claim keeps the
#       FileSystemResizePending condition until its pod is restarted. When all three already run for
#       STATE_DIR, up only applies the objects again (stop first to change the mode).
#   csi.sh down STATE_DIR KUBELET_ROOT
#       stops the sidecars and the driver, unmounts what the driver mounted, detaches the loop devices
#       of STATE_DIR/volumes, removes the sockets. Idempotent. The volumes' files stay (they are data).
#   csi.sh build-attacher
#       builds csi-attacher (once; only the zones' cluster attaches volumes) and prints its bin
#       directory (last line).
#   csi.sh build-snapshotter
#       builds external-snapshotter's snapshot-controller and csi-snapshotter (once) and prints their
#       bin directory (last line). up starts them when they are built (so the demo builds nothing
#       more); up-zones builds them. With them, up applies the VolumeSnapshot CRDs of the same
#       module (client/config/crd, as its kustomization lists them, group snapshots included) and the
#       VolumeSnapshotClass appstorage-csi-snapshot (the default class, deletionPolicy Delete); the
#       snapshot-controller runs as a process beside the sidecars, with KUBECONFIG (a cluster admin),
#       not as a Deployment.
#   csi.sh sanity [--attach | --split] [CSI-SANITY FLAGS...]
#       runs csi-sanity against a fresh driver in a temporary directory and cleans up; exits with
#       csi-sanity's code. Without a flag the one node's driver; --attach one process with a zone,
#       attach and stage; --split the zones' shape (a controller part and a node part on two
#       sockets). Flags go to csi-sanity (for example --ginkgo.v, --ginkgo.focus=Expand, or
#       --csi.testvolumeaccesstype=block for raw block volumes).
#
# Volumes: a sparse file of the claim's size rounded up to a MiB, xfs (the classes' fstype; at least
# 300 MiB, mkfs.xfs's minimum) or ext4 (at least 16 MiB; grows only at mount here: no CAP_SYS_RESOURCE),
# or a raw block volume (volumeMode: Block; the loop device is bind-mounted at the pod's device path).
# A class parameter expansion=online|at-mount sets the mode per volume, over the driver's flag.
# The volumes' files live in STATE_DIR/pool.img, a sparse file (${APPSTORAGE_CSI_POOL_SIZE:-64G} when
# made; only what is written takes disk space) formatted XFS with reflinks (mkfs.xfs -m reflink=1)
# and loop-mounted at STATE_DIR/volumes (with discard, so that deleted data frees the host's disk):
# clones and snapshots are copy-on-write copies of a volume's file (FICLONE), which take the same
# few milliseconds for 1 GiB and 10 GiB. down unmounts it; the file stays (it is the data). The
# volumes of a state made before the pool (files directly in STATE_DIR/volumes) are moved into it.
# Snapshots and clones of a mounted volume freeze its filesystem for the copy (fsfreeze), also in
# the zones' nodes (the controller part reaches a node's mounts through its node part's
# /proc/PID/root); a raw block volume in use is copied crash-consistent.
# kubelet: the driver registers itself through KUBELET_ROOT/plugins_registry (no node-driver-registrar);
# the driver and kubelet must agree on KUBELET_ROOT (kubelet --root-dir).
# apt: e2fsprogs xfsprogs util-linux mount
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}/node"
driver_name=csi.appstorage.local

die() { echo "csi: $*" >&2; exit 1; }
log() { echo "csi: $*" >&2; }

# The sidecars, csi-sanity and csi-attacher are programs of the lab's newest pin
# (lab/controlplane/versions/MINOR.mod, which pins their releases), built beside the servers
# (lab/controlplane/build.sh), whose packages they share; the driver changes with its source.
controlplane_build() { bash "$here/../controlplane/build.sh" "$@" | tail -n 1; }

cmd_build_sanity() { controlplane_build --program csi-sanity; }
# external-attacher: only the zones' cluster (scripts/cluster up --nodes) attaches volumes.
cmd_build_attacher() { controlplane_build --program csi-attacher; }
# external-snapshotter: its two programs land in the newest pin's bin folder, beside the servers.
cmd_build_snapshotter() {
  controlplane_build --program snapshot-controller >/dev/null || exit 1
  controlplane_build --program csi-snapshotter
}
snapshotter_programs=(csi-snapshotter snapshot-controller)

# snapshotter_bin: the folder of snapshot-controller and csi-snapshotter when both are built, else
# nothing (builds nothing but what csi.sh build builds).
snapshotter_bin() {
  local dir f
  dir="$(controlplane_build newest)" || return 1
  for f in "${snapshotter_programs[@]}"; do [[ -x "$dir/$f" ]] || return 0; done
  echo "$dir"
}

# snapshot_crds: the VolumeSnapshot CRDs' files, of the external-snapshotter client module of the
# pin the snapshotter is built from (client/config/crd, the files its kustomization lists).
snapshot_crds() {
  local modfile dir
  modfile="$(bash "$here/../controlplane/build.sh" --modfile newest)"
  dir="$(cd "$here/.." && go mod download -modfile="$modfile" -json github.com/kubernetes-csi/external-snapshotter/client/v8 |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -f "$dir/config/crd/kustomization.yaml" ]] || die "the VolumeSnapshot CRDs are not in the module cache (go mod download of external-snapshotter/client/v8 with $modfile)"
  awk '$1 == "-" {print $2}' "$dir/config/crd/kustomization.yaml" | while read -r f; do echo "$dir/config/crd/$f"; done
}

# apply_snapshot_crds KUBECONFIG: the CRDs, established before the snapshot-controller starts (it
# waits for them, 30 s at most).
apply_snapshot_crds() {
  local files=() f
  while read -r f; do files+=(-f "$f"); done < <(snapshot_crds)
  kubectl --kubeconfig "$1" apply "${files[@]}" >&2
  kubectl --kubeconfig "$1" wait --for condition=established --timeout=60s \
    crd/volumesnapshots.snapshot.storage.k8s.io crd/volumesnapshotcontents.snapshot.storage.k8s.io \
    crd/volumesnapshotclasses.snapshot.storage.k8s.io >&2
}

# start_snapshotter STATE SOCK KUBECONFIG SNAPSHOTTER_BIN: the cluster's snapshot-controller (it
# turns VolumeSnapshots into VolumeSnapshotContents) and the driver's csi-snapshotter sidecar (it
# turns those into CreateSnapshot calls), both with KUBECONFIG and no leader election.
start_snapshotter() {
  local state=$1 sock=$2 kubeconfig=$3 sbin=$4
  apply_snapshot_crds "$kubeconfig"
  start "$state/run" "$state/logs" snapshot-controller "$sbin/snapshot-controller" \
    --kubeconfig "$kubeconfig" --leader-election=false --retry-interval-max=30s --v=2
  start "$state/run" "$state/logs" csi-snapshotter "$sbin/csi-snapshotter" \
    --kubeconfig "$kubeconfig" --csi-address "$sock" --leader-election=false \
    --extra-create-metadata --timeout=60s --retry-interval-max=30s --v=2
}

apply_snapshot_class() {
  kubectl --kubeconfig "$1" apply -f - >&2 <<YAML
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata:
  name: appstorage-csi-snapshot
  annotations:
    snapshot.storage.kubernetes.io/is-default-class: "true"
driver: $driver_name
deletionPolicy: Delete
YAML
}

# --- the pool: the volumes' files on an XFS with reflinks ------------------------------------
pool_size="${APPSTORAGE_CSI_POOL_SIZE:-64G}"

# pool_up STATE: STATE/pool.img (made once) mounted at STATE/volumes.
pool_up() {
  local state=$1 vol="$1/volumes" img="$1/pool.img" tmp
  mkdir -p "$vol"
  if mountpoint -q "$vol"; then
    [[ "$(findmnt -n -o FSTYPE --mountpoint "$vol")" == xfs ]] || die "$vol is a mount of something else than the volumes' pool ($img)"
    return 0
  fi
  if [[ ! -f "$img" ]]; then
    rm -f "$img.tmp"
    truncate -s "$pool_size" "$img.tmp"
    mkfs.xfs -q -m reflink=1 -L appstor-pool "$img.tmp" || { rm -f "$img.tmp"; die "mkfs.xfs -m reflink=1 of the volumes' pool failed"; }
    mv "$img.tmp" "$img"
  fi
  if [[ -n "$(ls -A "$vol")" ]]; then
    # Volumes of a state made before the pool: moved into it (sparse files stay sparse).
    [[ -z "$(loops_under "$vol")" ]] || die "the volumes in $vol, from before the pool, are in use; stop the cluster first (scripts/cluster down), which stops what uses them"
    tmp="$state/pool.mnt"
    mkdir -p "$tmp"
    mount -o loop,discard "$img" "$tmp"
    if cp -a --sparse=always "$vol/." "$tmp/"; then
      umount "$tmp"
      find "$vol" -mindepth 1 -delete
      log "moved the volumes of $vol into the pool $img"
    else
      umount "$tmp"
      die "cannot move the volumes of $vol into the pool $img"
    fi
    rmdir "$tmp"
  fi
  # A loop device of its own, freed once the last mount of it goes (mount -o loop sets autoclear;
  # it reuses a loop device of the same file, so there is never a second one).
  mount -o loop,discard "$img" "$vol" || die "cannot mount the volumes' pool $img at $vol"
}

# pool_down STATE: unmounts the pool (its file stays).
pool_down() {
  local vol="$1/volumes" i
  mountpoint -q "$vol" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    umount "$vol" 2>/dev/null && return 0
    sleep 0.1 # a loop device of a volume being detached still holds its file
  done
  umount -l "$vol" || log "cannot unmount the volumes' pool at $vol"
}

# mounts_of DEV: DEV's mount points in this mount table, deepest first: filesystems mounted from it
# and its device node bind-mounted (a raw block volume published). Escaped as /proc writes them.
mounts_of() {
  awk -v d="$1" '{
    for (i = 7; i <= NF && $i != "-"; i++) {}
    if ($(i + 2) == d || ($(i + 1) == "devtmpfs" && "/dev" $4 == d)) print $5
  }' /proc/self/mountinfo | sort -r
}

# unmount_volumes STATE: unmounts, in this mount table, what is left of the volumes' mounts (what
# kubelet did not unpublish).
unmount_volumes() {
  local dev mp
  for dev in $(loops_under "$1/volumes"); do
    for mp in $(mounts_of "$dev"); do
      mp="$(printf '%b' "$mp")" # /proc writes a space as \040
      umount "$mp" 2>/dev/null || umount -l "$mp" || log "cannot unmount $mp"
    done
  done
}

driver_hash() {
  (cd "$here/csi" && find . -type f \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum \) | LC_ALL=C sort | xargs sha256sum) |
    sha256sum | cut -c1-12
}

cmd_build() {
  local sidecars_bin key bin tmp start f
  sidecars_bin="$(controlplane_build newest)" || exit 1
  mkdir -p "$cache"
  exec 9>"$cache/csi.lock"
  flock 9
  key="$(echo "$sidecars_bin $(driver_hash) $(go env GOVERSION)" | sha256sum | cut -c1-12)"
  bin="$cache/csi-$key/bin"
  if [[ ! -x "$bin/appstorage-csi-driver" ]]; then
    rm -rf "$bin".tmp.*
    tmp="$bin.tmp.$$"; mkdir -p "$tmp"
    start=$SECONDS
    (cd "$here/csi" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/appstorage-csi-driver" .) >&2 ||
      { rm -rf "$tmp"; die "building the driver failed (see above)"; }
    for f in csi-provisioner csi-resizer; do
      ln "$sidecars_bin/$f" "$tmp/$f" 2>/dev/null || cp "$sidecars_bin/$f" "$tmp/$f"
    done
    rm -rf "$bin" && mv "$tmp" "$bin"
    log "built appstorage-csi-driver in $((SECONDS - start))s"
  fi
  exec 9>&-
  echo "$bin"
}

pid_alive() { local f="$1/$2.pid"; [[ -f "$f" ]] && kill -0 "$(cat "$f")" 2>/dev/null; }

# start RUN LOGS NAME CMD...: in its own session, like scripts/cluster, so that a Ctrl-C in the
# caller's terminal does not reach it.
start() {
  local run=$1 logs=$2 name=$3; shift 3
  setsid "$@" >"$logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$run/$name.pid"
}

# stop RUN NAME: TERM, then KILL after 10 s.
stop() {
  local f="$1/$2.pid" pid i
  [[ -f "$f" ]] || return 0
  pid="$(cat "$f")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

# The driver's tools (see "apt:" at the top).
check_tools() {
  local tool missing=()
  for tool in mkfs.xfs xfs_growfs mkfs.ext4 e2fsck resize2fs losetup mount umount fsfreeze mountpoint findmnt; do
    command -v "$tool" >/dev/null || missing+=("$tool") # on PATH: the driver runs them from there
  done
  ((${#missing[@]} == 0)) || die "${missing[*]} not found: install the Debian packages xfsprogs, e2fsprogs, util-linux and mount"
}

# start_driver STATE_DIR KUBELET_ROOT NODE_NAME [DRIVER FLAGS...]: starts the driver and waits for its socket.
start_driver() { start_part appstorage-csi-driver "$@"; }

# start_part NAME STATE_DIR KUBELET_ROOT NODE_NAME [DRIVER FLAGS...]: starts a part of the driver
# (pid and log named NAME) and waits for its socket.
start_part() {
  local name=$1 state=$2 root=$3 node=$4; shift 4
  local sock="$root/plugins/$driver_name/csi.sock" i
  check_tools
  mkdir -p "$state/logs" "$state/run"
  pool_up "$state"
  pid_alive "$state/run" "$name" && die "$name already runs for $state (pid $(cat "$state/run/$name.pid")); run csi.sh down $state $root first"
  start "$state/run" "$state/logs" "$name" "$bin/appstorage-csi-driver" \
    --node-id "$node" --state-dir "$state" --kubelet-root "$root" "$@"
  for ((i = 0; i < 100; i++)); do
    [[ -S "$sock" ]] && return 0
    pid_alive "$state/run" "$name" || break
    sleep 0.1
  done
  tail -n 20 "$state/logs/$name.log" >&2
  die "$name did not start (log: $state/logs/$name.log)"
}

cmd_up() {
  [[ $# -ge 4 ]] || die "usage: csi.sh up STATE_DIR KUBECONFIG NODE_NAME KUBELET_ROOT [--expand-at-mount]"
  local state=$1 kubeconfig=$2 node=$3 root=$4; shift 4
  local flags=()
  while (($#)); do
    case "$1" in
      --expand-at-mount) flags+=(--expand-at-mount); shift ;;
      *) die "unknown argument \"$1\"; usage: csi.sh up STATE_DIR KUBECONFIG NODE_NAME KUBELET_ROOT [--expand-at-mount]" ;;
    esac
  done
  [[ -f "$kubeconfig" ]] || die "kubeconfig $kubeconfig does not exist"
  kubeconfig="$(cd "$(dirname "$kubeconfig")" && pwd)/$(basename "$kubeconfig")" # the sidecars run elsewhere
  state="$(mkdir -p "$state" && cd "$state" && pwd)"
  root="$(mkdir -p "$root" && cd "$root" && pwd)"
  bin="$(cmd_build | tail -n 1)"
  local sbin sock="$root/plugins/$driver_name/csi.sock" i name running=0 names=(appstorage-csi-driver csi-provisioner csi-resizer)
  sbin="$(snapshotter_bin)"
  [[ -z "$sbin" ]] || names+=("${snapshotter_programs[@]}")
  for name in "${names[@]}"; do
    pid_alive "$state/run" "$name" && running=$((running + 1))
  done
  if ((running == ${#names[@]})); then
    log "the driver and the sidecars already run for $state; applying the storage classes again"
    apply_objects "$kubeconfig"
    [[ -z "$sbin" ]] || apply_snapshot_class "$kubeconfig"
    return 0
  fi
  if ((running > 0)); then
    log "found a partial driver and sidecars in $state; starting them again"
    for name in "${snapshotter_programs[@]}" csi-resizer csi-provisioner appstorage-csi-driver; do stop "$state/run" "$name"; done
  fi
  start_driver "$state" "$root" "$node" "${flags[@]}"
  # The sidecars act with KUBECONFIG (a cluster admin), so they need no RBAC objects of their own.
  # Topology is GA in external-provisioner v6: volumes carry the node's topology without a flag.
  start "$state/run" "$state/logs" csi-provisioner "$bin/csi-provisioner" \
    --kubeconfig "$kubeconfig" --csi-address "$sock" --leader-election=false \
    --extra-create-metadata --timeout=60s --retry-interval-max=30s --v=2
  start "$state/run" "$state/logs" csi-resizer "$bin/csi-resizer" \
    --kubeconfig "$kubeconfig" --csi-address "$sock" --leader-election=false \
    --timeout=60s --retry-interval-max=30s --v=2
  local sidecars=2
  if [[ -n "$sbin" ]]; then
    start_snapshotter "$state" "$sock" "$kubeconfig" "$sbin"
    sidecars=3
  fi
  # The sidecars ask the driver its name first: once all have, they are connected.
  for ((i = 0; i < 300; i++)); do
    (($(grep -c 'GetPluginInfo' "$state/logs/appstorage-csi-driver.log" || true) >= sidecars)) && break
    for name in "${names[@]}"; do
      pid_alive "$state/run" "$name" || { tail -n 20 "$state/logs/$name.log" >&2; die "$name exited while starting (log: $state/logs/$name.log)"; }
    done
    sleep 0.1
  done
  ((i < 300)) || die "the sidecars did not reach the driver in 30s (logs in $state/logs)"
  apply_objects "$kubeconfig"
  [[ -z "$sbin" ]] || apply_snapshot_class "$kubeconfig"
  log "driver and sidecars up${sbin:+ with snapshots} (logs in $state/logs, volumes in $state/volumes)"
}

# apply_objects KUBECONFIG [ATTACH_REQUIRED]: the CSIDriver and the storage classes. Every class names its filesystem:
# xfs, because on this machine kind only xfs grows while mounted (a mounted ext4 grows only for a
# process with CAP_SYS_RESOURCE, which the machine's root lacks).
apply_objects() {
  kubectl --kubeconfig "$1" apply -f - >&2 <<YAML
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: $driver_name
spec:
  attachRequired: ${2:-false}
  podInfoOnMount: false
  fsGroupPolicy: File
  volumeLifecycleModes: [Persistent]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: appstorage-csi
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: $driver_name
parameters:
  csi.storage.k8s.io/fstype: xfs
allowVolumeExpansion: true
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: appstorage-csi-b
provisioner: $driver_name
parameters:
  csi.storage.k8s.io/fstype: xfs
allowVolumeExpansion: true
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: appstorage-csi-fixed
provisioner: $driver_name
parameters:
  csi.storage.k8s.io/fstype: xfs
allowVolumeExpansion: false
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
YAML
}

# --- the zones (scripts/cluster up --nodes N) ----------------------------------------------
# The driver as a cloud's block storage: one controller part on the host with external-provisioner,
# external-resizer and external-attacher (a volume is attached to one node at a time: VolumeAttachment
# objects), and one node part in each node's namespaces (lab/node/nodes.sh), which reports the
# node's zone; a volume lives in one zone, and its PersistentVolume gets that zone's node affinity.
# All parts share STATE_DIR/volumes, the store of the "cloud's" disks.

# zone_nodes CLUSTER_STATE: "NODE ZONE" a line, for the nodes of nodes.sh.
zone_nodes() { bash "$here/nodes.sh" names "$1" | while read -r n; do echo "$n zone-${n#node-}"; done; }

zone_programs=(appstorage-csi-controller csi-provisioner csi-resizer csi-attacher "${snapshotter_programs[@]}")

zones_running() {
  local state=$1 cluster=$2 name node zone
  for name in "${zone_programs[@]}"; do pid_alive "$state/run" "$name" || return 1; done
  while read -r node zone; do pid_alive "$state/run" "driver-$node" || return 1; done < <(zone_nodes "$cluster")
}

cmd_up_zones() {
  [[ $# -eq 3 ]] || die "usage: csi.sh up-zones STATE_DIR KUBECONFIG CLUSTER_STATE"
  local state=$1 kubeconfig=$2 cluster=$3 node zone name i sock
  [[ -f "$kubeconfig" ]] || die "kubeconfig $kubeconfig does not exist"
  kubeconfig="$(cd "$(dirname "$kubeconfig")" && pwd)/$(basename "$kubeconfig")"
  state="$(mkdir -p "$state" && cd "$state" && pwd)"
  bin="$(cmd_build | tail -n 1)"
  attacher="$(cmd_build_attacher | tail -n 1)/csi-attacher"
  local sbin
  sbin="$(cmd_build_snapshotter | tail -n 1)"
  check_tools
  mkdir -p "$state/logs" "$state/run" "$state/ctl"
  if zones_running "$state" "$cluster"; then apply_zone_objects "$kubeconfig"; apply_snapshot_class "$kubeconfig"; return 0; fi
  for ((i = ${#zone_programs[@]} - 1; i >= 0; i--)); do stop "$state/run" "${zone_programs[i]}"; done
  # The pool on the host, and the same mount in each node (the nodes' mount namespaces see no mount
  # the host makes after they were made): one filesystem, one lock file for every part. Node parts
  # from before the pool was mounted hold the lock file under it: they start again.
  if ! mountpoint -q "$state/volumes"; then
    while read -r node zone; do stop "$state/run" "driver-$node"; done < <(zone_nodes "$cluster")
  fi
  pool_up "$state"
  local pool
  pool="$(findmnt -n -o SOURCE --mountpoint "$state/volumes")"
  while read -r node zone; do
    bash "$here/nodes.sh" exec "$cluster" "$node" sh -c '
      if mountpoint -q "$1"; then
        [ "$(findmnt -n -o SOURCE --mountpoint "$1")" = "$2" ] || { echo "$1 is mounted from another device than $2 in this node" >&2; exit 1; }
      else
        mount "$2" "$1"
      fi' sh "$state/volumes" "$pool" || die "cannot mount the volumes' pool in $node"
  done < <(zone_nodes "$cluster")
  sock="$state/ctl/plugins/$driver_name/csi.sock"
  start "$state/run" "$state/logs" appstorage-csi-controller "$bin/appstorage-csi-driver" \
    --mode controller --attach-required --node-id controller --state-dir "$state" --kubelet-root "$state/ctl"
  for ((i = 0; i < 100; i++)); do [[ -S "$sock" ]] && break; sleep 0.1; done
  [[ -S "$sock" ]] || { tail -n 20 "$state/logs/appstorage-csi-controller.log" >&2; die "the driver's controller did not start"; }
  # Each node's part in that node's mount and network namespaces: its mounts must be the ones its
  # kubelet and containerd see.
  while read -r node zone; do
    pid_alive "$state/run" "driver-$node" && continue
    bash "$here/nodes.sh" spawn "$cluster" "$node" "$state/run/driver-$node.pid" "$state/logs/driver-$node.log" \
      "$bin/appstorage-csi-driver" --mode node --attach-required --zone "$zone" \
      --node-id "$node" --state-dir "$state" --kubelet-root /var/lib/kubelet
  done < <(zone_nodes "$cluster")
  # Topology is GA in external-provisioner v6; --immediate-topology (the default) lets an Immediate
  # claim ask for any zone the nodes have, and the driver picks one.
  start "$state/run" "$state/logs" csi-provisioner "$bin/csi-provisioner" \
    --kubeconfig "$kubeconfig" --csi-address "$sock" --leader-election=false \
    --extra-create-metadata --timeout=60s --retry-interval-max=30s --v=2
  start "$state/run" "$state/logs" csi-resizer "$bin/csi-resizer" \
    --kubeconfig "$kubeconfig" --csi-address "$sock" --leader-election=false \
    --timeout=60s --retry-interval-max=30s --v=2
  start "$state/run" "$state/logs" csi-attacher "$attacher" \
    --kubeconfig "$kubeconfig" --csi-address "$sock" --leader-election=false \
    --timeout=60s --retry-interval-max=30s --v=2
  start_snapshotter "$state" "$sock" "$kubeconfig" "$sbin"
  apply_zone_objects "$kubeconfig"
  apply_snapshot_class "$kubeconfig"
  # Every node's kubelet has registered the driver with its zone (CSINode), or the scheduler cannot
  # place a pod with a claim of these classes.
  for ((i = 0; i < 300; i++)); do
    local ok=1
    while read -r node zone; do
      pid_alive "$state/run" "driver-$node" || { tail -n 20 "$state/logs/driver-$node.log" >&2; die "the driver of $node exited (log: $state/logs/driver-$node.log)"; }
      [[ "$(kubectl --kubeconfig "$kubeconfig" get csinode "$node" -o jsonpath="{.spec.drivers[?(@.name==\"$driver_name\")].topologyKeys}" 2>/dev/null)" == *topology.kubernetes.io/zone* ]] || ok=0
    done < <(zone_nodes "$cluster")
    ((ok)) && break
    for name in "${zone_programs[@]}"; do
      pid_alive "$state/run" "$name" || { tail -n 20 "$state/logs/$name.log" >&2; die "$name exited while starting (log: $state/logs/$name.log)"; }
    done
    sleep 0.1
  done
  ((i < 300)) || die "not every node's kubelet registered the driver in 30s (kubectl get csinode; logs in $state/logs)"
  log "the zones' driver and sidecars up (logs in $state/logs, volumes in $state/volumes)"
}

# The classes of the zones: as the one node's, with attach, and one Immediate class (the
# provisioner picks the zone before any pod exists).
apply_zone_objects() {
  apply_objects "$1" true
  kubectl --kubeconfig "$1" apply -f - >&2 <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: appstorage-csi-immediate
provisioner: $driver_name
parameters:
  csi.storage.k8s.io/fstype: xfs
allowVolumeExpansion: true
volumeBindingMode: Immediate
reclaimPolicy: Delete
YAML
}

cmd_down_zones() {
  [[ $# -eq 2 ]] || die "usage: csi.sh down-zones STATE_DIR CLUSTER_STATE"
  local state=$1 cluster=$2 name node zone dev mp
  [[ -d "$state" ]] || return 0
  state="$(cd "$state" && pwd)"
  local i
  for ((i = ${#zone_programs[@]} - 1; i >= 0; i--)); do stop "$state/run" "${zone_programs[i]}"; done
  while read -r node zone; do
    stop "$state/run" "driver-$node"
    # What kubelet did not unstage, in the node's own mount table, then the node's mount of the pool.
    bash "$here/nodes.sh" exec "$cluster" "$node" bash "$here/csi.sh" node-down "$state" 2>/dev/null || true
  done < <(zone_nodes "$cluster")
  unmount_volumes "$state"
  for dev in $(loops_under "$state/volumes"); do
    losetup --detach "$dev" || log "cannot detach $dev"
  done
  pool_down "$state"
}

# node-down STATE (in a node's namespaces, from down-zones): the node's mounts of the volumes and
# of their pool.
cmd_node_down() {
  unmount_volumes "$1"
  pool_down "$1"
}

# Loop devices whose backing file is under DIR, one a line.
loops_under() {
  losetup --list --noheadings --raw --output NAME,BACK-FILE 2>/dev/null |
    awk -v dir="$1/" 'index($2, dir) == 1 {print $1}'
}

cmd_down() {
  [[ $# -eq 2 ]] || die "usage: csi.sh down STATE_DIR KUBELET_ROOT"
  local state=$1 root=$2 name dev mp
  [[ -d "$state" ]] && state="$(cd "$state" && pwd)"
  [[ -d "$root" ]] && root="$(cd "$root" && pwd)"
  for name in "${snapshotter_programs[@]}" csi-resizer csi-provisioner appstorage-csi-driver; do stop "$state/run" "$name"; done
  # What kubelet did not unpublish: unmount it (every mount of the volume's loop device), then free
  # the device, then unmount the pool. The volumes' files stay: they are data.
  unmount_volumes "$state"
  for dev in $(loops_under "$state/volumes"); do
    losetup --detach "$dev" || log "cannot detach $dev"
  done
  pool_down "$state"
  rm -f "$root/plugins_registry/$driver_name-reg.sock" "$root/plugins/$driver_name/csi.sock"
  rmdir "$root/plugins/$driver_name" 2>/dev/null || true
}

sanity_cleanup() {
  local tmp=$1
  stop "$tmp/state/run" appstorage-csi-controller
  cmd_down "$tmp/state" "$tmp/k"
  rm -f "$tmp/c/plugins/$driver_name/csi.sock"
  # Never remove through a mount that is left: that would delete inside the volume.
  if awk -v dir="$tmp/" 'index($2, dir) == 1 {found = 1} END {exit !found}' /proc/mounts; then
    log "mounts are left under $tmp; not removing it"
  else
    rm -rf "$tmp"
  fi
}

# sanity [--attach | --split] [CSI-SANITY FLAGS...]: the driver's three shapes. Without a flag, one
# node as the node suite runs it (no zones, no attach). --attach: one process with a zone, attach and
# stage. --split: the zones' shape, a controller part and a node part (zone-a) on two sockets.
cmd_sanity() {
  local shape="node"
  case "${1:-}" in
    --attach) shape="attach"; shift ;;
    --split) shape="split"; shift ;;
  esac
  bin="$(cmd_build | tail -n 1)"
  local sanity tmp rc=0 endpoints out
  sanity="$(cmd_build_sanity | tail -n 1)/csi-sanity"
  # Short names: the sockets' paths must stay under a Unix socket's 107 bytes.
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/csi-sanity.XXXXXX")"
  # shellcheck disable=SC2064 # expand now: tmp is local
  trap "sanity_cleanup '$tmp'" EXIT
  endpoints=(--csi.endpoint "unix://$tmp/k/plugins/$driver_name/csi.sock")
  case "$shape" in
    node) start_driver "$tmp/state" "$tmp/k" sanity-node ;;
    attach) start_driver "$tmp/state" "$tmp/k" sanity-node --attach-required --zone zone-a ;;
    split)
      start_part appstorage-csi-controller "$tmp/state" "$tmp/c" controller --mode controller --attach-required
      start_driver "$tmp/state" "$tmp/k" sanity-node --mode node --attach-required --zone zone-a
      endpoints+=(--csi.controllerendpoint "unix://$tmp/c/plugins/$driver_name/csi.sock")
      ;;
  esac
  out="$tmp/sanity.out"
  # Sizes of whole GiB: above xfs's 300 MiB minimum, so the sizes asked are the sizes made.
  run_sanity() {
    rc=0
    "$sanity" "${endpoints[@]}" \
      --csi.mountdir "$tmp/target" --csi.stagingdir "$tmp/staging" \
      --csi.testvolumesize $((1 << 30)) --csi.testvolumeexpandsize $((2 << 30)) \
      --ginkgo.no-color "$@" >"$out" 2>&1 || rc=$?
    cat "$out" >&2
  }
  run_sanity "$@"
  # csi-sanity's own client races its connection (kubernetes-csi/csi-test#97): a run whose only
  # failure is "Connection timed out" before any call reached the driver is run once more.
  if ((rc != 0)) && grep -q 'Connection timed out' "$out" && grep -q '^FAIL! -- .* | 1 Failed' "$out"; then
    log "csi-sanity's client timed out connecting (csi-test#97); running it once more"
    run_sanity "$@"
  fi
  if ((rc != 0)); then
    log "csi-sanity failed (exit $rc); the driver's log:"
    tail -n 40 "$tmp/state/logs/appstorage-csi-driver.log" >&2
    [[ -f "$tmp/state/logs/appstorage-csi-controller.log" ]] && tail -n 40 "$tmp/state/logs/appstorage-csi-controller.log" >&2
  fi
  return "$rc"
}

case "${1:-}" in
  build) cmd_build ;;
  build-sanity) cmd_build_sanity ;;
  build-attacher) cmd_build_attacher ;;
  build-snapshotter) cmd_build_snapshotter ;;
  node-down) [[ $# -eq 2 ]] || die "usage: csi.sh node-down STATE_DIR"; cmd_node_down "$2" ;;
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  sanity) shift; cmd_sanity "$@" ;;
  up-zones) shift; cmd_up_zones "$@" ;;
  down-zones) shift; cmd_down_zones "$@" ;;
  zones-running) [[ $# -eq 3 ]] || die "usage: csi.sh zones-running STATE_DIR CLUSTER_STATE"; zones_running "$2" "$3" ;;
  *) echo "usage: lab/node/csi.sh build | build-sanity | up STATE_DIR KUBECONFIG NODE_NAME KUBELET_ROOT [--expand-at-mount] | down STATE_DIR KUBELET_ROOT | sanity [--attach | --split] | build-attacher | build-snapshotter | up-zones | down-zones | zones-running" >&2; exit 2 ;;
esac
