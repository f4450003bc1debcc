#!/usr/bin/env bash
# Builds actionlint (github.com/rhysd/actionlint/cmd/actionlint, release pinned in go.mod) into a
# cache outside the repository, for test/unit/workflow.test.ts, which checks the release workflow
# with it. Prints the bin directory as its last line. Run by scripts/setup; the test runs it too when
# the cache is empty.
set -euo pipefail
cd "$(dirname "$0")"
version="$(go list -m -f '{{.Version}}' github.com/rhysd/actionlint)"
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}"
bin="$cache/actionlint/$version/bin"
if [[ -x "$bin/actionlint" ]]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$cache/actionlint"
# One build at a time (worktrees and test runs share the cache); a waiter finds it built.
exec 9>"$cache/actionlint/.lock"
flock 9
if [[ ! -x "$bin/actionlint" ]]; then
  echo "building actionlint $version into $bin (first time only, about a minute)" >&2
  rm -rf "$bin.tmp"
  mkdir -p "$bin.tmp"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/rhysd/actionlint.version=$version" \
    -o "$bin.tmp/actionlint" github.com/rhysd/actionlint/cmd/actionlint >&2
  rm -rf "$bin" && mv "$bin.tmp" "$bin"
fi
echo "$bin"
