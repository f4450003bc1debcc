// applyPlan in process, against an in-memory API (test/fixtures/fake-client.ts), for the branches
// the real control plane cannot easily be made to take: a pod replaced during adoption, an
// adoption that never comes, a claim swapped, a create refused after the delete. The same paths
// against the real control plane are in test/e2e; these never replace them.
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { applyPlan, type ApplyContext } from "../../src/apply/apply";
import { Progress } from "../../src/apply/progress";
import { RefusedError, StopError } from "../../src/errors";
import { ApiError } from "../../src/kube/errors";
import type { KubeObject, Pod, StatefulSet } from "../../src/api/types";
import { parseDirectives } from "../../src/plan/directive";
import { decodeJournalSecret } from "../../src/plan/journal";
import { buildPlan } from "../../src/plan/plan";
import type { Plan } from "../../src/plan/types";
import { claim, pod, storageClass, sts } from "../fixtures/builders";
import { FakeCluster } from "../fixtures/fake-client";

const stsPath = "/apis/apps/v1/namespaces/default/statefulsets";
const podPath = "/api/v1/namespaces/default/pods/db-0";
const claimPath = "/api/v1/namespaces/default/persistentvolumeclaims/pgdata-db-0";
const journalPath = "/api/v1/namespaces/default/secrets/appstorage-journal-db";
const now = new Date("2026-11-29T12:00:00.000Z");

function cluster(): { fake: FakeCluster; plan: Plan } {
  const fake = new FakeCluster();
  const original = fake.put(`${stsPath}/db`, sts("db").withClaim("pgdata", "1Gi").live("uid-1")) as StatefulSet;
  const p = fake.put(podPath, pod("db-0", original)) as Pod;
  const c = fake.put(claimPath, claim("pgdata-db-0", "1Gi", { capacity: "1Gi" }));
  const plan = buildPlan(
    { statefulSet: original, claims: [c as never], pods: [p], storageClasses: [storageClass("standard", { default: true })], user: "alice", now: now.toISOString() },
    { namespace: "default", name: "db", directives: parseDirectives(["pgdata=2Gi"]), force: false },
  );
  return { fake, plan };
}

/** What the StatefulSet controller does after the re-create: the pods get the new object as controller. */
function adoptOnCreate(fake: FakeCluster, alsoDo?: (created: KubeObject) => void): void {
  fake.on(
    (s) => s.method === "POST" && s.path === stsPath,
    (s, f) => {
      const created = f.put(`${stsPath}/db`, s.body as KubeObject);
      const p = f.objects.get(podPath)!;
      p.metadata.ownerReferences = [{ apiVersion: "apps/v1", kind: "StatefulSet", name: "db", uid: created.metadata.uid!, controller: true }];
      alsoDo?.(created);
      return created;
    },
  );
}

function context(fake: FakeCluster, timeoutMs = 5000): { ctx: ApplyContext; err: { text: string } } {
  const err = { text: "" };
  const ctx: ApplyContext = {
    client: fake.client(),
    progress: new Progress({ write: (s: string) => (err.text += s) }),
    signal: new AbortController().signal,
    timeoutMs,
    now: () => now,
    holder: "test-host/1/abcd",
    by: "alice",
    journalDir: mkdtempSync(join(tmpdir(), "appstorage-apply-test-")),
  };
  return { ctx, err };
}

/** No pod and no claim may ever be deleted, whatever happens. */
function assertNothingDeleted(fake: FakeCluster): void {
  const deletes = fake.requests.filter((r) => r.startsWith("DELETE "));
  assert.ok(
    deletes.every((r) => r === `DELETE ${stsPath}/db` || r === `DELETE ${journalPath}`),
    deletes.join("\n"),
  );
  assert.ok(fake.objects.has(podPath) && fake.objects.has(claimPath));
}

