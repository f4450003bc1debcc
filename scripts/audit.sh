#!/usr/bin/env bash
# npm audit of the runtime dependencies (the ones bundled into the plugin): fails on a high or
# critical advisory. Where the registry answers without an audit endpoint (as the registry this
# project's machines reach does: HTTP 405), it says so and does not pretend to have checked.
set -uo pipefail
cd "$(dirname "$0")/.."
out="$(npm audit --omit=dev --audit-level=high 2>&1)"
code=$?
if grep -qE "audit endpoint returned an error|405 Method Not Allowed|ENOAUDIT" <<<"$out"; then
  echo "audit: SKIPPED, the npm registry reachable here has no audit endpoint; run 'npm audit --omit=dev' where it does" >&2
  exit 0
fi
echo "$out"
exit $code
