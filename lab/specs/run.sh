#!/usr/bin/env bash
# Runs Kubernetes' own e2e specs (e2e.test from build.sh) against a running cluster: the
# StatefulSet specs of sig-apps, and the external storage suite for csi.appstorage.local
# (testdriver.yaml). Every spec makes its own namespace (and, for storage, its own copy of the
# storage class) and deletes it; nothing else in the cluster is touched.
#
#   run.sh apps      StatefulSet: basic functionality (identity, adoption, scaling, rolling and
#                    canary updates, OnDelete, eviction, scale subresource, status), claim
#                    retention (Non-retain StatefulSetPersistentVolumeClaimPolicy), start ordinals,
#                    MinReadySeconds
#   run.sh storage   External Storage for csi.appstorage.local: provisioning (with clones and
#                    restores from snapshots), volume-expand, topology, multiVolume, volumes
#                    (filesystem patterns: default fs, xfs; and raw block), snapshottable (dynamic
#                    and pre-provisioned snapshots, delete and retain policies)
#   run.sh subset    a few minutes: one StatefulSet spec (basic identity), and of the storage
#                    suite: a provisioned volume keeps data, topology (both binding modes), online
#                    expansion
#
# KUBECONFIG: the cluster (default the three-zone cluster's admin kubeconfig). Its nodes need the
# images of images.sh (run.sh loads them when APPSTORAGE_E2E_STATE, the cluster's folder, is set,
# or when KUBECONFIG is the default; the load is quick when they are there).
# Reports: $APPSTORAGE_CACHE/e2e/reports/SUITE-TIME/{e2e.log,junit.xml}. Prints the Ginkgo summary
# and the name and first error line of every failed spec; exits 1 if a spec failed.
#
# Skipped everywhere, and why:
#   [Disruptive]  restarts or stops a node's kubelet, or a node: the cluster is shared with other
#                 test runs, which would fail meanwhile
#   [Serial]      must run alone in the cluster, and others' tests run in it at the same time
#   [Flaky]       flaky upstream
#   CockroachDB   needs the cockroachdb image, which no registry here can give
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}"
default_state="$cache/cluster-zones"
die() { echo "e2e run: $*" >&2; exit 1; }

suite="${1:-subset}"
sts='\[sig-apps\] StatefulSet '
ext='External Storage \[Driver: csi\.appstorage\.local\] '
case "$suite" in
  apps)
    focus="${sts}(Basic StatefulSet functionality|Non-retain StatefulSetPersistentVolumeClaimPolicy|Scaling StatefulSetStartOrdinal|MinReadySeconds|AvailableReplicas)"
    ;;
  storage)
    # The patterns of what the driver has (testdriver.yaml); the suite would skip the others itself,
    # the focus keeps the run short.
    focus="${ext}\[Testpattern: (Dynamic PV \((default fs|xfs|filesystem volmode|block volmode|delayed binding|immediate binding)\)(\(allowExpansion\))?|(Dynamic|Pre-provisioned) Snapshot \((delete|retain) policy\))\] (provisioning|volume-expand|topology|multiVolume|volumes|snapshottable) "
    ;;
  subset)
    # The storage suite's provisioning specs are many (clones, restores, two PVs of one volume,
    # mount options), so "volumes should store data" stands for provisioning: it makes a claim of
    # the class, writes through one pod and reads through another.
    focus="${sts}Basic StatefulSet functionality \[StatefulSetBasic\] should provide basic identity|${ext}\[Testpattern: Dynamic PV \((default fs|delayed binding|immediate binding)\)(\(allowExpansion\))?\] (volumes should store data|topology should provision a volume and schedule a pod with AllowedTopologies|volume-expand should resize volume when PVC is edited while pod is using it)"
    ;;
  *) die "usage: lab/specs/run.sh apps|storage|subset" ;;
esac
skip='\[Disruptive\]|\[Serial\]|\[Flaky\]|CockroachDB'

export KUBECONFIG="${KUBECONFIG:-$default_state/admin.kubeconfig}"
[[ -f "$KUBECONFIG" ]] || die "no kubeconfig at $KUBECONFIG; start the cluster (scripts/cluster up --nodes 3) or set KUBECONFIG"
state="${APPSTORAGE_E2E_STATE:-}"
[[ -n "$state" || "$KUBECONFIG" != "$default_state/admin.kubeconfig" ]] || state="$default_state"
bin="$("$here/build.sh" | tail -n 1)"
if [[ -n "$state" ]]; then "$here/images.sh" load "$state"; fi
export KUBE_TEST_REPO_LIST
KUBE_TEST_REPO_LIST="$("$here/images.sh" repo-list | tail -n 1)"

report="$cache/e2e/reports/$suite-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$report"
echo "running e2e specs ($suite) of $("$bin/e2e.test" --version 2>/dev/null | head -n 1) against $KUBECONFIG; log: $report/e2e.log" >&2
status=0
# --provider=local: a cluster of this machine, no cloud. The suite's 1h limit is Ginkgo's default,
# too short for the storage specs on two shared cores. e2e.test's spec logs go to the log file only.
(cd "$report" && "$bin/e2e.test" \
  --kubeconfig="$KUBECONFIG" --provider=local --storage.testdriver="$here/testdriver.yaml" \
  --ginkgo.focus="$focus" --ginkgo.skip="$skip" --ginkgo.timeout=3h --ginkgo.no-color \
  --ginkgo.junit-report="$report/junit.xml" --e2e-output-dir="$report" \
  >"$report/e2e.log" 2>&1) || status=$?

# The Ginkgo summary: "Ran N of M Specs in T seconds" and "SUCCESS!|FAIL! -- P Passed | F Failed | ...".
ran="$(grep -E '^Ran [0-9]+ of [0-9]+ Specs' "$report/e2e.log" | tail -n 1 || true)"
counts="$(grep -E '(SUCCESS|FAIL)! -- [0-9]+ Passed' "$report/e2e.log" | tail -n 1 || true)"
[[ -n "$ran" && -n "$counts" ]] || { tail -n 30 "$report/e2e.log" >&2; die "e2e.test exited ($status) without a summary; see $report/e2e.log"; }
echo "$ran"
echo "$counts"
# Each failure: its full name and the first line of its error, from the JUnit report.
node -e '
  const xml = require("fs").readFileSync(process.argv[1], "utf8");
  const unescape = (s) => s.replace(/&#xA;/g, "\n").replace(/&#34;/g, "\"").replace(/&#39;/g, "\x27")
    .replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  for (const m of xml.matchAll(/<testcase name="([^"]*)"[^>]*status="(failed|panicked|timedout|interrupted)"[^>]*>[\s\S]*?<failure message="([^"]*)"/g)) {
    const line = unescape(m[3]).split("\n").find((l) => l.trim() !== "") ?? "";
    console.log(`FAILED: ${unescape(m[1])}\n  ${m[2]}: ${line.trim()}`);
  }
  // Specs the focus chose that skipped themselves (a capability the driver lacks, ...), by reason;
  // the ones the focus left out have no message.
  const reasons = new Map();
  for (const m of xml.matchAll(/<skipped message="([^"]+)"/g)) {
    if (m[1] === "skipped") continue;
    const r = unescape(m[1]).replace(/^skipped - /, "").split("\n")[0];
    reasons.set(r, (reasons.get(r) ?? 0) + 1);
  }
  for (const [r, n] of [...reasons].sort((a, b) => b[1] - a[1])) console.log(`skipped ${n}: ${r}`);
  ' "$report/junit.xml"
echo "report: $report" >&2
exit "$status"
