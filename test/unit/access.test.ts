// Permissions: what a plan asks before it changes anything, how a namespace admin without access
// to storage classes is planned for, and the Role that `rbac` prints and docs/reference.md shows, all
// from the one table in src/plan/access.ts.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { canICommand, describeAccess, permissionTable, requiredAccess } from "../../src/plan/access";
import { parseDirectives } from "../../src/plan/directive";
import { buildPlan } from "../../src/plan/plan";
import type { Observed } from "../../src/plan/types";
import { permissionsMarkdown, rbacObjects, renderRbac } from "../../src/output/rbac";
import { claim, pod, storageClass, sts } from "../fixtures/builders";
import { assertGolden } from "../fixtures/golden";

const now = "2026-11-29T12:00:00.000Z";
const live = () => sts("db").withClaim("pgdata", "1Gi").live("uid-1");

/** What a user bound to the built-in `admin` or `edit` role in one namespace reads: no storage classes. */
function namespaceAdmin(extra: Partial<Observed> = {}): Observed {
  const s = live();
  return {
    statefulSet: s,
    claims: [claim("pgdata-db-0", "1Gi", { capacity: "1Gi", storageClass: "standard" })],
    pods: [pod("db-0", s)],
    storageClasses: [],
    storageClassError: 'storageclasses.storage.k8s.io is forbidden: User "bob" cannot list resource "storageclasses" in API group "storage.k8s.io" at the cluster scope',
    user: "bob",
    now,
    ...extra,
  };
}

const request = (...d: string[]) => ({ namespace: "team", name: "db", directives: parseDirectives(d), force: false });

