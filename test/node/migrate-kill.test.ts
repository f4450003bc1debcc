// --migrate-existing killed, and answered with faults, at the requests of a move, on the real node:
// `set db data=256Mi,appstorage-csi-b --migrate-existing` moves the 3 claims of a StatefulSet whose
// pods keep writing (each line carries the writing pod's uid). A baseline run through the fault
// proxy gives the move's requests (everything after the re-create is recorded); then, for a write of
// the move, the plugin is SIGKILLed while the proxy holds it before it reaches the server ("before")
// or after the server answered ("after"), and the same command runs again; or the proxy answers the
// write with a reset after the server did it ("unknown": the plugin cannot tell whether it was done),
// or with a fault of the API server's (a 503, a 429, no answer at all, a watch that breaks after an
// event) and the run must finish by itself. In every case, over all the runs:
// - the rerun (or the faulted run) ends with exit 0 and every claim on the new class;
// - evictions highest ordinal first, each pod once (db-2, db-1, db-0); never two pods down;
// - each pod replaced exactly once (a watch sees two uids per pod), no container ever restarted;
// - each pod's payload the same bytes; each kept old volume (read back by a pod of the test's own)
//   holds a writer's log that is exactly the start of the new volume's, the last line of every old
//   pod included, and the same tree (stat of every entry and sha256 of every file);
// - each old volume Retain, with the labels and annotations the README documents for a kept
//   volume; each new volume with its class's reclaim policy again; each moved claim with the labels
//   it had;
// - no copy pod, no claim of the tool's, no journal left.
//
// Only writes are killed at: a kill at a read leaves the server and the journal as the kill before
// the next write does (a read changes nothing; the run's memory is lost either way).
//
// What runs: by default, as in CI, one case at every write of the move of db-1, the second claim
// to move (its writes counted from the create of its claim of a new volume, the first of them): the
// claim of the new volume, the first copy's pod, its removal, the final copy's pod, the orphan
// delete, the eviction, the final copy's go, the old volume's Retain, the new volume's hold, the
// two claims' deletes, the new volume's bind, the claim's create on it, the StatefulSet's create,
// the new volume's policy given back, a journal record; and the journal's removal at the end. Each
// is killed before or after (in turn), and the three writes whose outcome the move must read back
// (the orphan delete, the eviction, the claim's create) get an unknown outcome instead. Then four
// faults of the API server on db-1's move: a 503 on the new volume's hold, a 429 on the eviction, no
// answer to the claim of the new volume (with --request-timeout 10s), and a watch of pods broken
// after an event. 21 cases, 2 at a time, about 20 minutes here.
// APPSTORAGE_MOVE_MATRIX=full runs every write of the baseline's move (63 in the baseline of 3
// claims: 18 journal records, 12 volume patches, 6 each of claim and pod creates and deletes, 3
// orphan deletes, evictions and StatefulSet creates, the journal's removal), before and after, and
// unknown at each, plus the four faults: 193 cases, 2 at a time, of 52 to 145 s each on this 2-core
// machine under load (about 100 s), so about 2.5 hours; split it with APPSTORAGE_MOVE_SHARD=i/n
// (the i-th of n parts): `APPSTORAGE_MOVE_MATRIX=full APPSTORAGE_MOVE_SHARD=1/4 node scripts/test.mjs node test/node/migrate-kill.test.ts`.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test, type TestContext } from "node:test";
import type { PersistentVolume, PersistentVolumeClaim } from "../../src/api/types";
import { type Fault, type FaultProxy, isWrite, type SeenRequest, startFaultProxy } from "../shared/faultproxy";
import { kubeconfig, kubectlJson, kubectlTry, namespace, runPlugin } from "../shared/harness";
import {
  assertHeldIntended,
  assertRequestsAccountedFor,
  evictions,
  type KillTarget,
  killAt,
  names as namesObject,
  type PhaseTarget,
  phaseLabel,
  phaseTargets,
  pool,
  stateDir,
  within,
} from "../shared/kill";
import { allReady, create, deleteKeptVolumes, exec, maxDown, payloadSha, type PodSeen, type Running, watchPods, whenTwoDown, workload, copyImage } from "../shared/node";
import { assertLogMoved, keptTreesAndLogs, statInPod, withUidWriter } from "../shared/move";

const names = ["db-0", "db-1", "db-2"];
const setArgs = (ns: string, extra: string[] = []) => ["set", "db", "data=256Mi,appstorage-csi-b", "--migrate-existing", "--copy-image", copyImage, "--timeout", "240s", "-n", ns, "--yes", ...extra];
/** The second claim to move: its move begins with the create of its claim of a new volume. */
const second = "appstorage-new-data-db-1";
const third = "appstorage-new-data-db-0";
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
  /** Each claim's labels before the move: the claim re-created on the new volume has them again. */
  labels: Record<string, Record<string, string> | undefined>;
}

