// The proof that nothing is ever lost: `set` with a fault on every distinct request, killed at
// every write boundary of every step and in the waits and evictions of --wait-resize
// --restart-pods, racing other writers and another run, run by users missing one permission
// each, and fed bad input. After each, the pods and claims have the uids they had before (but
// the pods --restart-pods restarts on purpose, each once), and a plain rerun converges to the
// desired object at once.
//
// Faults are placed by what a request is (its signature, e.g. "update secrets", and occurrence),
// taken from a recorded baseline run, and each must land on exactly that request: a fault that
// lands nowhere fails the test. Every run's requests are compared with the plugin's own request
// log (the proxy is in the path) and checked for repeated writes. Figures, with the commit they
// come from, go to dist/reliability-summary.json; scripts/safety-report.mjs makes the README's
// Safety table from it. APPSTORAGE_RELIABILITY=quick runs a reduced matrix (marked as such).
import assert from "node:assert/strict";
import { execFile, execFileSync, spawn } from "node:child_process";
import { promisify } from "node:util";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, test, type TestContext } from "node:test";
import type { KubeObject, PersistentVolumeClaim, Pod, StatefulSet } from "../../src/api/types";
import { sts } from "../fixtures/builders";
import { type Fault, type FaultKind, type FaultProxy, isWrite, renewalGapMs, type SeenRequest, startFaultProxy, unknownOutcome } from "../shared/faultproxy";
import {
  getSts,
  kubeconfig,
  kubectl,
  kubectlJson,
  kubectlTry,
  markReadyArgs,
  namespaceAsync,
  plugin,
  root,
  runPlugin,
  storageClassFor,
  userKubeconfig,
  volumeFor,
  type RunResult,
} from "../shared/harness";
import { grantRole, grantStorageClasses } from "../shared/rbac";
import { assertHeldIntended, assertRequestsAccountedFor as assertAccounted, evictions, interruptAt, killAt, phaseLabel, phaseTargets, pool, procState, stateDir, within } from "../shared/kill";

// APPSTORAGE_FAULT_MATRIX=reduced (scripts/test.mjs --version: the older control planes) runs the
// quick matrix too; the full one runs on the default control plane and alone makes the README figures.
const reduced = process.env["APPSTORAGE_FAULT_MATRIX"] === "reduced";
const quick = process.env["APPSTORAGE_RELIABILITY"] === "quick" || reduced;
const suiteStart = Date.now();
const summary = {
  matrix: quick ? "quick" : "full",
  /** Distinct requests of a plain `set` (Parallel/Retain): by signature, every occurrence of a write. */
  distinctRequests: 0,
  /** `set` runs whose fault landed on the intended request, by fault kind. */
  faultRuns: 0,
  faultsLanded: {} as Record<string, number>,
  /** Runs repeated because the request to fault did not occur (a wait that needed no watch). */
  faultRunsRepeated: 0,
  /** Watches broken (dropped, ended, 410) and recovered by reading again within the run. */
  watchFaultsRecovered: 0,
  /** Runs whose proxy log was compared with the plugin's request log, and writes checked for repetition. */
  runsWithRequestLogCompared: 0,
  writesChecked: 0,
  duplicatedWrites: 0,
  /** SIGKILLs of a process that was alive at the held request, by shape. */
  kills: 0,
  /** SIGINTs of a live process at a held write, each run ending by itself. */
  interrupts: 0,
  killsByShape: {} as Record<string, number>,
  zombieHolderReruns: 0,
  overlappingRuns: 0,
  permissionCases: 0,
  badInputCases: 0,
  reruns: 0,
  rerunsConverged: 0,
  /** Comparisons of a uid with the one it had before (one uid is compared after every run it took part in). */
  uidsCompared: 0,
  /** Distinct pod and claim uids compared at least once. */
  distinctUids: 0,
  lost: 0,
  testsStarted: [] as string[],
  testsPassed: [] as string[],
};
const uidsSeen = new Set<string>();
const declared: string[] = [];
/** A test whose name is recorded when it passes, so the figures say which checks they come from. */
function check(name: string, fn: (t: TestContext) => Promise<void>): void {
  declared.push(name);
  test(name, async (t) => {
    summary.testsStarted.push(name);
    await fn(t);
    summary.testsPassed.push(name);
  });
}
after(() => {
  const git = (args: string[]) => execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  let commit = "unknown";
  let dirty = true;
  try {
    commit = git(["rev-parse", "HEAD"]);
    dirty = git(["status", "--porcelain", "--untracked-files=no"]) !== "";
  } catch {
    // not a git checkout: the figures say so
  }
  mkdirSync(join(root, "dist"), { recursive: true });
  const out = {
    ...summary,
    testsDeclared: declared.length,
    testsFailed: summary.testsStarted.filter((n) => !summary.testsPassed.includes(n)),
    testsNotRun: declared.filter((n) => !summary.testsStarted.includes(n)),
    commit,
    dirty,
    finishedAt: new Date().toISOString(),
    suiteSeconds: Math.round((Date.now() - suiteStart) / 1000),
  };
  // A reduced run (another Kubernetes version) never overwrites the full run's figures.
  writeFileSync(join(root, "dist", reduced ? "reliability-summary-reduced.json" : "reliability-summary.json"), `${JSON.stringify(out, null, 2)}\n`);
});

type Shape = { parallel: boolean; retention: "Retain" | "Delete" };
const shapeName = (s: Shape) => `${s.parallel ? "Parallel" : "OrderedReady"}/${s.retention}`;
const shapes: Shape[] = [
  { parallel: true, retention: "Retain" },
  { parallel: false, retention: "Retain" },
  { parallel: true, retention: "Delete" },
  { parallel: false, retention: "Delete" },
];

