#!/usr/bin/env bash
# Builds e2e.test, a Ginkgo binary of Kubernetes' own e2e specs (e2e_test.go: test/e2e/apps and
# test/e2e/storage/external of the k8s.io/kubernetes release of the lab's newest pin,
# lab/controlplane/versions/MINOR.mod, which holds this package too), into the cache beside the
# servers of that pin, whose compiled packages it reuses. Prints the bin directory as its last line.
#   build.sh            e2e.test
#   build.sh agnhost    also agnhost, from the same module (test/images/agnhost), for images.sh
set -euo pipefail
build="$(dirname "$0")/../controlplane/build.sh"
case "${1:-}" in
  "") ;;
  agnhost) nice -n 10 bash "$build" --program agnhost >/dev/null ;;
  *) echo "usage: lab/specs/build.sh [agnhost]" >&2; exit 2 ;;
esac
nice -n 10 bash "$build" --program e2e.test
