// history and undo, many StatefulSets at once (-l), and reviewed plans applied exactly
// (set --plan), against the real control plane. Every case compares the uids of all pods and
// claims before and after: nothing is ever deleted or shrunk.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test, type TestContext } from "node:test";
import { sts } from "../fixtures/builders";
import { apply, claims, denyStatefulSetCreate, getSts, kubectl, kubectlTry, namespace, runPlugin, settled, uids } from "../shared/harness";

const templateSize = (ns: string, name = "db") => getSts(ns, name).spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"];
const journalExists = (ns: string, name = "db") => kubectlTry(["get", "secret", `appstorage-journal-${name}`, "-n", ns]).code === 0;
const requests = (ns: string) => Object.fromEntries(claims(ns).map((c) => [c.metadata.name!, c.spec.resources!.requests!["storage"]]));

async function withStatefulSets(t: TestContext, names: string[], labels: Record<string, string> = { tier: "db" }): Promise<string> {
  const ns = namespace(t, "hist");
  for (const name of names) apply(sts(name, ns).withClaim("data", "1Gi").labels(labels).build(), ns);
  for (const name of names) await settled(ns, name, 1);
  return ns;
}

describe("history and undo", () => {
  test("every set is a revision; undo goes back one change (as a new revision) and never shrinks a claim", async (t) => {
    const ns = await withStatefulSets(t, ["db"]);
    const before = uids(ns);
    const none = await runPlugin(["history", "db", "-n", ns]);
    assert.equal(none.code, 0, none.stderr);
    assert.match(none.stdout, /^statefulset.apps\/db\nREVISION +CHANGED +BY +CHANGE +CLAIM TEMPLATES\n1 +\S+ +<unknown> +<none> +data 1Gi\n$/);
    const refused = await runPlugin(["undo", "db", "-n", ns, "--yes"]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /no recorded change of its claim templates to undo/);

    for (const size of ["2Gi", "3Gi"]) assert.equal((await runPlugin(["set", "db", `data=${size}`, "-n", ns, "--yes"])).code, 0);
    // A scale-up now gives ordinal 1 a 3Gi claim: no undo may shrink it.
    await settled(ns, "db", 1, { ready: true });
    kubectl(["scale", "statefulset", "db", "-n", ns, "--replicas=2"]);
    await settled(ns, "db", 2, { ready: true });
    Object.assign(before, uids(ns));
    const history = JSON.parse((await runPlugin(["history", "db", "-n", ns, "-o", "json"])).stdout);
    assert.equal(history.kind, "History");
    assert.deepEqual(
      history.revisions.map((r: { revision: number; change?: string; by?: string; templates: { spec: { resources: { requests: { storage: string } } } }[] }) => [
        r.revision,
        r.change ?? null,
        r.templates[0]!.spec.resources.requests.storage,
      ]),
      [
        [1, null, "1Gi"],
        [2, "data=2Gi", "2Gi"],
        [3, "data=3Gi", "3Gi"],
      ],
    );
    assert.equal(history.revisions[2].by, "admin");
    // diff and show name the history: the revision a change would become, and the current one.
    assert.match((await runPlugin(["diff", "db", "data=4Gi", "-n", ns])).stderr, /the change becomes revision 4 of the claim templates \(kubectl appstorage history db\)/);
    assert.equal(JSON.parse((await runPlugin(["show", "db", "-n", ns, "-o", "json"])).stdout).items[0].revision, 3);
    const table = (await runPlugin(["show", "db", "-n", ns])).stdout.split("\n");
    assert.match(table[0]!, /EXPANDABLE\s+REVISION$/);
    assert.match(table[1]!, /^db\s+data\s+3Gi\s.*\s3$/);

    const dry = await runPlugin(["undo", "db", "-n", ns, "--dry-run=client"]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /claim template data: 3Gi -> 2Gi/);
    assert.match(dry.stdout, /data-db-0 .* keeps 1Gi/);
    assert.match(dry.stdout, /data-db-1 .* keeps 3Gi \(template 2Gi\)/);
    assert.equal(templateSize(ns), "3Gi", "a dry run changes nothing");

    const undo = await runPlugin(["undo", "db", "-n", ns, "--yes"]);
    assert.equal(undo.code, 0, undo.stderr);
    assert.equal(undo.stdout, "statefulset.apps/db recreated\n");
    assert.equal(templateSize(ns), "2Gi");
    const after = JSON.parse((await runPlugin(["history", "db", "-n", ns, "-o", "json"])).stdout);
    assert.deepEqual(
      after.revisions.map((r: { revision: number; change?: string }) => [r.revision, r.change ?? null]),
      [
        [1, null],
        [2, "data=2Gi"],
        [3, "data=3Gi"],
        [4, "undo to revision 2"],
      ],
    );
    const to1 = await runPlugin(["undo", "db", "--to-revision=1", "-n", ns, "--yes"]);
    assert.equal(to1.code, 0, to1.stderr);
    assert.equal(templateSize(ns), "1Gi");
    const missing = await runPlugin(["undo", "db", "--to-revision=9", "-n", ns, "--yes"]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /revision 9 of statefulset.apps\/db not found: its history has revisions 1, 2, 3, 4, 5/);
    assert.deepEqual(requests(ns), { "data-db-0": "1Gi", "data-db-1": "3Gi" });
    assert.deepEqual(uids(ns), before);
  });

  test("undo of an interrupted change (the re-create denied after the delete) puts back the original exactly", async (t) => {
    const ns = await withStatefulSets(t, ["db"]);
    const before = uids(ns);
    const original = getSts(ns, "db");
    // Only the new templates are denied: the original can still be created.
    const allow = await denyStatefulSetCreate(t, ns, {
      allowed: "object.spec.volumeClaimTemplates.all(c, c.spec.resources.requests['storage'] != '5Gi')",
      message: "5Gi is denied by test policy",
      probe: sts("probe", ns).withClaim("d", "5Gi").build(),
    });
    const denied = await runPlugin(["set", "db", "data=5Gi", "-n", ns, "--yes"]);
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /could not re-create statefulset.apps\/db: .*5Gi is denied by test policy/);
    assert.equal(kubectlTry(["get", "statefulset", "db", "-n", ns]).code, 1, "deleted, pods orphaned");
    assert.ok(journalExists(ns));

    const undo = await runPlugin(["undo", "db", "-n", ns, "--yes"]);
    assert.equal(undo.code, 0, undo.stderr);
    assert.match(undo.stderr, /putting back statefulset.apps\/db exactly as the interrupted change \(data=5Gi\) saved it/);
    assert.match(undo.stderr, /verified: 1 pod\(s\) adopted/);
    const restored = getSts(ns, "db");
    assert.equal(templateSize(ns), "1Gi");
    assert.deepEqual(restored.spec.template, original.spec.template);
    assert.deepEqual(restored.metadata.labels, original.metadata.labels);
    assert.equal(journalExists(ns), false);
    assert.deepEqual(uids(ns), before);
    await allow();
  });
});