async function prepared(t: TestContext): Promise<Before> {
  const ns = namespace(t, "nodemk");
  deleteKeptVolumes(t, ns);
  create(withUidWriter(workload("db", { replicas: 3, size: "256Mi", podManagementPolicy: "Parallel" })), ns);
  const pods = await allReady(ns, "db", 3, 180_000);
  const data = Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));
  const claims = Object.fromEntries(names.map((n) => [n, kubectlJson<PersistentVolumeClaim>(["get", "pvc", `data-${n}`, "-n", ns])]));
  const volumes = Object.fromEntries(names.map((n) => [n, claims[n]!.spec.volumeName!]));
  const labels = Object.fromEntries(names.map((n) => [n, claims[n]!.metadata.labels]));
  return { ns, pods, data, volumes, labels };
}

/** A run through a proxy with these faults (none: it only logs); its requests checked against the plugin's own log. */
async function loggedRun(ns: string, context: string, faults: Fault[] = [], extra: string[] = []): Promise<{ code: number; stderr: string; requests: SeenRequest[]; proxy: FaultProxy }> {
  const proxy = await startFaultProxy(kubeconfig(), faults);
  const logFile = join(stateDir(), "requests.log");
  try {
    const r = await within(runPlugin(setArgs(ns, extra), { kubeconfig: proxy.kubeconfig, env: { APPSTORAGE_REQUEST_LOG: logFile } }), 600_000, context);
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
    // The old volume kept, labelled and annotated as the README's "Moving existing claims" says; the new one with its class's policy again.
    const kept = kubectlJson<PersistentVolume>(["get", "pv", b.volumes[n]!]);
    assert.equal(kept.spec.persistentVolumeReclaimPolicy, "Retain", `${context}: ${n}'s old volume kept`);
    const { "appstorage.kubectl.io/retained-at": at, ...labels } = kept.metadata.labels ?? {};
    assert.deepEqual(
      labels,
      {
        ...Object.fromEntries(Object.entries(kept.metadata.labels ?? {}).filter(([k]) => !k.startsWith("appstorage.kubectl.io/") && k !== "app.kubernetes.io/managed-by")),
        "app.kubernetes.io/managed-by": "kubectl-appstorage",
        "appstorage.kubectl.io/namespace": ns,
        "appstorage.kubectl.io/statefulset": "db",
        "appstorage.kubectl.io/claim": `data-${n}`,
        "appstorage.kubectl.io/ordinal": n.slice(3),
      },
      `${context}: ${n}'s old volume's labels`,
    );
    assert.match(at ?? "", /^\d{4}-\d{2}-\d{2}$/, `${context}: ${n}'s old volume's retained-at label`);
    assert.equal(kept.metadata.annotations?.["appstorage.kubectl.io/claim"], `data-${n}`, `${context}: ${n}'s old volume's claim annotation`);
    assert.equal(kept.metadata.annotations?.["appstorage.kubectl.io/statefulset"], "db", `${context}: ${n}'s old volume's statefulset annotation`);
    assert.equal(
      kubectlJson<PersistentVolume>(["get", "pv", claim.spec.volumeName!]).spec.persistentVolumeReclaimPolicy,
      newClassPolicy(),
      `${context}: ${n}'s new volume has its class's policy again`,
    );
    assert.deepEqual(claim.metadata.labels, b.labels[n], `${context}: data-${n} has the labels it had`);
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

/** The reclaim policy the new class gives its volumes (a new volume has it back once its claim is re-created on it). */
let policy: string | undefined;
const newClassPolicy = () => (policy ??= kubectlJson<{ reclaimPolicy?: string }>(["get", "storageclass", "appstorage-csi-b"]).reclaimPolicy ?? "Delete");

type How = "hold" | "hold-after" | "reset-after" | "503" | "429" | "stall" | "drop-watch-after-event";
interface Case {
  x: KillTarget & { after?: string };
  how: How;
  label: string;
  /** Flags the run gets besides setArgs' (no answer: a shorter --request-timeout). */
  extra?: string[];
}

/**
 * The requests of one claim's move in the baseline: from the first that names its claim of a new
 * volume (`from`) to the first that names the next claim's (`to`), each with its occurrence counted
 * from there (a fault placed with afterObject lands on that same request in another run).
 */
function claimMove(baseline: SeenRequest[], from: string, to: string): (KillTarget & { write: boolean; label: string })[] {
  const start = baseline.findIndex((r) => namesObject(r, from));
  const end = baseline.findIndex((r) => namesObject(r, to));
  assert.ok(start >= 0 && end > start, `the baseline's move of ${from} (${start}..${end})`);
  const count = new Map<string, number>();
  return baseline.slice(start, end).map((r) => {
    const nth = count.get(r.signature) ?? 0;
    count.set(r.signature, nth + 1);
    return { signature: r.signature, nth, afterObject: from, write: isWrite(r), label: `${r.signature} #${nth + 1} of db-1's move` };
  });
}

/** The writes whose outcome the move must read back: an unknown outcome there, not a kill. */
const readBack = (x: KillTarget) =>
  (x.signature === "delete statefulsets" && x.nth === 0) || (x.signature === "create pods/eviction" && x.nth === 0) || (x.signature === "create persistentvolumeclaims" && x.nth === 1);

/** The cases (see the file's comment). */
function cases(baseline: SeenRequest[], phase: PhaseTarget[]): Case[] {
  const move = claimMove(baseline, second, third);
  const at = (signature: string, nth: number) => {
    const x = move.find((y) => y.signature === signature && y.nth === nth);
    assert.ok(x, `db-1's move has no ${signature} #${nth + 1}`);
    return x;
  };
  const faults: Case[] = [
    { x: at("patch persistentvolumes", 1), how: "503", label: "503 on the new volume's hold (patch persistentvolumes #2 of db-1's move)" },
    { x: at("create pods/eviction", 0), how: "429", label: "429 on db-1's eviction" },
    { x: at("create persistentvolumeclaims", 0), how: "stall", label: "no answer to db-1's claim of a new volume", extra: ["--request-timeout", "10s"] },
    { x: at("watch pods", 0), how: "drop-watch-after-event", label: "a watch of pods broken after an event, in db-1's move" },
  ];
  const removal = phase.find((x) => x.signature === "delete secrets" && x.nth === 0);
  assert.ok(removal, "the baseline removes its journal");
  if (process.env["APPSTORAGE_MOVE_MATRIX"] === "full") {
    const all: Case[] = [...phase.filter(moveWrite).flatMap((x) => (["hold", "hold-after", "reset-after"] as const).map((how) => ({ x, how, label: phaseLabel(x) }))), ...faults];
    const [i, n] = (process.env["APPSTORAGE_MOVE_SHARD"] ?? "1/1").split("/").map(Number) as [number, number];
    return all.filter((_, k) => k % n === i - 1);
  }
  // Every write of db-1's move once (its journal records: the first), killed before or after in turn, or with an unknown outcome where it is read back.
  const writes = move.filter((x) => x.write && !/^(renew|release) /.test(x.signature)).filter((x) => x.signature !== "update secrets" || x.nth === 0);
  return [
    ...writes.map((x, k): Case => ({ x, how: readBack(x) ? "reset-after" : k % 2 === 0 ? "hold" : "hold-after", label: x.label })),
    { x: removal, how: "hold-after", label: phaseLabel(removal) },
    ...faults,
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
    const todo = cases(r.requests, phase);
    t.diagnostic(`baseline: ${Math.round((Date.now() - started) / 1000)} s; the move's writes: ${phase.filter(moveWrite).map(phaseLabel).join(", ")}`);
    t.diagnostic(`cases (${process.env["APPSTORAGE_MOVE_MATRIX"] === "full" ? `full, shard ${process.env["APPSTORAGE_MOVE_SHARD"] ?? "1/1"}` : "ci"}): ${todo.length}`);
    await pool(todo, width, async (c) => {
      const context =
        c.how === "hold" || c.how === "hold-after" || c.how === "reset-after"
          ? `${c.how === "reset-after" ? "unknown outcome of" : c.how === "hold" ? "killed before" : "killed after"} ${c.label}`
          : c.label;
      const t0 = Date.now();
      try {
        await oneCase(t, c, context);
      } finally {
        t.diagnostic(`${context}: ${Math.round((Date.now() - t0) / 1000)} s`);
      }
    }).finally(() => t.diagnostic(`cases: ${summary.cases}, converged: ${summary.converged}, in ${Math.round((Date.now() - started) / 1000)} s`));
    assert.equal(summary.converged, todo.length, "every case converged");
  });
});

async function oneCase(t: TestContext, c: Case, context: string): Promise<void> {
  const { x, how } = c;
  const b = await prepared(t);
  const watch = watchPods(b.ns);
  try {
    summary.cases += 1;
    let evicted: string[];
    if (how !== "hold" && how !== "hold-after") {
      // A fault the run must get over by itself.
      const fault: Fault = { kind: how, signature: x.signature, nth: x.nth, ...(x.after ? { after: x.after } : {}), ...(x.afterObject ? { afterObject: x.afterObject } : {}) };
      const run = await loggedRun(b.ns, context, [fault], c.extra);
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
