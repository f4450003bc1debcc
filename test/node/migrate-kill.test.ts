// --migrate-existing killed, and answered with unknown outcomes, at the requests of a move, on the
// real node: `set db data=256Mi,appstorage-csi-b --migrate-existing` moves the 3 claims of a
// StatefulSet whose pods keep writing (each line carries the writing pod's uid). A baseline run
// through the fault proxy gives the move's requests (everything after the re-create is recorded); then,
// for each write of the move, the plugin is SIGKILLed while the proxy holds it before it reaches
// the server ("before") and after the server answered ("after"), and the same command runs again;
// or the proxy answers the write with a reset after the server did it ("unknown": the plugin cannot
// tell whether it was done) and the run must finish by itself. In every case, over all the runs:
// - the rerun (or the faulted run) ends with exit 0 and every claim on the new class;
// - evictions highest ordinal first, each pod once (db-2, db-1, db-0); never two pods down;
// - each pod replaced exactly once (a watch sees two uids per pod), no container ever restarted;
// - each pod's payload the same bytes; each kept old volume (read back by a pod of the test's own)
//   holds a writer's log that is exactly the start of the new volume's, the last line of every old
//   pod included, and the same tree (stat of every entry and sha256 of every file);
// - no copy pod, no claim of the tool's, no journal left; the old volumes Retain.
//
// Only writes are cases: a kill at a read leaves the server and the journal as the kill before the
// next write does (a read changes nothing; the run's memory is lost either way).
//
// What runs: APPSTORAGE_MOVE_MATRIX=full runs every write of the move (63 in the baseline of 3 claims:
// 18 journal records, 12 volume patches, 6 each of claim and pod creates and deletes, 3 orphan
// deletes, evictions and StatefulSet creates, the journal's removal), before and after, and unknown at
// each: 189 cases, 2 at a time, of 52 to 145 s each on this 2-core machine under load (about 100 s),
// so about 2.5 hours; split it with APPSTORAGE_MOVE_SHARD=i/n (the i-th of n parts). The default, as
// in CI: the first write of each kind (the journal's record, create and delete of claims and pods (a
// delete also tells the final copy to go), the orphan delete, the eviction, the volume patch, the
// StatefulSet's create, the journal's removal), before and after, and unknown at the three writes
// whose outcome the move must read back (the orphan delete, the eviction, the claim's create): 23
// cases, about 20 minutes (27 cases, counted from the re-create, took 1,617 s at a load average of 10
// to 19).
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test, type TestContext } from "node:test";
import type { PersistentVolume, PersistentVolumeClaim } from "../../src/api/types";
import { type Fault, type FaultProxy, type SeenRequest, startFaultProxy } from "../shared/faultproxy";
import { kubeconfig, kubectlJson, kubectlTry, namespace, runPlugin } from "../shared/harness";
import { assertHeldIntended, assertRequestsAccountedFor, evictions, killAt, type PhaseTarget, phaseLabel, phaseTargets, pool, stateDir, within } from "../shared/kill";
import { allReady, create, deleteKeptVolumes, exec, maxDown, payloadSha, type PodSeen, type Running, watchPods, whenTwoDown, workload, copyImage } from "../shared/node";
import { assertLogMoved, keptTreesAndLogs, statInPod, withUidWriter } from "../shared/move";

const names = ["db-0", "db-1", "db-2"];
const setArgs = (ns: string) => ["set", "db", "data=256Mi,appstorage-csi-b", "--migrate-existing", "--copy-image", copyImage, "--timeout", "240s", "-n", ns, "--yes"];
/**
 * The move begins once the StatefulSet is re-created with the new templates and the change is
 * recorded (its event: the record step's last write; the re-create's own writes are the e2e kill
 * matrix's, test/e2e/reliability.test.ts).
 */
const moveStart = "create events";
/** Writes that are not a step of the move: lease renewals come as time passes. */
const moveWrite = (x: PhaseTarget) => x.write && !/^(renew|release) /.test(x.signature);

interface Before {
  ns: string;
  pods: Record<string, Running>;
  data: Record<string, string>;
  volumes: Record<string, string>;
}

