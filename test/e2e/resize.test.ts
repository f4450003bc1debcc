// Existing claims against the real control plane: --resize-existing grows bound claims before the
// StatefulSet is swapped, refuses what cannot be done before changing anything, finishes after a
// kill; --wait-resize and --restart-pods follow claims whose status is patched as a resizer would,
// and restart pods (made Ready as a kubelet would) one at a time, highest ordinal first.
// Pod and claim uids are compared throughout; only pods deliberately restarted get new ones.
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createReadStream, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, type TestContext, test } from "node:test";
import type { Pod, StatefulSet } from "../../src/api/types";
import { sts } from "../fixtures/builders";
import {
  apply,
  claims,
  eventually,
  getSts,
  kubeconfig,
  kubectl,
  kubectlJson,
  kubectlTry,
  denyingPolicy,
  namespace,
  plugin,
  pods,
  runPlugin,
  type RunResult,
  serverVersion,
  serves,
  settled,
  storageClassFor,
  uids,
  volumeFor,
} from "../shared/harness";

const request = (ns: string, name: string) => claims(ns).find((c) => c.metadata.name === name)?.spec.resources?.requests?.["storage"];
const requests = (ns: string) => Object.fromEntries(claims(ns).map((c) => [c.metadata.name!, c.spec.resources!.requests!["storage"]]));
const journalExists = (ns: string, name: string) => kubectlTry(["get", "secret", `appstorage-journal-${name}`, "-n", ns]).code === 0;
const stamp = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

/** A StatefulSet whose claims are bound to prepared PersistentVolumes (claimRef), as a provisioner would. */
async function boundStatefulSet(
  t: TestContext,
  ns: string,
  name: string,
  opts: { replicas: number; storageClass: string; size?: string; parallel?: boolean; ready?: boolean; unbound?: number[] },
): Promise<void> {
  const size = opts.size ?? "1Gi";
  for (let i = 0; i < opts.replicas; i++) if (!opts.unbound?.includes(i)) volumeFor(t, ns, `data-${name}-${i}`, size, opts.storageClass);
  const b = sts(name, ns).withClaim("data", size, opts.storageClass).replicas(opts.replicas);
  if (opts.parallel) b.parallel();
  apply(b.build(), ns);
  await settled(ns, name, opts.replicas, { ready: opts.ready ?? false });
  const bound = opts.replicas - (opts.unbound?.length ?? 0);
  await eventually(`${bound} claim(s) of ${name} bound`, () => claims(ns).filter((c) => c.metadata.name!.startsWith(`data-${name}-`) && c.status?.phase === "Bound").length === bound, 60_000);
}

/** A fresh namespace with an expandable storage class and db bound on it (boundStatefulSet); the namespace. */
async function expandableDb(t: TestContext, opts: { replicas: number; size?: string; parallel?: boolean; ready?: boolean }): Promise<string> {
  const ns = namespace(t, "rsz");
  await boundStatefulSet(t, ns, "db", { ...opts, storageClass: storageClassFor(t, ns, { expandable: true }) });
  return ns;
}

/**
 * set db data=2Gi --resize-existing has finished on the three replicas: every claim asks 2Gi, db is
 * a new StatefulSet (not `before`) with the 2Gi template, no pod or claim was replaced, no journal
 * is left. The new StatefulSet.
 */
function assertGrown(ns: string, before: StatefulSet, uidsBefore: Record<string, string>): StatefulSet {
  assert.deepEqual(requests(ns), { "data-db-0": "2Gi", "data-db-1": "2Gi", "data-db-2": "2Gi" });
  const after = getSts(ns, "db");
  assert.notEqual(after.metadata.uid, before.metadata.uid);
  assert.equal(after.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "2Gi");
  assert.deepEqual(uids(ns), uidsBefore);
  assert.equal(journalExists(ns, "db"), false);
  return after;
}

