#!/usr/bin/env bash
# What the node changes on the host, recorded before it starts and put back after it stops.
# kubelet, containerd and the CNI plugins change things outside their own folders: sysctls
# (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops; net.ipv4.ip_forward from the bridge
# plugin), netfilter rules, the bridge and the pods' veths and network namespaces, mounts, kubepods
# cgroups, loop devices (the CSI driver), paths kubelet and containerd hard-wire, and the data
# folders of the storage provisioners (storage.sh).
#
#   host.sh record STATE   writes the host's state into STATE/host (only if no record is there:
#                          a second up on a running node keeps the first record)
#   host.sh restore STATE  kills what runs in cgroups the node made, unmounts and detaches what it
#                          left under its paths, deletes its network namespaces, links and netfilter
#                          changes, writes the recorded sysctls back, removes the paths that were
#                          not there; then says what still differs (exit 1 if anything does)
#   host.sh diff STATE     only says what differs from the record
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/processes.sh"
die() { echo "host: $*" >&2; exit 1; }

# Paths kubelet, containerd and CNI use whatever they are told (or that the node uses outside STATE:
# the data folders of minikube's storage-provisioner and of local-path-provisioner, storage.sh).
hardwired=(/var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/containerd /var/run/containerd
  /run/netns /var/run/netns /var/lib/containerd /usr/libexec/kubernetes /etc/cni /opt/cni
  /tmp/hostpath-provisioner /var/local-path-provisioner
  /var/lib/kubectl-appstorage) # the single node's kubelet root (lab/cluster's kubelet_root)
# Counters and random values: never the node's doing, never written back.
volatile='^(fs\.(dentry-state|file-nr|inode-nr|inode-state|aio-nr|quota\.)|kernel\.(ns_last_pid|random\.|pty\.nr)|net\.netfilter\.nf_conntrack_count)'
# The CNI bridge of runtime.sh, and the host ends of the pods' veth pairs.
# nodes.sh's: the host ends of the nodes' veth pairs (appstor-h1, ...).
ours_link='^(appstor0|appstor-h|veth)'

sysctls() { sysctl -a 2>/dev/null | grep -Ev "$volatile" | grep -Ev '^net\.ipv[46]\.(conf|neigh)\.(appstor0|appstor-h|veth)' | sort; }
mountpoints() { awk '{print $2}' /proc/mounts; }
links() { ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort; }
netns() { ls -1 /run/netns 2>/dev/null | sort || true; }
loops() { losetup -a -O NAME,BACK-FILE --noheadings 2>/dev/null | sort || true; }
# kubelet's cgroups in every hierarchy (kubepods, with the QoS classes and pods below it). Only
# these: a cgroup someone else makes meanwhile is none of the node's business.
# The nodes of nodes.sh keep theirs under a cgroup root of their own (appstor-node-a, ...).
cgroups() { find /sys/fs/cgroup -mindepth 2 -maxdepth 2 -type d \( -name 'kubepods*' -o -name 'appstor-node-*' \) 2>/dev/null | sort; }
ruleset() { nft list ruleset 2>/dev/null || true; }
paths() {
  local p
  for p in "${hardwired[@]}"; do
    if [[ -L "$p" ]]; then echo "$p -> $(readlink "$p")"
    elif [[ -d "$p" ]]; then echo "$p/"; find "$p" -mindepth 1 -maxdepth 1 2>/dev/null | sort
    elif [[ -e "$p" ]]; then echo "$p"; fi
  done
}

snapshot() {
  local d=$1
  mkdir -p "$d"
  sysctls > "$d/sysctl"; mountpoints > "$d/mounts"; links > "$d/links"; netns > "$d/netns"
  loops > "$d/loops"; cgroups > "$d/cgroups"; ruleset > "$d/nft"; paths > "$d/paths"
  iptables-save 2>/dev/null | grep -v '^#' > "$d/iptables" || true
}

record() {
  local rec="$1/host"
  [[ -f "$rec/done" ]] && return 0
  snapshot "$rec"
  echo "$1" > "$rec/done"
}