// Asynchronous kubectl for the many cases that run side by side (the harness's is synchronous and
// would serialise them), and one request for everything a check needs.
const execFileAsync = promisify(execFile);
async function kube(args: string[]): Promise<string> {
  return (await execFileAsync("kubectl", ["--kubeconfig", kubeconfig(), ...args], { maxBuffer: 64 << 20 })).stdout;
}
interface State {
  sts?: StatefulSet;
  pods: Pod[];
  claims: PersistentVolumeClaim[];
  journal: boolean;
}
async function state(ns: string): Promise<State> {
  const items = JSON.parse(await kube(["get", "statefulsets,pods,persistentvolumeclaims,secrets", "-n", ns, "-o", "json"])).items as KubeObject[];
  return {
    sts: items.find((i) => i.kind === "StatefulSet" && i.metadata.name === "db") as StatefulSet | undefined,
    pods: items.filter((i) => i.kind === "Pod") as Pod[],
    claims: items.filter((i) => i.kind === "PersistentVolumeClaim") as PersistentVolumeClaim[],
    journal: items.some((i) => i.kind === "Secret" && i.metadata.name === "appstorage-journal-db"),
  };
}
/** name -> uid of every pod and claim, as harness.uids() has them. */
function uidsOf(s: State): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of s.pods) out[`pod/${p.metadata.name}`] = p.metadata.uid!;
  for (const c of s.claims) out[`pvc/${c.metadata.name}`] = c.metadata.uid!;
  return out;
}
/** Waits until the StatefulSet controller created all 3 pods and its status settled (as harness.settled). */
async function settle3(ns: string, ready: boolean, extra: (s: State) => boolean = () => true): Promise<State> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const s = await state(ns);
    if (ready) for (const p of s.pods) if (p.status?.phase !== "Running") await markReadyAsync(ns, p.metadata.name!);
    const st = s.sts?.status ?? {};
    const ok =
      (st.observedGeneration ?? 0) >= (s.sts?.metadata.generation ?? 1) &&
      st.replicas === 3 &&
      st.updatedReplicas === 3 &&
      st.currentRevision === st.updateRevision &&
      s.pods.length === 3 &&
      (!ready || s.pods.every((p) => p.status?.phase === "Running")) &&
      extra(s);
    if (ok) return s;
    if (Date.now() > deadline) throw new Error(`statefulset ${ns}/db did not settle`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
async function markReadyAsync(ns: string, pod: string): Promise<void> {
  await kube(markReadyArgs(ns, pod));
}

async function prepared(t: TestContext, shape: Shape = shapes[0]!): Promise<{ ns: string; before: Record<string, string> }> {
  const ns = await namespaceAsync(t, "rel");
  const b = sts("db", ns).withClaim("data", "1Gi").replicas(3).retention(shape.retention);
  if (shape.parallel) b.parallel();
  await kube(["create", "-n", ns, "-f", writeTemp(b.build())]);
  return { ns, before: uidsOf(await settle3(ns, !shape.parallel)) };
}
function writeTemp(obj: unknown): string {
  const f = join(mkdtempSync(join(tmpdir(), "appstorage-obj-")), "obj.json");
  writeFileSync(f, JSON.stringify(obj));
  return f;
}

async function assertNothingLost(ns: string, before: Record<string, string>, context: string): Promise<void> {
  const now = uidsOf(await state(ns));
  summary.uidsCompared += Object.keys(before).length;
  for (const uid of Object.values(before)) uidsSeen.add(uid);
  summary.distinctUids = uidsSeen.size;
  for (const [name, uid] of Object.entries(before)) {
    if (now[name] !== uid) summary.lost += 1;
    assert.equal(now[name], uid, `${context}: ${name} was replaced or deleted`);
  }
}

/**
 * A plain rerun (no faults), at once, finishes the job: the desired templates, every pod adopted, no journal.
 * `via`: the rerun goes through this kubeconfig (a proxy that logs it). `restarted`: after the
 * rerun, the pods deliberately restarted (--restart-pods): only these may have new uids.
 */
async function assertConverges(
  ns: string,
  before: Record<string, string>,
  context: string,
  flags: string[] = [],
  opts: { via?: string; env?: Record<string, string>; restarted?: () => Promise<string[]> } = {},
): Promise<RunResult> {
  const rerun = await within(
    runPlugin([...setArgs(ns), ...flags, "--timeout", "60s"], { ...(opts.via ? { kubeconfig: opts.via } : {}), ...(opts.env ? { env: opts.env } : {}) }),
    120_000,
    `${context}: the rerun`,
  );
  summary.reruns += 1;
  assert.doesNotMatch(rerun.stderr, /another kubectl appstorage set is working/, `${context}: a dead run's lock blocked the rerun`);
  assert.equal(rerun.code, 0, `${context}: rerun failed: ${rerun.stderr}`);
  assert.match(rerun.stdout, /^statefulset.apps\/db (recreated|unchanged)\n(persistentvolumeclaim\/\S+ patched\n)*(pod\/\S+ evicted\n)*$/, context);
  const now = await state(ns);
  if (flags.includes("--resize-existing")) for (const c of now.claims) assert.equal(c.spec.resources?.requests?.["storage"], "2Gi", `${context}: ${c.metadata.name} not grown`);
  const s = now.sts;
  assert.ok(s, `${context}: no statefulset.apps/db`);
  assert.equal(s.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "2Gi", context);
  for (const p of now.pods) assert.equal(p.metadata.ownerReferences?.find((r) => r.controller)?.uid, s.metadata.uid, `${context}: ${p.metadata.name} not adopted`);
  assert.equal(now.journal, false, `${context}: journal left behind`);
  await assertNothingLost(ns, opts.restarted ? withoutPods(before, await opts.restarted()) : before, context);
  summary.rerunsConverged += 1;
  return rerun;
}

/** The uids to compare, without these pods (restarted on purpose: they get new uids). */
function withoutPods(uids: Record<string, string>, pods: string[]): Record<string, string> {
  return Object.fromEntries(Object.entries(uids).filter(([k]) => !pods.some((p) => k === `pod/${p}`)));
}

const width = Number(process.env["APPSTORAGE_RELIABILITY_WIDTH"] ?? 3);

function assertRequestsAccountedFor(proxy: FaultProxy, logFile: string, context: string): void {
  assertAccounted(proxy, logFile, context, (writes, repeated) => {
    summary.runsWithRequestLogCompared += 1;
    summary.writesChecked += writes;
    summary.duplicatedWrites += repeated;
  });
}

const setArgs = (ns: string) => ["set", "db", "data=2Gi", "-n", ns, "--yes"];

/** Runs `set` through a proxy with these faults; returns the result and the proxy's log. */
async function runThrough(ns: string, faults: Fault[], extra: string[] = [], opts: { holdAdoption?: boolean } = {}): Promise<{ result: RunResult; proxy: FaultProxy; logFile: string }> {
  const hold: Fault | undefined = opts.holdAdoption ? { kind: "hold", signature: "create statefulsets" } : undefined;
  const proxy = await startFaultProxy(kubeconfig(), hold ? [...faults, hold] : faults);
  const logFile = join(stateDir(), "requests.log");
  try {
    const running = within(runPlugin([...setArgs(ns), ...extra], { kubeconfig: proxy.kubeconfig, env: { APPSTORAGE_REQUEST_LOG: logFile } }), 120_000, `set in ${ns}`);
    const held = hold ? holdAdoption(proxy, running) : Promise.resolve();
    const result = await running;
    await held;
    return { result, proxy, logFile };
  } finally {
    await proxy.close();
  }
}

/** The pid of the kube-controller-manager these tests run against: scripts/cluster keeps it beside the admin kubeconfig. */
function controllerManagerPid(): number {
  return Number(readFileSync(join(dirname(kubeconfig()), "run", "kube-controller-manager.pid"), "utf8").trim());
}

/**
 * Makes the verify step's watch of pods occur in every run, whatever the machine's load (a slow
 * plugin otherwise finds the pods adopted by its first list, and never watches: on a loaded
 * machine 12 baselines in a row did so). The plugin's create of the StatefulSet is held at the
 * proxy; kube-controller-manager is stopped (SIGSTOP), the create goes on, and the controller
 * manager continues (SIGCONT) once the plugin watches pods (its list found them not adopted, as
 * nothing could adopt them), after 10 s, or when the run ends. The real controller then adopts
 * them, and the adoption comes as events on that watch.
 */
async function holdAdoption(proxy: FaultProxy, running: Promise<unknown>): Promise<void> {
  const ended = running.then(
    () => true,
    () => true,
  );
  const held = await Promise.race([proxy.nextHeld(120_000).catch(() => undefined), ended.then(() => undefined)]);
  if (!held) return;
  const pid = controllerManagerPid();
  process.kill(pid, "SIGSTOP");
  // A process of its own continues the controller manager after 15 s whatever happens here: a blocked
  // event loop (a synchronous wait of another case) or a killed test run would otherwise leave it stopped.
  const watchdog = spawn("sh", ["-c", `sleep 15; kill -CONT ${pid}`], { detached: true, stdio: "ignore" });
  watchdog.unref();
  try {
    held.release();
    const deadline = Date.now() + 10_000;
    const watching = () => proxy.requests.some((r) => r && r.index > held.request.index && r.signature === "watch pods");
    while (!watching() && Date.now() < deadline) {
      if (await Promise.race([ended, new Promise<boolean>((r) => setTimeout(() => r(false), 20))])) break;
    }
  } finally {
    process.kill(pid, "SIGCONT");
    watchdog.kill();
  }
}

/** The requests of one clean `set` of this shape, through the proxy, with the plugin's log compared. */
async function baseline(
  t: TestContext,
  shape: Shape,
  setup: (t: TestContext, shape: Shape) => Promise<{ ns: string; before: Record<string, string> }> = prepared,
  flags: string[] = [],
  opts: { bothWatches?: boolean } = {},
): Promise<SeenRequest[]> {
  const { ns, before } = await setup(t, shape);
  // Both waits made to watch (the fault matrix's baseline): the orphan delete held by a finalizer, the adoption by a stopped controller manager.
  const held = opts.bothWatches ? holdDeletion(ns) : undefined;
  const { result, proxy, logFile } = await runThrough(ns, [], flags, { holdAdoption: opts.bothWatches }).finally(() => held?.stop());
  assert.equal(result.code, 0, result.stderr);
  assertRequestsAccountedFor(proxy, logFile, `baseline ${shapeName(shape)}`);
  await assertNothingLost(ns, before, `baseline ${shapeName(shape)}`);
  void kube(["delete", "namespace", ns, "--wait=false"]).catch(() => undefined);
  return proxy.requests;
}

/** A request to fault: its signature and its occurrence among requests of that signature. */
interface Target {
  signature: string;
  nth: number;
  write: boolean;
  watch: boolean;
  /** Events the baseline's watch delivered (a drop "after the first event" needs a second one to wait for). */
  events: number;
}

/**
 * Distinct requests: every occurrence of a write (each is a step's write) and of a read (the
 * verify step's list of pods shares its signature with the plan's, but is another step), and
 * every watch once (whether a wait watches again depends on timing). The quick matrix takes each
 * read's first occurrence only.
 */
function targets(requests: SeenRequest[]): Target[] {
  const count = new Map<string, number>();
  const out: Target[] = [];
  for (const r of requests) {
    // A lease renewal comes only in a run slow enough (5 s without a journal write): the lease test covers it.
    if (r.signature === "renew secrets") continue;
    const nth = count.get(r.signature) ?? 0;
    count.set(r.signature, nth + 1);
    const write = isWrite(r);
    if (nth > 0 && !write && (quick || r.watch)) continue;
    out.push({ signature: r.signature, nth, write, watch: r.watch, events: r.eventsDelivered });
  }
  return out;
}
const label = (x: Target) => `${x.signature}${x.write || x.nth > 0 ? ` #${x.nth + 1}` : ""}`;

/** Fault kinds for a request: every kind that applies to what it is. */
function kindsFor(x: Target): FaultKind[] {
  // The quick matrix faults only the watch it can make occur every time (the wait for the orphan
  // delete, held by holdDeletion): each watch kind once. Whether the adoption's watch occurs, and
  // with how many events, depends on timing; the full matrix retries it (faultCase).
  if (x.watch && quick && x.signature !== "watch statefulsets") return [];
  if (x.watch) return ["drop-watch", "end-watch", "gone-410", ...(x.events >= 2 || x.signature === "watch statefulsets" ? (["drop-watch-after-event"] as FaultKind[]) : [])];
  const all: FaultKind[] = ["500", "503", "429", "reset-before", "reset-after", "stall"];
  return quick && !x.write ? all.filter((k) => k === "500" || k === "stall") : all;
}

const holdFinalizer = "appstorage.test/hold";

/**
 * Adds a finalizer of the test's own to db, and takes it away from whatever db exists (the
 * original once it has been deleting for 2 s, after one annotation at 1 s, and the re-created
 * one, which copies it) until stopped: the orphan delete then takes long enough for the plugin
 * to watch, and the watch gets an event.
 */
function holdDeletion(ns: string): { stop: () => Promise<void> } {
  kubectl(["patch", "statefulset", "db", "-n", ns, "--type=merge", "-p", JSON.stringify({ metadata: { finalizers: [holdFinalizer] } })]);
  let since: number | undefined;
  let poked = false;
  let stopped = false;
  const release = async () => {
    const raw = await kube(["get", "statefulset", "db", "-n", ns, "-o", "json", "--ignore-not-found"]).catch(() => "");
    if (!raw.trim()) return;
    const s = JSON.parse(raw) as StatefulSet;
    const fins = s.metadata.finalizers ?? [];
    if (!fins.includes(holdFinalizer)) return;
    if (s.metadata.deletionTimestamp) since ??= Date.now();
    // While held, one harmless change, so that a watch of it has an event to deliver (and to break after).
    if (s.metadata.deletionTimestamp && !poked && Date.now() - since! >= 1000) {
      poked = true;
      await kube(["annotate", "statefulset", "db", "-n", ns, "appstorage.test/poke=1"]).catch(() => undefined);
      return;
    }
    const deleting = s.metadata.deletionTimestamp !== undefined && Date.now() - since! >= 2000;
    const recreated = s.metadata.deletionTimestamp === undefined && (s.metadata.annotations ?? {})["appstorage.kubectl.io/last-change"] !== undefined;
    if (stopped || deleting || recreated) {
      await kube([
        "patch",
        "statefulset",
        "db",
        "-n",
        ns,
        "--type=merge",
        "-p",
        JSON.stringify({ metadata: { finalizers: fins.filter((f) => f !== holdFinalizer), resourceVersion: s.metadata.resourceVersion } }),
      ]).catch(() => undefined);
    }
  };
  const loop = (async () => {
    while (!stopped) {
      await release();
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      await release();
    },
  };
}

/**
 * Runs one fault case until its fault lands (a wait may need no watch in one run): at most 3 runs,
 * 12 for a watch (the verify step watches pods only when the controller has not adopted them all by
 * its first list, which on a quick control plane once failed to happen in 6 runs).
 */
async function faultCase(t: TestContext, shape: Shape, x: Target, kind: FaultKind): Promise<void> {
  const context = `${shapeName(shape)}: ${kind} on ${label(x)}`;
  for (let attempt = 1; ; attempt++) {
    const { ns, before } = await prepared(t, shape);
    const fault: Fault = { kind, nth: x.nth, signature: x.signature };
    // On an idle control plane the garbage collector removes the orphan-deleted StatefulSet before
    // the plugin looks again, and the wait needs no watch: hold it with a finalizer of the test's
    // own until the plugin has been watching for a while, so the watch to fault does occur.
    const held = x.signature === "watch statefulsets" ? holdDeletion(ns) : undefined;
    const { result, proxy, logFile } = await runThrough(ns, [fault], ["--request-timeout", "2s", "--timeout", "30s"], { holdAdoption: x.signature === "watch pods" }).finally(() => held?.stop());
    assertRequestsAccountedFor(proxy, logFile, context);
    await assertNothingLost(ns, before, context);
    if (!fault.landed) {
      void kube(["delete", "namespace", ns, "--wait=false"]).catch(() => undefined);
      if (attempt < (x.watch ? 12 : 3)) {
        summary.faultRunsRepeated += 1;
        continue;
      }
      assert.fail(`${context}: the fault landed nowhere in ${attempt} runs (requests: ${proxy.requests.map((r) => r.signature).join(", ")})`);
    }
    // The faulted request is the intended one: its signature and its occurrence.
    const landed = fault.landed;
    assert.equal(landed.signature, x.signature, context);
    assert.equal(proxy.requests.filter((r) => r.signature === x.signature && r.index < landed.index).length, x.nth, `${context}: landed on another occurrence`);
    summary.faultRuns += 1;
    summary.faultsLanded[kind] = (summary.faultsLanded[kind] ?? 0) + 1;
    // What must be recovered within the run: reads (retried), a 429 (retried after Retry-After),
    // and every broken watch (read again, then watched anew). A write with an unknown outcome may
    // stop the run (read back, journal kept): then the rerun below must finish.
    if (!x.write || kind === "429") assert.equal(result.code, 0, `${context}: not recovered within the run: ${result.stderr}`);
    if (x.watch) {
      const resource = landed.resource;
      const reread = proxy.requests.find((r) => r.index > landed.index && r.resource === resource && (r.verb === "get" || r.verb === "list"));
      assert.ok(reread, `${context}: the broken watch was not followed by a fresh read of ${resource}`);
      summary.watchFaultsRecovered += 1;
    }
    if (x.write && unknownOutcome.includes(kind)) assert.ok(!result.stderr.includes("another kubectl appstorage set"), context);
    await assertConverges(ns, before, context);
    void kube(["delete", "namespace", ns, "--wait=false"]).catch(() => undefined);
    return;
  }
}

describe("faults on every distinct request", () => {
  check("500, 503, 429, resets and stalls on every request, broken watches: each lands where intended, every run converges, nothing lost", async (t) => {
    const shape = shapes[0]!;
    // Whether a wait watches depends on timing (the list may already show the end): take a
    // baseline that made both watches, one of them delivering two events or more (at most 12 tries,
    // a few seconds each: a fast run often finds the end in its list already; on 1.32 all 6 tries
    // once found it so).
    let list: Target[] = [];
    const complete = (l: Target[]) => ["watch statefulsets", "watch pods"].every((w) => l.some((x) => x.signature === w)) && l.some((x) => x.watch && x.events >= 2);
    for (let i = 0; i < 12 && !complete(list); i++) list = targets(await baseline(t, shape, prepared, [], { bothWatches: true }));
    assert.ok(complete(list), `no baseline made both watches with a second event to drop before: ${list.map(label).join(", ")}`);
    summary.distinctRequests = list.length;
    const cases = list.flatMap((x) => kindsFor(x).map((kind) => ({ x, kind })));
    await pool(cases, width, ({ x, kind }) => faultCase(t, shape, x, kind));
    assert.ok(summary.faultRuns >= cases.length && cases.length > 0, `faults landed: ${summary.faultRuns} of ${cases.length}`);
  });
});

/** Every write of a baseline `set` of this shape, each to be held before and after the server sees it. */
async function writeCases(t: TestContext, shape: Shape): Promise<{ x: Target; when: "hold" | "hold-after" }[]> {
  const writes = targets(await baseline(t, shape)).filter((x) => x.write);
  assert.ok(writes.length >= 6, `writes: ${writes.map(label).join(", ")}`);
  return writes.flatMap((x) => (["hold", "hold-after"] as const).map((when) => ({ x, when })));
}

describe("SIGKILL at every write boundary", () => {
  for (const shape of quick ? shapes.slice(0, 1) : shapes) {
    check(`${shapeName(shape)}: killed before and after every write of every step, the rerun converges at once`, async (t) => {
      await pool(await writeCases(t, shape), width, async ({ x, when }) => {
        const { ns, before } = await prepared(t, shape);
        const context = `${shapeName(shape)} killed ${when === "hold" ? "before" : "after"} ${label(x)}`;
        const at = await killAt(setArgs(ns), x, when);
        assert.equal(at.signature, x.signature, context);
        summary.kills += 1;
        summary.killsByShape[shapeName(shape)] = (summary.killsByShape[shapeName(shape)] ?? 0) + 1;
        await assertNothingLost(ns, before, context);
        await assertConverges(ns, before, context);
        void kube(["delete", "namespace", ns, "--wait=false"]).catch(() => undefined);
      });
    });
  }
});

describe("Ctrl-C (SIGINT) at every write boundary", () => {
  check("Parallel/Retain: interrupted before and after every write of every step, the run finishes that step, starts no other, says where it stopped, and the rerun converges at once", async (t) => {
    const shape = shapes[0]!;
    await pool(await writeCases(t, shape), width, async ({ x, when }) => {
      const { ns, before } = await prepared(t, shape);
      const context = `${shapeName(shape)} interrupted ${when === "hold" ? "before" : "after"} ${label(x)}`;
      const r = await interruptAt(setArgs(ns), x, when);
      assert.equal(r.held.signature, x.signature, context);
      assertRequestsAccountedFor(r.proxy, r.logFile, context);
      // After the interrupted request, nothing but the journal (its step, its release) and the
      // change's Event (of the step under way) reached the server: no other step began.
      const later = r.requests.filter((q) => q.index > r.held.index && isWrite(q) && q.reachedServer && !["secrets", "events"].includes(q.resource));
      assert.deepEqual(
        later.map((q) => q.signature),
        [],
        `${context}: a step began after Ctrl-C`,
      );
      if (r.code === 0) {
        // Interrupted at the last step's write: the change was done.
        assert.ok(x.signature === "delete secrets" || x.signature === "create events", `${context}: exit 0 though interrupted before the end: ${r.stderr}`);
      } else {
        assert.equal(r.code, 1, `${context}: ${r.stderr}`);
        assert.match(
          r.stderr,
          /^error: interrupted \(Ctrl-C\) (while changing statefulset.apps\/db: .*; run the same command again to finish|before anything was changed on statefulset.apps\/db)$/m,
          context,
        );
      }
      summary.interrupts += 1;
      await assertNothingLost(ns, before, context);
      await assertConverges(ns, before, context);
      void kube(["delete", "namespace", ns, "--wait=false"]).catch(() => undefined);
    });
  });
});

describe("the lease", () => {
  check("renewed a third of the lease after the last write while a step waits; a SIGKILL before and after a renewal is told apart from a step's write, and the rerun converges at once", async (t) => {
    // The re-create is held for 12 s: the journal (step deleted) is renewed twice meanwhile, 5 s apart.
    {
      const { ns, before } = await prepared(t);
      const logFile = join(stateDir(), "requests.log");
      const { result: r, proxy } = await setWhileHeld(
        ns,
        "create statefulsets",
        async () => {
          await new Promise((r) => setTimeout(r, 12_000));
          const live = journalOf(ns);
          assert.equal(live.step, "deleted");
          assert.ok(Date.parse(live.leaseExpires) - Date.now() > 5_000, `the lease was not renewed while the run waited (expires ${live.leaseExpires})`);
        },
        { APPSTORAGE_REQUEST_LOG: logFile },
      );
      assert.equal(r.code, 0, r.stderr);
      assertRequestsAccountedFor(proxy, logFile, "renewals");
      const journal = proxy.requests.filter((q) => q.journal);
      const renewals = journal.filter((q) => q.journal!.kind === "renewal");
      assert.ok(renewals.length >= 2, `renewals: ${journal.map((q) => `${q.signature} ${q.journal!.step}`).join(", ")}`);
      for (const q of renewals) {
        assert.equal(q.signature, "renew secrets");
        assert.equal(q.journal!.step, "deleted");
        assert.equal(q.journal!.leaseSeconds, 15);
        const previous = journal.filter((p) => p.index < q.index).at(-1)!;
        const gap = q.at - previous.at;
        assert.ok(gap >= renewalGapMs && gap < 8_000, `renewal #${q.index} came ${gap} ms after the journal's last write`);
      }
      await assertNothingLost(ns, before, "renewals");
    }
    // SIGKILL at the first renewal, before and after the server saw it.
    for (const when of ["hold", "hold-after"] as const) {
      const { ns, before } = await prepared(t);
      const context = `killed ${when === "hold" ? "before" : "after"} a renewal`;
      const proxy = await startFaultProxy(kubeconfig(), [
        { kind: "hold", signature: "create statefulsets" },
        { kind: when, signature: "renew secrets" },
      ]);
      const child = spawn(plugin, [...setArgs(ns), "--kubeconfig", proxy.kubeconfig], {
        env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", APPSTORAGE_STATE_DIR: stateDir() },
        stdio: "ignore",
      });
      const exited = new Promise<string>((r) => child.on("exit", (code, signal) => r(`${code ?? signal}`)));
      try {
        const create = await proxy.nextHeld(60_000);
        assert.equal(create.request.signature, "create statefulsets");
        const renewal = await proxy.nextHeld(10_000);
        assert.equal(renewal.request.signature, "renew secrets", context);
        assert.equal(renewal.request.journal?.kind, "renewal", context);
        assert.ok(procState(child.pid!) !== undefined && procState(child.pid!) !== "Z", `${context}: the plugin was not alive at the renewal`);
        child.kill("SIGKILL");
        assert.equal(await within(exited, 10_000, "the killed plugin"), "SIGKILL");
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        await proxy.close();
      }
      // Neither the held create nor anything after the renewal reached the server.
      assert.ok(!proxy.requests.some((q) => q.signature === "create statefulsets" && q.reachedServer), context);
      assert.equal(journalOf(ns).step, "deleted", context);
      summary.kills += 1;
      summary.killsByShape["at a lease renewal"] = (summary.killsByShape["at a lease renewal"] ?? 0) + 1;
      await assertNothingLost(ns, before, context);
      await assertConverges(ns, before, context);
    }
  });
});

/**
 * A StatefulSet whose 3 claims are bound to PersistentVolumes of an expandable class: --resize-existing
 * can grow them. `ready`: its pods are Ready even when Parallel (--restart-pods restarts only then).
 */
async function preparedBound(t: TestContext, shape: Shape, ready = false): Promise<{ ns: string; before: Record<string, string> }> {
  const ns = await namespaceAsync(t, "relx");
  const storageClass = storageClassFor(t, ns, { expandable: true });
  for (let i = 0; i < 3; i++) volumeFor(t, ns, `data-db-${i}`, "1Gi", storageClass);
  const b = sts("db", ns).withClaim("data", "1Gi", storageClass).replicas(3).retention(shape.retention);
  if (shape.parallel) b.parallel();
  await kube(["create", "-n", ns, "-f", writeTemp(b.build())]);
  const s = await settle3(ns, ready || !shape.parallel, (x) => x.claims.filter((c) => c.status?.phase === "Bound").length === 3);
  return { ns, before: uidsOf(s) };
}

describe("SIGKILL at every write of the existing-claims growth", () => {
  check("--resize-existing (Parallel/Retain): killed before and after every write, each claim's growth included, the rerun converges at once", async (t) => {
    const shape = shapes[0]!;
    const flags = ["--resize-existing"];
    const writes = targets(await baseline(t, shape, preparedBound, flags)).filter((x) => x.write);
    assert.equal(writes.filter((x) => x.signature === "patch persistentvolumeclaims").length, 3, `writes: ${writes.map(label).join(", ")}`);
    const cases = writes.flatMap((x) => (["hold", "hold-after"] as const).map((when) => ({ x, when })));
    await pool(cases, width, async ({ x, when }) => {
      const { ns, before } = await preparedBound(t, shape);
      const context = `--resize-existing killed ${when === "hold" ? "before" : "after"} ${label(x)}`;
      const at = await killAt([...setArgs(ns), ...flags], x, when);
      assert.equal(at.signature, x.signature, context);
      summary.kills += 1;
      summary.killsByShape["Parallel/Retain --resize-existing"] = (summary.killsByShape["Parallel/Retain --resize-existing"] ?? 0) + 1;
      await assertNothingLost(ns, before, context);
      await assertConverges(ns, before, context, flags);
      void kube(["delete", "namespace", ns, "--wait=false"]).catch(() => undefined);
    });
  });
});

const stamp = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");
const resizePending = (c: PersistentVolumeClaim) => c.status?.conditions?.some((x) => x.type === "FileSystemResizePending" && x.status === "True") === true;
const podReady = (p: Pod) => !p.metadata.deletionTimestamp && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
async function claimStatus(ns: string, claim: string, status: Record<string, unknown>): Promise<void> {
  await kube(["patch", "pvc", claim, "-n", ns, "--subresource=status", "--type=merge", "-p", JSON.stringify({ status })]);
}

/**
 * Plays the external resizer and the kubelet for db until stopped (as resize.test.ts does, with
 * the mount that finishes a resize). The resizer, once `resize()` allows, finishes what the plugin
 * grew: data-db-0 online (capacity 2Gi), the others up to FileSystemResizePending, as drivers that
 * grow the file system at mount leave them. The kubelet starts every pod that is not Ready, as
 * slowly as a real one, so that a rerun soon after a kill finds the pod restarted last still
 * starting: it mounts the pod's claim, which finishes a pending resize (capacity 2Gi, the
 * condition gone), then marks the pod Ready. db-2 mounts at once (0.3 s) and is Ready after 3 s:
 * the rerun finds its claim done and the pod down (the next eviction waits); db-1 mounts after
 * 2.5 s and is Ready after 3.5 s: the rerun finds its claim still waiting and the pod gone or
 * starting (it must not be evicted again).
 */
function simulateNode(ns: string, resize: () => boolean): { stop: () => Promise<void>; maxDown: () => number } {
  let stopped = false;
  let maxDown = 0;
  const since = new Map<string, number>();
  const round = async () => {
    const s = await state(ns);
    // Pods of db's ordinals that are gone or not Ready, at the same moment.
    maxDown = Math.max(maxDown, ["db-0", "db-1", "db-2"].filter((n) => !s.pods.some((p) => p.metadata.name === n && podReady(p))).length);
    if (resize()) {
      for (const c of s.claims) {
        if (c.spec.resources?.requests?.["storage"] !== "2Gi" || c.status?.capacity?.["storage"] !== "1Gi" || resizePending(c)) continue;
        // db-1 and db-2 as kubelet leaves them when the driver grows file systems only at mount.
        const pending = [
          { type: "FileSystemResizePending", status: "True", lastTransitionTime: stamp(), message: "Waiting for user to (re-)start a pod to finish file system resize of volume on node." },
          { type: "NodeResizeError", status: "True", lastTransitionTime: stamp(), message: "failed to expand pvc with rpc error: code = FailedPrecondition" },
        ];
        const status = c.metadata.name === "data-db-0" ? { capacity: { storage: "2Gi" } } : { conditions: pending };
        await claimStatus(ns, c.metadata.name!, status);
      }
    }
    for (const p of s.pods) {
      if (p.metadata.deletionTimestamp || podReady(p)) continue;
      const first = since.get(p.metadata.uid!) ?? Date.now();
      since.set(p.metadata.uid!, first);
      const claim = s.claims.find((c) => c.metadata.name === `data-${p.metadata.name}`);
      const [mount, ready] = p.metadata.name === "db-2" ? [300, 3000] : [2500, 3500];
      if (Date.now() - first >= mount && claim && resizePending(claim))
        await claimStatus(ns, claim.metadata.name!, { capacity: { storage: claim.spec.resources!.requests!["storage"] }, conditions: [] });
      else if (Date.now() - first >= ready) await markReadyAsync(ns, p.metadata.name!);
    }
  };
  const loop = (async () => {
    while (!stopped) {
      // A failed round (a pod deleted meanwhile) is tried again on the next.
      await round().catch(() => undefined);
      await new Promise((r) => setTimeout(r, 150));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
    },
    maxDown: () => maxDown,
  };
}

const watchesClaims = (requests: SeenRequest[]) => requests.some((r) => r.signature === "watch persistentvolumeclaims");

describe("SIGKILL in the waits and restarts of existing claims", () => {
  check(
    "--wait-resize --restart-pods (Parallel/Retain): killed before and after every eviction and while each wait for claims and pods is held, the rerun converges at once and restarts no pod twice",
    async (t) => {
      const shape = shapes[0]!;
      const flags = ["--resize-existing", "--wait-resize", "--restart-pods"];
      const key = `${shapeName(shape)} --wait-resize --restart-pods`;

      // The baseline: the resizer acts once the plugin watches the claims, so the wait always watches.
      const base = await preparedBound(t, shape, true);
      let baseProxy: FaultProxy | undefined;
      const baseNode = simulateNode(base.ns, () => watchesClaims(baseProxy?.requests ?? []));
      let baseline: SeenRequest[];
      try {
        baseProxy = await startFaultProxy(kubeconfig(), []);
        const logFile = join(stateDir(), "requests.log");
        const r = await within(runPlugin([...setArgs(base.ns), ...flags, "--timeout", "60s"], { kubeconfig: baseProxy.kubeconfig, env: { APPSTORAGE_REQUEST_LOG: logFile } }), 120_000, "baseline");
        await baseProxy.close();
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /pod\/db-2 evicted\npod\/db-1 evicted\n$/, r.stdout);
        assertRequestsAccountedFor(baseProxy, logFile, `baseline ${key}`);
        assert.deepEqual(evictions(baseProxy.requests), ["db-2", "db-1"]);
        assert.equal(baseNode.maxDown(), 1, "never more than one pod down");
        await assertNothingLost(base.ns, withoutPods(base.before, ["db-1", "db-2"]), `baseline ${key}`);
        baseline = baseProxy.requests;
      } finally {
        await baseNode.stop();
        await baseProxy?.close();
      }
      void kube(["delete", "namespace", base.ns, "--wait=false"]).catch(() => undefined);

      // Every request after the journal's removal: the waits' lists, watches and reads, and the evictions.
      const phase = phaseTargets(baseline);
      const name = phaseLabel;
      for (const s of ["list persistentvolumeclaims", "watch persistentvolumeclaims", "create pods/eviction", "watch pods"])
        assert.ok(
          phase.some((x) => x.signature === s),
          `the wait made no ${s}: ${phase.map(name).join(", ")}`,
        );
      // The quick matrix: the evictions and one of each request of the waits.
      const chosen = quick ? phase.filter((x) => x.write || x.nth === 0) : phase;
      const cases = chosen.flatMap((x) => (["hold", "hold-after"] as const).map((when) => ({ x, when })));
      t.diagnostic(`killed before and after: ${chosen.map(name).join(", ")}`);

      await pool(cases, width, async ({ x, when }) => {
        const { ns, before } = await preparedBound(t, shape, true);
        const context = `${key} killed ${when === "hold" ? "before" : "after"} ${name(x)} (after the journal's removal)`;
        let killed: FaultProxy | undefined;
        let dead = false;
        const node = simulateNode(ns, () => dead || watchesClaims(killed?.requests ?? []));
        try {
          const at = await killAt([...setArgs(ns), ...flags], x, when, (p) => (killed = p));
          dead = true;
          // The held request is the intended one: its signature, and its occurrence after the journal's removal.
          const log = killed!.requests;
          assertHeldIntended(log, at, x, context);
          summary.kills += 1;
          summary.killsByShape[key] = (summary.killsByShape[key] ?? 0) + 1;
          const evictedBefore = evictions(log);
          await assertNothingLost(ns, withoutPods(before, evictedBefore), context);

          const rerun = await startFaultProxy(kubeconfig(), []);
          const logFile = join(stateDir(), "requests.log");
          let evictedByRerun: string[] = [];
          try {
            await assertConverges(ns, before, context, flags, {
              via: rerun.kubeconfig,
              env: { APPSTORAGE_REQUEST_LOG: logFile },
              restarted: async () => {
                await rerun.close();
                assertRequestsAccountedFor(rerun, logFile, `${context}: the rerun`);
                evictedByRerun = evictions(rerun.requests);
                return [...evictedBefore, ...evictedByRerun];
              },
            });
          } finally {
            await rerun.close();
          }
          // Each pod whose claim waited for a restart was restarted exactly once, over both runs; db-0 (resized online) never.
          assert.deepEqual(
            [...evictedBefore, ...evictedByRerun].sort(),
            ["db-1", "db-2"],
            `${context}: evicted by the killed run: ${evictedBefore.join(", ") || "none"}; by the rerun: ${evictedByRerun.join(", ") || "none"}`,
          );
          const now = await state(ns);
          for (const c of now.claims) {
            assert.equal(c.status?.capacity?.["storage"], "2Gi", `${context}: ${c.metadata.name} not resized`);
            assert.ok(!resizePending(c), `${context}: ${c.metadata.name} still waits for a restart`);
          }
          // A pod the killed run restarted may still be starting when a rerun that has nothing left
          // to do ends (killed after the journal's removal, in the wait for it): Ready within the
          // played kubelet's 3.5 s, bounded with room for a loaded machine.
          let settledPods = now.pods;
          for (const deadline = Date.now() + 60_000; Date.now() < deadline && !(settledPods.length === 3 && settledPods.every(podReady)); ) {
            await new Promise((r) => setTimeout(r, 200));
            settledPods = (await state(ns)).pods;
          }
          for (const p of settledPods) {
            assert.ok(podReady(p), `${context}: ${p.metadata.name} not Ready`);
            if (p.metadata.name !== "db-0") assert.notEqual(p.metadata.uid, before[`pod/${p.metadata.name}`], `${context}: ${p.metadata.name} not restarted`);
          }
          assert.equal(node.maxDown(), 1, `${context}: more than one pod down at once, over the killed run and the rerun`);
        } finally {
          await node.stop();
        }
        void kube(["delete", "namespace", ns, "--wait=false"]).catch(() => undefined);
      });
    },
  );
});

/** The journal as the Secret holds it now. */
function journalOf(ns: string): { holder: string; leaseExpires: string; step: string } {
  return JSON.parse(Buffer.from(kubectlJson<{ data: Record<string, string> }>(["get", "secret", "appstorage-journal-db", "-n", ns]).data["journal.json"]!, "base64").toString());
}

describe("dead holders", () => {
  check("killed as a zombie (its parent does not reap it) at the deleted step: the rerun at once converges", async (t) => {
    const { ns, before } = await prepared(t);
    const proxy = await startFaultProxy(kubeconfig(), [{ kind: "hold", signature: "create statefulsets" }]);
    // sh starts the plugin in the background and becomes a sleep that never waits for it.
    const parent = spawn("sh", ["-c", `"$0" "$@" >/dev/null 2>&1 & exec sleep 300`, plugin, ...setArgs(ns), "--kubeconfig", proxy.kubeconfig], {
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", APPSTORAGE_STATE_DIR: stateDir() },
      stdio: "ignore",
    });
    t.after(() => parent.kill("SIGKILL"));
    try {
      await proxy.nextHeld(60_000);
      const children = readFileSync(`/proc/${parent.pid}/task/${parent.pid}/children`, "utf8").trim().split(/\s+/).map(Number);
      assert.equal(children.length, 1, "sh has the plugin as its only child");
      const pid = children[0]!;
      assert.ok(["S", "R", "D"].includes(procState(pid) ?? "gone"), "the plugin is alive at the held create");
      process.kill(pid, "SIGKILL");
      for (let i = 0; procState(pid) !== "Z"; i++) {
        assert.ok(i < 100, `the plugin did not become a zombie (state ${procState(pid)})`);
        await new Promise((r) => setTimeout(r, 20));
      }
      process.kill(pid, 0); // a zombie answers signal 0: the old check called it alive
    } finally {
      await proxy.close();
    }
    const journal = journalOf(ns);
    assert.equal(journal.step, "deleted");
    assert.ok(Date.parse(journal.leaseExpires) > Date.now() + 3000, "the lease is still live: only the holder check can free it");
    await assertConverges(ns, before, "zombie holder");
    summary.zombieHolderReruns += 1;
  });

  check("a live holder is never taken over: a second run while the first waits is refused", async (t) => {
    const { ns, before } = await prepared(t);
    const proxy = await startFaultProxy(kubeconfig(), [{ kind: "hold", signature: "create statefulsets" }]);
    const first = runPlugin(setArgs(ns), { kubeconfig: proxy.kubeconfig });
    try {
      const held = await proxy.nextHeld(60_000);
      const second = await within(runPlugin(setArgs(ns)), 60_000, "the second run");
      assert.equal(second.code, 1, second.stderr);
      assert.match(second.stderr, /another kubectl appstorage set is working on statefulset.apps\/db/);
      held.release();
      const r = await within(first, 60_000, "the first run");
      assert.equal(r.code, 0, r.stderr);
    } finally {
      await proxy.close();
    }
    await assertNothingLost(ns, before, "live holder");
  });
});

/** Starts the plugin; its pid, and its result when it ends. */
function startPlugin(args: string[], kc: string): { pid: number; done: Promise<RunResult> } {
  const child = spawn(plugin, [...args, "--kubeconfig", kc], {
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", APPSTORAGE_STATE_DIR: stateDir() },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  return { pid: child.pid!, done: new Promise((r) => child.on("close", (code) => r({ code: code ?? -1, stdout, stderr }))) };
}

describe("races", () => {
  check("two runs that really overlap (both journal creates in flight at once): one proceeds, the other refuses naming it, nothing lost", async (t) => {
    const { ns, before } = await prepared(t);
    const holdCreate = (): Fault => ({ kind: "hold", signature: "create secrets" });
    const a = await startFaultProxy(kubeconfig(), [holdCreate()]);
    const b = await startFaultProxy(kubeconfig(), [holdCreate()]);
    let results: RunResult[];
    let pids: number[];
    try {
      const first = startPlugin(setArgs(ns), a.kubeconfig);
      const heldA = await proxyHeldOrExit(a, first.done, "the first run");
      const second = startPlugin(setArgs(ns), b.kubeconfig);
      const heldB = await proxyHeldOrExit(b, second.done, "the second run");
      // Both have planned, neither's lock has reached the server: release both at once.
      heldA.release();
      heldB.release();
      results = await within(Promise.all([first.done, second.done]), 120_000, "the two runs");
      pids = [first.pid, second.pid];
    } finally {
      await a.close();
      await b.close();
    }
    const winners = results.filter((r) => r.code === 0);
    assert.equal(winners.length, 1, results.map((r) => r.stderr).join("\n---\n"));
    const w = results.findIndex((r) => r.code === 0);
    const loser = results[1 - w]!;
    const loserLog = [a, b][1 - w]!.requests;
    assert.equal(loser.code, 1);
    assert.match(loser.stderr, new RegExp(`another kubectl appstorage set \\(.*pid ${pids[w]} on .*\\) started on statefulset.apps/db at the same moment; nothing was changed`));
    // The loser's only write that reached the server is its refused journal create.
    assert.deepEqual(
      loserLog.filter((r) => isWrite(r) && r.reachedServer).map((r) => `${r.signature} ${r.serverStatus}`),
      ["create secrets 409"],
    );
    assert.equal(getSts(ns, "db").spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "2Gi");
    assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 1, "journal left behind");
    await assertNothingLost(ns, before, "overlapping runs");
    summary.overlappingRuns += 1;
  });

  check("a scale while the StatefulSet is gone fails; the re-created object keeps the planned replicas", async (t) => {
    const { ns, before } = await prepared(t);
    const { result: r } = await setWhileHeld(ns, "create statefulsets", () => {
      const scale = kubectlTry(["scale", "statefulset", "db", "-n", ns, "--replicas=5"]);
      assert.equal(scale.code, 1);
      assert.match(scale.stderr, /not found/);
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(getSts(ns, "db").spec.replicas, 3);
    await assertNothingLost(ns, before, "scale while gone");
  });

  check(
    "a GitOps controller re-creates the StatefulSet with its old templates between the delete and the create: the run stops and says so, nothing lost, and a rerun plans anew and converges",
    async (t) => {
      const { ns, before } = await prepared(t);
      // What a GitOps controller applies: the manifest it keeps, with the old claim templates.
      const original = getSts(ns, "db");
      const manifest = { apiVersion: "apps/v1", kind: "StatefulSet", metadata: { name: "db", namespace: ns, labels: original.metadata.labels ?? {} }, spec: original.spec };
      let theirs = "";
      const { result: r } = await setWhileHeld(ns, "create statefulsets", async () => {
        await kube(["create", "-f", writeTemp(manifest)]);
        theirs = getSts(ns, "db").metadata.uid!;
      });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^error: statefulset.apps\/db was re-created by someone else \(uid [0-9a-f-]+\) with other claim templates; .*run the command again to plan anew/m);
      const s = getSts(ns, "db");
      assert.equal(s.metadata.uid, theirs, "the plugin replaced the StatefulSet someone else created");
      assert.equal(s.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "1Gi");
      for (let i = 0; !(await state(ns)).pods.every((p) => p.metadata.ownerReferences?.find((o) => o.controller)?.uid === theirs); i++) {
        assert.ok(i < 60, "their StatefulSet did not adopt the pods within 30 s");
        await new Promise((r) => setTimeout(r, 500));
      }
      await assertNothingLost(ns, before, "GitOps re-create");
      await assertConverges(ns, before, "after a GitOps re-create");
    },
  );

  check("another writer between plan and delete: the precondition refuses, nothing changes", async (t) => {
    const { ns, before } = await prepared(t);
    const { result: r } = await setWhileHeld(ns, "delete statefulsets", () => {
      kubectl(["annotate", "statefulset", "db", "-n", ns, "edited=meanwhile"]);
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /changed since it was read .* nothing was changed/);
    const s = getSts(ns, "db");
    assert.equal(s.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "1Gi");
    assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 1);
    await assertNothingLost(ns, before, "stale plan");
  });
});

/** The held request, or a failure when the run ends first or nothing is held within a minute. */
function proxyHeldOrExit(proxy: FaultProxy, run: Promise<RunResult>, what: string) {
  return Promise.race([proxy.nextHeld(60_000), run.then((r) => Promise.reject(new Error(`${what} ended (exit ${r.code}) before its request was held: ${r.stderr}`)))]);
}

/**
 * set through a fault proxy that holds its first `signature` request; `meanwhile` runs while it is
 * held, then the request goes on and the run finishes. Its result, and the proxy with what it saw.
 */
async function setWhileHeld(ns: string, signature: string, meanwhile: () => Promise<unknown> | void, env: Record<string, string> = {}): Promise<{ result: RunResult; proxy: FaultProxy }> {
  const proxy = await startFaultProxy(kubeconfig(), [{ kind: "hold", signature }]);
  try {
    const run = runPlugin(setArgs(ns), { kubeconfig: proxy.kubeconfig, env });
    const held = await proxyHeldOrExit(proxy, run, "set");
    await meanwhile();
    held.release();
    return { result: await within(run, 60_000, "set"), proxy };
  } finally {
    await proxy.close();
  }
}

describe("permissions", () => {
  const full = [
    { apiGroups: ["apps"], resources: ["statefulsets"], verbs: ["get", "list", "watch", "create", "delete"] },
    { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] },
    { apiGroups: [""], resources: ["persistentvolumeclaims"], verbs: ["get", "list"] },
    { apiGroups: [""], resources: ["secrets"], verbs: ["get", "create", "update", "delete"] },
    { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create"] },
  ];
  const cases: [string, (rules: typeof full) => typeof full, boolean, RegExp, string?][] = [
    [
      "may not delete statefulsets",
      (r) => r.map((x) => (x.resources[0] === "statefulsets" ? { ...x, verbs: x.verbs.filter((v) => v !== "delete") } : x)),
      true,
      /you may not delete statefulsets.apps "db"/,
    ],
    [
      "may not create statefulsets",
      (r) => r.map((x) => (x.resources[0] === "statefulsets" ? { ...x, verbs: x.verbs.filter((v) => v !== "create") } : x)),
      true,
      /you may not create statefulsets.apps/,
    ],
    [
      "may not write the journal",
      (r) => r.map((x) => (x.resources[0] === "secrets" ? { ...x, verbs: ["get"] } : x)),
      true,
      /you may not create secrets in namespace rel-[0-9a-f]+, update secrets "appstorage-journal-db" .*which this change needs; nothing was changed/,
    ],
    // A size-only change needs no storage class (a namespace admin's case); a named class does.
    [
      "may not read storage classes, and the change names one",
      (r) => r,
      false,
      /storage class "standard" could not be checked: you may not get storageclasses.storage.k8s.io "standard"/,
      "data=2Gi,standard",
    ],
  ];
  for (const [name, rules, canReadClasses, why, directive] of cases) {
    check(`${name}: refused before any change, naming the permission`, async (t) => {
      const { ns, before } = await prepared(t);
      const user = `u-${ns}`;
      const kc = userKubeconfig(user);
      grantRole(ns, user, "appstorage", rules(full));
      if (canReadClasses) grantStorageClasses(t, ns, user, ["get", "list"]);
      const rv = getSts(ns, "db").metadata.resourceVersion;
      const r = await runPlugin(["set", "db", directive ?? "data=2Gi", "-n", ns, "--yes"], { kubeconfig: kc });
      summary.permissionCases += 1;
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, why);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
      assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 1);
      await assertNothingLost(ns, before, name);
    });
  }
});

describe("bad input", () => {
  check("each is one line, a non-zero exit, and changes nothing", async (t) => {
    const { ns, before } = await prepared(t);
    const kc = kubeconfig();
    const dir = mkdtempSync(join(tmpdir(), "appstorage-bad-"));
    const corrupt = join(dir, "corrupt");
    writeFileSync(corrupt, "apiVersion: v1\nclusters: [\n");
    const unreachable = join(dir, "unreachable");
    writeFileSync(unreachable, readFileSync(kc, "utf8").replace(/server: https:\/\/127\.0\.0\.1:\d+/, "server: https://127.0.0.1:1"));
    const cases: [string[], RegExp][] = [
      [["set", "db", "data=0"], /greater than zero/],
      [["set", "db", "data=-5Gi"], /greater than zero/],
      [["set", "db", "data=1.5"], /1\.5 bytes: did you mean 1\.5Gi\?/],
      [["set", "db", "data=100m"], /whole number of bytes/],
      [["set", "db", "data=2GB"], /unknown suffix "GB"/],
      [["set", "db", "data=2gi"], /unknown suffix "gi"/],
      [["set", "db", "data=1e999"], /out of range/],
      [["set", "db", "data=99Ei"], /too large/],
      [["set", "db", "data=9223372036854775808"], /too large/],
      [["set", "db", "data=1..2Gi"], /size|quantity|suffix/],
      [["set", "db", "data=2Gi,3Gi"], /two sizes/],
      [["set", "db", "data=a,b"], /two storage classes/],
      [["set", "db", "data=Fast_SSD"], /neither a size/],
      [["set", "db", "data=2Gi,no-such-class"], /storage class "no-such-class" not found/],
      [["set", "db", "nope=2Gi"], /claim template "nope" not found/],
      [["set", "db", "data=2Gi", "data=3Gi"], /named twice/],
      [["set", "db", "data="], /neither a size nor a storage class/],
      [["set", "db", "=2Gi"], /names no claim template/],
      [["set", "db", "data"], /not a directive/],
      [["set", "db", "data=2Gi", "stray"], /not a directive/],
      [["set", "db"], /needs a StatefulSet name and at least one/],
      [["set"], /needs a StatefulSet name/],
      [["set", "db", "data=2Gi", "--bogus"], /^error: unknown flag: --bogus\nSee 'kubectl appstorage set --help' for usage\.\n$/],
      [["set", "db", "data=2Gi", "--dry-run=maybe"], /Invalid dry-run value \(maybe\)/],
      [["set", "db", "data=2Gi", "-o", "xml"], /invalid --output "xml"/],
      [["set", "db", "data=2Gi", "--timeout", "forever"], /invalid --timeout/],
      [["set", "no-such-sts", "data=2Gi"], /statefulsets.apps "no-such-sts" not found/],
      [["set", "db", "data=2Gi", "-n", "no-such-namespace"], /namespace "no-such-namespace" not found/],
      [["set", "db", "data=2Gi", "--kubeconfig", join(dir, "missing")], /kubeconfig ".*missing" does not exist/],
      [["set", "db", "data=2Gi", "--kubeconfig", corrupt], /cannot load kubeconfig|not a kubeconfig/],
      [["set", "db", "data=2Gi", "--context", "nope"], /context "nope" does not exist/],
      [["set", "db", "data=2Gi", "--kubeconfig", unreachable, "--request-timeout", "2s"], /connection to the server .* failed/],
      [["diff", "db", "data=Zero"], /neither a size/],
      [["show", "-o", "xml"], /invalid --output/],
      [["frobnicate"], /^Error: unknown command "frobnicate" for "kubectl appstorage"\nRun 'kubectl appstorage --help' for usage\.\n$/],
    ];
    const rv = getSts(ns, "db").metadata.resourceVersion;
    for (const [args, why] of cases) {
      const withNs = args.includes("-n") ? args : [...args, "-n", ns];
      const r = await runPlugin(args[0] === "set" ? [...withNs, "--yes"] : withNs, { kubeconfig: kc });
      summary.badInputCases += 1;
      assert.ok(r.code !== 0, `${args.join(" ")}: exit ${r.code}`);
      assert.match(r.stderr, why, args.join(" "));
      // One line, and for an unknown command or flag cobra's and kubectl's line that says where the usage is.
      assert.equal(
        r.stderr
          .trim()
          .split("\n")
          .filter((l) => !/^(See|Run) '.*' for usage\.$/.test(l)).length,
        1,
        `${args.join(" ")}: ${r.stderr}`,
      );
      assert.equal(r.stdout, "", args.join(" "));
    }
    assert.ok(cases.length >= 30);
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
    await assertNothingLost(ns, before, "bad input");
  });
});

describe("security", () => {
  check("the journal and its local copy hold no credentials; the copy is 0600 in a 0700 folder", async (t) => {
    const { ns } = await prepared(t);
    const stateDir = mkdtempSync(join(tmpdir(), "appstorage-sec-"));
    const proxy = await startFaultProxy(kubeconfig(), [{ kind: "500", signature: "create statefulsets" }]);
    let r;
    try {
      r = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { kubeconfig: proxy.kubeconfig, stateDir, env: { APPSTORAGE_DEBUG: "1" } });
    } finally {
      await proxy.close();
    }
    assert.equal(r.code, 1, "the create failed and the journal stays");
    const secret = kubectlJson<{ data: Record<string, string> }>(["get", "secret", "appstorage-journal-db", "-n", ns]);
    const journal = Buffer.from(secret.data["journal.json"]!, "base64").toString();
    const kc = readFileSync(kubeconfig(), "utf8");
    const secrets = [...kc.matchAll(/(client-key-data|client-certificate-data|certificate-authority-data): (\S+)/g)].map((m) => m[2]!);
    const journalDir = join(stateDir, "journal");
    const files = readdirSync(journalDir);
    assert.equal(files.length, 1);
    const local = readFileSync(join(journalDir, files[0]!), "utf8");
    for (const text of [journal, local, r.stdout, r.stderr]) {
      for (const s of secrets) assert.ok(!text.includes(s.slice(0, 40)), "credential material leaked");
      assert.doesNotMatch(text, /BEGIN (RSA |EC )?PRIVATE KEY|BEGIN CERTIFICATE|Authorization|Bearer /);
    }
    assert.equal(statSync(journalDir).mode & 0o777, 0o700);
    assert.equal(statSync(join(journalDir, files[0]!)).mode & 0o777, 0o600);
    const rerun = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { stateDir });
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.deepEqual(readdirSync(journalDir), [], "local copy removed when done");
  });
});