async function prepared(t: TestContext): Promise<Before> {
  const ns = namespace(t, "nodemk");
  deleteKeptVolumes(t, ns);
  create(withUidWriter(workload("db", { replicas: 3, size: "256Mi", podManagementPolicy: "Parallel" })), ns);
  const pods = await allReady(ns, "db", 3, 180_000);
  const data = Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));
  const volumes = Object.fromEntries(names.map((n) => [n, kubectlJson<PersistentVolumeClaim>(["get", "pvc", `data-${n}`, "-n", ns]).spec.volumeName!]));
  return { ns, pods, data, volumes };
}

/** A run through a proxy with these faults (none: it only logs); its requests checked against the plugin's own log. */
async function loggedRun(ns: string, context: string, faults: Fault[] = []): Promise<{ code: number; stderr: string; requests: SeenRequest[]; proxy: FaultProxy }> {
  const proxy = await startFaultProxy(kubeconfig(), faults);
  const logFile = join(stateDir(), "requests.log");
  try {
    const r = await within(runPlugin(setArgs(ns), { kubeconfig: proxy.kubeconfig, env: { APPSTORAGE_REQUEST_LOG: logFile } }), 600_000, context);
    await proxy.close();
    assertRequestsAccountedFor(proxy, logFile, context);
    return { ...r, requests: proxy.requests, proxy };
  } finally {
    await proxy.close();
  }
}

/** What must hold once the runs are over (see the file's comment). */
async function assertMoved(b: Before, seen: PodSeen[], evicted: string[], context: string): Promise<void> {
  const { ns } = b;
  assert.deepEqual(evicted, ["db-2", "db-1", "db-0"], `${context}: evicted highest ordinal first, each once`);
  const after = await allReady(ns, "db", 3, 180_000);
  assert.ok(maxDown(seen, names) <= 1, `${context}: never two pods down:\n${whenTwoDown(seen, names)}`);
  for (const n of names) {
    const uids = [...new Set(seen.filter((s) => s.name === n).map((s) => s.uid))];
    assert.deepEqual(uids.sort(), [b.pods[n]!.uid, after[n]!.uid].sort(), `${context}: ${n} replaced exactly once`);
    assert.ok(
      seen.filter((s) => s.name === n).every((s) => s.restarts === "" || s.restarts === "0"),
      `${context}: ${n}: a container restarted (${seen
        .filter((s) => s.name === n)
        .map((s) => s.restarts)
        .join(",")})`,
    );
    assert.equal(after[n]!.restartCount, 0, `${context}: ${n} restart count 0`);
    assert.equal(payloadSha(ns, n), b.data[n], `${context}: ${n} payload kept`);
    const claim = kubectlJson<PersistentVolumeClaim>(["get", "pvc", `data-${n}`, "-n", ns]);
    assert.equal(claim.spec.storageClassName, "appstorage-csi-b", `${context}: data-${n} on the new class`);
    assert.equal(kubectlJson<PersistentVolume>(["get", "pv", b.volumes[n]!]).spec.persistentVolumeReclaimPolicy, "Retain", `${context}: ${n}'s old volume kept`);
  }
  assert.deepEqual(kubectlJson<{ items: unknown[] }>(["get", "pods,pvc", "-n", ns, "-l", "appstorage.kubectl.io/claim"]).items, [], `${context}: no copy pod or claim of the tool's left`);
  assert.notEqual(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 0, `${context}: the journal removed`);
  const kept = await keptTreesAndLogs(
    ns,
    names.map((n) => b.volumes[n]!),
  );
  for (const [i, n] of names.entries()) {
    assert.equal(statInPod(ns, n, ["./load.log"]), kept[i]!.tree, `${context}: ${n}'s tree as on its kept volume`);
    assertLogMoved(kept[i]!.log, exec(ns, n, "cat /data/load.log"), after[n]!.uid, `${context}: ${n}`);
  }
}

