// The reliability suite's kill check in the waits and restarts of existing claims
// (test/e2e/reliability.test.ts, "SIGKILL in the waits and restarts of existing claims"), on the
// real node: the real external-resizer grows the volumes, the real kubelet tries to grow the file
// systems, mounts volumes again and stops containers with SIGTERM. `set data=2Gi --resize-existing
// --wait-resize --restart-pods` on 3 replicas: data-db-0 is on the online-expandable class
// (appstorage-csi, made before the StatefulSet, which uses the claim of that name), so it grows in
// its running pod and db-0 is never restarted; data-db-1 and data-db-2 are on an at-mount class, so
// kubelet leaves them FileSystemResizePending and the plugin evicts db-2, then db-1.
//
// A baseline run through the fault proxy gives the requests after the journal's removal; for each
// one, the plugin is SIGKILLed while the proxy holds it before it reaches the server and
// after its answer, then a plain rerun must converge. In every case, over the killed run and the
// rerun: the claims keep their uids; db-1 and db-2 get a new pod exactly once each (a watch sees
// exactly two uids for each) and db-0 keeps its pod, container and restart count 0; each ordinal's
// data has its checksum from before; df in each pod shows 2 GiB; never more than one pod is down.
//
// The full matrix, as on the control plane: every request of the phase (14 in the baseline on this
// machine: the waits' lists, watches and reads, and the two evictions), before and after, so 28
// kills. A request the killed run never makes fails the case, as a fault that lands nowhere does
// there. Cases run 2 at a time, each in its own namespace: one case alone takes about 26 s here (a
// fresh StatefulSet whose 3 volumes are provisioned, formatted and mounted, the resize, two real
// restarts, and the rerun), so one at a time would take about 13 minutes. 2 at a time, on this
// 2-core machine, the whole test took 571 s (cases 27 to 48 s each), and 725 s while other test runs
// loaded it (load average 13 to 15; cases 35 to 61 s): about the 10 minutes this check may take, so
// the full matrix runs rather than the quick one (the evictions and the first of each wait's requests).
import assert from "node:assert/strict";
import { describe, test, type TestContext } from "node:test";
import { type FaultProxy, type SeenRequest, startFaultProxy } from "../shared/faultproxy";
import { apply, claims, kubeconfig, kubectlTry, namespace, runPlugin } from "../shared/harness";
import { assertHeldIntended, assertRequestsAccountedFor, evictions, killAt, type PhaseTarget, phaseLabel, phaseTargets, pool, stateDir, within } from "../shared/kill";
import { join } from "node:path";
import { aboutGiB, allReady, atMountClass, claimStatus, create, fsBytes, maxDown, payloadSha, type PodSeen, type Running, watchPods, workload } from "../shared/node";

const names = ["db-0", "db-1", "db-2"];
/** The pods whose claims wait for a restart, in the order the plugin restarts them. */
const restarted = ["db-2", "db-1"];
const flags = ["--resize-existing", "--wait-resize", "--restart-pods"];
const setArgs = (ns: string) => ["set", "db", "data=2Gi", "-n", ns, "--yes", ...flags, "--timeout", "240s"];

interface Before {
  ns: string;
  pods: Record<string, Running>;
  data: Record<string, string>;
  claimUids: Record<string, string>;
}

/** db with 3 Ready pods, data written: data-db-0 on the online class, the others on an at-mount class. */
async function prepared(t: TestContext): Promise<Before> {
  const ns = namespace(t, "nodek");
  const cls = atMountClass(t, ns);
  apply(
    {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name: "data-db-0", labels: { app: "db" } },
      spec: { accessModes: ["ReadWriteOnce"], storageClassName: "appstorage-csi", resources: { requests: { storage: "1Gi" } } },
    },
    ns,
  );
  create(workload("db", { replicas: 3, size: "1Gi", storageClass: cls, podManagementPolicy: "Parallel" }), ns);
  const pods = await allReady(ns, "db", 3, 180_000);
  const data = Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));
  const claimUids = Object.fromEntries(claims(ns).map((c) => [c.metadata.name!, c.metadata.uid!]));
  assert.deepEqual(
    Object.keys(claimUids).sort(),
    names.map((n) => `data-${n}`),
  );
  return { ns, pods, data, claimUids };
}