describe("a namespace admin, who may not read storage classes", () => {
  test("a size-only change is planned, with one warning that the default class and expansion were not checked", () => {
    const plan = buildPlan(namespaceAdmin(), request("pgdata=2Gi"));
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(plan.warnings, ["you may not list storage classes (cluster scope), so the default class and volume expansion could not be checked"]);
    assert.deepEqual(plan.newOrdinals.templates, [{ claim: "pgdata", size: "2Gi" }]);
  });
  test("a named class that could not be read is refused, naming the permission; --force passes it", () => {
    const plan = buildPlan(namespaceAdmin({ storageClassesUnknown: ["fast"] }), request("pgdata=2Gi,fast"));
    assert.equal(plan.refusals.length, 1);
    assert.match(
      plan.refusals[0]!.message,
      /^storage class "fast" could not be checked: you may not get storageclasses.storage.k8s.io "fast" \(cluster scope\); a wrong name would leave the claims of new ordinals Pending \(an undo repairs that\)/,
    );
    assert.equal(plan.refusals[0]!.forceable, true);
    const forced = buildPlan(namespaceAdmin({ storageClassesUnknown: ["fast"] }), { ...request("pgdata=2Gi,fast"), force: true });
    assert.deepEqual(forced.refusals, []);
  });
  test("a named class read on its own (get allowed, list not) is planned; one that get says is absent is refused", () => {
    assert.deepEqual(buildPlan(namespaceAdmin({ storageClasses: [storageClass("fast")] }), request("pgdata=2Gi,fast")).refusals, []);
    const missing = buildPlan(namespaceAdmin(), request("pgdata=2Gi,nosuch"));
    assert.match(missing.refusals[0]!.message, /storage class "nosuch" not found/);
    assert.equal(missing.refusals[0]!.forceable, false);
  });
  test("--resize-existing: expansion is left to the server's dry run of each patch, and the plan says so", () => {
    const plan = buildPlan(namespaceAdmin(), { ...request("pgdata=2Gi"), existing: { resize: true, vac: false, waitResize: false, restartPods: false } });
    assert.deepEqual(plan.refusals, []);
    assert.ok(
      plan.warnings.some((w) => /decided by the server's dry run of each claim patch/.test(w)),
      plan.warnings.join("\n"),
    );
    assert.deepEqual(
      plan.existing!.claims.map((c) => c.grow),
      [{ from: "1Gi", to: "2Gi" }],
    );
  });
  test("a journal that may not be read is a warning, not a refusal (set's preflight asks for the secrets it writes)", () => {
    const plan = buildPlan(namespaceAdmin({ journalError: "secrets is forbidden" }), request("pgdata=2Gi"));
    assert.deepEqual(plan.refusals, []);
    assert.ok(plan.warnings.some((w) => w.startsWith("you may not read secret/appstorage-journal-db")));
  });
});

describe("the preflight's checks come from the plan's steps", () => {
  test("a fresh change: get, then each step's verbs, in step order", () => {
    const plan = buildPlan(namespaceAdmin(), request("pgdata=2Gi"));
    assert.deepEqual(requiredAccess(plan).map(describeAccess), [
      'get statefulsets.apps "db" in namespace team',
      "create secrets in namespace team",
      'update secrets "appstorage-journal-db" in namespace team',
      'delete statefulsets.apps "db" in namespace team',
      "watch statefulsets.apps in namespace team",
      "create statefulsets.apps in namespace team",
      "list pods in namespace team",
      "watch pods in namespace team",
      "create events.events.k8s.io in namespace team",
      'delete secrets "appstorage-journal-db" in namespace team',
    ]);
    assert.equal(requiredAccess(plan).find((c) => c.resource === "events")!.optional, true);
  });
  test("taking over an interrupted run's journal is an update of that Secret", () => {
    const checks = requiredAccess({ target: { namespace: "team", name: "db", uid: "u", resourceVersion: "1" }, steps: ["write-journal"], journalSecret: { uid: "s", resourceVersion: "9" } });
    assert.deepEqual(checks.map(describeAccess), ['get statefulsets.apps "db" in namespace team', 'update secrets "appstorage-journal-db" in namespace team']);
  });
  test("each refusal says the kubectl command that asks the same question", () => {
    assert.equal(canICommand({ verb: "delete", group: "apps", resource: "statefulsets", name: "db", namespace: "team" }), "kubectl auth can-i delete statefulsets.apps/db -n team");
    assert.equal(canICommand({ verb: "create", group: "", resource: "pods", subresource: "eviction", namespace: "team" }), "kubectl auth can-i create pods --subresource=eviction -n team");
  });
});

describe("rbac and the permission table of docs/reference.md, from the same table", () => {
  test("never nodes/proxy; the cluster-scoped rights of --migrate-existing in ClusterRoles of their own, each verb said why as an annotation", () => {
    assert.ok(!permissionTable().some((p) => p.subresource === "proxy"), "no permission through a node's proxy");
    const objects = rbacObjects(renderRbac(permissionTable(), "team-a")).items as {
      kind: string;
      metadata: { name: string; annotations?: Record<string, string> };
      rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    }[];
    const role = (name: string) => objects.find((o) => o.metadata.name === name && o.kind.endsWith("Role"))!;
    assert.deepEqual(
      objects.filter((o) => o.kind === "ClusterRole").map((o) => o.metadata.name),
      ["kubectl-appstorage-storage-classes", "kubectl-appstorage-persistentvolumes", "kubectl-appstorage-nodes"],
    );
    assert.deepEqual(role("kubectl-appstorage-persistentvolumes").rules, [{ apiGroups: [""], resources: ["persistentvolumes"], verbs: ["get", "list", "patch"] }]);
    assert.deepEqual(role("kubectl-appstorage-nodes").rules, [{ apiGroups: [""], resources: ["nodes"], verbs: ["get"] }]);
    assert.deepEqual(Object.keys(role("kubectl-appstorage-persistentvolumes").metadata.annotations ?? {}), [
      "rbac.appstorage.kubectl.io/get.persistentvolumes",
      "rbac.appstorage.kubectl.io/list.persistentvolumes",
      "rbac.appstorage.kubectl.io/patch.persistentvolumes",
    ]);
    assert.match(role("kubectl-appstorage-persistentvolumes").metadata.annotations!["rbac.appstorage.kubectl.io/patch.persistentvolumes"]!, /Retain/);
    // Every printed rule is a permission of the table, and every permission of the table is printed.
    const printed = new Set(objects.flatMap((o) => (o.rules ?? []).flatMap((r) => r.resources.flatMap((res) => r.verbs.map((v) => `${v} ${res}.${r.apiGroups[0]}`)))));
    const table = new Set(permissionTable().map((p) => `${p.verb} ${p.resource}${p.subresource ? `/${p.subresource}` : ""}.${p.group}`));
    assert.deepEqual([...printed].sort(), [...table].sort());
  });
  test("the Role, its binding and the optional ClusterRole (golden)", () => assertGolden("rbac.yaml", renderRbac(permissionTable(), "team-a")));
  test("docs/reference.md's permission table is the one the table makes", () => {
    const page = join(__dirname, "..", "..", "docs", "reference.md");
    const text = readFileSync(page, "utf8");
    const begin = "<!-- permissions:begin (generated from src/plan/access.ts; UPDATE_DOCS=1 npm run test:unit rewrites it) -->\n";
    const end = "<!-- permissions:end -->";
    const start = text.indexOf(begin);
    const stop = text.indexOf(end);
    assert.ok(start >= 0 && stop > start, "docs/reference.md has the permissions markers");
    const expected = permissionsMarkdown(permissionTable());
    if (process.env["UPDATE_DOCS"] === "1") writeFileSync(page, text.slice(0, start + begin.length) + expected + text.slice(stop));
    else assert.equal(text.slice(start + begin.length, stop), expected);
  });
});
