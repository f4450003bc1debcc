#!/usr/bin/env bash
# Builds e2e.test, a Ginkgo binary of Kubernetes' own e2e specs (e2e_test.go: test/e2e/apps and
# test/e2e/storage/external of the k8s.io/kubernetes release pinned in go.mod, the control plane's
# pin) into a cache outside the repository, keyed by that release and the go.sum hash, so a second
# run prints the path at once. Prints the bin directory as its last line of stdout.
#   build.sh            e2e.test
#   build.sh agnhost    also agnhost, from the same module (test/images/agnhost), for images.sh
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source-path=SCRIPTDIR
source ../controlplane/ldflags.sh
version="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}"
bin="$cache/e2e/$version-$(sha256sum go.sum | cut -c1-12)/bin"
want=(e2e.test)
case "${1:-}" in
  "") ;;
  agnhost) want+=(agnhost) ;;
  *) echo "usage: lab/specs/build.sh [agnhost]" >&2; exit 2 ;;
esac
built() { local f; for f in "${want[@]}"; do [[ -x "$bin/$f" ]] || return 1; done; }
if built; then echo "$bin"; exit 0; fi
mkdir -p "$bin"
# One build at a time (worktrees and test runs share the cache); a waiter finds it built.
exec 9>"${bin%/bin}.lock"
flock 9
ldflags="$(version_ldflags "$version")"
# The machine's two cores are shared with other work: the builds run at a lower priority.
if [[ ! -x "$bin/e2e.test" ]]; then
  start=$SECONDS
  echo "building e2e.test of $version into $bin (first time only; minutes on 2 cores, fewer when go's build cache holds the control plane's packages)" >&2
  CGO_ENABLED=0 nice -n 10 go test -c -trimpath -ldflags "$ldflags" -o "$bin/e2e.test.tmp" . >&2
  mv "$bin/e2e.test.tmp" "$bin/e2e.test"
  echo "built e2e.test of $version in $((SECONDS - start))s" >&2
fi
if [[ " ${want[*]} " == *" agnhost "* && ! -x "$bin/agnhost" ]]; then
  start=$SECONDS
  echo "building agnhost of $version into $bin" >&2
  # Static, so that it runs in an image with nothing else in it.
  CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$bin/agnhost.tmp" k8s.io/kubernetes/test/images/agnhost >&2
  mv "$bin/agnhost.tmp" "$bin/agnhost"
  echo "built agnhost of $version in $((SECONDS - start))s" >&2
fi
echo "$bin"