/** A run through a proxy that only logs: its result and its requests, checked against the plugin's own log. */
async function loggedRun(ns: string, context: string): Promise<{ code: number; stdout: string; stderr: string; requests: SeenRequest[] }> {
  const proxy = await startFaultProxy(kubeconfig(), []);
  const logFile = join(stateDir(), "requests.log");
  try {
    const r = await within(runPlugin(setArgs(ns), { kubeconfig: proxy.kubeconfig, env: { APPSTORAGE_REQUEST_LOG: logFile } }), 300_000, context);
    await proxy.close();
    assertRequestsAccountedFor(proxy, logFile, context);
    return { ...r, requests: proxy.requests };
  } finally {
    await proxy.close();
  }
}

/**
 * What must hold once the runs are over: the claims kept, each restarted pod restarted exactly
 * once (`seen`: a watch over all the runs), db-0 untouched, the data kept, the file systems grown,
 * one pod down at most.
 */
async function assertKept(b: Before, seen: PodSeen[], evicted: string[], context: string): Promise<void> {
  assert.deepEqual([...evicted].sort(), [...restarted].sort(), `${context}: evicted ${evicted.join(", ") || "none"}`);
  const after = await allReady(b.ns, "db", 3, 180_000);
  const { ns } = b;
  assert.deepEqual(Object.fromEntries(claims(ns).map((c) => [c.metadata.name!, c.metadata.uid!])), b.claimUids, `${context}: claims kept`);
  for (const n of names) {
    const uidsSeen = [...new Set(seen.filter((s) => s.name === n).map((s) => s.uid))];
    if (restarted.includes(n)) {
      assert.notEqual(after[n]!.uid, b.pods[n]!.uid, `${context}: ${n} restarted`);
      assert.notEqual(after[n]!.containerID, b.pods[n]!.containerID, `${context}: ${n} has a new container`);
      assert.equal(after[n]!.restartCount, 0, `${context}: ${n}'s new container never restarted`);
      assert.deepEqual(uidsSeen.sort(), [b.pods[n]!.uid, after[n]!.uid].sort(), `${context}: ${n} restarted exactly once`);
      // Graceful: every exit of the old container the watch saw is its own exit code 0 on SIGTERM
      // (a SIGKILL gives 137).
      const exits = seen.filter((s) => s.uid === b.pods[n]!.uid && s.exitCode !== "").map((s) => s.exitCode);
      // kubelet reports the terminated container before the pod goes: no exit seen is a watch that saw nothing.
      assert.ok(exits.length > 0 && exits.every((c) => c === "0"), `${context}: ${n}'s old container exited ${exits.join(",") || "(no exit seen)"}`);
    } else {
      assert.deepEqual(after[n], b.pods[n], `${context}: ${n} same pod, same container, restart count 0`);
      assert.deepEqual(uidsSeen, [b.pods[n]!.uid], `${context}: ${n} never replaced`);
    }
    assert.equal(payloadSha(ns, n), b.data[n], `${context}: ${n} data kept`);
    const bytes = fsBytes(ns, n);
    assert.ok(aboutGiB(bytes, 2), `${context}: ${n} df shows 2 GiB (${bytes} bytes)`);
    assert.deepEqual(claimStatus(ns, `data-${n}`), { phase: "Bound", capacity: "2Gi", conditions: [] }, `${context}: data-${n}`);
  }
  assert.equal(maxDown(seen, names), 1, `${context}: one pod down at a time, over all the runs`);
}

const summary = { kills: 0, reruns: 0 };
/** Cases at once: 2 fits the 2 cores (see above). */
const width = 2;

