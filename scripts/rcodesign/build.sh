#!/usr/bin/env bash
# Builds rcodesign (crates.io: apple-codesign, version pinned below, with its own Cargo.lock) into
# a cache outside the repository. `npm run release` signs every darwin binary with it, ad hoc,
# after the blob is injected (the packaging test checks the signatures with test/e2e/macho.ts).
# Without the default `notarize` feature: no AWS/App Store Connect clients, a much shorter build.
# Prints the bin directory as its last line. Run by .ci/run.
set -euo pipefail
version=0.29.0
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}"
root="$cache/rcodesign/$version"
if [[ -x "$root/bin/rcodesign" ]]; then
  echo "$root/bin"
  exit 0
fi
command -v cargo >/dev/null || { echo "rcodesign: cargo is required to build it (crates.io: apple-codesign $version); install Rust" >&2; exit 1; }
mkdir -p "$cache/rcodesign"
# One build at a time (worktrees and test runs share the cache); a waiter finds it built.
exec 9>"$cache/rcodesign/.lock"
flock 9
if [[ ! -x "$root/bin/rcodesign" ]]; then
  echo "building rcodesign $version into $root (first time only, several minutes)" >&2
  rm -rf "$root.tmp"
  # --locked: the crate's own Cargo.lock, so the build does not drift with new releases of its dependencies.
  CARGO_TARGET_DIR="$root.tmp/target" cargo install --quiet --locked --no-default-features \
    --root "$root.tmp" apple-codesign --version "=$version" >&2
  rm -rf "$root.tmp/target"
  rm -rf "$root" && mv "$root.tmp" "$root"
fi
echo "$root/bin"
