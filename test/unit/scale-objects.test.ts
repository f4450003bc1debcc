// The bench's scale row checks the objects themselves (scripts/bench/scale-objects.mjs): that they
// are what the StatefulSet controller writes, and, after the rows, that nothing changed but what
// set -l -A must change. These are the pure comparisons, on objects built as the API server returns
// them (the bench's e2e test runs them against the real controller).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { changedBeyond, claimsFor, controllerRevisionText, differencesFromController, podFor, type Snapshot, settledStatus } from "../../scripts/bench/scale-objects.mjs";

let version = 100;
/** What the API server adds to an object it stores. */
const stored = <T extends { metadata: Record<string, unknown> }>(o: T, uid: string): T => ({ ...o, metadata: { ...o.metadata, uid, resourceVersion: String(version++) } });

/** One StatefulSet of `replicas` with everything the controller writes for it, as stored. */
function statefulSetWithObjects(name: string, replicas = 2, uid = `${name}-uid`): Snapshot {
  const labels = { app: name };
  const sts = stored(
    {
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      metadata: { name, namespace: "ns", generation: 1, labels } as Record<string, unknown>,
      spec: {
        replicas,
        serviceName: name,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: "main", image: "pause" }] } },
        volumeClaimTemplates: [{ metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } }],
      },
    },
    uid,
  );
  const rev = controllerRevisionText(sts);
  const withStatus = { ...sts, status: settledStatus(sts, rev.name) };
  const ordinals = Array.from({ length: replicas }, (_, i) => i);
  return clone({
    sets: [withStatus],
    revisions: [stored(JSON.parse(rev.text), `${rev.name}-uid`)],
    pods: ordinals.map((i) => stored(podFor(sts, i, rev.name), `${name}-${i}-uid`)),
    claims: ordinals.flatMap((i) => claimsFor(sts, i).map((c) => stored(c, `${c.metadata.name}-uid`))),
  });
}
const merge = (...snaps: Snapshot[]): Snapshot => ({
  sets: snaps.flatMap((s) => s.sets),
  revisions: snaps.flatMap((s) => s.revisions),
  pods: snaps.flatMap((s) => s.pods),
  claims: snaps.flatMap((s) => s.claims),
});
// Through JSON, as the API server returns objects: nothing shared between them.
const clone = (s: Snapshot): Snapshot => JSON.parse(JSON.stringify(s));
/** A change of one stored object: a new resourceVersion, as the API server gives every write. */
const write = (o: { metadata: Record<string, unknown> }, change: (o: { metadata: Record<string, unknown> }) => void) => {
  change(o);
  o.metadata["resourceVersion"] = String(version++);
};

describe("differencesFromController", () => {
  test("none for the objects the controller writes", () => {
    assert.deepEqual(differencesFromController(merge(statefulSetWithObjects("db-0"), statefulSetWithObjects("db-1", 3))), []);
  });
  const cases: { what: string; change: (s: Snapshot) => void; says: RegExp }[] = [
    { what: "a pod with a label of its own", change: (s) => (s.pods[1].metadata.labels.extra = "x"), says: /^pod ns\/db-0-1: / },
    { what: "a pod of another revision", change: (s) => (s.pods[0].metadata.labels["controller-revision-hash"] = "db-0-other"), says: /^pod ns\/db-0-0: / },
    { what: "a pod without its claim's volume", change: (s) => (s.pods[0].spec.volumes = []), says: /^pod ns\/db-0-0 volumes: / },
    { what: "a status not settled", change: (s) => (s.sets[0].status.updatedReplicas = 1), says: /^statefulset ns\/db-0 status: / },
    { what: "a revision's data", change: (s) => (s.revisions[0].data.spec.template.spec.containers[0].image = "other"), says: /^controllerrevision ns\/db-0-/ },
    { what: "a claim of another size", change: (s) => (s.claims[0].spec.resources.requests.storage = "2Gi"), says: /^claim ns\/data-db-0-0: / },
    { what: "a pod whose StatefulSet is gone", change: (s) => s.sets.splice(0, 1), says: /has no StatefulSet|status/ },
  ];
  for (const c of cases) {
    test(`one line for ${c.what}`, () => {
      const s = clone(statefulSetWithObjects("db-0"));
      c.change(s);
      const problems = differencesFromController(s);
      assert.ok(problems.length >= 1, "found");
      assert.match(problems[0]!, c.says);
    });
  }
});

describe("changedBeyond", () => {
  const before = merge(statefulSetWithObjects("db-0"), statefulSetWithObjects("db-1"));
  /** db-0 as set -l -A leaves it: re-created (a new uid), its pods and revision adopted by the new object. */
  const afterSet = (): Snapshot => {
    const after = clone(before);
    const sts = after.sets[0];
    sts.metadata.uid = "db-0-new-uid";
    sts.metadata.resourceVersion = String(version++);
    for (const o of [...after.pods, ...after.revisions].filter((o) => o.metadata.ownerReferences[0].name === "db-0")) {
      write(o, (x) => ((x.metadata["ownerReferences"] as { uid: string }[])[0]!.uid = "db-0-new-uid"));
    }
    return after;
  };
  const changed = new Set(["ns/db-0"]);

  test("nothing when nothing changed", () => {
    assert.deepEqual(changedBeyond(before, clone(before), new Set()), []);
  });
  test("nothing when set -l -A re-created what it selected and the controller adopted its pods and revision", () => {
    assert.deepEqual(changedBeyond(before, afterSet(), changed), []);
  });
  const cases: { what: string; change: (s: Snapshot) => void; says: RegExp }[] = [
    { what: "a write to a pod of a StatefulSet not selected", change: (s) => write(s.pods[2], () => {}), says: /^pods\/ns\/db-1-0 changed \(resourceVersion / },
    { what: "a status written again, not selected", change: (s) => write(s.sets[1], (o) => ((o as unknown as { status: { replicas: number } }).status.replicas = 2)), says: /^sets\/ns\/db-1 changed/ },
    { what: "a claim of a selected StatefulSet", change: (s) => write(s.claims[0], () => {}), says: /^claims\/ns\/data-db-0-0 changed/ },
    {
      what: "a pod of a selected one changed beyond its adoption",
      change: (s) => write(s.pods[0], (o) => ((o.metadata["labels"] as Record<string, string>)["x"] = "y")),
      says: /^pods\/ns\/db-0-0 changed beyond its adoption$/,
    },
    { what: "a pod replaced", change: (s) => write(s.pods[1], (o) => (o.metadata["uid"] = "another")), says: /^pods\/ns\/db-0-1 changed beyond its adoption$/ },
    { what: "a selected StatefulSet not re-created", change: (s) => (s.sets[0].metadata.uid = "db-0-uid"), says: /^sets\/ns\/db-0 was not re-created$/ },
    { what: "a pod gone", change: (s) => s.pods.splice(3, 1), says: /^pods\/ns\/db-1-1 is gone$/ },
    { what: "a new revision", change: (s) => s.revisions.push({ ...s.revisions[1], metadata: { ...s.revisions[1].metadata, name: "db-1-new" } }), says: /^revisions\/ns\/db-1-new is new$/ },
  ];
  for (const c of cases) {
    test(`one line for ${c.what}`, () => {
      const after = afterSet();
      c.change(after);
      const problems = changedBeyond(before, after, changed);
      assert.equal(problems.length, 1, problems.join("\n"));
      assert.match(problems[0]!, c.says);
    });
  }
});