/** Patches a claim's status as the external resizer or the kubelet would. */
function claimStatus(ns: string, claim: string, status: Record<string, unknown>): void {
  kubectl(["patch", "pvc", claim, "-n", ns, "--subresource=status", "--type=merge", "-p", JSON.stringify({ status })]);
}

// As kubelet leaves a claim whose driver grows file systems only at mount: it tried to grow it in the
// running pod, and the driver refused (NodeResizeError); only a restart finishes it (test/node sees
// the real one).
const fileSystemResizePending = () => ({
  conditions: [
    { type: "FileSystemResizePending", status: "True", lastTransitionTime: stamp(), message: "Waiting for user to (re-)start a pod to finish file system resize of volume on node." },
    { type: "NodeResizeError", status: "True", lastTransitionTime: stamp(), message: "failed to expand pvc with rpc error: code = FailedPrecondition" },
  ],
});

/** The plugin running in the background, with its stderr readable while it runs. */
function start(args: string[], env: Record<string, string> = {}): { child: ChildProcess; stderr: () => string; done: Promise<RunResult> } {
  const child = spawn(plugin, [...args, "--kubeconfig", kubeconfig()], {
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", APPSTORAGE_STATE_DIR: mkdtempSync(join(tmpdir(), "appstorage-state-")), ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdin!.end();
  const done = new Promise<RunResult>((r) => child.on("close", (code, signal) => r({ code: code ?? (signal ? -1 : -1), stdout, stderr })));
  return { child, stderr: () => stderr, done };
}

const isReady = (p: Pod) => !p.metadata.deletionTimestamp && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

/**
 * Plays the kubelet for one StatefulSet: marks re-created pods Ready after a short while, records
 * the order in which pods got a new uid, and the largest number of pods down at any moment.
 */
function kubelet(ns: string, podNames: string[], original: Record<string, string>) {
  const order: string[] = [];
  let maxDown = 0;
  let stopped = false;
  const seenPending = new Map<string, number>();
  const loop = (async () => {
    while (!stopped) {
      const current = new Map(pods(ns).map((p) => [p.metadata.name!, p]));
      const down = podNames.filter((n) => !current.get(n) || !isReady(current.get(n)!)).length;
      maxDown = Math.max(maxDown, down);
      for (const n of podNames) {
        const p = current.get(n);
        if (!p || p.metadata.deletionTimestamp) continue;
        if (p.metadata.uid !== original[`pod/${n}`] && !order.includes(n)) order.push(n);
        if (!isReady(p)) {
          // Not at once: a real pod takes a moment to start, and the rule is observable meanwhile.
          const since = seenPending.get(p.metadata.uid!) ?? Date.now();
          seenPending.set(p.metadata.uid!, since);
          if (Date.now() - since > 700) {
            const now = stamp();
            kubectlTry([
              "patch",
              "pod",
              n,
              "-n",
              ns,
              "--subresource=status",
              "--type=merge",
              "-p",
              JSON.stringify({ status: { phase: "Running", conditions: [{ type: "Ready", status: "True", lastTransitionTime: now }] } }),
            ]);
          }
        }
      }
      await new Promise((r) => setTimeout(r, 150));
    }
  })();
  return {
    order,
    maxDown: () => maxDown,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

describe("set --resize-existing", () => {
  test("grows every bound claim before the swap; a rerun and diff then find nothing to do", async (t) => {
    const ns = await expandableDb(t, { replicas: 3, parallel: true });
    const before = getSts(ns, "db");
    const uidsBefore = uids(ns);

    const diff = await runPlugin(["diff", "db", "data=2Gi", "--resize-existing", "-n", ns]);
    assert.equal(diff.code, 1, diff.stderr);
    // As kubectl diff: stdout is the diff alone; what happens to each claim is on stderr.
    for (let i = 0; i < 3; i++) assert.match(diff.stderr, new RegExp(`data-db-${i} .* grows 1Gi -> 2Gi`));
    assert.match(diff.stderr, /existing claims: 3 grow, adding 3Gi to requests.storage/);
    assert.doesNotMatch(diff.stdout, /grows|existing claims/);
    const plan = JSON.parse((await runPlugin(["diff", "db", "data=2Gi", "--resize-existing", "-n", ns, "-o", "json"])).stdout);
    assert.deepEqual(plan.steps.slice(0, 3), ["write-journal", "grow-claims", "orphan-delete"]);
    assert.deepEqual(
      plan.existing.claims.map((c: { name: string; grow: unknown }) => [c.name, c.grow]),
      [0, 1, 2].map((i) => [`data-db-${i}`, { from: "1Gi", to: "2Gi" }]),
    );

    const r = await runPlugin(["set", "db", "data=2Gi", "--resize-existing", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, ["statefulset.apps/db recreated", ...[0, 1, 2].map((i) => `persistentvolumeclaim/data-db-${i} patched`)].join("\n") + "\n");
    // The claims grow first: a refusal of any of them would leave the StatefulSet untouched.
    const lines = r.stderr.split("\n");
    const lastPatch = lines.findLastIndex((l) => /patched claim data-db-\d: 1Gi -> 2Gi/.test(l));
    const deleted = lines.findIndex((l) => /deleted statefulset.apps\/db with propagationPolicy=Orphan/.test(l));
    assert.ok(lastPatch >= 0 && deleted > lastPatch, r.stderr);

    const after = assertGrown(ns, before, uidsBefore);

    const again = await runPlugin(["set", "db", "data=2Gi", "--resize-existing", "-n", ns, "--yes"]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, "statefulset.apps/db unchanged\n");
    const none = await runPlugin(["diff", "db", "data=2Gi", "--resize-existing", "-n", ns]);
    assert.equal(none.code, 0, none.stdout + none.stderr);
    assert.equal(getSts(ns, "db").metadata.uid, after.metadata.uid);
    assert.deepEqual(uids(ns), uidsBefore);
  });

  test("the template already has the new size (an earlier run without the flag): only the claims grow", async (t) => {
    const ns = await expandableDb(t, { replicas: 2, parallel: true });
    assert.equal((await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"])).code, 0);
    const swapped = getSts(ns, "db");
    const uidsBefore = uids(ns);
    assert.deepEqual(requests(ns), { "data-db-0": "1Gi", "data-db-1": "1Gi" });

    const r = await runPlugin(["set", "db", "data=2Gi", "--resize-existing", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "statefulset.apps/db unchanged\npersistentvolumeclaim/data-db-0 patched\npersistentvolumeclaim/data-db-1 patched\n");
    assert.doesNotMatch(r.stderr, /deleted statefulset/);
    assert.deepEqual(requests(ns), { "data-db-0": "2Gi", "data-db-1": "2Gi" });
    assert.equal(getSts(ns, "db").metadata.uid, swapped.metadata.uid);
    assert.equal(getSts(ns, "db").metadata.resourceVersion, swapped.metadata.resourceVersion);
    assert.deepEqual(uids(ns), uidsBefore);
  });

  test("refused before any change: a shrink, a quota too small, an unknown attributes class, flags without --resize-existing", async (t) => {
    const ns = await expandableDb(t, { replicas: 2, parallel: true, size: "2Gi" });
    apply({ apiVersion: "v1", kind: "ResourceQuota", metadata: { name: "storage" }, spec: { hard: { "requests.storage": "5Gi" } } }, ns);
    await eventually(
      "the quota to count the claims",
      () => kubectlJson<{ status?: { used?: Record<string, string> } }>(["get", "resourcequota", "storage", "-n", ns]).status?.used?.["requests.storage"] === "4Gi",
    );
    const stsBefore = getSts(ns, "db");
    const uidsBefore = uids(ns);
    const cases: [string[], RegExp][] = [
      [
        ["data=1Gi", "--resize-existing"],
        /claim\(s\) data-db-0 \(2Gi\), data-db-1 \(2Gi\) already request more than the new size; this tool never shrinks a claim; nothing was changed: ask for at least 2Gi, or drop --resize-existing/,
      ],
      [
        ["data=3Gi", "--resize-existing"],
        /growing 2 claim\(s\) needs 2Gi more requests.storage, but resourcequota "storage" has 1Gi left \(used 4Gi of 5Gi\); nothing was changed: raise its requests.storage to at least 6Gi/,
      ],
      // Before 1.34 the API is not served (versions.test.ts): that is the refusal then.
      [
        ["data=2Gi,vac=no-such-vac", "--resize-existing"],
        serves("storage.k8s.io/v1", "volumeattributesclasses") ? /volume attributes class "no-such-vac" not found/ : /does not serve VolumeAttributesClass/,
      ],
      [["data=3Gi", "--wait-resize"], /--wait-resize works on the claims that --resize-existing or --vac-existing change/],
      [["data=3Gi", "--restart-pods"], /--restart-pods works on the claims that --resize-existing or --vac-existing change/],
    ];
    for (const [args, why] of cases) {
      const r = await runPlugin(["set", "db", ...args, "-n", ns, "--yes"]);
      assert.equal(r.code, 1, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, why);
      assert.equal(r.stdout, "");
      const d = await runPlugin(["diff", "db", ...args, "-n", ns]);
      assert.ok(d.code > 1, `diff ${args.join(" ")}: ${d.code}`);
    }
    // Within the quota, the same growth is accepted (1Gi left, 2 claims of 2Gi -> 2.5Gi each).
    const fits = await runPlugin(["diff", "db", "data=2560Mi", "--resize-existing", "-n", ns]);
    assert.equal(fits.code, 1, fits.stderr);
    assert.match(fits.stderr, /resourcequota\/storage: requests.storage used 4Gi of 5Gi, growth needs 1Gi \(1Gi left\): fits/);
    const after = getSts(ns, "db");
    assert.equal(after.metadata.uid, stsBefore.metadata.uid);
    assert.equal(after.metadata.resourceVersion, stsBefore.metadata.resourceVersion);
    assert.deepEqual(requests(ns), { "data-db-0": "2Gi", "data-db-1": "2Gi" });
    assert.deepEqual(uids(ns), uidsBefore);
    assert.equal(journalExists(ns, "db"), false);
  });

  test("refused before any change: a class without expansion, a claim that is not bound", async (t) => {
    // One namespace each (settled() counts every pod of a namespace); both bind at once.
    const fixedNs = namespace(t, "rsz");
    const halfNs = namespace(t, "rsz");
    const fixed = storageClassFor(t, fixedNs, { expandable: false });
    const expandable = storageClassFor(t, halfNs, { expandable: true });
    await Promise.all([
      boundStatefulSet(t, fixedNs, "db", { replicas: 2, storageClass: fixed, parallel: true }),
      boundStatefulSet(t, halfNs, "db", { replicas: 2, storageClass: expandable, parallel: true, unbound: [1] }),
    ]);
    const cases: [string, RegExp][] = [
      [
        fixedNs,
        new RegExp(
          `claim\\(s\\) data-db-0, data-db-1 have storage class "${fixed}", which does not allow volume expansion; nothing was changed: use --migrate-existing for bigger claims \\(new volumes of the new size, the data copied\\), or drop --resize-existing, or enable allowVolumeExpansion on the class if its provisioner can expand volumes$`,
          "m",
        ),
      ],
      [halfNs, /claim\(s\) data-db-1 \(Pending\) are not Bound: only bound claims can grow or change volume attributes class; nothing was changed/],
    ];
    for (const [ns, why] of cases) {
      const before = getSts(ns, "db");
      const uidsBefore = uids(ns);
      const r = await runPlugin(["set", "db", "data=2Gi", "--resize-existing", "-n", ns, "--yes"]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, why);
      assert.equal(r.stdout, "");
      assert.equal(journalExists(ns, "db"), false);
      const after = getSts(ns, "db");
      assert.equal(after.metadata.uid, before.metadata.uid);
      assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion);
      assert.ok(
        Object.values(requests(ns)).every((s) => s === "1Gi"),
        JSON.stringify(requests(ns)),
      );
      assert.deepEqual(uids(ns), uidsBefore);
    }
  });

  test("a claim refused half-way stops the run: the StatefulSet is untouched, and the rerun continues", async (t) => {
    const ns = await expandableDb(t, { replicas: 3, parallel: true });
    const before = getSts(ns, "db");
    const uidsBefore = uids(ns);
    // A site policy that refuses real (not dry-run) updates of one claim: the preflight's server
    // dry run passes, the growth itself fails half-way.
    const probe = () => kubectlTry(["label", "pvc", "data-db-1", "-n", ns, `probe=${Date.now()}`, "--overwrite"]);
    const lift = await denyingPolicy(t, ns, {
      name: `deny-claim-update-${ns}`,
      rule: { apiGroups: [""], resources: ["persistentvolumeclaims"], operations: ["UPDATE"] },
      expression: "object.metadata.name != 'data-db-1' || request.dryRun == true",
      message: "data-db-1 is frozen by test policy",
      probe,
    });

    const failed = await runPlugin(["set", "db", "data=2Gi", "--resize-existing", "-n", ns, "--yes"]);
    assert.equal(failed.code, 1, failed.stderr);
    assert.match(
      failed.stderr,
      /error: could not change claim data-db-1: .*frozen by test policy.*; patched so far: data-db-0; statefulset.apps\/db is unchanged: fix the cause, then run the same command again to continue/,
    );
    assert.deepEqual(requests(ns), { "data-db-0": "2Gi", "data-db-1": "1Gi", "data-db-2": "1Gi" });
    const untouched = getSts(ns, "db");
    assert.equal(untouched.metadata.uid, before.metadata.uid);
    assert.equal(untouched.metadata.resourceVersion, before.metadata.resourceVersion);
    assert.deepEqual(uids(ns), uidsBefore);

    await lift();
    const rerun = await runPlugin(["set", "db", "data=2Gi", "--resize-existing", "-n", ns, "--yes"]);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.equal(rerun.stdout, "statefulset.apps/db recreated\npersistentvolumeclaim/data-db-1 patched\npersistentvolumeclaim/data-db-2 patched\n");
    assertGrown(ns, before, uidsBefore);
  });

  test("killed in the middle of growing: the StatefulSet is untouched, and the rerun finishes", async (t) => {
    const ns = await expandableDb(t, { replicas: 3, parallel: true });
    const before = getSts(ns, "db");
    const uidsBefore = uids(ns);

    // The request log is a named pipe the test reads: each request's line is written before the
    // request is sent, and the write blocks until the test reads it. After the first real claim
    // patch the test stops reading, so the plugin blocks before its next request; then it is killed.
    const fifo = join(mkdtempSync(join(tmpdir(), "appstorage-fifo-")), "requests");
    execFileSync("mkfifo", [fifo]);
    const run = start(["set", "db", "data=2Gi", "--resize-existing", "-n", ns, "--yes"], { APPSTORAGE_REQUEST_LOG: fifo });
    t.after(() => void run.child.kill("SIGKILL"));
    const realPatch = new RegExp(`^PATCH /api/v1/namespaces/${ns}/persistentvolumeclaims/([^?\\n]+)$`, "m");
    let log = "";
    while (!realPatch.test(log)) {
      log += await new Promise<string>((resolve, reject) => {
        let chunk = "";
        const stream = createReadStream(fifo, { encoding: "utf8" });
        stream.on("data", (d) => {
          chunk += d;
          if (realPatch.test(chunk)) stream.destroy();
        });
        stream.on("close", () => resolve(chunk));
        stream.on("error", reject);
      });
      assert.equal(run.child.exitCode, null, `the plugin ended early: ${run.stderr()}`);
    }
    const first = realPatch.exec(log)![1]!;
    await eventually(`claim ${first} to grow`, () => request(ns, first) === "2Gi");
    run.child.kill("SIGKILL");
    await run.done;

    const grown = Object.entries(requests(ns))
      .filter(([, s]) => s === "2Gi")
      .map(([n]) => n);
    assert.ok(grown.includes(first) && grown.length < 3, `killed mid-growth: ${JSON.stringify(requests(ns))}`);
    const untouched = getSts(ns, "db");
    assert.equal(untouched.metadata.uid, before.metadata.uid);
    assert.equal(untouched.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "1Gi");
    const journal = JSON.parse(Buffer.from(kubectlJson<{ data: Record<string, string> }>(["get", "secret", "appstorage-journal-db", "-n", ns]).data["journal.json"]!, "base64").toString());
    assert.equal(journal.step, "growing");
    assert.deepEqual(journal.existing.options, { resize: true, vac: false, waitResize: false, restartPods: false });
    assert.deepEqual(uids(ns), uidsBefore);

    // Without the flag, the rerun would drop the interrupted growth: refused, with the command.
    const without = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"]);
    assert.equal(without.code, 1);
    assert.match(
      without.stderr,
      /(an interrupted run was changing the existing claims of statefulset.apps\/db .* finish it with: kubectl appstorage set db data=2Gi --resize-existing|another kubectl appstorage set is working)/,
    );

    // The killed run's lease is still live, but its process is gone: the rerun proceeds at once.
    const rerun = await runPlugin(["set", "db", "data=2Gi", "--resize-existing", "-n", ns, "--yes"]);
    assert.equal(rerun.code, 0, rerun.stderr);
    // Decided from the claims as they are: the ones grown before the kill are not patched again.
    const rest = ["data-db-0", "data-db-1", "data-db-2"].filter((n) => !grown.includes(n));
    assert.equal(rerun.stdout, ["statefulset.apps/db recreated", ...rest.map((n) => `persistentvolumeclaim/${n} patched`)].join("\n") + "\n");
    for (const n of grown) assert.doesNotMatch(rerun.stderr, new RegExp(`patched claim ${n}:`));
    assertGrown(ns, before, uidsBefore);
  });
});

describe("set --wait-resize --restart-pods", () => {
  test("follows each claim; restarts FileSystemResizePending pods one at a time, highest ordinal first, honouring the PodDisruptionBudget", async (t) => {
    const ns = await expandableDb(t, { replicas: 3, ready: true });
    // No disruption allowed at first: the eviction must wait for the budget.
    apply({ apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "db" }, spec: { minAvailable: 3, selector: { matchLabels: { app: "db" } } } }, ns);
    await eventually("the budget to count the pods", () => kubectlJson<{ status?: { currentHealthy?: number } }>(["get", "pdb", "db", "-n", ns]).status?.currentHealthy === 3, 60_000).catch((e) => {
      throw new Error(`${(e as Error).message}: ${kubectl(["get", "pdb,pods", "-n", ns, "-o", "yaml"])}`);
    });
    const uidsBefore = uids(ns);
    const podNames = ["db-0", "db-1", "db-2"];

    // A long timeout: the disruption controller keeps counting a re-created pod of the same name as
    // disrupted (status.disruptedPods) for up to 2 minutes when it never saw the old one terminating,
    // which is what happens without a kubelet; the next eviction waits for that.
    const run = start(["set", "db", "data=2Gi", "--resize-existing", "--restart-pods", "--timeout", "240s", "-n", ns, "--yes"]);
    await eventually("the plugin to follow the claims", () => /following 3 claim\(s\)/.test(run.stderr()) || run.child.exitCode !== null, 30_000);
    assert.deepEqual(requests(ns), { "data-db-0": "2Gi", "data-db-1": "2Gi", "data-db-2": "2Gi" });
    // As a resizer would: ordinal 0 is done online; 1 and 2 need their pod restarted.
    claimStatus(ns, "data-db-0", { capacity: { storage: "2Gi" } });
    claimStatus(ns, "data-db-1", fileSystemResizePending());
    claimStatus(ns, "data-db-2", fileSystemResizePending());
    await eventually("the budget to block the eviction", () => /PodDisruptionBudget does not allow evicting pod db-2/.test(run.stderr()) || run.child.exitCode !== null, 30_000);
    assert.deepEqual(uids(ns), uidsBefore, "nothing evicted while the budget forbids it");

    const k = kubelet(ns, podNames, uidsBefore);
    kubectl(["patch", "pdb", "db", "-n", ns, "--type=merge", "-p", JSON.stringify({ spec: { minAvailable: 2 } })]);
    const r = await run.done;
    await k.stop();
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, ["statefulset.apps/db recreated", ...[0, 1, 2].map((i) => `persistentvolumeclaim/data-db-${i} patched`), "pod/db-2 evicted", "pod/db-1 evicted"].join("\n") + "\n");
    for (const line of [
      /claim data-db-0: resized: capacity 2Gi/,
      /claim data-db-1: FileSystemResizePending/,
      /claim data-db-2: FileSystemResizePending/,
      /restarting 2 pod\(s\) one at a time, highest ordinal first: db-2, db-1/,
    ]) {
      assert.match(r.stderr, line);
    }
    assert.deepEqual(k.order, ["db-2", "db-1"]);
    assert.equal(k.maxDown(), 1, "never more than one pod down");
    const now = uids(ns);
    assert.equal(now["pod/db-0"], uidsBefore["pod/db-0"], "db-0 was not restarted");
    for (const n of ["db-1", "db-2"]) assert.notEqual(now[`pod/${n}`], uidsBefore[`pod/${n}`], `${n} restarted`);
    for (const [k2, v] of Object.entries(uidsBefore)) if (k2.startsWith("pvc/")) assert.equal(now[k2], v, `${k2} kept its uid`);
  });

  test("a pod that does not come back stops the restarts; a second pod is never taken down; the rerun continues", async (t) => {
    const ns = await expandableDb(t, { replicas: 2, parallel: true, ready: true, size: "2Gi" });
    // Grown by an earlier run; the resizer left both waiting for a restart.
    for (const c of ["data-db-0", "data-db-1"]) {
      kubectl(["patch", "pvc", c, "-n", ns, "--type=merge", "-p", JSON.stringify({ spec: { resources: { requests: { storage: "3Gi" } } } })]);
      claimStatus(ns, c, fileSystemResizePending());
    }
    const uidsBefore = uids(ns);
    const claimUids = () => Object.fromEntries(Object.entries(uids(ns)).filter(([k]) => k.startsWith("pvc/")));
    const claimUidsBefore = claimUids();

    // Nobody marks the evicted pod Ready: the run stops after it and leaves db-0 alone.
    // --timeout also bounds the swap's waits: leave them room on a busy machine.
    const stuck = await runPlugin(["set", "db", "data=3Gi", "--resize-existing", "--restart-pods", "--timeout", "8s", "-n", ns, "--yes"]);
    assert.equal(stuck.code, 1, stuck.stderr);
    assert.match(stuck.stderr, /restarting 2 pod\(s\) one at a time, highest ordinal first: db-1, db-0/);
    assert.match(stuck.stderr, /error: pod db-1 did not come back Ready within 8s after its eviction .*; stopped before restarting db-0: fix it, then run the same command again to continue/);
    assert.equal(getSts(ns, "db").spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "3Gi");
    await eventually("db-1 re-created", () => pods(ns).find((p) => p.metadata.name === "db-1" && p.metadata.uid !== uidsBefore["pod/db-1"]));
    assert.equal(uids(ns)["pod/db-0"], uidsBefore["pod/db-0"]);
    assert.deepEqual(claimUids(), claimUidsBefore);

    // The kubelet finished data-db-1's resize when it mounted it, but db-1 is still not Ready:
    // restarting db-0 now would take a second pod down.
    claimStatus(ns, "data-db-1", { capacity: { storage: "3Gi" }, conditions: [] });
    const second = await runPlugin(["set", "db", "data=3Gi", "--resize-existing", "--restart-pods", "--timeout", "5s", "-n", ns, "--yes"]);
    assert.equal(second.code, 1, second.stderr);
    assert.match(second.stderr, /error: pod\(s\) db-1 of statefulset.apps\/db are not Ready, and restarting db-0 would take a second pod down; stopped before restarting any other pod/);
    assert.equal(uids(ns)["pod/db-0"], uidsBefore["pod/db-0"]);

    const k = kubelet(ns, ["db-0", "db-1"], uidsBefore);
    await eventually("db-1 Ready", () => pods(ns).some((p) => p.metadata.name === "db-1" && isReady(p)));
    const rerun = await runPlugin(["set", "db", "data=3Gi", "--resize-existing", "--restart-pods", "--timeout", "60s", "-n", ns, "--yes"]);
    await k.stop();
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.equal(rerun.stdout, "statefulset.apps/db unchanged\npod/db-0 evicted\n");
    assert.notEqual(uids(ns)["pod/db-0"], uidsBefore["pod/db-0"]);
    assert.equal(k.maxDown(), 1);
    assert.deepEqual(claimUids(), claimUidsBefore);
  });
});

describe("volume attributes class", () => {
  test("vac= sets the template and, with --vac-existing, every existing claim; --wait-resize follows it", async (t) => {
    // storage.k8s.io/v1 VolumeAttributesClass is served from 1.34 (feature on by default); on older
    // servers versions.test.ts checks that vac= is refused instead.
    if (!serves("storage.k8s.io/v1", "volumeattributesclasses")) return t.skip(`${serverVersion().gitVersion} does not serve storage.k8s.io/v1 VolumeAttributesClass`);
    const ns = await expandableDb(t, { replicas: 2, parallel: true });
    const vac = `${ns}-fast`;
    apply({ apiVersion: "storage.k8s.io/v1", kind: "VolumeAttributesClass", metadata: { name: vac }, driverName: "example.com/no-provisioner", parameters: { iops: "5000" } }, ns);
    t.after(() => kubectlTry(["delete", "volumeattributesclass", vac, "--wait=false"]));
    const uidsBefore = uids(ns);

    const diff = await runPlugin(["diff", "db", `data=vac=${vac}`, "--vac-existing", "-n", ns]);
    assert.equal(diff.code, 1, diff.stderr);
    assert.match(diff.stdout, new RegExp(`^\\+\\s+volumeAttributesClassName: ${vac}$`, "m"));
    assert.match(diff.stderr, new RegExp(`data-db-1 .* attributes class <none> -> ${vac}`));

    const run = start(["set", "db", `data=vac=${vac}`, "--vac-existing", "--wait-resize", "--timeout", "60s", "-n", ns, "--yes"]);
    await eventually("the plugin to follow the claims", () => /following 2 claim\(s\)/.test(run.stderr()) || run.child.exitCode !== null, 30_000);
    // As the external resizer would, once the driver applied the class.
    for (const c of ["data-db-0", "data-db-1"]) claimStatus(ns, c, { currentVolumeAttributesClassName: vac });
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "statefulset.apps/db recreated\npersistentvolumeclaim/data-db-0 patched\npersistentvolumeclaim/data-db-1 patched\n");
    assert.match(r.stderr, new RegExp(`claim data-db-0: resized: capacity 1Gi, volume attributes class ${vac}`));
    const s = getSts(ns, "db");
    assert.equal(s.spec.volumeClaimTemplates![0]!.spec.volumeAttributesClassName, vac);
    for (const c of claims(ns)) {
      assert.equal(c.spec.volumeAttributesClassName, vac);
      assert.equal(c.spec.resources!.requests!["storage"], "1Gi", "--vac-existing does not grow");
    }
    assert.deepEqual(uids(ns), uidsBefore);
  });
});
