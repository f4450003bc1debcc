#!/usr/bin/env bash
# Several real nodes on this one machine (scripts/cluster up --nodes N): each with its own kubelet,
# containerd and CNI bridge, in a network namespace and a mount namespace of its own, and a zone.
#
# Why namespaces: kubelet and containerd hard-wire host paths (/var/lib/kubelet/device-plugins,
# /var/log/containers, /var/lib/cni, /run/containerd/s, /run/netns), so two of them on one mount
# table share those folders; in a mount namespace of its own each node binds folders of its own over
# them. The network namespace gives each node an address that is not loopback (the API server reaches
# each kubelet there, for logs, exec and nodes/proxy) and a pod network of its own.
#
# Node i (1..N) is node-a, node-b, ...: network namespace appstor-node-a, a veth pair (host side
# appstor-h1, 10.211.1.1/24; node side eth0, 10.211.1.2/24, the node's InternalIP), pods on
# 10.88.1.0/24 behind the node's bridge, zone zone-a in region region-1
# (topology.kubernetes.io/zone and /region, set by kubelet on its own Node). The API server listens on
# 127.0.0.1 only: each node reaches it through a relay, 127.0.0.1:APIPORT inside the node's network
# namespace to a Unix socket of the cluster's, and from there to 127.0.0.1:APIPORT on the host (socat),
# so no server listens on any address of the host but loopback. Each node's processes share one
# mount namespace, held by an anchor process (a sleep) that the others enter with nsenter; its
# propagation is slave, so the host's mounts reach the node and the node's stay inside it.
# kubelet's cgroups live under /appstor-node-a in every hierarchy (its cgroupRoot), so that no
# kubelet removes another's pods as orphans.
#
#   nodes.sh up STATE BIN N            start N nodes (BIN: kubelet's folder), or the ones that are down
#   nodes.sh down STATE                stop every node: containers, containerd, kubelet, the anchor,
#                                      the relay; delete the namespaces, links and cgroups
#   nodes.sh stop STATE NODE           stop NODE's kubelet (the node goes NotReady; its pods keep running)
#   nodes.sh start STATE NODE BIN      start NODE's kubelet again
#   nodes.sh names STATE               the nodes' names, one a line
#   nodes.sh exec STATE NODE CMD...    run CMD in NODE's namespaces (its mounts, its network)
#   nodes.sh spawn STATE NODE PIDFILE LOG CMD...
#                                      start CMD there in the background, in a session of its own;
#                                      PIDFILE gets CMD's own pid
#
# STATE is the cluster's folder (scripts/cluster); each node's is STATE/nodes/NAME. Ports from
# APPSTORAGE_PORT_BASE as scripts/cluster (+3 the API server).
# apt: socat iproute2 util-linux
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source-path=SCRIPTDIR
source "$here/processes.sh"
die() { echo "nodes: $*" >&2; exit 1; }
log() { echo "nodes: $*" >&2; }
base="${APPSTORAGE_PORT_BASE:-16440}"
api_port=$((base + 3))
letters=(a b c d e f g h i)
# Paths kubelet, containerd and the CNI plugins use whatever they are told: each node binds its own
# folder over each.
bound=(/var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/containerd /run/netns /var/lib/containerd /etc/cni /opt/cni)

