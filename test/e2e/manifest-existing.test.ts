// set -f reads the cluster through the same observation stage as set NAME (src/commands/observe.ts,
// observeTargets), with the same options: set -f --migrate-existing reads the replicas' nodes, their
// cordons, the disruption budgets and kubelet's stats as set --migrate-existing does, and set -f
// --resize-existing reads the quotas. Here, on the control plane alone, two replicas run on a Node
// object of the test's own (bound and marked Running as a scheduler and kubelet would; no kubelet
// answers its stats): the plans of `set db ...` and `set -f MANIFEST` are the same plan (compared as
// -o json prints them, but for what names how they were asked), and a cordoned node and a
// budget that allows no eviction refuse both with the same words. Nothing is changed by any of them.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, type TestContext, test } from "node:test";
import type { Plan } from "../../src/plan/types";
import type { StatefulSet } from "../../src/api/types";
import { sts } from "../fixtures/builders";
import { apply, claims, eventually, getSts, kubectl, kubectlTry, markReady, namespace, runPlugin, settled, storageClassFor, uids, volumeFor } from "../shared/harness";

/** db: two replicas on `node` (a Node object of the test's), their claims bound to volumes of class `cls`. */
async function onNode(t: TestContext, ns: string, cls: string): Promise<string> {
  const node = `appstorage-${ns}`;
  kubectl(["create", "-f", "-"], { input: JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name: node } }) });
  t.after(() => kubectlTry(["delete", "node", node, "--wait=false"]));
  for (let i = 0; i < 2; i++) volumeFor(t, ns, `data-db-${i}`, "1Gi", cls);
  apply(sts("db", ns).withClaim("data", "1Gi", cls).replicas(2).parallel().build(), ns);
  await settled(ns, "db", 2);
  await eventually("2 claims bound", () => claims(ns).filter((c) => c.status?.phase === "Bound").length === 2, 60_000);
  for (let i = 0; i < 2; i++) {
    const binding = { apiVersion: "v1", kind: "Binding", metadata: { name: `db-${i}` }, target: { apiVersion: "v1", kind: "Node", name: node } };
    kubectl(["create", "--raw", `/api/v1/namespaces/${ns}/pods/db-${i}/binding`, "-f", "-"], { input: JSON.stringify(binding) });
    markReady(ns, `db-${i}`);
  }
  return node;
}

/** The live StatefulSet as a manifest whose claim template `data` asks for this class and size. */
function manifest(ns: string, cls: string, size: string): string {
  const live = getSts(ns, "db");
  const wanted: StatefulSet = {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: "db", namespace: ns, ...(live.metadata.labels ? { labels: live.metadata.labels } : {}) },
    spec: structuredClone(live.spec),
  };
  const template = wanted.spec.volumeClaimTemplates![0]!;
  template.spec.storageClassName = cls;
  template.spec.resources = { requests: { storage: size } };
  const file = join(tmpdir(), `appstorage-manifest-${ns}.json`);
  writeFileSync(file, JSON.stringify(wanted));
  return file;
}

/**
 * A plan as -o json prints it, without what names how and when it was asked: the request's words
 * (set -f writes what differs from the live object), the history and last-change annotations the
 * re-created object gets (they hold those words and the moment), and the digest over the whole.
 */
function comparable(stdout: string): Partial<Plan> {
  const { digest: _digest, request: _request, ...rest } = JSON.parse(stdout) as Plan;
  const annotations = rest.desired.metadata.annotations ?? {};
  for (const key of ["appstorage.kubectl.io/history", "appstorage.kubectl.io/last-change"]) {
    assert.ok(key in annotations, `the desired object has no ${key}`);
    delete annotations[key];
  }
  return rest;
}

const refusalLine = (stderr: string) => stderr.split("\n").find((l) => l.startsWith("error: ")) ?? `(no error line in: ${stderr})`;

