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
#   csi.sh sanity [--attach | --split] [CSI-SANITY FLAGS...]
#       runs csi-sanity against a fresh driver in a temporary directory and cleans up; exits with
#       csi-sanity's code. Without a flag the one node's driver; --attach one process with a zone,
#       attach and stage; --split the zones' shape (a controller part and a node part on two
#       sockets). Flags go to csi-sanity (for example --ginkgo.v, --ginkgo.focus=Expand).
#
# Volumes: a sparse file of the claim's size rounded up to a MiB, xfs (the classes' fstype; at least
# 300 MiB, mkfs.xfs's minimum) or ext4 (at least 16 MiB; grows only at mount here: no CAP_SYS_RESOURCE).
# A class parameter expansion=online|at-mount sets the mode per volume, over the driver's flag.
# kubelet: the driver registers itself through KUBELET_ROOT/plugins_registry (no node-driver-registrar);
# the driver and kubelet must agree on KUBELET_ROOT (kubelet --root-dir).
# apt: e2fsprogs xfsprogs util-linux mount
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source-path=SCRIPTDIR
source "$here/processes.sh"
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
  daemon "$run/$name.pid" "$logs/$name.log" "$@"
}

# stop RUN NAME: the process of RUN/NAME.pid (processes.sh).
stop() { stop_pidfile "$1/$2.pid"; }

# start_sidecars STATE BIN KUBECONFIG SOCKET: external-provisioner and external-resizer for the
# driver at SOCKET, acting with KUBECONFIG.
start_sidecars() {
  local state=$1 bin=$2 kubeconfig=$3 sock=$4
  start "$state/run" "$state/logs" csi-provisioner "$bin/csi-provisioner" \
    --kubeconfig "$kubeconfig" --csi-address "$sock" --leader-election=false \
    --extra-create-metadata --timeout=60s --retry-interval-max=30s --v=2
  start "$state/run" "$state/logs" csi-resizer "$bin/csi-resizer" \
    --kubeconfig "$kubeconfig" --csi-address "$sock" --leader-election=false \
    --timeout=60s --retry-interval-max=30s --v=2
}

# The driver's tools (see "apt:" at the top).
check_tools() {
  local tool missing=()
  for tool in mkfs.xfs xfs_growfs mkfs.ext4 e2fsck resize2fs losetup mount umount; do
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
  mkdir -p "$state/logs" "$state/run" "$state/volumes"
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
  local sock="$root/plugins/$driver_name/csi.sock" i name running=0
  for name in appstorage-csi-driver csi-provisioner csi-resizer; do
    pid_alive "$state/run" "$name" && running=$((running + 1))
  done
  if ((running == 3)); then
    log "the driver and the sidecars already run for $state; applying the storage classes again"
    apply_objects "$kubeconfig"
    return 0
  fi
  if ((running > 0)); then
    log "found a partial driver and sidecars in $state; starting them again"
    for name in csi-resizer csi-provisioner appstorage-csi-driver; do stop "$state/run" "$name"; done
  fi
  start_driver "$state" "$root" "$node" "${flags[@]}"
  # The sidecars act with KUBECONFIG (a cluster admin), so they need no RBAC objects of their own.
  # Topology is GA in external-provisioner v6: volumes carry the node's topology without a flag.
  start_sidecars "$state" "$bin" "$kubeconfig" "$sock"
  # Both sidecars ask the driver its name first: once both have, they are connected.
  for ((i = 0; i < 300; i++)); do
    (($(grep -c 'GetPluginInfo' "$state/logs/appstorage-csi-driver.log" || true) >= 2)) && break
    for name in appstorage-csi-driver csi-provisioner csi-resizer; do
      pid_alive "$state/run" "$name" || { tail -n 20 "$state/logs/$name.log" >&2; die "$name exited while starting (log: $state/logs/$name.log)"; }
    done
    sleep 0.1
  done
  ((i < 300)) || die "the sidecars did not reach the driver in 30s (logs in $state/logs)"
  apply_objects "$kubeconfig"
  log "driver and sidecars up (logs in $state/logs, volumes in $state/volumes)"
}

