// Issue 18 against the real control plane: which ordinals get the new template, why a Pending
// claim is stuck (a class that does not exist, a provisioner's ProvisioningFailed, or not stuck:
// WaitForFirstConsumer), and the commands that re-create a never-bound claim by hand. The tool
// deletes no pod and no claim: every test compares all uids; only the test itself runs the
// advised commands, as a user would.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { describe, test, type TestContext } from "node:test";
import type { Plan } from "../../src/plan/types";
import type { StorageReport } from "../../src/report/storage-report";
import { sts } from "../fixtures/builders";
import { apply, claims, eventually, getSts, kubeconfig, kubectlTry, markReady, namespace, pods, runPlugin, storageClassFor, uids, userKubeconfig, volumeFor } from "../shared/harness";
import { grantRole, grantStorageClasses } from "../shared/rbac";

async function show(args: string[]): Promise<StorageReport> {
  const r = await runPlugin(["show", ...args, "-o", "json"]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as StorageReport;
}

const claimOf = (ns: string, name: string) => claims(ns).find((c) => c.metadata.name === name);
const podOf = (ns: string, name: string) => pods(ns).find((p) => p.metadata.name === name);

/** The StatefulSet controller has seen the object and made exactly `created` pods (and their claims). */
async function createdOnly(ns: string, name: string, created: number, claimNames: string[]): Promise<void> {
  await eventually(
    `statefulset ${ns}/${name} to create ${created} pod(s) and their claims`,
    () => {
      const s = getSts(ns, name);
      const st = s.status ?? {};
      return (
        (st.observedGeneration ?? 0) >= (s.metadata.generation ?? 0) &&
        st.replicas === created &&
        st.currentRevision === st.updateRevision &&
        pods(ns).length === created &&
        claimNames.every((c) => claimOf(ns, c)?.status?.phase === "Pending")
      );
    },
    60_000,
  );
}

/** A StorageClass with volumeBindingMode WaitForFirstConsumer, deleted when the test ends. */
function waitForFirstConsumerClass(t: TestContext, ns: string): string {
  const name = `${ns}-wffc`;
  apply({ apiVersion: "storage.k8s.io/v1", kind: "StorageClass", metadata: { name }, provisioner: "example.com/no-provisioner", volumeBindingMode: "WaitForFirstConsumer" }, ns);
  t.after(() => kubectlTry(["delete", "storageclass", name, "--wait=false"]));
  return name;
}

describe("ordinals and claims that never bound (issue 18)", () => {
  test("a class that does not exist: ordinals 1 and 2 get the new template, ordinal 0's claim is explained, and nothing is deleted", async (t) => {
    const ns = namespace(t);
    const cls = storageClassFor(t, ns, { expandable: true });
    // OrderedReady (the default): pod 0 never becomes Ready, so ordinals 1 and 2 are never created.
    apply(sts("db", ns).withClaim("data", "2Gi", "nosuch").replicas(3).build(), ns);
    await createdOnly(ns, "db", 1, ["data-db-0"]);
    const before = uids(ns);
    assert.deepEqual(Object.keys(before).sort(), ["pod/db-0", "pvc/data-db-0"]);

    // Before the change: stuck, but it matches its template, so there is nothing to re-create it from.
    const first = (await show(["db", "-n", ns])).items[0]!.claims[0]!;
    assert.deepEqual(first.pendingReason, { reason: "StorageClassNotFound", stuck: true, message: 'storage class "nosuch" does not exist' });
    assert.equal(first.recreateByHand, undefined);
    assert.equal(first.volumeName, undefined);

    const advice = `kubectl delete pvc data-db-0 -n ${ns} && kubectl delete pod db-0 -n ${ns}`;
    const diff = await runPlugin(["diff", "db", `data=1Gi,${cls}`, "-n", ns]);
    assert.equal(diff.code, 1, diff.stderr);
    assert.match(diff.stderr, new RegExp(`^ordinals 1 and 2 \\(no claim yet\\) and 3 and up \\(a later scale-up\\) get: data 1Gi \\(${cls}\\)$`, "m"));
    assert.match(diff.stderr, /^ordinal 0 keeps its existing claim$/m);
    assert.match(diff.stderr, /^persistentvolumeclaim\/data-db-0 is Pending and stuck: storage class "nosuch" does not exist$/m);
    assert.match(diff.stderr, /^persistentvolumeclaim\/data-db-0 never bound \(no volume, so no data\) and does not match its template after this change; .*\(pod db-0 restarts: .*\):$/m);
    assert.ok(diff.stderr.includes(`\n  ${advice}\n`), diff.stderr);

    const planned = await runPlugin(["set", "db", `data=1Gi,${cls}`, "-n", ns, "--dry-run=client", "-o", "json"]);
    assert.equal(planned.code, 0, planned.stderr);
    const plan = JSON.parse(planned.stdout) as Plan;
    assert.deepEqual(plan.ordinals, { start: 0, replicas: 3, scaleUpFrom: 3, templates: [{ claim: "data", keep: [0], create: [1, 2], leftover: [] }] });
    assert.equal(plan.newOrdinals.from, 3);
    assert.equal(plan.claims[0]!.recreateByHand!.command, advice);
    const text = await runPlugin(["set", "db", `data=1Gi,${cls}`, "-n", ns, "--dry-run=client"]);
    assert.match(text.stdout, /^ordinals 1 and 2 \(no claim yet\) and 3 and up \(a later scale-up\) get: /m);
    assert.ok(text.stdout.includes(`\n  ${advice}\n`), text.stdout);

    const r = await runPlugin(["set", "db", `data=1Gi,${cls}`, "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "statefulset.apps/db recreated\n");
    assert.deepEqual(uids(ns), before, "set kept every pod and claim");

    // After the change: show explains ordinal 0 and names what would replace it.
    const item = (await show(["db", "-n", ns])).items[0]!;
    assert.deepEqual(item.templates[0]!.ordinalsWithoutClaim, [1, 2]);
    const c = item.claims[0]!;
    assert.deepEqual(c.differences, ["template 1Gi, claim 2Gi (larger)", `template class ${cls}, claim class nosuch`]);
    assert.equal(c.pendingReason!.reason, "StorageClassNotFound");
    assert.deepEqual(c.recreateByHand, { command: advice, warning: "pod db-0 restarts: the StatefulSet controller creates it again, with a new claim" });
    const table = await runPlugin(["show", "db", "-n", ns]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^persistentvolumeclaim\/data-db-0 is Pending and stuck: storage class "nosuch" does not exist$/m);
    assert.ok(table.stdout.includes(`\nstatefulset.apps/db: ordinals 1 and 2 (no claim yet) and 3 and up (a later scale-up) get: data 1Gi (${cls})\n`), table.stdout);
    assert.ok(table.stdout.includes(`\n  ${advice}\n`), table.stdout);
    assert.deepEqual(uids(ns), before, "show, diff and the dry runs deleted nothing");

    // The user runs the advice (the tool never does): the claim comes back from the new template.
    execFileSync("bash", ["-c", advice], { env: { ...process.env, KUBECONFIG: kubeconfig() }, stdio: "pipe" });
    const fresh = await eventually("a new claim data-db-0", () => {
      const x = claimOf(ns, "data-db-0");
      return x && x.metadata.uid !== before["pvc/data-db-0"] ? x : undefined;
    });
    assert.deepEqual([fresh.spec.storageClassName, fresh.spec.resources?.requests?.["storage"]], [cls, "1Gi"]);
    volumeFor(t, ns, "data-db-0", "1Gi", cls);
    await eventually("the new claim to bind", () => claimOf(ns, "data-db-0")?.status?.phase === "Bound", 60_000);
    // Ordinal 1 is created once pod 0 is Ready, from the new template, as the plan said.
    await eventually("pod db-0", () => podOf(ns, "db-0"));
    markReady(ns, "db-0");
    const one = await eventually("claim data-db-1", () => claimOf(ns, "data-db-1"), 60_000);
    assert.deepEqual([one.spec.storageClassName, one.spec.resources?.requests?.["storage"]], [cls, "1Gi"]);

    // A bound claim never gets the advice, even when it no longer matches the template.
    const bound = (await show(["db", "-n", ns])).items[0]!.claims.find((x) => x.name === "data-db-0")!;
    assert.equal(bound.phase, "Bound");
    assert.ok(bound.volumeName);
    await createdOnly(ns, "db", 2, ["data-db-1"]);
    const mid = uids(ns);
    const grown = await runPlugin(["set", "db", "data=3Gi", "-n", ns, "--yes"]);
    assert.equal(grown.code, 0, grown.stderr);
    assert.deepEqual(uids(ns), mid, "set kept every pod and claim");
    const after = (await show(["db", "-n", ns])).items[0]!.claims.find((x) => x.name === "data-db-0")!;
    assert.deepEqual([after.differences, after.pendingReason, after.recreateByHand], [["template 3Gi, claim 1Gi (smaller)"], undefined, undefined]);
  });

  test("a provisioning failure: the provisioner's latest ProvisioningFailed event explains the claim", async (t) => {
    const ns = namespace(t);
    const cls = storageClassFor(t, ns, { expandable: false });
    const next = storageClassFor(t, ns, { expandable: true });
    apply(sts("queue", ns).withClaim("data", "2Gi", cls).build(), ns);
    await createdOnly(ns, "queue", 1, ["data-queue-0"]);
    const claim = claimOf(ns, "data-queue-0")!;
    // As an external provisioner (client-go's event recorder) records it: the older event first.
    const event = (message: string, count: number, at: string) =>
      apply(
        {
          apiVersion: "v1",
          kind: "Event",
          metadata: { name: `data-queue-0.${randomBytes(8).toString("hex")}` },
          involvedObject: { apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: ns, name: "data-queue-0", uid: claim.metadata.uid, resourceVersion: claim.metadata.resourceVersion },
          reason: "ProvisioningFailed",
          type: "Warning",
          message,
          count,
          firstTimestamp: "2026-11-30T10:00:00Z",
          lastTimestamp: at,
          source: { component: "example.com/no-provisioner_node-1_5d2f" },
        },
        ns,
      );
    event(`failed to provision volume with StorageClass "${cls}": rpc error: code = Internal desc = backend timeout`, 1, "2026-11-30T10:00:00Z");
    const latest = `failed to provision volume with StorageClass "${cls}": rpc error: code = ResourceExhausted desc = pool is full`;
    event(latest, 4, "2026-11-30T10:05:00Z");
    const before = uids(ns);

    const c = (await show(["queue", "-n", ns])).items[0]!.claims[0]!;
    assert.deepEqual(c.pendingReason, {
      reason: "ProvisioningFailed",
      stuck: true,
      message: `the provisioner example.com/no-provisioner of storage class "${cls}" reported ProvisioningFailed`,
      event: { message: latest, count: 4, lastTimestamp: "2026-11-30T10:05:00Z", source: "example.com/no-provisioner_node-1_5d2f" },
    });
    assert.equal(c.recreateByHand, undefined, "it matches its template: re-creating it would fail the same way");
    const table = await runPlugin(["show", "queue", "-n", ns]);
    assert.match(
      table.stdout,
      /^persistentvolumeclaim\/data-queue-0 is Pending and stuck: the provisioner example\.com\/no-provisioner of storage class "\S+" reported ProvisioningFailed \(its message: -o wide\)$/m,
    );
    const wide = await runPlugin(["show", "queue", "-n", ns, "-o", "wide"]);
    assert.ok(wide.stdout.includes(`reported ProvisioningFailed (4 times, last at 2026-11-30T10:05:00Z): ${latest}\n`), wide.stdout);

    // Fixed in the template: kept as it is by set, and show says how to re-create it from the fix.
    const r = await runPlugin(["set", "queue", `data=2Gi,${next}`, "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    const after = (await show(["queue", "-n", ns])).items[0]!.claims[0]!;
    assert.equal(after.pendingReason!.reason, "ProvisioningFailed");
    assert.equal(after.recreateByHand!.command, `kubectl delete pvc data-queue-0 -n ${ns} && kubectl delete pod queue-0 -n ${ns}`);
    assert.deepEqual(uids(ns), before, "show and set deleted nothing");
  });

  test("WaitForFirstConsumer: waiting for its pod, not stuck", async (t) => {
    const ns = namespace(t);
    const cls = waitForFirstConsumerClass(t, ns);
    apply(sts("cache", ns).withClaim("data", "1Gi", cls).build(), ns);
    await createdOnly(ns, "cache", 1, ["data-cache-0"]);
    const before = uids(ns);

    const message = `storage class "${cls}" has volumeBindingMode WaitForFirstConsumer, so the volume is provisioned once pod cache-0 is scheduled`;
    const c = (await show(["cache", "-n", ns])).items[0]!.claims[0]!;
    assert.deepEqual([c.pendingReason, c.recreateByHand], [{ reason: "WaitForFirstConsumer", stuck: false, message }, undefined]);
    const table = await runPlugin(["show", "cache", "-n", ns]);
    assert.ok(table.stdout.includes(`persistentvolumeclaim/data-cache-0 is Pending, not stuck: ${message}\n`), table.stdout);

    const diff = await runPlugin(["diff", "cache", "data=2Gi", "-n", ns]);
    assert.equal(diff.code, 1, diff.stderr);
    assert.ok(diff.stderr.includes(`persistentvolumeclaim/data-cache-0 is Pending, not stuck: ${message}\n`), diff.stderr);
    assert.match(diff.stderr, /^ordinals 1 and up \(a later scale-up\) get: data 2Gi/m);
    assert.match(diff.stderr, /^ordinal 0 keeps its existing claim$/m);

    const r = await runPlugin(["set", "cache", "data=2Gi", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    const after = (await show(["cache", "-n", ns])).items[0]!.claims[0]!;
    assert.deepEqual(after.pendingReason, { reason: "WaitForFirstConsumer", stuck: false, message });
    assert.equal(after.recreateByHand!.command, `kubectl delete pvc data-cache-0 -n ${ns} && kubectl delete pod cache-0 -n ${ns}`);
    assert.deepEqual(uids(ns), before, "show, diff and set deleted nothing");
  });

  test("a user who may not list events: a warning, and the rest of the explanation", async (t) => {
    const ns = namespace(t);
    apply(sts("db", ns).withClaim("data", "1Gi", "nosuch").build(), ns);
    await createdOnly(ns, "db", 1, ["data-db-0"]);
    const before = uids(ns);
    const user = `u-${ns}`;
    const kc = userKubeconfig(user);
    const reads = [
      { apiGroups: ["apps"], resources: ["statefulsets"], verbs: ["get", "list"] },
      { apiGroups: [""], resources: ["pods", "persistentvolumeclaims", "secrets"], verbs: ["get", "list"] },
    ];
    grantRole(ns, user, "reader", reads);
    grantStorageClasses(t, ns, user, ["list"]);
    // RBAC is read from the authorizer's cache: retry until the grants are in effect.
    let shown = await runPlugin(["show", "db", "-n", ns, "-o", "json"], { kubeconfig: kc });
    for (const deadline = Date.now() + 30_000; shown.code !== 0 && Date.now() < deadline; ) {
      await new Promise((done) => setTimeout(done, 200));
      shown = await runPlugin(["show", "db", "-n", ns, "-o", "json"], { kubeconfig: kc });
    }
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal(shown.stderr, "Warning: you may not list events, so provisioning failures of Pending claims are not shown\n");
    const c = (JSON.parse(shown.stdout) as StorageReport).items[0]!.claims[0]!;
    assert.equal(c.pendingReason!.reason, "StorageClassNotFound");
    assert.deepEqual(uids(ns), before);
  });
});
