// Many StatefulSets side by side (set -l --parallel N, undo -l): every guarantee of one set holds
// for each, a failure lets those under way finish and starts no other, and SIGKILL or Ctrl-C in
// the middle of a parallel run is finished by running the same command again.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test, type TestContext } from "node:test";
import { sts } from "../fixtures/builders";
import { apply, denyingPolicy, eventually, getSts, kubeconfig, kubectlTry, namespace, plugin, runPlugin, settled, uids } from "../shared/harness";

const templateSize = (ns: string, name: string) => getSts(ns, name).spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"];
const lines = (text: string) => text.split("\n").filter((l) => l !== "");

async function withStatefulSets(t: TestContext, names: string[]): Promise<string> {
  const ns = namespace(t, "par");
  for (const name of names) apply(sts(name, ns).withClaim("data", "1Gi").labels({ tier: "db" }).build(), ns);
  for (const name of names) await settled(ns, name, 1);
  return ns;
}

/** The plugin as a child process, to kill it while it works; `seen(re)` resolves once its stderr matches. */
function startPlugin(args: string[], stateDir: string) {
  const child = spawn(plugin, [...args, "--kubeconfig", kubeconfig()], {
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", APPSTORAGE_STATE_DIR: stateDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  const waiters: { re: RegExp; count: number; resolve: () => void }[] = [];
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
    for (const w of waiters.splice(0)) {
      if ((stderr.match(new RegExp(w.re.source, "g")) ?? []).length >= w.count) w.resolve();
      else waiters.push(w);
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on("close", (code, signal) => r({ code, signal })));
  const seen = (re: RegExp, count = 1) => new Promise<void>((resolve) => waiters.push({ re, count, resolve }));
  return { child, exited, seen, stderr: () => stderr };
}

describe("many StatefulSets side by side (set -l --parallel)", () => {
  test("six StatefulSets, three at a time: each recreated and verified, results in the order of the plans, the rerun finds nothing to do", async (t) => {
    const names = ["a", "b", "c", "d", "e", "f"];
    const ns = await withStatefulSets(t, names);
    const before = uids(ns);
    const r = await runPlugin(["set", "-l", "tier=db", "data=2Gi", "-n", ns, "--yes", "--parallel", "3", "-o", "json"]);
    assert.equal(r.code, 0, r.stderr);
    const results = JSON.parse(r.stdout) as { kind: string; items: { name: string; pods: { adopted: boolean }[] }[] };
    assert.equal(results.kind, "ResultList");
    assert.deepEqual(
      results.items.map((i) => i.name),
      names,
    );
    for (const item of results.items) assert.ok(item.pods.every((p) => p.adopted));
    // Progress lines say which StatefulSet they are about; the table gives each one's time.
    for (const n of names) assert.match(r.stderr, new RegExp(`^\\[\\d+\\.\\d+s\\] ${ns}/${n}: deleted statefulset.apps/${n} with propagationPolicy=Orphan`, "m"));
    assert.match(r.stderr, /NAMESPACE +STATEFULSET +RESULT +TIME\n(\S+ +[a-f] +recreated +\d+\.\ds\n){6}$/);
    for (const n of names) assert.equal(templateSize(ns, n), "2Gi");
    assert.deepEqual(uids(ns), before);
    const again = await runPlugin(["set", "-l", "tier=db", "data=2Gi", "-n", ns, "--yes"]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, names.map((n) => `statefulset.apps/${n} unchanged\n`).join(""));
  });

  test("one fails: those under way finish, none starts after it, the summary and exit code say so; the same command finishes the rest", async (t) => {
    const names = ["a", "b", "c", "d"];
    const ns = await withStatefulSets(t, names);
    const before = uids(ns);
    // b fails at its first write (its journal), while a, started beside it, is still at work.
    const allow = await denyingPolicy(t, ns, {
      name: `deny-journal-b-${ns}`,
      rule: { apiGroups: [""], resources: ["secrets"], operations: ["CREATE"] },
      expression: "object.metadata.name != 'appstorage-journal-b'",
      message: "the journal of b is denied by test policy",
      probe: () => kubectlTry(["create", "secret", "generic", "appstorage-journal-b", "-n", ns, "--dry-run=server"]),
    });
    const r = await runPlugin(["set", "-l", "tier=db", "data=2Gi", "-n", ns, "--yes", "--parallel", "2"]);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout, "statefulset.apps/a recreated\n");
    assert.match(
      r.stderr,
      /error: stopped at statefulset.apps\/b in namespace \S+: .*the journal of b is denied by test policy.*; done: statefulset.apps\/a recreated; not done: b, c, d: run the same command again to finish the rest/,
    );
    assert.match(r.stderr, /NAMESPACE +STATEFULSET +RESULT +TIME\n\S+ +a +recreated +\d+\.\ds\n\S+ +b +failed: .+\n\S+ +c +not done *\n\S+ +d +not done *\nerror: /);
    assert.equal(templateSize(ns, "a"), "2Gi");
    for (const n of ["b", "c", "d"]) assert.equal(templateSize(ns, n), "1Gi");
    await allow();
    const rerun = await runPlugin(["set", "-l", "tier=db", "data=2Gi", "-n", ns, "--yes"]);
    assert.equal(rerun.code, 0, rerun.stderr);
    for (const n of names) assert.equal(templateSize(ns, n), "2Gi");
    assert.deepEqual(uids(ns), before);
  });

  for (const signal of ["SIGKILL", "SIGINT"] as const) {
    test(`${signal} in the middle of a parallel run: the same command run again finishes every StatefulSet, no pod or claim replaced`, async (t) => {
      const names = ["a", "b", "c", "d"];
      const ns = await withStatefulSets(t, names);
      const before = uids(ns);
      const stateDir = mkdtempSync(join(tmpdir(), "appstorage-state-"));
      const run = startPlugin(["set", "-l", "tier=db", "data=2Gi", "-n", ns, "--yes", "--parallel", "4"], stateDir);
      await run.seen(/deleted statefulset\.apps\/\w+ with propagationPolicy=Orphan/, 2);
      run.child.kill(signal);
      const end = await run.exited;
      if (signal === "SIGKILL") assert.equal(end.signal, "SIGKILL");
      else {
        // Ctrl-C: the waits under way stop, the run says what is done and what a rerun finishes.
        assert.equal(end.code, 1, run.stderr());
        assert.match(run.stderr(), /run the same command again to finish the rest/);
      }
      const rerun = await runPlugin(["set", "-l", "tier=db", "data=2Gi", "-n", ns, "--yes"], { stateDir });
      assert.equal(rerun.code, 0, rerun.stderr);
      await eventually("every StatefulSet with the new template", () => names.every((n) => templateSize(ns, n) === "2Gi"));
      assert.deepEqual(uids(ns), before);
    });
  }

  test("undo -l puts every matching StatefulSet back one change, side by side", async (t) => {
    const names = ["a", "b", "c"];
    const ns = await withStatefulSets(t, names);
    const before = uids(ns);
    const set = await runPlugin(["set", "-l", "tier=db", "data=2Gi", "-n", ns, "--yes"]);
    assert.equal(set.code, 0, set.stderr);
    const undo = await runPlugin(["undo", "-l", "tier=db", "-n", ns, "--yes", "--parallel", "3"]);
    assert.equal(undo.code, 0, undo.stderr);
    assert.deepEqual(
      lines(undo.stdout).sort(),
      names.map((n) => `statefulset.apps/${n} recreated`),
    );
    for (const n of names) assert.equal(templateSize(ns, n), "1Gi");
    assert.deepEqual(uids(ns), before);
    const refused = await runPlugin(["undo", "-l", "tier=db", "-n", ns, "--to-revision", "1"]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /--to-revision names a revision of one StatefulSet/);
  });
});
