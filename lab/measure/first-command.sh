#!/usr/bin/env bash
# The README's first command (npm ci && npm run build && npm run demo) measured cold, as a new user
# meets it: a fresh clone of this repository's HEAD, HOME an empty folder (no Go module or build
# cache, no npm cache, no ~/.cache/kubectl-appstorage), CI=true, no stdin. With --remove-packages
# (root), the Debian packages a new machine of this kind lacks are removed first (apt-get remove,
# apt-get clean), so that the demo's setup installs them as it would there.
#
#   lab/measure/first-command.sh [--remove-packages] [OUT]
#
# OUT (default /tmp/first-command) gets each command's log, `times` (each command's exit code and
# seconds, then the total), `load.log` (the load average every 30 s) and `commit`. Run it under the
# node lock (flock /tmp/appstorage-node.lock ...): the demo starts the node. Leaves the demo's cluster
# running, as the demo does; its last line says how to stop it.
# apt: git (and apt-get for --remove-packages)
set -uo pipefail
remove=0
if [[ "${1:-}" == --remove-packages ]]; then remove=1; shift; fi
out="${1:-/tmp/first-command}"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cold=/tmp/cold
rm -rf "$cold" "$out"; mkdir -p "$cold/home" "$out"
if ((remove)); then
  apt-get remove -y -qq containerd runc containernetworking-plugins busybox-static nftables xfsprogs iptables socat >"$out/apt-remove.log" 2>&1
  apt-get clean
fi
git clone -q "$repo" "$cold/kubectl-appstorage"
cd "$cold/kubectl-appstorage" || exit 1
git rev-parse --short HEAD > "$out/commit"
(while :; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 30; done) > "$out/load.log" &
sampler=$!
export HOME="$cold/home" CI=true
start=$SECONDS
for step in "npm ci" "npm run build" "npm run demo"; do
  t=$SECONDS
  $step </dev/null >"$out/${step// /-}.log" 2>&1
  rc=$?
  echo "$step: exit $rc, $((SECONDS - t)) s" >> "$out/times"
  ((rc == 0)) || break
done
echo "total: $((SECONDS - start)) s" >> "$out/times"
kill "$sampler"
cat "$out/times"