describe("many StatefulSets at once (-l)", () => {
  test("diff -l and set -l: one plan, one at a time, each recreated; the rerun finds nothing to do", async (t) => {
    const ns = await withStatefulSets(t, ["a", "b", "c"]);
    apply(sts("other", ns).withClaim("data", "1Gi").labels({ tier: "web" }).build(), ns);
    await settled(ns, "other", 1);
    const before = uids(ns);
    const diff = await runPlugin(["diff", "-l", "tier=db", "data=2Gi", "-n", ns]);
    assert.equal(diff.code, 1, diff.stderr);
    for (const n of ["a", "b", "c"]) assert.match(diff.stdout, new RegExp(`^\\+\\+\\+ merged/apps.v1.StatefulSet.${ns}.${n}$`, "m"));
    assert.doesNotMatch(diff.stdout, /other/);
    const log = join(mkdtempSync(join(tmpdir(), "appstorage-log-")), "requests");
    const set = await runPlugin(["set", "-l", "tier=db", "data=2Gi", "-n", ns, "--yes"], { env: { APPSTORAGE_REQUEST_LOG: log } });
    assert.equal(set.code, 0, set.stderr);
    // Side by side (--parallel, 4 by default): each line as its StatefulSet is done.
    assert.deepEqual(
      set.stdout.split("\n").filter(Boolean).sort(),
      ["a", "b", "c"].map((n) => `statefulset.apps/${n} recreated`),
    );
    assert.match(set.stderr, /NAMESPACE +STATEFULSET +RESULT +TIME\n(\S+ +[abc] +recreated +\d+\.\ds\n){3}$/);
    // Read with a constant number of list requests: one list of StatefulSets (and of claims,
    // and of pods) for all three, not one per StatefulSet.
    const lines = readFileSync(log, "utf8").split("\n");
    const lists = (resource: string) => lines.filter((l) => new RegExp(`^GET /api(s/apps)?/v1/namespaces/[^/]+/${resource}\\?`).test(l) && !l.includes("watch=")).length;
    assert.equal(lists("statefulsets"), 1, lines.join("\n"));
    assert.equal(lists("persistentvolumeclaims"), 1 + 3, "one read, and one per verification");
    for (const n of ["a", "b", "c"]) assert.equal(templateSize(ns, n), "2Gi");
    assert.equal(templateSize(ns, "other"), "1Gi");
    const again = await runPlugin(["set", "-l", "tier=db", "data=2Gi", "-n", ns, "--yes"]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, ["a", "b", "c"].map((n) => `statefulset.apps/${n} unchanged\n`).join(""));
    assert.equal((await runPlugin(["diff", "-l", "tier=db", "data=2Gi", "-n", ns])).code, 0);
    assert.deepEqual(uids(ns), before);
  });

  test("one refused: nothing changes and every refusal is listed", async (t) => {
    const ns = await withStatefulSets(t, ["a", "b"]);
    apply(sts("c", ns).withClaim("logs", "1Gi").labels({ tier: "db" }).build(), ns);
    await settled(ns, "c", 1);
    const before = uids(ns);
    const rvs = ["a", "b", "c"].map((n) => getSts(ns, n).metadata.resourceVersion);
    const r = await runPlugin(["set", "-l", "tier=db", "data=2Gi", "-n", ns, "--yes"]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /refused: statefulset.apps\/c in namespace \S+: claim template "data" not found in statefulset.apps\/c \(it has: logs\)/);
    assert.match(r.stderr, /error: 1 of 3 StatefulSet\(s\) refused \(listed above\); nothing was changed/);
    assert.deepEqual(
      ["a", "b", "c"].map((n) => getSts(ns, n).metadata.resourceVersion),
      rvs,
    );
    assert.deepEqual(uids(ns), before);
  });

  test("one at a time (--parallel 1): a failure stops the run, says which are done; the same command finishes the rest", async (t) => {
    const ns = await withStatefulSets(t, ["a", "b", "c"]);
    const before = uids(ns);
    const allow = await denyStatefulSetCreate(t, ns, { allowed: "object.metadata.name != 'b'", message: "b is denied by test policy", probe: sts("b", ns).withClaim("d", "1Gi").build() });
    const r = await runPlugin(["set", "-l", "tier=db", "data=2Gi", "-n", ns, "--yes", "--parallel", "1"]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "statefulset.apps/a recreated\n");
    assert.match(
      r.stderr,
      /error: stopped at statefulset.apps\/b in namespace \S+: could not re-create .*; done: statefulset.apps\/a recreated; not done: b, c: run the same command again to finish the rest/,
    );
    assert.equal(templateSize(ns, "c"), "1Gi");
    await allow();
    const rerun = await runPlugin(["set", "-l", "tier=db", "data=2Gi", "-n", ns, "--yes", "--parallel", "1"]);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.equal(rerun.stdout, "statefulset.apps/a unchanged\nstatefulset.apps/b recreated\nstatefulset.apps/c recreated\n");
    for (const n of ["a", "b", "c"]) assert.equal(templateSize(ns, n), "2Gi");
    assert.deepEqual(uids(ns), before);
  });
});

