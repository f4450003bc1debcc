// What differs between the Kubernetes minors this tool supports (1.32 to 1.37, and the 1.38
// pre-release), checked on the control plane this run uses (`node scripts/test.mjs e2e --version
// 1.32 test/e2e/versions.test.ts` for the oldest; npm test runs it on the oldest and the newest).
// Each test asserts what this server does, and that the plugin copes with it by what the server
// says, never by a version guess.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import type { StatefulSet } from "../../src/api/types";
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
  namespace,
  patchTemplateSize,
  pods,
  runPlugin,
  serverVersion,
  serves,
  settled,
  storageClassFor,
  uids,
  volumeFor,
} from "../shared/harness";

const v = serverVersion();
const on = `(on ${v.gitVersion})`;
/** Whether the apiserver has feature gate `name` on, as its /metrics say; undefined: it has no such gate. */
function featureEnabled(name: string): boolean | undefined {
  // The metrics are a few megabytes: more than execFileSync's default buffer.
  const metrics = execFileSync("kubectl", ["--kubeconfig", kubeconfig(), "get", "--raw", "/metrics"], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  const m = metrics.match(new RegExp(`^kubernetes_feature_enabled\\{name="${name}",stage="[A-Z]*"\\} ([01])$`, "m"));
  return m ? m[1] === "1" : undefined;
}
const controller = (o: { metadata: { ownerReferences?: { controller?: boolean; uid: string }[] } }) => o.metadata.ownerReferences?.find((r) => r.controller)?.uid;

test(`an update of volumeClaimTemplates is refused as invalid (422), in words that differ by version ${on}`, async (t) => {
  const ns = namespace(t, "ver");
  apply(sts("web", ns).withClaim("data", "1Gi").build(), ns);
  const r = patchTemplateSize(ns, "web", "2Gi");
  assert.equal(r.code, 1);
  // kubectl's words for a 422 Invalid; the causes below are the server's. The plugin never
  // depends on them: it does not try the update, it plans the orphan delete and re-create.
  assert.match(r.stderr, /^The StatefulSet "web" is invalid: /);
  if (v.minor <= 32) {
    // 1.32: one cause on spec, listing the fields that may change.
    assert.match(
      r.stderr,
      /is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden/,
    );
  }
  if (v.minor >= 37) {
    // 1.37: the cause is on the field itself.
    assert.match(r.stderr, /is invalid: spec.volumeClaimTemplates: Invalid value: .*: field is immutable/);
    assert.doesNotMatch(r.stderr, /updates to statefulset spec for fields other than/);
  }
  if (v.minor >= 38) {
    // 1.38: the declarative rule (+k8s:immutable, beta from 1.38, so enforced with the
    // DeclarativeValidationBeta gate on by default) decides, and it reports no value. Passed on
    // v1.38.0-beta.0 (npm run test:e2e:prerelease; see the README's Kubernetes versions).
    assert.match(r.stderr, /is invalid: spec.volumeClaimTemplates: Invalid value: null: field is immutable/);
  }
  assert.equal(getSts(ns, "web").spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "1Gi");
  // ... and the plugin makes the same change on this server.
  const set = await runPlugin(["set", "web", "data=2Gi", "-n", ns, "--yes"]);
  assert.equal(set.code, 0, set.stderr);
  assert.equal(set.stdout, "statefulset.apps/web recreated\n");
  assert.equal(getSts(ns, "web").spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "2Gi");
});

test(`updateStrategy Recreate (gate StatefulSetRecreateStrategy: alpha and off by default in 1.37, beta and on from 1.38): refused on create where off; where on, set carries it over and no pod is deleted ${on}`, async (t) => {
  const gate = featureEnabled("StatefulSetRecreateStrategy");
  // Its default, unless this control plane was started with it set (APPSTORAGE_FEATURE_GATES=
  // StatefulSetRecreateStrategy=true scripts/cluster up --version 1.37 runs the other branch there).
  if (!(process.env["APPSTORAGE_FEATURE_GATES"] ?? "").includes("StatefulSetRecreateStrategy")) {
    assert.equal(gate, v.minor < 37 ? undefined : v.minor >= 38, "StatefulSetRecreateStrategy's default");
  }
  const ns = namespace(t, "ver");
  const recreate = sts("db", ns)
    .withClaim("data", "1Gi")
    .replicas(2)
    .parallel()
    .edit((s) => (s.spec.updateStrategy = { type: "Recreate" }))
    .build();
  const created = kubectlTry(["create", "-n", ns, "-f", "-"], { input: JSON.stringify(recreate) });
  if (!gate) {
    // Where the gate is off (1.37's default; 1.32 has no such strategy) the server refuses the
    // type on create, so no StatefulSet with it exists for the plugin to re-create.
    assert.equal(created.code, 1, created.stdout);
    assert.match(created.stderr, /^The StatefulSet "db" is invalid: spec.updateStrategy: Invalid value: .*: must be 'RollingUpdate' or 'OnDelete'$/m);
    assert.equal(kubectlTry(["get", "statefulset", "db", "-n", ns]).code, 1);
    return;
  }
  // On by default from 1.38. With Recreate the controller deletes, all at once, every pod whose
  // revision is not the StatefulSet's update revision: the re-create must keep both the strategy
  // and the revision, or every pod goes down together.
  assert.equal(created.code, 0, created.stderr);
  await settled(ns, "db", 2);
  const old = getSts(ns, "db");
  assert.deepEqual(old.spec.updateStrategy, { type: "Recreate" });
  const revisions = Object.fromEntries(pods(ns).map((p) => [p.metadata.name!, p.metadata.labels?.["controller-revision-hash"]]));
  const before = uids(ns);
  const r = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"]);
  assert.equal(r.code, 0, r.stderr);
  const now = getSts(ns, "db");
  assert.notEqual(now.metadata.uid, old.metadata.uid);
  assert.deepEqual(now.spec.updateStrategy, { type: "Recreate" });
  // The controller has synced the new object (its update revision is the pods' own) ...
  await settled(ns, "db", 2);
  assert.equal(getSts(ns, "db").status?.updateRevision, old.status?.updateRevision);
  // ... and deleted nothing: same pods, not terminating, same revisions, same claims.
  assert.deepEqual(uids(ns), before);
  for (const p of pods(ns)) {
    assert.equal(p.metadata.deletionTimestamp, undefined, `${p.metadata.name} is being deleted`);
    assert.equal(p.metadata.labels?.["controller-revision-hash"], revisions[p.metadata.name!], `${p.metadata.name} kept its revision`);
    assert.equal(controller(p), now.metadata.uid, `${p.metadata.name} adopted`);
  }
});

test(`claim retention policy whenDeleted: Delete: claims owned by the StatefulSet survive the change and are owned by the new one ${on}`, async (t) => {
  const ns = namespace(t, "ver");
  apply(sts("db", ns).withClaim("data", "1Gi").replicas(2).parallel().retention("Delete").build(), ns);
  await settled(ns, "db", 2);
  const old = getSts(ns, "db");
  // GA in 1.32 (StatefulSetAutoDeletePVC): the controller makes the StatefulSet own its claims.
  await eventually("claims owned by the StatefulSet", () => claims(ns).length === 2 && claims(ns).every((c) => controller(c) === old.metadata.uid));
  const before = uids(ns);
  const r = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"]);
  assert.equal(r.code, 0, r.stderr);
  const now = getSts(ns, "db");
  assert.notEqual(now.metadata.uid, old.metadata.uid);
  assert.deepEqual(now.spec.persistentVolumeClaimRetentionPolicy, { whenDeleted: "Delete", whenScaled: "Retain" });
  assert.deepEqual(uids(ns), before, "an orphan delete keeps claims the StatefulSet owned");
  await eventually("claims owned by the re-created StatefulSet", () => claims(ns).every((c) => controller(c) === now.metadata.uid));
});

test(`the garbage collector handles the orphan finalizer: pods released, the finalizer removed, the object kept by another finalizer ${on}`, async (t) => {
  const ns = namespace(t, "ver");
  apply(
    sts("web", ns)
      .withClaim("data", "1Gi")
      .replicas(2)
      .parallel()
      .edit((s) => (s.metadata.finalizers = ["example.com/hold"]))
      .build(),
    ns,
  );
  await settled(ns, "web", 2);
  const old = getSts(ns, "web");
  t.after(() => kubectlTry(["patch", "statefulset", "web", "-n", ns, "--type=merge", "-p", '{"metadata":{"finalizers":null}}']));
  const before = uids(ns);
  kubectl(["delete", "statefulset", "web", "-n", ns, "--cascade=orphan", "--wait=false"]);
  const held = await eventually("the orphan finalizer to be handled", () => {
    const s = kubectlJson<StatefulSet>(["get", "statefulset", "web", "-n", ns]);
    return s.metadata.deletionTimestamp && !s.metadata.finalizers?.includes("orphan") && pods(ns).every((p) => !p.metadata.ownerReferences?.length) ? s : undefined;
  });
  assert.equal(held.metadata.uid, old.metadata.uid);
  assert.deepEqual(held.metadata.finalizers, ["example.com/hold"]);
  assert.deepEqual(uids(ns), before);
  // The plugin sees an object being deleted and refuses, changing nothing.
  const refused = await runPlugin(["set", "web", "data=2Gi", "-n", ns, "--yes"]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /statefulset.apps\/web is being deleted; wait until it is gone or re-created/);
  assert.equal(refused.stderr.trim().split("\n").length, 1, refused.stderr);
  kubectl(["patch", "statefulset", "web", "-n", ns, "--type=merge", "-p", '{"metadata":{"finalizers":null}}']);
  await eventually("the StatefulSet to be gone", () => kubectlTry(["get", "statefulset", "web", "-n", ns]).code === 1);
  assert.deepEqual(uids(ns), before);
});

test(`adoption: when set returns, every pod is owned by the new StatefulSet with its revision unchanged ${on}`, async (t) => {
  // Several StatefulSets just created (on 1.37 the controller's consistency check,
  // StaleControllerConsistencyStatefulSet, can then delay adoption by up to a second); one per
  // namespace, as settled() counts every pod of its namespace.
  const others = [namespace(t, "ver"), namespace(t, "ver")];
  const ns = namespace(t, "ver");
  for (const o of others) apply(sts("other", o).withClaim("data", "1Gi").replicas(2).parallel().build(), o);
  apply(sts("db", ns).withClaim("data", "1Gi").replicas(2).parallel().build(), ns);
  await settled(ns, "db", 2);
  const revisions = Object.fromEntries(pods(ns).map((p) => [p.metadata.name!, p.metadata.labels?.["controller-revision-hash"]]));
  assert.equal(Object.keys(revisions).length, 2);
  const before = uids(ns);
  const r = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"]);
  assert.equal(r.code, 0, r.stderr);
  // No waiting here: the plugin returns only once the controller adopted every pod.
  const now = getSts(ns, "db");
  for (const p of pods(ns)) {
    assert.equal(controller(p), now.metadata.uid, `${p.metadata.name} adopted`);
    assert.equal(p.metadata.labels?.["controller-revision-hash"], revisions[p.metadata.name!], `${p.metadata.name} kept its revision`);
  }
  assert.deepEqual(uids(ns), before);
});

test(`SelfSubjectReview: served, and the change records who made it ${on}`, async (t) => {
  // authentication.k8s.io/v1 SelfSubjectReview is GA since 1.28, so every supported minor serves it.
  assert.equal(serves("authentication.k8s.io/v1", "selfsubjectreviews"), true);
  const ns = namespace(t, "ver");
  apply(sts("web", ns).withClaim("data", "1Gi").build(), ns);
  const r = await runPlugin(["set", "web", "data=2Gi", "-n", ns, "--yes"]);
  assert.equal(r.code, 0, r.stderr);
  const change = JSON.parse(getSts(ns, "web").metadata.annotations!["appstorage.kubectl.io/last-change"]!) as { by: string };
  assert.equal(change.by, "admin", "the admin kubeconfig's certificate names user admin");
});

test(`VolumeAttributesClass: storage.k8s.io/v1 is served from 1.34; before, vac= is refused in one line and nothing changes ${on}`, async (t) => {
  const servedV1 = serves("storage.k8s.io/v1", "volumeattributesclasses");
  assert.equal(servedV1, v.minor >= 34, "storage.k8s.io/v1 VolumeAttributesClass is GA (served by default) from 1.34");
  const servedBeta = serves("storage.k8s.io/v1beta1", "volumeattributesclasses");
  // Before 1.34 the beta API is off by default (this control plane enables no beta APIs).
  if (v.minor < 34) assert.equal(servedBeta, false, "storage.k8s.io/v1beta1 VolumeAttributesClass served");
  const ns = namespace(t, "ver");
  apply(sts("db", ns).withClaim("data", "1Gi").build(), ns);
  const rv = getSts(ns, "db").metadata.resourceVersion;
  if (!servedV1 && !servedBeta) {
    for (const cmd of ["set", "diff"]) {
      const r = await runPlugin([cmd, "db", "data=2Gi,vac=fast", "-n", ns, ...(cmd === "set" ? ["--yes"] : [])]);
      assert.ok(cmd === "set" ? r.code === 1 : r.code > 1, `${cmd}: exit ${r.code}`);
      assert.match(
        r.stderr,
        /this server does not serve VolumeAttributesClass \(storage.k8s.io\), so claims cannot name one \(data=vac=fast\); it needs Kubernetes 1.34 or later, or the VolumeAttributesClass feature enabled: drop vac=/,
      );
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.equal(r.stdout, "");
    }
    // Without vac= the same change goes through.
    const ok = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(getSts(ns, "db").spec.volumeClaimTemplates![0]!.spec.volumeAttributesClassName, undefined);
    return;
  }
  const vac = `${ns}-fast`;
  apply(
    { apiVersion: `storage.k8s.io/${servedV1 ? "v1" : "v1beta1"}`, kind: "VolumeAttributesClass", metadata: { name: vac }, driverName: "example.com/no-provisioner", parameters: { iops: "5000" } },
    ns,
  );
  t.after(() => kubectlTry(["delete", "volumeattributesclass", vac, "--wait=false"]));
  const r = await runPlugin(["set", "db", `data=vac=${vac}`, "-n", ns, "--yes"]);
  assert.equal(r.code, 0, r.stderr);
  assert.notEqual(getSts(ns, "db").metadata.resourceVersion, rv);
  assert.equal(getSts(ns, "db").spec.volumeClaimTemplates![0]!.spec.volumeAttributesClassName, vac);
});

test(`RecoverVolumeExpansionFailure: after a failed expansion a claim's request may go back down while it stays above its capacity; the plugin never proposes a shrink ${on}`, async (t) => {
  const ns = namespace(t, "ver");
  const cls = storageClassFor(t, ns, { expandable: true });
  volumeFor(t, ns, "data-db-0", "1Gi", cls);
  apply(sts("db", ns).withClaim("data", "1Gi", cls).build(), ns);
  await eventually("data-db-0 bound", () => claims(ns).some((c) => c.metadata.name === "data-db-0" && c.status?.phase === "Bound"), 60_000);
  // An expansion no resizer finishes (there is none here): request 2Gi, capacity stays 1Gi.
  kubectl(["patch", "pvc", "data-db-0", "-n", ns, "--type=merge", "-p", '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}']);
  const grown = claims(ns).find((c) => c.metadata.name === "data-db-0")!;
  assert.equal(grown.status?.capacity?.["storage"], "1Gi");
  const rv = getSts(ns, "db").metadata.resourceVersion;
  // The plugin never shrinks: asking for less than the claim requests is refused before any change.
  const shrink = await runPlugin(["set", "db", "data=1Gi", "--resize-existing", "-n", ns, "--yes"]);
  assert.equal(shrink.code, 1, shrink.stderr);
  assert.match(shrink.stderr, /data-db-0 \(2Gi\) already request more than the new size; this tool never shrinks a claim; nothing was changed/);
  assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
  // The server (beta and on by default in 1.32, GA in 1.34; 1.31 and older refused any decrease):
  // a request may go back down, but must stay above the capacity; equal to it is refused too.
  for (const size of ["512Mi", "1Gi"]) {
    const refused = kubectlTry(["patch", "pvc", "data-db-0", "-n", ns, "--type=merge", "-p", JSON.stringify({ spec: { resources: { requests: { storage: size } } } })]);
    assert.equal(refused.code, 1, size);
    assert.match(refused.stderr, /spec.resources.requests.storage: Forbidden: field can not be less than status.capacity/, size);
  }
  const back = kubectlTry(["patch", "pvc", "data-db-0", "-n", ns, "--type=merge", "-p", '{"spec":{"resources":{"requests":{"storage":"1536Mi"}}}}']);
  assert.equal(back.code, 0, back.stderr);
  assert.equal(claims(ns).find((c) => c.metadata.name === "data-db-0")!.spec.resources!.requests!["storage"], "1536Mi");
  // From there the plugin grows the claim again (never down).
  const diff = await runPlugin(["diff", "db", "data=3Gi", "--resize-existing", "-n", ns]);
  assert.equal(diff.code, 1, diff.stderr);
  // As kubectl diff: stdout is the diff alone; what happens to each claim is on stderr.
  assert.match(diff.stderr, /data-db-0 .*grows 1536Mi -> 3Gi/);
  const again = await runPlugin(["diff", "db", "data=1Gi", "--resize-existing", "-n", ns]);
  assert.ok(again.code > 1, again.stderr);
  assert.match(again.stderr, /data-db-0 \(1536Mi\) already request more than the new size; this tool never shrinks a claim/);
});