describe("set -f reads and plans as set does", () => {
  test("--migrate-existing: the same plan, and a cordoned node and a budget refuse both with the same words", async (t) => {
    const ns = namespace(t, "mfmig");
    const cls = storageClassFor(t, ns, { expandable: true });
    const other = storageClassFor(t, ns, { expandable: false });
    const node = await onNode(t, ns, cls);
    const file = manifest(ns, other, "1Gi");
    const before = uids(ns);
    const rv = getSts(ns, "db").metadata.resourceVersion;
    const byName = ["set", "db", `data=1Gi,${other}`, "--migrate-existing", "-n", ns];
    const byFile = ["set", "-f", file, "--migrate-existing", "-n", ns];

    const a = await runPlugin([...byName, "--dry-run=client", "-o", "json"]);
    const b = await runPlugin([...byFile, "--dry-run=client", "-o", "json"]);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(b.code, 0, b.stderr);
    const planA = comparable(a.stdout);
    // The copy pods go where the replicas run: the plan names each replica's node, as set's does.
    assert.deepEqual(
      planA.migration?.claims.map((m) => [m.claim, m.node]),
      [
        ["data-db-1", node],
        ["data-db-0", node],
      ],
    );
    assert.deepEqual(comparable(b.stdout), planA, "set -f plans what set plans");

    kubectl(["cordon", node]);
    const cordonedByName = await runPlugin([...byName, "--yes"]);
    const cordonedByFile = await runPlugin([...byFile, "--yes"]);
    assert.equal(cordonedByName.code, 1, cordonedByName.stderr);
    assert.match(refusalLine(cordonedByName.stderr), new RegExp(`^error: node ${node}, where db-\\d runs, is cordoned: moving claim data-db-\\d restarts db-\\d`));
    assert.equal(cordonedByFile.code, 1, cordonedByFile.stderr);
    assert.equal(refusalLine(cordonedByFile.stderr), refusalLine(cordonedByName.stderr), "set -f refuses a cordoned node as set does");
    kubectl(["uncordon", node]);

    apply({ apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "db" }, spec: { maxUnavailable: 0, selector: { matchLabels: getSts(ns, "db").spec.selector.matchLabels } } }, ns);
    const budgetByName = await runPlugin([...byName, "--yes"]);
    const budgetByFile = await runPlugin([...byFile, "--yes"]);
    assert.equal(budgetByName.code, 1, budgetByName.stderr);
    assert.match(refusalLine(budgetByName.stderr), /PodDisruptionBudget/);
    assert.equal(budgetByFile.code, 1, budgetByFile.stderr);
    assert.equal(refusalLine(budgetByFile.stderr), refusalLine(budgetByName.stderr), "set -f refuses a budget as set does");

    assert.deepEqual(uids(ns), before, "nothing changed");
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
    assert.notEqual(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 0, "no journal");
  });

  test("--resize-existing: the same plan, quotas read and checked alike", async (t) => {
    const ns = namespace(t, "mfres");
    const cls = storageClassFor(t, ns, { expandable: true });
    await onNode(t, ns, cls);
    // Room for one claim of 2Gi more: growing both does not fit.
    apply({ apiVersion: "v1", kind: "ResourceQuota", metadata: { name: "q" }, spec: { hard: { "requests.storage": "3Gi" } } }, ns);
    await eventually("the quota's usage counted", () => JSON.parse(kubectl(["get", "resourcequota", "q", "-n", ns, "-o", "json"])).status?.used?.["requests.storage"] === "2Gi", 60_000);
    const file = manifest(ns, cls, "2Gi");
    const before = uids(ns);
    const a = await runPlugin(["set", "db", "data=2Gi", "--resize-existing", "-n", ns, "--dry-run=client", "-o", "json"]);
    const b = await runPlugin(["set", "-f", file, "--resize-existing", "-n", ns, "--dry-run=client", "-o", "json"]);
    assert.equal(a.code, b.code, `${a.stderr}\n${b.stderr}`);
    assert.equal(refusalLine(b.stderr), refusalLine(a.stderr), "the same refusal");
    assert.match(refusalLine(a.stderr), /quota/i);
    kubectl(["delete", "resourcequota", "q", "-n", ns]);
    const c = await runPlugin(["set", "db", "data=2Gi", "--resize-existing", "-n", ns, "--dry-run=client", "-o", "json"]);
    const d = await runPlugin(["set", "-f", file, "--resize-existing", "-n", ns, "--dry-run=client", "-o", "json"]);
    assert.equal(c.code, 0, c.stderr);
    assert.equal(d.code, 0, d.stderr);
    assert.deepEqual(comparable(d.stdout), comparable(c.stdout), "set -f plans what set plans");
    assert.deepEqual(uids(ns), before, "nothing changed");
  });
});
