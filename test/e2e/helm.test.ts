// Helm and GitOps: a chart upgrade that changes a claim template fails on every Kubernetes
// release; `helm template | kubectl appstorage set -f -` makes the live templates equal to the
// chart's, and the same upgrade then goes through. With the real Helm 4 and Helm 3
// (lab/tools/helm/build.sh) and kubectl's server-side apply as a GitOps tool writes, on the real
// control plane. Every pod and claim keeps its uid (no pod is restarted: there is no node here,
// so the pods are the StatefulSet controller's, adopted without a change).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { StatefulSet } from "../../src/api/types";
import { sts } from "../fixtures/builders";
import { apply, claims, eventually, getSts, helm, kubeconfig, kubectl, kubectlTry, namespace, root, runPlugin, settled, storageClassFor, uids, volumeFor } from "../shared/harness";

const chart = (version: 1 | 2) => join(root, "test", "fixtures", "helm", `db-${version}`);

function run(cmd: string, args: string[], input?: string): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { encoding: "utf8", input, env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", KUBECONFIG: kubeconfig() } });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

const template = (s: StatefulSet) => s.spec.volumeClaimTemplates![0]!;

for (const major of [4, 3] as const) {
  describe(`Helm ${major}: a chart upgrade that changes the claim template`, () => {
    test("fails as users see it, goes through after set -f with the chart's manifest, and nothing is restarted", async (t) => {
      const ns = namespace(t, `helm${major}`);
      const h = helm(major);
      const install = run(h, ["install", "db", chart(1), "-n", ns]);
      assert.equal(install.code, 0, install.stderr);
      await settled(ns, "db", 2);
      // The failure this tool exists for: the server refuses the change of volumeClaimTemplates.
      const refused = run(h, ["upgrade", "db", chart(2), "-n", ns]);
      assert.notEqual(refused.code, 0, "the upgrade must fail before the plugin runs");
      assert.match(refused.stderr, /UPGRADE FAILED: .*StatefulSet.apps "db" is invalid: spec(\.volumeClaimTemplates)?: (Invalid value|Forbidden)/);
      const before = uids(ns);
      const manifest = run(h, ["template", "db", chart(2), "-n", ns]).stdout;
      const diff = await runPlugin(["diff", "-f", "-", "-n", ns], { input: manifest });
      assert.equal(diff.code, 1, diff.stderr);
      assert.match(diff.stdout, /^-\s+storage: 1Gi$/m);
      assert.match(diff.stdout, /^\+\s+storage: 2Gi$/m);
      assert.match(diff.stdout, /^\+\s+helm\.sh\/chart: db-2\.0\.0$/m);
      assert.match(diff.stderr, /^skipped (1 Service, 1 ConfigMap|1 ConfigMap, 1 Service): only StatefulSets' claim templates are changed$/m);
      // Helm 4 also relabels the existing claims (--relabel-existing); Helm 3's run leaves them, and is told how.
      const relabel = major === 4 ? ["--relabel-existing"] : [];
      const set = await runPlugin(["set", "-f", "-", "-n", ns, "--yes", ...relabel], { input: manifest });
      assert.equal(set.code, 0, set.stderr);
      assert.equal(set.stdout, `statefulset.apps/db recreated\n${major === 4 ? "persistentvolumeclaim/pgdata-db-0 labeled\npersistentvolumeclaim/pgdata-db-1 labeled\n" : ""}`);
      assert.match(set.stderr, /verified: 2 pod\(s\) adopted/);
      if (major === 3)
        assert.match(
          set.stderr,
          /^Warning: existing claim\(s\) pgdata-db-0, pgdata-db-1 keep their labels and annotations; template pgdata's differ: add --relabel-existing to patch them \(no restart\)$/m,
        );
      const chartLabels = () => claims(ns).map((c) => c.metadata.labels?.["helm.sh/chart"]);
      assert.deepEqual(chartLabels(), major === 4 ? ["db-2.0.0", "db-2.0.0"] : ["db-1.0.0", "db-1.0.0"]);
      const after = getSts(ns, "db");
      assert.equal(template(after).spec.resources!.requests!["storage"], "2Gi");
      assert.equal(template(after).metadata.labels!["helm.sh/chart"], "db-2.0.0");
      // Helm's ownership is kept (its labels and annotations), so the same upgrade now succeeds.
      assert.equal(after.metadata.annotations!["meta.helm.sh/release-name"], "db");
      const upgrade = run(h, ["upgrade", "db", chart(2), "-n", ns]);
      assert.equal(upgrade.code, 0, upgrade.stderr);
      assert.equal((await runPlugin(["diff", "-f", "-", "-n", ns], { input: manifest })).code, 0, "nothing left to change");
      assert.deepEqual(uids(ns), before, "every pod and claim kept its uid");
      assert.deepEqual(
        kubectl(["get", "pvc", "-n", ns, "-o", "jsonpath={.items[*].spec.resources.requests.storage}"]).split(" "),
        ["1Gi", "1Gi"],
        "existing claims keep their size (new ordinals get 2Gi)",
      );
      t.after(() => run(h, ["uninstall", "db", "-n", ns]));
    });
  });
}

describe("set -f as a GitOps tool writes: kubectl apply --server-side", () => {
  test("the v2 manifest is refused before and applied after", async (t) => {
    const ns = namespace(t, "gitops");
    const v1 = run(helm(4), ["template", "db", chart(1), "-n", ns]).stdout;
    const v2 = run(helm(4), ["template", "db", chart(2), "-n", ns]).stdout;
    const applied = run("kubectl", ["apply", "--server-side", "--field-manager", "gitops", "-f", "-"], v1);
    assert.equal(applied.code, 0, applied.stderr);
    await settled(ns, "db", 2);
    const refused = run("kubectl", ["apply", "--server-side", "--field-manager", "gitops", "-f", "-"], v2);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /StatefulSet(\.apps)? "db" is invalid: spec(\.volumeClaimTemplates)?: (Invalid value|Forbidden)/);
    const before = uids(ns);
    const set = await runPlugin(["set", "-f", "-", "--yes"], { input: v2 });
    assert.equal(set.code, 0, set.stderr);
    const again = run("kubectl", ["apply", "--server-side", "--field-manager", "gitops", "-f", "-"], v2);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(uids(ns), before);
    t.after(() => kubectlTry(["delete", "ns", ns, "--wait=false"]));
  });
});

describe("set -f refuses before anything changes", () => {
  const manifest = (s: StatefulSet) => JSON.stringify(s);
  test("a StatefulSet not in the cluster, a template added without its mount, one removed with its mount left, a renamed one, another namespace than -n", async (t) => {
    const ns = namespace(t, "mani");
    apply(sts("db", ns).withClaim("data", "1Gi").build(), ns);
    await settled(ns, "db", 1);
    const before = uids(ns);
    const rv = getSts(ns, "db").metadata.resourceVersion;
    const cases: [what: string, doc: StatefulSet, extra: string[], why: RegExp][] = [
      ["not in the cluster", sts("web", ns).withClaim("data", "2Gi").build(), [], /statefulset\.apps\/web in namespace \S+ of the manifest is not in the cluster: install it/],
      // A template added or removed with its mounts is planned (test/e2e/claim-templates.test.ts); without them it is refused.
      [
        "adds a template nothing mounts",
        sts("db", ns).withClaim("data", "2Gi").withClaim("logs", "1Gi").build(),
        [],
        /the manifest adds claim template logs but no container .*: nothing would use it/,
      ],
      [
        "removes a template still mounted",
        sts("db", ns).mount("data", "/data").build(),
        [],
        /container main of the manifest mounts "data", which the manifest defines neither as a claim template nor as a volume/,
      ],
      [
        "renames a template",
        sts("db", ns).withClaim("pgdata", "2Gi").build(),
        [],
        /the manifest names claim template\(s\) pgdata where the cluster has data: a renamed template gives every pod new, empty volumes/,
      ],
      ["another namespace than -n", sts("db", ns).withClaim("data", "2Gi").build(), ["-n", "elsewhere"], /the namespace from the provided object "\S+" does not match the namespace "elsewhere"/],
    ];
    for (const [what, doc, extra, why] of cases) {
      for (const command of ["diff", "set"]) {
        const r = await runPlugin([command, "-f", "-", ...extra, ...(command === "set" ? ["--yes"] : [])], { input: manifest(doc) });
        assert.equal(r.code, command === "diff" ? 2 : 1, `${what}: ${r.stderr}`);
        assert.match(r.stderr, why, what);
        assert.equal(r.stderr.split("\n").filter((l) => l.startsWith("error:")).length, 1, `${what}: one line`);
      }
    }
    // As kubectl diff: 0 no change, 1 changes, more than 1 an error.
    assert.equal((await runPlugin(["diff", "-f", "-"], { input: manifest(sts("db", ns).withClaim("data", "1Gi").build()) })).code, 0);
    assert.equal((await runPlugin(["diff", "-f", "-"], { input: manifest(sts("db", ns).withClaim("data", "2Gi").build()) })).code, 1);
    const notYaml = await runPlugin(["diff", "-f", "-"], { input: "a: [\n" });
    assert.equal(notYaml.code, 2);
    assert.match(notYaml.stderr, /^error: standard input is not YAML or JSON \(.*\); nothing was changed\n$/);
    const stray = await runPlugin(["set", "db", "data=2Gi", "-f", "-"], { input: "{}" });
    assert.match(stray.stderr, /^error: -f FILE takes the StatefulSets and their claim templates from the manifest: give no StatefulSet, directive, -l, -A or --plan with it/);
    assert.deepEqual(uids(ns), before);
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
  });

  test("a change the cluster cannot honour for existing claims: said without a flag, refused with --resize-existing, each naming --migrate-existing", async (t) => {
    const ns = namespace(t, "mani");
    const fixed = storageClassFor(t, ns, { expandable: false });
    for (const c of ["data-db-0", "data-db-1"]) volumeFor(t, ns, c, "1Gi", fixed);
    apply(sts("db", ns).withClaim("data", "1Gi", fixed).replicas(2).parallel().build(), ns);
    await settled(ns, "db", 2);
    await eventually("both claims Bound", () => claims(ns).filter((c) => c.status?.phase === "Bound").length === 2, 60_000);
    const before = uids(ns);
    const rv = getSts(ns, "db").metadata.resourceVersion;
    const v2 = JSON.stringify(sts("db", ns).withClaim("data", "2Gi", fixed).replicas(2).parallel().build());
    const said = await runPlugin(["diff", "-f", "-"], { input: v2 });
    assert.equal(said.code, 1, said.stderr);
    assert.match(
      said.stderr,
      new RegExp(
        // The line every plan has (set db data=2Gi too), under the claims it names.
        "^existing claims keep their size: data-db-0, data-db-1 \\(1Gi, template data 2Gi\\): their class does not expand volumes; add --migrate-existing to move them to new volumes, the data copied$",
        "m",
      ),
    );
    for (const command of ["diff", "set"]) {
      const refused = await runPlugin([command, "-f", "-", "--resize-existing", ...(command === "set" ? ["--yes"] : [])], { input: v2 });
      assert.equal(refused.code, command === "diff" ? 2 : 1, refused.stderr);
      assert.match(
        refused.stderr,
        new RegExp(`^error: claim\\(s\\) data-db-0, data-db-1 have storage class "${fixed}", which does not allow volume expansion; nothing was changed: use --migrate-existing`, "m"),
      );
    }
    assert.deepEqual(uids(ns), before);
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
  });

  test("what the manifest changes beyond the claim templates is named and left alone", async (t) => {
    const ns = namespace(t, "mani");
    apply(sts("db", ns).withClaim("data", "1Gi").build(), ns);
    await settled(ns, "db", 1);
    const live = getSts(ns, "db");
    const wanted = sts("db", ns).withClaim("data", "2Gi").replicas(3).build();
    wanted.spec.template.metadata = { ...wanted.spec.template.metadata, annotations: { rollout: "v2" } };
    const r = await runPlugin(["set", "-f", "-", "--yes"], { input: JSON.stringify(wanted) });
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stderr,
      /Warning: left for helm upgrade or your GitOps tool \(the manifest changes them too\): spec\.replicas, spec\.template \(the pod template: the next upgrade rolls every pod\)\n/,
    );
    const after = getSts(ns, "db");
    assert.equal(after.spec.replicas, live.spec.replicas, "replicas left alone");
    assert.deepEqual(after.spec.template, live.spec.template, "the pod template left alone");
    assert.equal(template(after).spec.resources!.requests!["storage"], "2Gi");
  });
});