# under PATH PREFIX...: whether PATH is one of the prefixes or below one.
under() {
  local p=$1 x; shift
  for x in "$@"; do [[ "$p" == "$x" || "$p" == "$x"/* ]] && return 0; done
  return 1
}

restore() {
  local state=$1 rec="$1/host" now
  [[ -f "$rec/done" ]] || return 0
  local owned=("$state" "${hardwired[@]}")
  # 1. The kubepods cgroups the node made, with the processes left in them (containers whose shim
  # is gone).
  local cg
  for cg in $(comm -13 "$rec/cgroups" <(cgroups)); do remove_cgroup "$cg"; done
  # 2. Network namespaces, then our links (a veth goes with its namespace; the bridge stays).
  local n l
  for n in $(comm -13 "$rec/netns" <(netns)); do ip netns delete "$n" 2>/dev/null || umount -l "/run/netns/$n" 2>/dev/null || true; done
  for l in $(comm -13 "$rec/links" <(links) | grep -E "$ours_link" || true); do ip link delete "$l" 2>/dev/null || true; done
  # 3. Mounts under the node's paths, deepest first (a mount under a mount).
  local m
  while read -r m; do
    m="$(printf '%b' "$m")"
    under "$m" "${owned[@]}" || continue
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done < <(mountpoints | grep -vxF -f "$rec/mounts" | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-)
  # 4. Loop devices backed by files under STATE (the CSI driver's volumes).
  local dev file
  while read -r dev file; do
    [[ -n "$file" ]] && under "$file" "$state" && losetup -d "$dev" 2>/dev/null || true
  done < <(comm -13 "$rec/loops" <(loops))
  # 5. Netfilter: the whole ruleset as recorded (iptables-nft keeps its rules there too).
  if [[ "$(ruleset)" != "$(cat "$rec/nft")" ]]; then
    nft flush ruleset
    [[ -s "$rec/nft" ]] && nft -f "$rec/nft"
  fi
  # 6. Sysctls whose value changed; twice, as one write changes others (net.ipv4.ip_forward sets
  # every interface's forwarding and accept_redirects).
  local key val pass line
  for pass in 1 2; do
    while IFS= read -r line; do
      key="${line%% = *}"; val="${line#* = }"
      sysctl -q -w "$key=$val" >/dev/null 2>&1 || true
    done < <(comm -23 "$rec/sysctl" <(sysctls) | sort -t= -k1,1 -s | awk '/^net\.ipv4\.ip_forward /{print; next} {rest = rest $0 "\n"} END {printf "%s", rest}')
  done
  # 7. Hard-wired paths: what was not there goes (never across a mount: --one-file-system).
  local p
  for p in "${hardwired[@]}"; do
    if grep -qxF -e "$p/" -e "$p" "$rec/paths" || grep -q "^$p -> " "$rec/paths"; then
      if [[ -d "$p" && ! -L "$p" ]] && grep -qxF "$p/" "$rec/paths"; then
        find "$p" -mindepth 1 -maxdepth 1 | sort | grep -vxF -f <(grep -v '/$' "$rec/paths") |
          while read -r x; do rm -rf --one-file-system "$x"; done || true
      fi
    else
      rm -rf --one-file-system "$p"
    fi
  done
  diff_host "$state"
}

# diff_host STATE: what differs from the record (on stderr); exit 1 if anything does.
diff_host() {
  local rec="$1/host" now f bad=0
  now="$(mktemp -d)"
  snapshot "$now"
  for f in sysctl mounts links netns loops cgroups nft paths iptables; do
    if ! cmp -s "$rec/$f" "$now/$f"; then
      bad=1
      echo "host: $f differs from before the node started:" >&2
      diff "$rec/$f" "$now/$f" | grep '^[<>]' | head -n 20 >&2 || true
    fi
  done
  rm -rf "$now"
  return $bad
}

case "${1:-}" in
  record) [[ -n "${2:-}" ]] || die "usage: host.sh record STATE"; record "$2" ;;
  restore) [[ -n "${2:-}" ]] || die "usage: host.sh restore STATE"; restore "$2" ;;
  diff) [[ -n "${2:-}" ]] || die "usage: host.sh diff STATE"; diff_host "$2" ;;
  *) echo "usage: host.sh record|restore|diff STATE" >&2; exit 2 ;;
esac