describe("applyPlan, in process", () => {
  test("executes exactly the plan's steps in order: journal, orphan delete, wait, create, verify, record, remove the journal", async () => {
    const { fake, plan } = cluster();
    adoptOnCreate(fake);
    const { ctx } = context(fake);
    const result = await applyPlan(plan, ctx);
    assert.notEqual(result.uid, "uid-1");
    assert.deepEqual(result.pods, [{ name: "db-0", uid: fake.objects.get(podPath)!.metadata.uid, adopted: true, revision: "rev-1" }]);
    assert.deepEqual(
      fake.requests.filter((r) => !r.startsWith("GET ") && !r.startsWith("WATCH ")),
      [
        `POST /api/v1/namespaces/default/secrets`,
        `DELETE ${stsPath}/db`,
        `PUT ${journalPath}`,
        `PUT ${journalPath}`,
        `POST ${stsPath}`,
        `PUT ${journalPath}`,
        // The fields go back to their managers (Plan.fieldManagers), then the event.
        `PATCH ${stsPath}/db`,
        "POST /apis/events.k8s.io/v1/namespaces/default/events",
        `DELETE ${journalPath}`,
      ],
    );
    assert.equal(fake.objects.has(journalPath), false);
    assertNothingDeleted(fake);
  });

  test("a pod replaced during adoption stops the run, keeps the journal, and releases its lease", async () => {
    const { fake, plan } = cluster();
    adoptOnCreate(fake, () => (fake.objects.get(podPath)!.metadata.uid = "uid-replaced"));
    const { ctx } = context(fake);
    await assert.rejects(applyPlan(plan, ctx), (e) => e instanceof StopError && /pod\(s\) db-0 were replaced while re-creating/.test(e.message));
    const journal = decodeJournalSecret(fake.objects.get(journalPath)!)!;
    assert.equal(journal.step, "created");
    assert.ok(Date.parse(journal.leaseExpires) <= now.getTime(), "released: the rerun need not wait for the lease");
    assertNothingDeleted(fake);
  });

  test("an adoption that never comes times out with what to check, and keeps the journal", async () => {
    const { fake, plan } = cluster();
    // The re-create succeeds, but no controller adopts the pod.
    const { ctx } = context(fake, 300);
    await assert.rejects(applyPlan(plan, ctx), (e) => e instanceof StopError && /timed out after 0\.3s waiting for the pods to be adopted; check that kube-controller-manager/.test(e.message));
    assert.equal(decodeJournalSecret(fake.objects.get(journalPath)!)!.step, "created");
    assertNothingDeleted(fake);
  });

  test("a claim that changed uid fails the verification", async () => {
    const { fake, plan } = cluster();
    adoptOnCreate(fake, () => (fake.objects.get(claimPath)!.metadata.uid = "uid-other-claim"));
    const { ctx } = context(fake);
    await assert.rejects(applyPlan(plan, ctx), (e) => e instanceof StopError && /claim\(s\) pgdata-db-0 changed or disappeared/.test(e.message));
    assertNothingDeleted(fake);
  });

  test("a re-create refused after the delete stops with the journal at step deleted, for the rerun", async () => {
    const { fake, plan } = cluster();
    fake.on(
      (s) => s.method === "POST" && s.path === stsPath,
      () => {
        throw new ApiError(422, "Invalid", 'StatefulSet.apps "db" is invalid: denied by a policy');
      },
    );
    const { ctx } = context(fake);
    await assert.rejects(
      applyPlan(plan, ctx),
      (e) => e instanceof StopError && /could not re-create statefulset.apps\/db: .*denied by a policy; its pods keep running without a controller and the journal is kept/.test(e.message),
    );
    assert.equal(decodeJournalSecret(fake.objects.get(journalPath)!)!.step, "deleted");
    assertNothingDeleted(fake);
  });

  test("a StatefulSet changed since the plan (409 on the delete precondition) is a refusal: nothing changed, journal removed", async () => {
    const { fake, plan } = cluster();
    fake.on(
      (s) => s.method === "DELETE" && s.path === `${stsPath}/db`,
      () => {
        throw new ApiError(409, "Conflict", "Precondition failed: ResourceVersion in precondition: 100, ResourceVersion in object meta: 101");
      },
    );
    const { ctx } = context(fake);
    await assert.rejects(applyPlan(plan, ctx), (e) => e instanceof RefusedError && /changed since it was read .*nothing was changed/.test(e.message));
    assert.equal(fake.objects.has(journalPath), false);
    assert.equal(fake.objects.get(`${stsPath}/db`)!.metadata.uid, "uid-1");
    assertNothingDeleted(fake);
  });

  test("a 409 on the delete after --resize-existing grew the claims says what changed: the claims keep their new size, the StatefulSet is untouched", async () => {
    const fake = new FakeCluster();
    const original = fake.put(`${stsPath}/db`, sts("db").withClaim("pgdata", "1Gi").live("uid-1")) as StatefulSet;
    const p = fake.put(podPath, pod("db-0", original)) as Pod;
    const c = fake.put(claimPath, claim("pgdata-db-0", "1Gi", { capacity: "1Gi", storageClass: "standard" }));
    const plan = buildPlan(
      { statefulSet: original, claims: [c as never], pods: [p], storageClasses: [storageClass("standard", { default: true, expandable: true })], existing: {}, user: "alice", now: now.toISOString() },
      { namespace: "default", name: "db", directives: parseDirectives(["pgdata=2Gi"]), force: false, existing: { resize: true, vac: false, waitResize: false, restartPods: false } },
    );
    assert.ok(plan.steps.includes("grow-claims"), plan.steps.join(","));
    fake.on(
      (s) => s.method === "PATCH" && s.path === claimPath,
      (_s, f) => {
        const grown = f.objects.get(claimPath)!;
        (grown as unknown as { spec: { resources: { requests: { storage: string } } } }).spec.resources.requests.storage = "2Gi";
        return grown;
      },
    );
    fake.on(
      (s) => s.method === "DELETE" && s.path === `${stsPath}/db`,
      () => {
        throw new ApiError(409, "Conflict", "Precondition failed: ResourceVersion in precondition: 100, ResourceVersion in object meta: 101");
      },
    );
    const { ctx } = context(fake);
    await assert.rejects(
      applyPlan(plan, ctx),
      (e) =>
        e instanceof StopError &&
        !/nothing was changed/.test(e.message) &&
        /changed since it was read .*so it was not re-created; claim\(s\) pgdata-db-0 \(now 2Gi\) were grown first and keep their new size/.test(e.message),
    );
    assert.equal(fake.objects.get(`${stsPath}/db`)!.metadata.uid, "uid-1");
    assertNothingDeleted(fake);
  });
});