name_of() { echo "node-${letters[$1 - 1]}"; }
index_of() {
  local i
  for ((i = 1; i <= ${#letters[@]}; i++)); do [[ "$(name_of "$i")" == "$1" ]] && { echo "$i"; return 0; }; done
  return 1
}
netns_of() { echo "appstor-$1"; }
zone_of() { echo "zone-${letters[$1 - 1]}"; }
pid_alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
# The cgroup hierarchies mounted under /sys/fs/cgroup (v1 controllers, and cgroup2 where mounted).
hierarchies() { awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/mounts | grep '^/sys/fs/cgroup'; }

# in NODE CMD...: CMD in the node's mount and network namespaces.
in_node() {
  local node=$1; shift
  local anchor="$state/nodes/$node/run/anchor.pid"
  pid_alive "$anchor" || die "$node is not running (no anchor process); start it with scripts/cluster up --nodes N"
  nsenter --target "$(cat "$anchor")" --mount --net -- "$@"
}

# spawn NODE PIDFILE LOG CMD...: CMD in the node's namespaces, in a session of its own, in the
# background; PIDFILE holds CMD's own pid (setsid and nsenter exec it: no wrapper in between, so
# that stopping that pid stops CMD).
spawn() {
  local node=$1 pidfile=$2 logfile=$3; shift 3
  local anchor="$state/nodes/$node/run/anchor.pid"
  pid_alive "$anchor" || die "$node is not running (no anchor process); start it with scripts/cluster up --nodes N"
  daemon "$pidfile" "$logfile" nsenter --target "$(cat "$anchor")" --mount --net -- "$@"
}

# start_in NODE NAME CMD...: spawn, its pid and log in the node's folder.
start_in() {
  local node=$1 name=$2; shift 2
  local dir="$state/nodes/$node"
  pid_alive "$dir/run/$name.pid" && return 0
  spawn "$node" "$dir/run/$name.pid" "$dir/logs/$name.log" "$@"
}

# The relay on the host: the cluster's Unix socket to the API server on 127.0.0.1.
relay_up() {
  local sock="$state/nodes/api.sock"
  pid_alive "$state/nodes/relay.pid" && return 0
  rm -f "$sock"
  daemon "$state/nodes/relay.pid" "$state/nodes/relay.log" socat "UNIX-LISTEN:$sock,fork,mode=600" "TCP:127.0.0.1:$api_port"
  local i
  for ((i = 0; i < 50; i++)); do [[ -S "$sock" ]] && return 0; sleep 0.1; done
  die "the relay to the API server did not start (log: $state/nodes/relay.log)"
}

# The node's network: its namespace, the veth pair, addresses and routes; forwarding inside it
# (the pods' bridge routes through it).
net_up() {
  local i=$1 node ns host_if
  node="$(name_of "$i")"; ns="$(netns_of "$node")"; host_if="appstor-h$i"
  ip netns list | grep -qw "^$ns" || ip netns add "$ns"
  if ! ip link show "$host_if" >/dev/null 2>&1; then
    ip link add "$host_if" type veth peer name eth0 netns "$ns"
    ip addr add "10.211.$i.1/24" dev "$host_if"
    ip link set "$host_if" up
    ip -n "$ns" addr add "10.211.$i.2/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" route add default via "10.211.$i.1"
  fi
  ip netns exec "$ns" sysctl -q -w net.ipv4.ip_forward=1
}

# The node's mount namespace: an anchor process that binds the node's folders over the hard-wired
# paths and then sleeps; every other process of the node enters it.
anchor_up() {
  local i=$1 node dir ns p binds=""
  node="$(name_of "$i")"; dir="$state/nodes/$node"; ns="$(netns_of "$node")"
  pid_alive "$dir/run/anchor.pid" && return 0
  for p in "${bound[@]}"; do
    mkdir -p "$dir/host$p"
    # The mount point must exist on the host; lab/node/host.sh removes what was not there before.
    [[ -d "$p" ]] || mkdir -p "$p"
    binds+="mount --bind '$dir/host$p' '$p' && "
  done
  # The CNI plugins are read from /usr/lib/cni (runtime.sh); /opt/cni is bound empty like the others.
  daemon "$dir/run/anchor.pid" "$dir/logs/anchor.log" nsenter --net="/run/netns/$ns" -- unshare --mount --propagation slave -- \
    sh -c "${binds}exec sleep infinity"
  local k
  for ((k = 0; k < 50; k++)); do
    # The binds are made once the anchor is the sleep.
    [[ "$(cat "/proc/$(cat "$dir/run/anchor.pid")/comm" 2>/dev/null)" == sleep ]] && return 0
    pid_alive "$dir/run/anchor.pid" || break
    sleep 0.1
  done
  cat "$dir/logs/anchor.log" >&2
  die "$node's mount namespace did not start (log: $dir/logs/anchor.log)"
}

# kubelet's cgroup root in every hierarchy, with cpuset's cpus and mems copied from the root (a new
# cpuset cgroup has none, and takes no task until it has).
cgroups_up() {
  local node=$1 h
  for h in $(hierarchies); do
    mkdir -p "$h/appstor-$node"
    if [[ -f "$h/cpuset.cpus" && -f "$h/appstor-$node/cpuset.cpus" ]]; then
      [[ -n "$(cat "$h/appstor-$node/cpuset.cpus")" ]] || cat "$h/cpuset.cpus" > "$h/appstor-$node/cpuset.cpus"
      [[ -n "$(cat "$h/appstor-$node/cpuset.mems")" ]] || cat "$h/cpuset.mems" > "$h/appstor-$node/cpuset.mems"
    fi
  done
}

cgroups_down() {
  local node=$1 h
  for h in $(hierarchies); do
    if [[ -d "$h/appstor-$node" ]]; then remove_cgroup "$h/appstor-$node"; fi
  done
}

kubelet_up() {
  local i=$1 bin=$2 node dir
  node="$(name_of "$i")"; dir="$state/nodes/$node"
  pid_alive "$dir/run/kubelet.pid" && return 0
  mkdir -p "$dir/kubelet-pki" "$dir/volume-plugins" "$dir/pod-logs"
  # As lab/node/kubelet.sh's node, but on the node's own address (the API server reaches it
  # there), under its own cgroup root, labelled with its zone. Its root is /var/lib/kubelet of its
  # mount namespace (the node's folder host/var/lib/kubelet): the sockets under a root in the state
  # folder would pass the 107 characters a Unix socket's path takes.
  bash "$here/kubelet.sh" config "$dir" "$state/pki/ca.crt" "10.211.$i.2" 10250 10248 "/appstor-$node" > "$dir/kubelet-config.yaml"
  start_in "$node" kubelet "$bin/kubelet" --config "$dir/kubelet-config.yaml" --kubeconfig "$dir/kubelet.kubeconfig" \
    --root-dir /var/lib/kubelet --cert-dir "$dir/kubelet-pki" --hostname-override "$node" --node-ip "10.211.$i.2" \
    --node-labels "topology.kubernetes.io/zone=$(zone_of "$i"),topology.kubernetes.io/region=region-1" --v 1
}

node_up() {
  local i=$1 bin=$2 node dir
  node="$(name_of "$i")"; dir="$state/nodes/$node"
  mkdir -p "$dir/run" "$dir/logs"
  [[ -f "$dir/kubelet.kubeconfig" ]] || die "$node has no kubeconfig ($dir/kubelet.kubeconfig): scripts/cluster writes it before nodes.sh up"
  net_up "$i"
  anchor_up "$i"
  cgroups_up "$node"
  # The API server through the relay, on the node's own loopback.
  start_in "$node" relay socat "TCP-LISTEN:$api_port,bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:$state/nodes/api.sock"
  APPSTORAGE_POD_SUBNET="10.88.$i.0/24" start_in_wait "$node" bash "$here/runtime.sh" up "$dir"
  in_node "$node" bash "$here/images.sh" load "$dir/containerd/containerd.sock"
  kubelet_up "$i" "$bin"
}

# start_in_wait NODE CMD...: CMD in the node's namespaces, in the foreground (it starts its own daemons).
start_in_wait() { local node=$1; shift; in_node "$node" "$@"; }

cmd_up() {
  local bin=$1 n=$2 i pids=() rc=0
  ((n >= 1 && n <= ${#letters[@]})) || die "--nodes takes 1 to ${#letters[@]}"
  command -v socat >/dev/null || die "socat is missing (the nodes reach the API server through it); install it: apt-get install socat"
  command -v nsenter >/dev/null && command -v unshare >/dev/null || die "nsenter and unshare are missing; install util-linux"
  mkdir -p "$state/nodes"
  echo "$n" > "$state/nodes/count"
  relay_up
  # The nodes side by side: each waits on its own containerd and image imports.
  for ((i = 1; i <= n; i++)); do
    node_up "$i" "$bin" > "$state/nodes/up-$i.log" 2>&1 &
    pids+=($!)
  done
  for ((i = 1; i <= n; i++)); do
    wait "${pids[$((i - 1))]}" || { rc=1; log "$(name_of "$i") did not start:"; cat "$state/nodes/up-$i.log" >&2; }
  done
  return $rc
}

# Stops every process left in network namespace NS: TERM, then KILL after 10 seconds.
sweep_netns() {
  local ns=$1 pids i
  # Not `ip netns list | grep -q`: grep's early exit can fail the pipe (pipefail).
  [[ -e "/run/netns/$ns" ]] || return 0
  pids="$(ip netns pids "$ns" 2>/dev/null || true)"
  [[ -n "$pids" ]] || return 0
  log "stopping what still ran in $ns: $(echo $pids)"
  kill -TERM $pids 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    [[ -z "$(ip netns pids "$ns" 2>/dev/null)" ]] && return 0
    sleep 0.1
  done
  kill -KILL $(ip netns pids "$ns" 2>/dev/null) 2>/dev/null || true
}

node_down() {
  local node=$1 dir="$state/nodes/$1" ns
  ns="$(netns_of "$node")"
  stop_pidfile "$dir/run/kubelet.pid"
  if pid_alive "$dir/run/anchor.pid"; then
    # Containers and containerd inside the node (its sockets and shims live in its mount namespace).
    in_node "$node" bash "$here/runtime.sh" down "$dir" || log "$node's containerd did not stop cleanly"
    if [[ -n "${NODES_BEFORE_ANCHOR_DOWN:-}" ]]; then in_node "$node" bash -c "$NODES_BEFORE_ANCHOR_DOWN" || true; fi
  fi
  stop_pidfile "$dir/run/relay.pid"
  stop_pidfile "$dir/run/anchor.pid"
  # Whatever else still runs in the node's network namespace (a process whose pid file was lost, a
  # driver's node part another script started): every process of the node lives there.
  sweep_netns "$ns"
  cgroups_down "$node"
  ip netns delete "$ns" 2>/dev/null || true
  ip link delete "appstor-h$(index_of "$node")" 2>/dev/null || true
}

cmd_down() {
  local node
  [[ -d "$state/nodes" ]] || return 0
  for node in $(cmd_names); do node_down "$node"; done
  stop_pidfile "$state/nodes/relay.pid"
  rm -f "$state/nodes/api.sock" "$state/nodes/count"
}

cmd_names() {
  local n i
  n="$(cat "$state/nodes/count" 2>/dev/null || echo 0)"
  for ((i = 1; i <= n; i++)); do name_of "$i"; done
}

state="${2:-}"
case "${1:-}" in
  up) [[ $# -eq 4 ]] || die "usage: nodes.sh up STATE BIN N"; cmd_up "$3" "$4" ;;
  down) [[ $# -eq 2 ]] || die "usage: nodes.sh down STATE"; cmd_down ;;
  stop) [[ $# -eq 3 ]] || die "usage: nodes.sh stop STATE NODE"; index_of "$3" >/dev/null || die "no node $3"; stop_pidfile "$state/nodes/$3/run/kubelet.pid" ;;
  start) [[ $# -eq 4 ]] || die "usage: nodes.sh start STATE NODE BIN"; i="$(index_of "$3")" || die "no node $3"; kubelet_up "$i" "$4" ;;
  names) [[ $# -eq 2 ]] || die "usage: nodes.sh names STATE"; cmd_names ;;
  exec) [[ $# -ge 4 ]] || die "usage: nodes.sh exec STATE NODE CMD..."; node=$3; shift 3; in_node "$node" "$@" ;;
  spawn) [[ $# -ge 6 ]] || die "usage: nodes.sh spawn STATE NODE PIDFILE LOG CMD..."; node=$3; shift 3; spawn "$node" "$@" ;;
  *) die "usage: nodes.sh up STATE BIN N | down STATE | stop STATE NODE | start STATE NODE BIN | names STATE | exec STATE NODE CMD... | spawn STATE NODE PIDFILE LOG CMD..." ;;
esac
