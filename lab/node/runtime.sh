#!/usr/bin/env bash
# The node's container runtime: containerd with runc, and CNI (bridge + host-local), all from
# Debian's packages (containerd 1.6.20, runc 1.1.5, containernetworking-plugins 1.1.1). Chosen over
# building containerd 2.x from the module proxy because it costs no build on a 2-core machine and
# kubelet 1.37 still runs with it (it logs that containerd 1.x loses support in 1.38: a 1.38 node
# may need containerd 2.x, which builds from github.com/containerd/containerd/v2 with CGO_ENABLED=0;
# v1.38.0-beta.0's kubelet still falls back to its own cgroupDriver, read from its source, not run).
# APPSTORAGE_POD_SUBNET: the pods' addresses (default 10.88.0.0/24; nodes.sh gives each node its own).
# No systemd here: containerd runs with its own config, root, state and socket under STATE.
#
#   runtime.sh up STATE     writes the configs, starts containerd, waits for its socket
#   runtime.sh down STATE   kills every container and shim of this containerd, stops it
#
# apt: containerd runc containernetworking-plugins
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/processes.sh"
die() { echo "runtime: $*" >&2; exit 1; }
state="${2:-}"
[[ -n "$state" ]] || die "usage: runtime.sh up|down STATE"
dir="$state/containerd"; sock="$dir/containerd.sock"; run="$state/run"; logs="$state/logs"
ctr() { command ctr --address "$sock" --namespace k8s.io "$@"; }
pid_alive() { [[ -f "$run/$1.pid" ]] && kill -0 "$(cat "$run/$1.pid")" 2>/dev/null; }

up() {
  command -v containerd >/dev/null && command -v runc >/dev/null && [[ -x /usr/lib/cni/bridge ]] ||
    die "containerd, runc and the CNI plugins are missing; install the Debian packages: apt-get install containerd runc containernetworking-plugins"
  mkdir -p "$dir" "$state/cni/net.d" "$run" "$logs"
  if pid_alive containerd; then return 0; fi
  # restrict_oom_score_adj: this machine refuses negative oom scores (no CAP_SYS_RESOURCE), and
  # runc then fails every sandbox with "can't get final child's PID from pipe: EOF".
  # SystemdCgroup = false: no systemd; kubelet uses cgroupfs as well.
  cat > "$dir/config.toml" <<EOF
version = 2
root = "$dir/root"
state = "$dir/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  level = "warn"
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "appstorage.local/pause:1"
    restrict_oom_score_adj = true
    stream_server_address = "127.0.0.1"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "$state/cni/net.d"
  [plugins."io.containerd.internal.v1.opt"]
    path = "$dir/opt"
EOF
  # The pods' network: a bridge with host-local addresses, its IPAM state under STATE. isGateway
  # makes the bridge the pods' route to the node (the plugin turns on net.ipv4.ip_forward, which
  # host.sh puts back); no ipMasq: pods need no way out, so no NAT rules in the host's netfilter.
  cat > "$state/cni/net.d/10-appstorage.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "appstorage",
  "plugins": [
    {
      "type": "bridge", "bridge": "appstor0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "${APPSTORAGE_POD_SUBNET:-10.88.0.0/24}"}]], "routes": [{"dst": "0.0.0.0/0"}],
               "dataDir": "$state/cni/ipam"}
    }
  ]
}
EOF
  daemon "$run/containerd.pid" "$logs/containerd.log" containerd --config "$dir/config.toml"
  local i
  for ((i = 0; i < 300; i++)); do
    ctr version >/dev/null 2>&1 && return 0
    pid_alive containerd || { tail -n 20 "$logs/containerd.log" >&2; die "containerd exited while starting (log: $logs/containerd.log)"; }
    sleep 0.1
  done
  die "containerd not ready after 30s (log: $logs/containerd.log)"
}

down() {
  local id pid i
  if pid_alive containerd; then
    # Containers first (SIGKILL: the node is going away), then their records; the shims exit.
    for id in $(ctr tasks ls -q 2>/dev/null); do ctr tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    for ((i = 0; i < 50; i++)); do
      [[ -z "$(ctr tasks ls 2>/dev/null | awk 'NR>1 && $3=="RUNNING"')" ]] && break
      sleep 0.1
    done
    for id in $(ctr tasks ls -q 2>/dev/null); do ctr tasks delete -f "$id" >/dev/null 2>&1 || true; done
  fi
  # Shims of this containerd that are still there (they name its socket in their arguments).
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $sock( |$)" || true); do kill -KILL "$pid" 2>/dev/null || true; done
  stop_pidfile "$run/containerd.pid"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) die "usage: runtime.sh up|down STATE" ;;
esac
