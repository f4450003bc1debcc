#!/usr/bin/env bash
# Builds actionlint (github.com/rhysd/actionlint/cmd/actionlint, release pinned in go.mod) into a
# cache outside the repository, for test/unit/workflow.test.ts, which checks the release workflow
# with it. Prints the bin directory as its last line. Run by scripts/setup; the test runs it too when
# the cache is empty.
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source-path=SCRIPTDIR
source ../build-once.sh
version="$(go list -m -f '{{.Version}}' github.com/rhysd/actionlint)"
build_into() {
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/rhysd/actionlint.version=$version" -o "$1/actionlint" github.com/rhysd/actionlint/cmd/actionlint
}
build_once "$cache/actionlint/$version/bin" "actionlint $version" "about a minute" actionlint