describe("node: SIGKILL in the waits and restarts of existing claims", { timeout: 3_000_000 }, () => {
  test("--wait-resize --restart-pods on the real node: killed before and after every request of the waits and evictions, the rerun converges, no pod restarted twice, data kept", async (t) => {
    // The baseline, which is itself checked as a case.
    const started = Date.now();
    const base = await prepared(t);
    const baseWatch = watchPods(base.ns);
    const r = await loggedRun(base.ns, "baseline");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /pod\/db-2 evicted\npod\/db-1 evicted\n$/, r.stdout);
    assert.match(r.stderr, /claim data-db-0: resized: capacity 2Gi/);
    await allReady(base.ns, "db", 3, 180_000);
    await baseWatch.stop();
    await assertKept(base, baseWatch.seen, evictions(r.requests), "baseline");
    kubectlTry(["delete", "namespace", base.ns, "--wait=false"]);
    t.diagnostic(`baseline: ${Math.round((Date.now() - started) / 1000)} s`);

    const phase = phaseTargets(r.requests);
    for (const s of ["list persistentvolumeclaims", "watch persistentvolumeclaims", "create pods/eviction", "watch pods"])
      assert.ok(
        phase.some((x) => x.signature === s),
        `the wait made no ${s}: ${phase.map(phaseLabel).join(", ")}`,
      );
    assert.equal(phase.filter((x) => x.signature === "create pods/eviction").length, 2, "the baseline evicted twice");
    t.diagnostic(`phase after the journal's removal (${phase.length} requests): ${phase.map(phaseLabel).join(", ")}`);
    const cases = phase.flatMap((x) => (["hold", "hold-after"] as const).map((when) => ({ x, when })));

    await pool(cases, width, async ({ x, when }) => {
      const context = `killed ${when === "hold" ? "before" : "after"} ${phaseLabel(x)}`;
      const t0 = Date.now();
      try {
        await killCase(t, x, when, context);
      } finally {
        t.diagnostic(`${context}: ${Math.round((Date.now() - t0) / 1000)} s`);
      }
    }).finally(() => t.diagnostic(`kills that landed: ${summary.kills} of ${cases.length} cases; reruns converged: ${summary.reruns}`));
    assert.equal(summary.kills, cases.length, "every kill landed");
    assert.equal(summary.reruns, cases.length, "every rerun converged");
  });
});

async function killCase(t: TestContext, x: PhaseTarget, when: "hold" | "hold-after", context: string): Promise<void> {
  const b = await prepared(t);
  const watch = watchPods(b.ns);
  try {
    let killed: FaultProxy | undefined;
    const at = await killAt(setArgs(b.ns), x, when, (p) => (killed = p), 240_000);
    const log = killed!.requests;
    assertHeldIntended(log, at, x, context);
    summary.kills += 1;
    const evictedBefore = evictions(log);
    assert.deepEqual(Object.fromEntries(claims(b.ns).map((c) => [c.metadata.name!, c.metadata.uid!])), b.claimUids, `${context}: claims kept by the killed run`);

    const rerun = await loggedRun(b.ns, `${context}: the rerun`);
    assert.equal(rerun.code, 0, `${context}: the rerun failed: ${rerun.stderr}`);
    assert.doesNotMatch(rerun.stderr, /another kubectl appstorage set is working/, `${context}: a dead run's lock blocked the rerun`);
    assert.match(rerun.stdout, /^statefulset.apps\/db (recreated|unchanged)\n(persistentvolumeclaim\/\S+ patched\n)*(pod\/\S+ evicted\n)*$/, `${context}: ${rerun.stdout}`);
    summary.reruns += 1;
    await allReady(b.ns, "db", 3, 180_000);
    await watch.stop();
    await assertKept(b, watch.seen, [...evictedBefore, ...evictions(rerun.requests)], context);
  } finally {
    await watch.stop();
    // Its pods and volumes go now, not at the end of the test: the next case has the node to itself.
    kubectlTry(["delete", "namespace", b.ns, "--wait=false"]);
  }
}
