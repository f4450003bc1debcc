#!/usr/bin/env bash
# Builds kubectl of the newest pinned Kubernetes release (k8s.io/kubernetes/cmd/kubectl in the lab's
# newest pin, lab/controlplane/versions/MINOR.mod) into the cache, beside the servers of that pin,
# whose compiled packages it reuses. The benchmarks and the kubectl-parity tests compare the plugin
# with this kubectl; the machine's kubectl stays for plugin discovery. Prints the bin directory as
# its last line. Run by scripts/setup (npm run setup, which npm test and .ci/run run).
#   build.sh            kubectl for this machine (linux/amd64)
#   build.sh windows    kubectl.exe for windows/amd64, which the Windows check runs under wine
#                       (test/e2e/packaging.test.ts: plugin discovery and the completion shim)
set -euo pipefail
case "${1:-}" in
  "" | windows) ;;
  *) echo "usage: lab/tools/kubectl/build.sh [windows]" >&2; exit 2 ;;
esac
exec bash "$(dirname "$0")/../../controlplane/build.sh" --program kubectl ${1:+"$1"}
