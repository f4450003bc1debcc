# Sourced by the tools' build scripts (lab/tools/*/build.sh): builds a tool's programs once into
# the cache outside the repository, one build at a time, and prints where they are.
#
#   build_once BIN WHAT TIME PROGRAM...
#
# BIN is the bin folder in the cache (its path names what is built: a version, a checksum); WHAT
# and TIME say what is built and how long a first build takes, for the log. The caller defines
# build_into DIR, which builds every PROGRAM into DIR. build_once prints BIN as its last line: at
# once when every PROGRAM is there; otherwise after a build into BIN.tmp, moved to BIN when it is
# complete. Worktrees and test runs share the cache: a lock beside BIN lets one build, and a
# waiter then finds it built.
# shellcheck shell=bash

# shellcheck disable=SC2034 # used by the scripts that source this
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}"

# built BIN PROGRAM...: whether every PROGRAM is in BIN.
built() {
  local bin=$1 p; shift
  for p in "$@"; do [[ -x "$bin/$p" ]] || return 1; done
}

build_once() {
  local bin=$1 what=$2 time=$3 start; shift 3
  if ! built "$bin" "$@"; then
    mkdir -p "$(dirname "$bin")"
    exec 9>"$(dirname "$bin").lock"
    flock 9
    if ! built "$bin" "$@"; then
      start=$SECONDS
      echo "building $what into $bin (first time only, $time)" >&2
      rm -rf "$bin.tmp" && mkdir -p "$bin.tmp"
      build_into "$bin.tmp" >&2
      rm -rf "$bin" && mv "$bin.tmp" "$bin"
      echo "built $what in $((SECONDS - start))s" >&2
    fi
    exec 9>&-
  fi
  echo "$bin"
}
