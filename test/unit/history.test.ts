// The history annotation, undo planning, reviewed-plan seals and label selectors: pure logic.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { StatefulSet } from "../../src/api/types";
import { desiredStatefulSet, stripForCreate } from "../../src/plan/desired";
import { parseDirectives } from "../../src/plan/directive";
import { historyAnnotation, historyLimit, historyOf } from "../../src/plan/history";
import { buildPlan } from "../../src/plan/plan";
import { plansOfDocument, seal, sealList } from "../../src/plan/seal";
import { matchesSelector } from "../../src/plan/selector";
import { apiVersion, type Journal, type Observed } from "../../src/plan/types";
import { buildUndoPlan } from "../../src/plan/undo";
import { claim, pod, storageClass, sts } from "../fixtures/builders";

const now = "2026-11-29T12:00:00.000Z";

/** The StatefulSet after each size in turn was set, as the server would hold it. */
function changedThrough(sizes: string[], base = sts("db").withClaim("data", "1Gi")): StatefulSet {
  let live = base.live("uid-0");
  sizes.forEach((size, i) => {
    const desired = desiredStatefulSet(live, parseDirectives([`data=${size}`]), { by: "alice", at: `2026-11-29T12:00:${String(i).padStart(2, "0")}.000Z`, from: [], to: [`data=${size}`] });
    live = { ...desired, metadata: { ...desired.metadata, uid: `uid-${i + 1}`, resourceVersion: String(100 + i), generation: 1 }, status: live.status };
  });
  return live;
}

function observed(s: StatefulSet | undefined, extra: Partial<Observed> = {}): Observed {
  const owner = s ?? sts("db").live();
  return {
    statefulSet: s,
    claims: [claim("data-db-0", "2Gi", { capacity: "2Gi" })],
    pods: [pod("db-0", owner)],
    storageClasses: [storageClass("standard", { default: true })],
    user: "bob",
    now,
    ...extra,
  };
}

describe("history", () => {
  test("revision 1 is before the first change; each change adds one; the last 10 changes are kept, numbers go on", () => {
    assert.deepEqual(
      historyOf(sts("db").withClaim("data", "1Gi").live()).map((r) => r.revision),
      [1],
    );
    const two = historyOf(changedThrough(["2Gi"]));
    assert.deepEqual(
      two.map((r) => [r.revision, r.change ?? null, r.templates[0]!.spec.resources!.requests!["storage"]]),
      [
        [1, null, "1Gi"],
        [2, "data=2Gi", "2Gi"],
      ],
    );
    const many = historyOf(changedThrough(Array.from({ length: 25 }, (_, i) => `${i + 2}Gi`)));
    assert.equal(many.length, historyLimit + 1);
    assert.deepEqual([many[0]!.revision, many[many.length - 1]!.revision], [16, 26]);
  });
  test("bounded: 10 changes of 3 claim templates with classes and attributes classes stay under 8 KiB (the annotation limit is 256 KiB)", () => {
    const base = sts("db").withClaim("data-with-a-long-claim-template-name", "1Gi", "a-storage-class-with-a-long-name").withClaim("wal", "1Gi", "fast").withClaim("logs", "1Gi", "standard");
    const s = changedThrough(
      Array.from({ length: 30 }, (_, i) => `${1000 + i}Gi`),
      base,
    );
    assert.ok(Buffer.byteLength(s.metadata.annotations![historyAnnotation]!) < 8 * 1024, String(Buffer.byteLength(s.metadata.annotations![historyAnnotation]!)));
  });
  test("templates re-created by hand appear as a revision of their own", () => {
    const s = changedThrough(["2Gi"]);
    s.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"] = "5Gi";
    assert.deepEqual(
      historyOf(s).map((r) => r.change ?? null),
      [null, "data=2Gi", "changed outside kubectl appstorage"],
    );
  });
});

