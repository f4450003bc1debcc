// `show` against the real control plane: drift from the template, leftovers, -A, errors.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { StorageReport } from "../../src/report/storage-report";
import { sts } from "../fixtures/builders";
import { apply, claims, eventually, kubectl, namespace, runPlugin, settled, storageClassFor, uids, userKubeconfig, volumeFor } from "../shared/harness";

async function report(args: string[]): Promise<StorageReport> {
  const r = await runPlugin(["show", ...args, "-o", "json"]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as StorageReport;
}

describe("show", () => {
  test("a claim grown by hand shows its drift from the template", async (t) => {
    const ns = namespace(t);
    const cls = storageClassFor(t, ns, { expandable: true });
    volumeFor(t, ns, "data-db-0", "1Gi", cls);
    apply(sts("db", ns).withClaim("data", "1Gi", cls).build(), ns);
    await settled(ns, "db", 1);
    await eventually("the claim to bind", () => claims(ns).find((c) => c.status?.phase === "Bound"), 60_000);
    kubectl(["patch", "pvc", "data-db-0", "-n", ns, "--type=merge", "-p", JSON.stringify({ spec: { resources: { requests: { storage: "2Gi" } } } })]);
    const before = uids(ns);

    const r = await report(["db", "-n", ns]);
    const item = r.items[0]!;
    assert.equal(item.name, "db");
    assert.deepEqual(
      item.templates.map((x) => [x.name, x.size, x.storageClass, x.expandable]),
      [["data", "1Gi", cls, true]],
    );
    const c = item.claims[0]!;
    assert.deepEqual([c.name, c.ordinal, c.phase, c.request, c.capacity, c.pod], ["data-db-0", 0, "Bound", "2Gi", "1Gi", "db-0"]);
    assert.deepEqual(c.differences, ["template 1Gi, claim 2Gi (larger)", "requested 2Gi, capacity 1Gi"]);

    const table = await runPlugin(["show", "db", "-n", ns]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^STATEFULSET\s+TEMPLATE\s+SIZE\s+CLASS\s+EXPANDABLE/m);
    // The default columns: ordinal, request and pod are -o wide's.
    assert.match(table.stdout, /data-db-0\s+Bound\s+1Gi\s+\S+\s+template 1Gi, claim 2Gi \(larger\); requested 2Gi, capacity 1Gi$/m);
    const wide = await runPlugin(["show", "db", "-n", ns, "-o", "wide"]);
    assert.match(wide.stdout, /data-db-0\s+0\s+Bound\s+2Gi\s+1Gi\s+\S+\s+db-0\s+/m);
    assert.deepEqual(uids(ns), before, "show changes nothing");
  });

  test("a scaled-down StatefulSet shows its leftover claim", async (t) => {
    const ns = namespace(t);
    apply(sts("web", ns).withClaim("data", "1Gi").replicas(2).parallel().build(), ns);
    await settled(ns, "web", 2);
    kubectl(["scale", "statefulset", "web", "-n", ns, "--replicas=1"]);
    await settled(ns, "web", 1);
    const item = (await report(["-n", ns])).items[0]!;
    assert.deepEqual(
      item.claims.map((c) => [c.name, c.leftover, c.pod ?? null]),
      [
        ["data-web-0", false, "web-0"],
        ["data-web-1", true, null],
      ],
    );
    const table = await runPlugin(["show", "-n", ns, "-o", "wide"]);
    assert.match(table.stdout, /data-web-1\s+1 \(leftover\)/);
  });

  test("-A lists StatefulSets of every namespace; -l selects", async (t) => {
    const a = namespace(t);
    const b = namespace(t);
    apply(sts("one", a).withClaim("data", "1Gi").labels({ tier: "db" }).build(), a);
    apply(sts("two", b).withClaim("logs", "3Gi").build(), b);
    await settled(a, "one", 1);
    await settled(b, "two", 1);
    const all = (await report(["-A"])).items.filter((i) => i.namespace === a || i.namespace === b);
    assert.deepEqual(
      all.map((i) => [i.namespace, i.name, i.claims.length]).sort(),
      [
        [a, "one", 1],
        [b, "two", 1],
      ].sort(),
    );
    const selected = (await report(["-A", "-l", "tier=db"])).items.filter((i) => i.namespace === a || i.namespace === b);
    assert.deepEqual(
      selected.map((i) => i.name),
      ["one"],
    );
    const table = await runPlugin(["show", "-A"]);
    assert.match(table.stdout, /^NAMESPACE\s+STATEFULSET/m);
  });

  test("-o jsonpath and -o custom-columns, as kubectl users write them, for show and history", async (t) => {
    const ns = namespace(t);
    for (const name of ["db", "web"]) apply(sts(name, ns).withClaim("data", "1Gi").replicas(2).parallel().build(), ns);
    await settled(ns, "db", 2);
    await settled(ns, "web", 2);
    const names = await runPlugin(["show", "-n", ns, "-o", 'jsonpath={range .items[*]}{.name}{"\\t"}{.claims[*].name}{"\\n"}{end}']);
    assert.equal(names.code, 0, names.stderr);
    assert.equal(names.stdout, "db\tdata-db-0 data-db-1\nweb\tdata-web-0 data-web-1\n");
    const columns = await runPlugin(["show", "-n", ns, "-ocustom-columns=NAME:.name,CLAIMS:.claims[*].name"]);
    assert.equal(columns.code, 0, columns.stderr);
    assert.equal(columns.stdout, "NAME   CLAIMS\ndb     data-db-0,data-db-1\nweb    data-web-0,data-web-1\n");
    const asJson = await runPlugin(["show", "db", "-n", ns, "-o", "jsonpath-as-json={.items[0].templates[0].name}"]);
    assert.equal(asJson.stdout, '[\n    "data"\n]\n');
    const history = await runPlugin(["history", "db", "-n", ns, "-o", "custom-columns=REVISION:.revision,TEMPLATES:.templates[*].metadata.name"]);
    assert.equal(history.code, 0, history.stderr);
    assert.equal(history.stdout, "REVISION   TEMPLATES\n1          data\n");
    // kubectl's errors, before anything is read: one line, exit 1.
    const bad = await runPlugin(["show", "-n", ns, "-o", "jsonpath={.items["]);
    assert.deepEqual([bad.code, bad.stdout, bad.stderr], [1, "", "error: error parsing jsonpath {.items[, unterminated array\n"]);
    const noColumns = await runPlugin(["history", "db", "-n", ns, "-o", "custom-columns="]);
    assert.deepEqual([noColumns.code, noColumns.stderr], [1, "error: custom-columns format specified but no custom columns given\n"]);
    const notHere = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "-o", "jsonpath={.kind}", "--dry-run=client"]);
    assert.equal(notHere.code, 1);
    assert.match(notHere.stderr, /^error: invalid --output "jsonpath=\{\.kind\}": must be one of json, yaml, name /);
  });

  test("a pending interrupted change is shown with how to finish it", async (t) => {
    const ns = namespace(t);
    apply(sts("db", ns).withClaim("data", "1Gi").build(), ns);
    await settled(ns, "db", 1);
    // Simulate a run killed right after its delete: journal saved, object orphan-deleted.
    const plan = JSON.parse((await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--dry-run=client", "-o", "json"])).stdout);
    const journal = {
      apiVersion: "appstorage.kubectl.io/v1alpha1",
      kind: "Journal",
      namespace: ns,
      name: "db",
      originalUid: plan.target.uid,
      originalResourceVersion: plan.target.resourceVersion,
      request: plan.request,
      step: "deleting",
      startedAt: new Date().toISOString(),
      updatedAt: new Date().toISOString(),
      by: "admin",
      holder: "test",
      leaseExpires: new Date(0).toISOString(),
      pods: plan.pods,
      claims: plan.claims.map((c: { name: string; uid: string }) => ({ name: c.name, uid: c.uid })),
      original: plan.original,
      desired: plan.desired,
    };
    apply(
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "appstorage-journal-db", labels: { "app.kubernetes.io/managed-by": "kubectl-appstorage" } },
        type: "appstorage.kubectl.io/journal",
        data: { "journal.json": Buffer.from(JSON.stringify(journal)).toString("base64") },
      },
      ns,
    );
    kubectl(["delete", "statefulset", "db", "-n", ns, "--cascade=orphan", "--wait"]);
    const before = uids(ns);

    const shown = await runPlugin(["show", "-n", ns]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /db \(deleted\)/);
    assert.match(shown.stdout, new RegExp(`pending change of statefulset.apps/db in namespace ${ns}: data=2Gi .* finish it with: kubectl appstorage set db data=2Gi -n ${ns}`));
    const finished = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"]);
    assert.equal(finished.code, 0, finished.stderr);
    assert.deepEqual(uids(ns), before);
    const after = await report(["db", "-n", ns]);
    assert.equal(after.items[0]!.pendingChange, undefined);
    assert.equal(after.items[0]!.templates[0]!.size, "2Gi");
  });

  test("a report larger than a pipe's buffer reaches the reader whole", async (t) => {
    const ns = namespace(t);
    // 150 StatefulSets with no replicas: about 100 KB of JSON, at once (no pods to wait for).
    const items = Array.from({ length: 150 }, (_, i) =>
      sts(`s${String(i).padStart(3, "0")}`, ns)
        .withClaim("data", "1Gi")
        .replicas(0)
        .build(),
    );
    kubectl(["create", "-n", ns, "-f", "-"], { input: JSON.stringify({ apiVersion: "v1", kind: "List", items }) });
    const r = await runPlugin(["show", "-n", ns, "-o", "json"]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.length > 65_536, `${r.stdout.length} bytes`);
    assert.equal((JSON.parse(r.stdout) as StorageReport).items.length, 150);
  });

  test("errors: not found, forbidden, unreachable: one line, non-zero", async (t) => {
    const ns = namespace(t);
    const missing = await runPlugin(["show", "nope", "-n", ns]);
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, `error: statefulsets.apps "nope" not found in namespace "${ns}"\n`);
    const empty = await runPlugin(["show", "-n", ns]);
    assert.equal(empty.code, 0);
    assert.equal(empty.stderr, `No resources found in ${ns} namespace.\n`);
    const forbidden = await runPlugin(["show", "-n", ns], { kubeconfig: userKubeconfig("nobody") });
    assert.equal(forbidden.code, 1);
    assert.match(forbidden.stderr, /^error: .*forbidden: User "nobody" cannot (list|get) resource "\w+"/);
    assert.equal(forbidden.stderr.trim().split("\n").length, 1);
    const unreachable = await runPlugin(["show", "-n", ns, "--request-timeout", "2s"], { kubeconfig: "/dev/null" });
    assert.ok(unreachable.code !== 0);
    assert.equal(unreachable.stderr.trim().split("\n").length, 1, unreachable.stderr);
  });
});
