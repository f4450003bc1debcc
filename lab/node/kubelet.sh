#!/usr/bin/env bash
# The node's Kubernetes programs: kube-scheduler and kubelet of the control plane's release (links
# to its servers binary, lab/controlplane/build.sh), started without systemd.
#
#   kubelet.sh build [MINOR|RELEASE]  builds both of that minor (default: the newest pinned)
#                                     once into the cache; prints the bin dir (last line)
#   kubelet.sh up STATE BIN NODE_NAME ROOT
#                                     starts kube-scheduler and kubelet for the cluster in STATE
#                                     (its pki, ports from APPSTORAGE_PORT_BASE, containerd socket
#                                     STATE/containerd/containerd.sock), kubelet's root in ROOT
#   kubelet.sh down STATE             stops them (pods keep running until runtime.sh down)
#   kubelet.sh scheduler STATE BIN    starts kube-scheduler alone (the nodes of nodes.sh share it)
#   kubelet.sh config DIR CA ADDRESS PORT HEALTHZ_PORT CGROUP_ROOT
#                                     prints the KubeletConfiguration of a node (nodes.sh's too)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source-path=SCRIPTDIR
source "$here/processes.sh"
die() { echo "kubelet: $*" >&2; exit 1; }

build() {
  local spec="${1:-newest}" bin
  # kubelet and kube-scheduler are links to the lab's servers binary of that release
  # (lab/controlplane/build.sh), which only the newest pin builds with them.
  bin="$(bash "$here/../controlplane/build.sh" "$spec" | tail -n 1)" || exit 1
  [[ -x "$bin/kubelet" && -x "$bin/kube-scheduler" ]] ||
    die "the pin of Kubernetes $spec has the control plane only; the node runs the newest pinned release (lab/controlplane/build.sh --list)"
  echo "$bin"
}

# config DIR CA ADDRESS PORT HEALTHZ_PORT CGROUP_ROOT: the KubeletConfiguration of a node whose
# folders are under DIR (containerd's socket DIR/containerd/containerd.sock, pod logs, volume plugins),
# serving on ADDRESS:PORT, its healthz on 127.0.0.1:HEALTHZ_PORT, its pods' cgroups under CGROUP_ROOT.
config() {
  local dir=$1 ca=$2 address=$3 port=$4 healthz_port=$5 cgroup_root=$6
  # What this machine kind needs (measured): cgroup v1 is only a warning with
  # failCgroupV1: false; oomScoreAdj 0 (negative scores are refused); cgroupfs (no systemd).
  # syncFrequency 10s: a grown volume reaches the claim's status in seconds, not a minute.
  # makeIPTablesUtilChains false: kubelet's KUBE-FIREWALL rules serve kube-proxy, which is not here.
  # Eviction and image GC thresholds near zero: a full disk elsewhere must not evict the tests' pods
  # or delete the locally made images (there is no registry to pull them back from).
  cat <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $address
port: $port
healthzBindAddress: 127.0.0.1
healthzPort: $healthz_port
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$ca"}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$dir/containerd/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: $cgroup_root
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
syncFrequency: 10s
fileCheckFrequency: 10s
makeIPTablesUtilChains: false
podLogsDir: $dir/pod-logs
volumePluginDir: $dir/volume-plugins
resolvConf: /etc/resolv.conf
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
EOF
}

pid_alive() { [[ -f "$run/$1.pid" ]] && kill -0 "$(cat "$run/$1.pid")" 2>/dev/null; }

start() {
  local name=$1; shift
  pid_alive "$name" && return 0
  daemon "$run/$name.pid" "$logs/$name.log" "$@"
}

# scheduler BIN: kube-scheduler for the cluster in STATE (one for all its nodes).
scheduler() {
  local bin=$1 base="${APPSTORAGE_PORT_BASE:-16440}"
  start kube-scheduler "$bin/kube-scheduler" \
    --kubeconfig "$state/scheduler.kubeconfig" \
    --authentication-kubeconfig "$state/scheduler.kubeconfig" --authorization-kubeconfig "$state/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$((base + 9))" --leader-elect=false --profiling=false
}

up() {
  local bin=$1 node=$2 root=$3 base="${APPSTORAGE_PORT_BASE:-16440}"
  # Ports beside the control plane's (+0 +1 etcd, +3 apiserver, +7 controller manager).
  local kubelet_port=$((base + 5)) healthz_port=$((base + 6))
  mkdir -p "$root" "$state/kubelet-pki" "$state/volume-plugins" "$state/pod-logs"
  scheduler "$bin"
  config "$state" "$state/pki/ca.crt" 127.0.0.1 "$kubelet_port" "$healthz_port" / > "$state/kubelet-config.yaml"
  start kubelet "$bin/kubelet" --config "$state/kubelet-config.yaml" --kubeconfig "$state/kubelet.kubeconfig" \
    --root-dir "$root" --cert-dir "$state/kubelet-pki" --hostname-override "$node" --v 1
}

case "${1:-}" in
  build) shift; build "$@" ;;
  up) [[ $# -eq 5 ]] || die "usage: kubelet.sh up STATE BIN NODE_NAME ROOT"; state=$2; run="$state/run"; logs="$state/logs"; up "$3" "$4" "$5" ;;
  config) [[ $# -eq 7 ]] || die "usage: kubelet.sh config DIR CA ADDRESS PORT HEALTHZ_PORT CGROUP_ROOT"; shift; config "$@" ;;
  scheduler) [[ $# -eq 3 ]] || die "usage: kubelet.sh scheduler STATE BIN"; state=$2; run="$state/run"; logs="$state/logs"; mkdir -p "$run" "$logs"; scheduler "$3" ;;
  down) [[ $# -eq 2 ]] || die "usage: kubelet.sh down STATE"; state=$2; run="$state/run"; stop_pidfile "$run/kubelet.pid"; stop_pidfile "$run/kube-scheduler.pid" ;;
  *) echo "usage: kubelet.sh build [MINOR|RELEASE] | up STATE BIN NODE_NAME | down STATE" >&2; exit 2 ;;
esac