describe("undo", () => {
  test("back one change: the previous revision's sizes; the history calls it an undo; existing claims keep theirs", () => {
    const plan = buildUndoPlan(observed(changedThrough(["2Gi", "3Gi"])), { namespace: "default", name: "db", force: false });
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(plan.changes, [{ claim: "data", before: { size: "3Gi" }, after: { size: "2Gi" } }]);
    assert.equal(plan.claims[0]!.effect, "keeps");
    const revisions = historyOf({ ...plan.desired, metadata: { ...plan.desired.metadata } });
    assert.equal(revisions[revisions.length - 1]!.change, "undo to revision 2");
  });
  test("--to-revision, and the refusals: nothing recorded, unknown or current revision", () => {
    const s = changedThrough(["2Gi", "3Gi"]);
    assert.deepEqual(buildUndoPlan(observed(s), { namespace: "default", name: "db", force: false, toRevision: 1 }).changes[0]!.after, { size: "1Gi" });
    const cases: [StatefulSet, number | undefined, RegExp][] = [
      [sts("db").withClaim("data", "1Gi").live(), undefined, /no recorded change of its claim templates to undo/],
      [s, 7, /revision 7 of statefulset.apps\/db not found: its history has revisions 1, 2, 3/],
      [s, 3, /revision 3 is the current one/],
    ];
    for (const [obj, to, why] of cases) {
      const plan = buildUndoPlan(observed(obj), { namespace: "default", name: "db", force: false, ...(to ? { toRevision: to } : {}) });
      assert.match(plan.refusals[0]!.message, why);
      assert.deepEqual(plan.steps, []);
    }
  });
  test("while an interrupted change is pending, the original comes back from the journal, exactly", () => {
    const original = sts("db").withClaim("data", "1Gi").live("uid-1");
    const desired = desiredStatefulSet(original, parseDirectives(["data=5Gi"]));
    const journal: Journal = {
      apiVersion,
      kind: "Journal",
      namespace: "default",
      name: "db",
      originalUid: "uid-1",
      originalResourceVersion: "100",
      request: ["data=5Gi"],
      step: "deleted",
      startedAt: now,
      updatedAt: now,
      by: "bob",
      holder: "h/1/x",
      leaseExpires: now,
      pods: [{ name: "db-0", uid: "uid-db-0" }],
      claims: [{ name: "data-db-0", uid: "uid-data-db-0" }],
      original: stripForCreate(original),
      desired,
    };
    const plan = buildUndoPlan(observed(undefined, { journal, journalSecret: { uid: "s", resourceVersion: "7" } }), { namespace: "default", name: "db", force: false });
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(plan.steps, ["write-journal", "create", "verify", "record", "remove-journal"]);
    assert.deepEqual(plan.desired, journal.original);
    assert.deepEqual(plan.journal!.request, ["undo"]);
    assert.equal(plan.journal!.command, "undo");
    assert.deepEqual(plan.journalSecret, { uid: "s", resourceVersion: "7" });
    assert.deepEqual(plan.changes, [{ claim: "data", before: { size: "5Gi" }, after: { size: "1Gi" } }]);
    // A set with other directives meanwhile is told to finish the undo.
    const set = buildPlan(observed(undefined, { journal: plan.journal! }), { namespace: "default", name: "db", directives: parseDirectives(["data=3Gi"]), force: false });
    assert.match(set.refusals[0]!.message, /finish it first with: kubectl appstorage undo db -n default/);
  });
});

describe("reviewed plans", () => {
  const plan = () => buildPlan(observed(sts("db").withClaim("data", "1Gi").live()), { namespace: "default", name: "db", directives: parseDirectives(["data=2Gi"]), force: false });
  test("a sealed plan and list read back; the digest ignores key order", () => {
    const sealed = seal(plan());
    assert.match(sealed.digest!, /^sha256:[0-9a-f]{64}$/);
    assert.equal(plansOfDocument(JSON.parse(JSON.stringify(sealed)), "f").length, 1);
    const reordered = Object.fromEntries(Object.entries(sealed).reverse());
    assert.equal(plansOfDocument(reordered, "f").length, 1);
    assert.equal(plansOfDocument(sealList([plan(), plan()]), "f").length, 2);
  });
  test("refused: edited, unsealed, another kind or version, empty", () => {
    const edited = seal(plan());
    edited.desired.spec.replicas = 9;
    const { digest: _d, ...unsealed } = seal(plan());
    const cases: [unknown, RegExp][] = [
      [edited, /was changed after it was made/],
      [unsealed, /has no digest/],
      [{ apiVersion: "v1", kind: "ConfigMap" }, /not a plan of kubectl appstorage \(kind ConfigMap/],
      [{ ...seal(plan()), apiVersion: "appstorage.kubectl.io/v9" }, /apiVersion appstorage.kubectl.io\/v9, which this version of kubectl appstorage does not apply/],
      [{ apiVersion, kind: "PlanList", items: [] }, /holds no plan/],
      [null, /no object in it/],
    ];
    for (const [doc, why] of cases) assert.throws(() => plansOfDocument(doc, "f"), why);
  });
});

describe("label selectors (for the journal of a deleted StatefulSet)", () => {
  const labels = { tier: "db", app: "pg", env: "prod" };
  const cases: [string, boolean][] = [
    ["tier=db", true],
    ["tier==db,app=pg", true],
    ["tier!=db", false],
    ["env in (prod, staging)", true],
    ["env notin (prod)", false],
    ["app", true],
    ["!app", false],
    ["!missing,tier=db", true],
    ["tier=web", false],
  ];
  for (const [selector, expected] of cases) test(selector, () => assert.equal(matchesSelector(labels, selector), expected));
  test("an unreadable requirement is an error", () => assert.throws(() => matchesSelector(labels, "a in b"), /unable to parse requirement/));
});

describe("undo of --migrate-existing", () => {
  test("refused: putting the templates back would leave the claims on their new volumes; the message gives the set that moves them back", () => {
    const live = sts("db").withClaim("data", "1Gi").live("uid-0");
    const desired = desiredStatefulSet(live, parseDirectives(["data=2Gi"]), { by: "alice", at: now, from: [], to: ["data=2Gi"], cause: "data=2Gi --migrate-existing" });
    const moved = { ...desired, metadata: { ...desired.metadata, uid: "uid-1", resourceVersion: "100", generation: 1 } };
    assert.equal(historyOf(moved).at(-1)!.change, "data=2Gi --migrate-existing");
    const plan = buildUndoPlan(observed(moved), { namespace: "default", name: "db", force: false });
    assert.deepEqual(
      plan.refusals.map((r) => r.message),
      [
        "revision 2 of statefulset.apps/db moved its claims to new volumes (data=2Gi --migrate-existing); undo would put back only the templates: move the claims back the same way, with kubectl appstorage set db data=1Gi --migrate-existing -n default (the old volumes are kept: kubectl appstorage show db -n default)",
      ],
    );
  });
});