describe("reviewed plans (set --plan FILE)", () => {
  test("applied exactly as reviewed; refused when stale, edited, or not a plan", async (t) => {
    const ns = await withStatefulSets(t, ["a", "b"]);
    const before = uids(ns);
    const dir = mkdtempSync(join(tmpdir(), "appstorage-plan-"));
    const file = join(dir, "plan.json");
    const made = await runPlugin(["diff", "-l", "tier=db", "data=2Gi", "-n", ns, "-o", "json"]);
    assert.equal(made.code, 1, made.stderr);
    writeFileSync(file, made.stdout);
    const plan = JSON.parse(made.stdout);
    assert.equal(plan.kind, "PlanList");
    assert.match(plan.items[0].digest, /^sha256:[0-9a-f]{64}$/);

    const edited = join(dir, "edited.json");
    plan.items[0].desired.spec.volumeClaimTemplates[0].spec.resources.requests.storage = "9Gi";
    writeFileSync(edited, JSON.stringify(plan));
    const e = await runPlugin(["set", "--plan", edited, "--yes", "-n", ns]);
    assert.equal(e.code, 1);
    assert.match(e.stderr, /^error: the plan of statefulset.apps\/a in .*edited.json was changed after it was made \(its digest no longer matches its content\); nothing was changed/);
    const notPlan = join(dir, "not.yaml");
    writeFileSync(notPlan, "apiVersion: v1\nkind: ConfigMap\n");
    assert.match((await runPlugin(["set", "--plan", notPlan, "--yes"])).stderr, /is not a plan of kubectl appstorage \(kind ConfigMap, expected Plan or PlanList\)/);

    // Someone changes b after the review: the whole plan is refused, nothing changes.
    kubectl(["annotate", "statefulset", "b", "-n", ns, "reviewed=no"]);
    const stale = await runPlugin(["set", "--plan", file, "--yes"]);
    assert.equal(stale.code, 1);
    assert.match(stale.stderr, /error: the plan is stale, the cluster moved on since it was made: statefulset.apps\/b in namespace \S+: it is at uid .*; nothing was changed: make a new plan/);
    assert.equal(templateSize(ns, "a"), "1Gi");

    const fresh = await runPlugin(["diff", "-l", "tier=db", "data=2Gi", "-n", ns, "-o", "yaml"]);
    writeFileSync(file, fresh.stdout);
    const applied = await runPlugin(["set", "--plan", file, "--yes"]);
    assert.equal(applied.code, 0, applied.stderr);
    // Side by side: each line as its StatefulSet is done, in either order.
    assert.deepEqual(applied.stdout.split("\n").filter(Boolean).sort(), ["statefulset.apps/a recreated", "statefulset.apps/b recreated"]);
    for (const n of ["a", "b"]) assert.equal(templateSize(ns, n), "2Gi");
    assert.deepEqual(uids(ns), before);
  });
});