/** The cases: the writes of the move, and how each is faulted. */
function cases(phase: PhaseTarget[]): { x: PhaseTarget; how: "hold" | "hold-after" | "reset-after" }[] {
  const writes = phase.filter(moveWrite);
  if (process.env["APPSTORAGE_MOVE_MATRIX"] === "full") {
    const all = writes.flatMap((x) => (["hold", "hold-after", "reset-after"] as const).map((how) => ({ x, how })));
    const [i, n] = (process.env["APPSTORAGE_MOVE_SHARD"] ?? "1/1").split("/").map(Number) as [number, number];
    return all.filter((_, k) => k % n === i - 1);
  }
  const first = writes.filter((x) => x.nth === 0);
  const unknown = ["delete statefulsets", "create pods/eviction", "create persistentvolumeclaims"];
  return [
    ...first.flatMap((x) => (["hold", "hold-after"] as const).map((how) => ({ x, how }))),
    ...first.filter((x) => unknown.includes(x.signature)).map((x) => ({ x, how: "reset-after" as const })),
  ];
}

const summary = { cases: 0, converged: 0 };
const width = 2;

describe("node: --migrate-existing killed or answered with unknown outcomes at the writes of a move", { timeout: 10_000_000 }, () => {
  test("3 replicas under write load: every run converges, nothing lost, one pod down at a time, highest ordinal first", async (t) => {
    const started = Date.now();
    const base = await prepared(t);
    const baseWatch = watchPods(base.ns);
    const r = await loggedRun(base.ns, "baseline");
    assert.equal(r.code, 0, r.stderr);
    await allReady(base.ns, "db", 3, 180_000);
    await baseWatch.stop();
    await assertMoved(base, baseWatch.seen, evictions(r.requests), "baseline");
    kubectlTry(["delete", "namespace", base.ns, "--wait=false"]);
    const phase = phaseTargets(r.requests, moveStart);
    const todo = cases(phase);
    t.diagnostic(`baseline: ${Math.round((Date.now() - started) / 1000)} s; the move's writes: ${phase.filter(moveWrite).map(phaseLabel).join(", ")}`);
    t.diagnostic(`cases (${process.env["APPSTORAGE_MOVE_MATRIX"] === "full" ? `full, shard ${process.env["APPSTORAGE_MOVE_SHARD"] ?? "1/1"}` : "ci"}): ${todo.length}`);
    await pool(todo, width, async ({ x, how }) => {
      const context = `${how === "reset-after" ? "unknown outcome of" : how === "hold" ? "killed before" : "killed after"} ${phaseLabel(x)}`;
      const t0 = Date.now();
      try {
        await oneCase(t, x, how, context);
      } finally {
        t.diagnostic(`${context}: ${Math.round((Date.now() - t0) / 1000)} s`);
      }
    }).finally(() => t.diagnostic(`cases: ${summary.cases}, converged: ${summary.converged}, in ${Math.round((Date.now() - started) / 1000)} s`));
    assert.equal(summary.converged, todo.length, "every case converged");
  });
});

async function oneCase(t: TestContext, x: PhaseTarget, how: "hold" | "hold-after" | "reset-after", context: string): Promise<void> {
  const b = await prepared(t);
  const watch = watchPods(b.ns);
  try {
    summary.cases += 1;
    let evicted: string[];
    if (how === "reset-after") {
      const fault: Fault = { kind: "reset-after", signature: x.signature, nth: x.nth, after: x.after };
      const run = await loggedRun(b.ns, context, [fault]);
      assert.ok(fault.landed, `${context}: the fault did not land`);
      assert.equal(run.code, 0, `${context}: the run did not finish by itself: ${run.stderr}`);
      evicted = evictions(run.requests);
    } else {
      let killed: FaultProxy | undefined;
      const at = await killAt(setArgs(b.ns), x, how, (p) => (killed = p), 300_000);
      assertHeldIntended(killed!.requests, at, x, context);
      const rerun = await loggedRun(b.ns, `${context}: the rerun`);
      assert.equal(rerun.code, 0, `${context}: the rerun failed: ${rerun.stderr}`);
      evicted = [...evictions(killed!.requests), ...evictions(rerun.requests)];
    }
    await allReady(b.ns, "db", 3, 180_000);
    await watch.stop();
    await assertMoved(b, watch.seen, evicted, context);
    summary.converged += 1;
  } finally {
    await watch.stop();
    // Its pods go now, not at the end of the test: the next case has the node to itself.
    kubectlTry(["delete", "namespace", b.ns, "--wait=false"]);
  }
}