# storage_class NAME DEFAULT EXPANSION: one of the driver's classes, as a YAML document.
storage_class() {
  cat <<YAML
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: $1
  annotations:
    storageclass.kubernetes.io/is-default-class: "$2"
provisioner: $driver_name
parameters:
  csi.storage.k8s.io/fstype: xfs
allowVolumeExpansion: $3
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
YAML
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
$(storage_class appstorage-csi true true)
$(storage_class appstorage-csi-b false true)
$(storage_class appstorage-csi-fixed false false)
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

zones_running() {
  local state=$1 cluster=$2 name node zone
  for name in appstorage-csi-controller csi-provisioner csi-resizer csi-attacher; do pid_alive "$state/run" "$name" || return 1; done
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
  check_tools
  mkdir -p "$state/logs" "$state/run" "$state/volumes" "$state/ctl"
  if zones_running "$state" "$cluster"; then apply_zone_objects "$kubeconfig"; return 0; fi
  for name in csi-attacher csi-resizer csi-provisioner appstorage-csi-controller; do stop "$state/run" "$name"; done
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
  start_sidecars "$state" "$bin" "$kubeconfig" "$sock"
  start "$state/run" "$state/logs" csi-attacher "$attacher" \
    --kubeconfig "$kubeconfig" --csi-address "$sock" --leader-election=false \
    --timeout=60s --retry-interval-max=30s --v=2
  apply_zone_objects "$kubeconfig"
  # Every node's kubelet has registered the driver with its zone (CSINode), or the scheduler cannot
  # place a pod with a claim of these classes.
  for ((i = 0; i < 300; i++)); do
    local ok=1
    while read -r node zone; do
      pid_alive "$state/run" "driver-$node" || { tail -n 20 "$state/logs/driver-$node.log" >&2; die "the driver of $node exited (log: $state/logs/driver-$node.log)"; }
      [[ "$(kubectl --kubeconfig "$kubeconfig" get csinode "$node" -o jsonpath="{.spec.drivers[?(@.name==\"$driver_name\")].topologyKeys}" 2>/dev/null)" == *topology.kubernetes.io/zone* ]] || ok=0
    done < <(zone_nodes "$cluster")
    ((ok)) && break
    for name in appstorage-csi-controller csi-provisioner csi-resizer csi-attacher; do
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
  for name in csi-attacher csi-resizer csi-provisioner appstorage-csi-controller; do stop "$state/run" "$name"; done
  while read -r node zone; do
    stop "$state/run" "driver-$node"
    # What kubelet did not unstage, in the node's own mount table.
    for dev in $(loops_under "$state/volumes"); do
      bash "$here/nodes.sh" exec "$cluster" "$node" sh -c "awk -v d='$dev' '\$1 == d {print \$2}' /proc/mounts | sort -r | while read -r m; do umount \"\$(printf '%b' \"\$m\")\" 2>/dev/null || umount -l \"\$(printf '%b' \"\$m\")\"; done" 2>/dev/null || true
    done
  done < <(zone_nodes "$cluster")
  for dev in $(loops_under "$state/volumes"); do
    for mp in $(awk -v d="$dev" '$1 == d {print $2}' /proc/mounts | sort -r); do
      mp="$(printf '%b' "$mp")"
      umount "$mp" 2>/dev/null || umount -l "$mp" || log "cannot unmount $mp"
    done
    losetup --detach "$dev" || log "cannot detach $dev"
  done
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
  for name in csi-resizer csi-provisioner appstorage-csi-driver; do stop "$state/run" "$name"; done
  # What kubelet did not unpublish: unmount it (every mount of the volume's loop device), then free
  # the device. The volumes' files stay: they are data.
  for dev in $(loops_under "$state/volumes"); do
    for mp in $(awk -v d="$dev" '$1 == d {print $2}' /proc/mounts | sort -r); do
      mp="$(printf '%b' "$mp")" # /proc/mounts writes a space as \040
      umount "$mp" 2>/dev/null || umount -l "$mp" || log "cannot unmount $mp"
    done
    losetup --detach "$dev" || log "cannot detach $dev"
  done
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
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  sanity) shift; cmd_sanity "$@" ;;
  up-zones) shift; cmd_up_zones "$@" ;;
  down-zones) shift; cmd_down_zones "$@" ;;
  zones-running) [[ $# -eq 3 ]] || die "usage: csi.sh zones-running STATE_DIR CLUSTER_STATE"; zones_running "$2" "$3" ;;
  *) echo "usage: lab/node/csi.sh build | build-sanity | up STATE_DIR KUBECONFIG NODE_NAME KUBELET_ROOT [--expand-at-mount] | down STATE_DIR KUBELET_ROOT | sanity [--attach | --split] | build-attacher | up-zones | down-zones | zones-running" >&2; exit 2 ;;
esac
