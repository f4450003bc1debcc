// `set` and `diff` against the real control plane. Every test compares pod and claim uids before
// and after: nothing may be deleted or replaced, whatever happens.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { describe, type TestContext, test } from "node:test";
import type { StatefulSet } from "../../src/api/types";
import { sts } from "../fixtures/builders";
import { apply, claims, eventually, getSts, kubeconfig, kubectl, kubectlJson, kubectlTry, denyStatefulSetCreate, namespace, plugin, pods, runPlugin, settled, uids } from "../shared/harness";

const size = (ns: string, name: string) => claims(ns).find((c) => c.metadata.name === name)?.spec.resources?.requests?.["storage"];
const templateSize = (s: StatefulSet, i = 0) => s.spec.volumeClaimTemplates![i]!.spec.resources!.requests!["storage"];
const ownerUid = (o: { metadata: { ownerReferences?: { uid: string; controller?: boolean }[] } }) => o.metadata.ownerReferences?.find((r) => r.controller)?.uid;

/** A fresh namespace with db (claim template data 1Gi; more than one replica start in parallel), settled. */
async function settledDb(t: TestContext, replicas = 1): Promise<string> {
  const ns = namespace(t);
  const b = sts("db", ns).withClaim("data", "1Gi").replicas(replicas);
  if (replicas > 1) b.parallel();
  apply(b.build(), ns);
  await settled(ns, "db", replicas);
  return ns;
}

/** Everything of the spec except the claim templates, which is what must survive byte for byte. */
function specWithoutClaims(s: StatefulSet): unknown {
  const { volumeClaimTemplates: _drop, ...rest } = s.spec;
  return rest;
}

describe("set: the reference flow", () => {
  test("pgdata 1Gi -> 2Gi, scale 1 -> 2: ordinal 0 keeps 1Gi and its pod, ordinal 1 gets 2Gi", async (t) => {
    const ns = namespace(t);
    apply(sts("postgresql-k8s", ns).withClaim("pgdata", "1Gi").build(), ns);
    const before = await settled(ns, "postgresql-k8s", 1, { ready: true });
    const uidsBefore = uids(ns);

    const r = await runPlugin(["set", "postgresql-k8s", "pgdata=2Gi", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "statefulset.apps/postgresql-k8s recreated\n");
    assert.match(r.stderr, /deleted statefulset.apps\/postgresql-k8s with propagationPolicy=Orphan/);
    assert.match(r.stderr, /verified: 1 pod\(s\) adopted/);

    const after = getSts(ns, "postgresql-k8s");
    assert.notEqual(after.metadata.uid, before.metadata.uid);
    assert.equal(templateSize(after), "2Gi");
    assert.deepEqual(uids(ns), uidsBefore);
    assert.equal(ownerUid(pods(ns)[0]!), after.metadata.uid);
    assert.equal(kubectlTry(["get", "secret", "appstorage-journal-postgresql-k8s", "-n", ns]).code, 1, "journal removed");
    const change = JSON.parse(after.metadata.annotations!["appstorage.kubectl.io/last-change"]!);
    assert.deepEqual([change.from, change.to, change.by], [["pgdata=1Gi"], ["pgdata=2Gi"], "admin"]);
    const events = kubectlJson<{ items: { reason: string }[] }>(["get", "events.events.k8s.io", "-n", ns]).items;
    assert.ok(events.some((e) => e.reason === "ClaimTemplatesChanged"));

    kubectl(["scale", "statefulset", "postgresql-k8s", "-n", ns, "--replicas=2"]);
    await eventually("claim of ordinal 1", () => size(ns, "pgdata-postgresql-k8s-1"));
    assert.equal(size(ns, "pgdata-postgresql-k8s-0"), "1Gi");
    assert.equal(size(ns, "pgdata-postgresql-k8s-1"), "2Gi");
    const final = uids(ns);
    for (const [k, v] of Object.entries(uidsBefore)) assert.equal(final[k], v, `${k} kept its uid`);
    const s = await settled(ns, "postgresql-k8s", 2, { ready: true });
    assert.equal(s.status!.currentRevision, before.status!.currentRevision, "pod template revision unchanged");
  });

  test("a second identical set is a no-op", async (t) => {
    const ns = await settledDb(t);
    const uidsBefore = uids(ns);
    assert.equal((await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"])).code, 0);
    const uid = getSts(ns, "db").metadata.uid;
    const r = await runPlugin(["set", "db", "data=2048Mi", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "statefulset.apps/db unchanged\n");
    assert.equal(getSts(ns, "db").metadata.uid, uid);
    assert.deepEqual(uids(ns), uidsBefore);
  });
});

describe("set: what must survive", () => {
  test("a rich pod template and spec survive exactly, and no pod restarts", async (t) => {
    const ns = namespace(t);
    const obj = sts("rich", ns)
      .withClaim("data", "1Gi")
      .withClaim("logs", "1Gi")
      .replicas(3)
      .parallel()
      .annotations({ "example.com/owner": "team-a" })
      .edit((s) => {
        s.spec.template.metadata!.annotations = { "kubectl.kubernetes.io/restartedAt": "2026-11-01T00:00:00Z" };
        s.spec.template.spec["initContainers"] = [{ name: "init", image: "busybox:1.36", command: ["true"] }];
        s.spec.template.spec["tolerations"] = [{ key: "dedicated", operator: "Equal", value: "db", effect: "NoSchedule" }];
        s.spec.template.spec["affinity"] = {
          podAntiAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 50, podAffinityTerm: { topologyKey: "kubernetes.io/hostname", labelSelector: { matchLabels: { app: "rich" } } } }],
          },
        };
        s.spec.updateStrategy = { type: "RollingUpdate", rollingUpdate: { partition: 1 } };
        s.spec["revisionHistoryLimit"] = 3;
        s.spec["minReadySeconds"] = 5;
      })
      .build();
    apply(obj, ns);
    const before = await settled(ns, "rich", 3);
    const uidsBefore = uids(ns);
    const revisions = pods(ns).map((p) => p.metadata.labels!["controller-revision-hash"]);

    const r = await runPlugin(["set", "rich", "data=3Gi", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    const after = await settled(ns, "rich", 3);
    assert.deepEqual(specWithoutClaims(after), specWithoutClaims(before));
    assert.deepEqual(after.metadata.labels, before.metadata.labels);
    assert.equal(after.metadata.annotations!["example.com/owner"], "team-a");
    assert.equal(templateSize(after, 0), "3Gi");
    assert.equal(templateSize(after, 1), "1Gi");
    assert.equal(after.status!.updateRevision, before.status!.updateRevision);
    assert.deepEqual(uids(ns), uidsBefore);
    assert.deepEqual(
      pods(ns).map((p) => p.metadata.labels!["controller-revision-hash"]),
      revisions,
    );
  });

  test("whenDeleted: Delete: claims survive the orphan delete and are re-owned", async (t) => {
    const ns = namespace(t);
    apply(sts("ret", ns).withClaim("data", "1Gi").replicas(2).parallel().retention("Delete").build(), ns);
    await settled(ns, "ret", 2);
    const first = getSts(ns, "ret");
    await eventually("claims owned by the StatefulSet", () => claims(ns).length === 2 && claims(ns).every((c) => c.metadata.ownerReferences?.some((o) => o.uid === first.metadata.uid)));
    const uidsBefore = uids(ns);

    const r = await runPlugin(["set", "ret", "data=2Gi", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    const after = getSts(ns, "ret");
    assert.deepEqual(uids(ns), uidsBefore);
    await eventually("claims re-owned by the new StatefulSet", () => claims(ns).every((c) => c.metadata.ownerReferences?.some((o) => o.uid === after.metadata.uid)));
    assert.deepEqual(uids(ns), uidsBefore);
  });

  for (const policy of ["OrderedReady", "Parallel"] as const) {
    test(`podManagementPolicy ${policy}, 3 replicas`, async (t) => {
      const ns = namespace(t);
      const b = sts("pm", ns).withClaim("data", "1Gi").replicas(3);
      if (policy === "Parallel") b.parallel();
      apply(b.build(), ns);
      await settled(ns, "pm", 3, { ready: policy === "OrderedReady" });
      const uidsBefore = uids(ns);
      const r = await runPlugin(["set", "pm", "data=5Gi", "-n", ns, "--yes", "-o", "json"]);
      assert.equal(r.code, 0, r.stderr);
      const result = JSON.parse(r.stdout);
      assert.equal(result.kind, "Result");
      assert.equal(result.pods.length, 3);
      assert.ok(result.pods.every((p: { adopted: boolean }) => p.adopted));
      assert.deepEqual(uids(ns), uidsBefore);
      const after = getSts(ns, "pm");
      assert.equal(after.spec.podManagementPolicy, policy);
      for (const p of pods(ns)) assert.equal(ownerUid(p), after.metadata.uid);
    });
  }
});

describe("set: refusals change nothing", () => {
  test("bad input, unknown names, no terminal", async (t) => {
    const ns = await settledDb(t);
    const rv = getSts(ns, "db").metadata.resourceVersion;
    const uidsBefore = uids(ns);
    const cases: [string[], RegExp][] = [
      [["set", "db", "data=0", "--yes"], /size "0" must be greater than zero/],
      [["set", "db", "data=2GB", "--yes"], /unknown suffix "GB"/],
      [["set", "db", "nope=2Gi", "--yes"], /claim template "nope" not found in statefulset.apps\/db \(it has: data\)/],
      [["set", "db", "data=2Gi,no-such-class", "--yes"], /storage class "no-such-class" not found/],
      [["set", "missing", "data=2Gi", "--yes"], /statefulsets.apps "missing" not found/],
      [["set", "db", "data=2Gi"], /without confirmation: there is no terminal/],
      [["set", "db", "data=2Gi", "--dry-run=sometimes"], /Invalid dry-run value \(sometimes\)/],
    ];
    for (const [args, why] of cases) {
      const r = await runPlugin([...args, "-n", ns]);
      assert.equal(r.code, 1, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, why);
      assert.equal(r.stderr.trim().split("\n").length, 1, `one line: ${r.stderr}`);
      assert.equal(r.stdout, "");
    }
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
    assert.deepEqual(uids(ns), uidsBefore);
  });

  test("a rolling update in progress is refused unless --force", async (t) => {
    const ns = namespace(t);
    apply(
      sts("roll", ns)
        .withClaim("data", "1Gi")
        .replicas(2)
        .edit((s) => (s.spec.updateStrategy = { type: "OnDelete" }))
        .parallel()
        .build(),
      ns,
    );
    await settled(ns, "roll", 2);
    kubectl(["patch", "statefulset", "roll", "-n", ns, "--type=merge", "-p", JSON.stringify({ spec: { template: { metadata: { annotations: { bump: "1" } } } } })]);
    await eventually("a pending update", () => {
      const s = getSts(ns, "roll").status!;
      return s.currentRevision !== s.updateRevision;
    });
    const uidsBefore = uids(ns);
    const refused = await runPlugin(["set", "roll", "data=2Gi", "-n", ns, "--yes"]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /rolling update is in progress .* or pass --force/);
    const forced = await runPlugin(["set", "roll", "data=2Gi", "-n", ns, "--yes", "--force"]);
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stderr, /forced past/);
    assert.deepEqual(uids(ns), uidsBefore);
  });
});

describe("diff", () => {
  test("exit 1 with the change, exit 0 without, >1 on error; changes nothing", async (t) => {
    const ns = await settledDb(t);
    const rv = getSts(ns, "db").metadata.resourceVersion;
    const changed = await runPlugin(["diff", "db", "data=2Gi", "-n", ns]);
    assert.equal(changed.code, 1, changed.stderr);
    assert.match(changed.stdout, /^--- live\/apps.v1.StatefulSet\..*\n\+\+\+ merged\//);
    assert.match(changed.stdout, /^-\s+storage: 1Gi$/m);
    assert.match(changed.stdout, /^\+\s+storage: 2Gi$/m);
    // As kubectl diff: stdout is the diff alone; the claims and new ordinals are on stderr.
    assert.match(changed.stderr, /data-db-0 .* keeps 1Gi \(template 2Gi\)/);
    assert.doesNotMatch(changed.stdout, /keeps|new ordinals/);
    assert.doesNotMatch(changed.stdout, /\u001b/);
    const same = await runPlugin(["diff", "db", "data=1024Mi", "-n", ns]);
    assert.equal(same.code, 0, same.stderr);
    assert.equal(same.stdout, "");
    const bad = await runPlugin(["diff", "db", "data=zero", "-n", ns]);
    assert.ok(bad.code > 1);
    const usage = await runPlugin(["diff", "db", "-n", ns]);
    assert.ok(usage.code > 1);
    const plan = await runPlugin(["diff", "db", "data=2Gi", "-n", ns, "-o", "json"]);
    assert.equal(JSON.parse(plan.stdout).kind, "Plan");
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
  });
});

describe("set --dry-run", () => {
  test("client prints the plan, server asks the server; neither changes anything", async (t) => {
    const ns = await settledDb(t);
    const before = getSts(ns, "db");
    const uidsBefore = uids(ns);
    const client = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--dry-run=client"]);
    assert.equal(client.code, 0, client.stderr);
    assert.match(client.stdout, /claim template data: 1Gi -> 2Gi/);
    assert.match(client.stdout, /statefulset.apps\/db recreated \(dry run\)\n$/);
    const yaml = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--dry-run=client", "-o", "yaml"]);
    assert.match(yaml.stdout, /^apiVersion: appstorage.kubectl.io\/v1alpha1\nkind: Plan\n/);
    const server = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--dry-run=server"]);
    assert.equal(server.code, 0, server.stderr);
    assert.match(server.stderr, /server dry run: the re-created statefulset.apps\/db passes validation and admission/);
    assert.equal(server.stdout, "statefulset.apps/db recreated (server dry run)\n");
    const after = getSts(ns, "db");
    assert.equal(after.metadata.uid, before.metadata.uid);
    assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion);
    assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 1);
    assert.deepEqual(uids(ns), uidsBefore);
  });

  test("a bare --dry-run (even with --yes) is --dry-run=client, as in kubectl: the object keeps its uid", async (t) => {
    const ns = await settledDb(t);
    const before = getSts(ns, "db");
    const uidsBefore = uids(ns);
    for (const args of [
      ["set", "db", "data=2Gi", "--dry-run", "--yes"],
      ["set", "--dry-run", "db", "data=2Gi", "-y"],
    ]) {
      const r = await runPlugin([...args, "-n", ns]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /^Warning: --dry-run is deprecated and can be replaced with --dry-run=client\.\n/);
      assert.match(r.stdout, /statefulset.apps\/db recreated \(dry run\)\n$/);
    }
    const empty = await runPlugin(["set", "db", "data=2Gi", "--dry-run=", "--yes", "-n", ns]);
    assert.equal(empty.code, 1);
    assert.match(empty.stderr, /^error: Invalid dry-run value \(\)\. Must be "none", "server", or "client"\./);
    const after = getSts(ns, "db");
    assert.equal(after.metadata.uid, before.metadata.uid);
    assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion);
    assert.equal(after.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "1Gi");
    assert.deepEqual(uids(ns), uidsBefore);
    assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 1, "no journal was written");
  });
});

describe("set: interrupted and concurrent runs", () => {
  test("a denied re-create leaves pods running with a journal; the rerun finishes", async (t) => {
    const ns = await settledDb(t, 2);
    const uidsBefore = uids(ns);
    const allow = await denyStatefulSetCreate(t, ns);

    const denied = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes", "--timeout", "90s"]);
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /could not re-create statefulset.apps\/db: .*denied by test policy.*run the same command again/);
    assert.equal(kubectlTry(["get", "statefulset", "db", "-n", ns]).code, 1, "deleted (orphan)");
    assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 0, "journal kept");
    assert.deepEqual(uids(ns), uidsBefore);

    const other = await runPlugin(["set", "db", "data=3Gi", "-n", ns, "--yes"]);
    assert.equal(other.code, 1);
    // The line that finishes it repeats the run's flags (--timeout, the --kubeconfig runPlugin adds).
    assert.ok(
      other.stderr.includes(`interrupted change of statefulset.apps/db is pending (data=2Gi`) &&
        other.stderr.endsWith(`; finish it first with: kubectl appstorage set db data=2Gi --timeout 90s --kubeconfig ${kubeconfig()} -n ${ns}\n`),
      other.stderr,
    );

    await allow();
    // The failed run released its lock: the rerun need not wait for the lease to expire.
    const rerun = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes", "--timeout", "90s"]);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stderr, /an earlier run deleted it .* re-creating it now/);
    assert.equal(templateSize(getSts(ns, "db")), "2Gi");
    assert.deepEqual(uids(ns), uidsBefore);
    for (const p of pods(ns)) assert.equal(ownerUid(p), getSts(ns, "db").metadata.uid);
    assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 1, "journal removed");
  });

  test("two set at once: one re-creates, the other refuses or finds nothing to do", async (t) => {
    const ns = await settledDb(t, 2);
    const uidsBefore = uids(ns);
    const [a, b] = await Promise.all([runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"]), runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"])]);
    const outcomes = [a, b].map((r) => (r.code === 0 ? r.stdout.trim() : `refused: ${r.stderr.trim().split("\n").pop()}`)).sort();
    assert.equal(outcomes.filter((o) => o === "statefulset.apps/db recreated").length, 1, JSON.stringify(outcomes));
    const loser = outcomes.find((o) => o !== "statefulset.apps/db recreated")!;
    // The loser read the object before, during or after the winner's orphan delete: each is a refusal or nothing to do.
    assert.match(loser, /^(statefulset.apps\/db unchanged|refused: error: (another kubectl appstorage set|statefulset.apps\/db changed since|statefulset.apps\/db is being deleted))/);
    assert.deepEqual(uids(ns), uidsBefore);
    assert.equal(templateSize(getSts(ns, "db")), "2Gi");
  });

  test("a stale plan: the object changes while the user reads the plan; nothing is deleted", async (t) => {
    const ns = await settledDb(t);
    const uidsBefore = uids(ns);
    const uid = getSts(ns, "db").metadata.uid;
    // A real terminal (script(1) gives the plugin a pty), so set shows the plan and asks.
    const cmd = [plugin, "set", "db", "data=2Gi", "-n", ns, "--kubeconfig", kubeconfig()].map((a) => `'${a}'`).join(" ");
    const child = spawn("script", ["-qfec", cmd, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number>((r) => child.on("close", (c) => r(c ?? -1)));
    await eventually("the confirmation prompt", () => /\[y\/N\]/.test(output), 20_000);
    // The last thing before [y/N]: where it acts (the admin kubeconfig's context and server, the namespace).
    assert.match(output, new RegExp(`\\nwhere: context "[^"]+" \\(server https://127\\.0\\.0\\.1:\\d+\\), namespace ${ns}, user "[^"]+" \\[y/N\\]: `));
    kubectl(["label", "statefulset", "db", "-n", ns, "changed=meanwhile"]);
    child.stdin.write("y\n");
    const code = await exited;
    assert.equal(code, 1, output);
    assert.match(output, /changed since it was read .* nothing was changed/);
    const after = getSts(ns, "db");
    assert.equal(after.metadata.uid, uid);
    assert.equal(templateSize(after), "1Gi");
    assert.equal(after.metadata.labels!["changed"], "meanwhile");
    assert.deepEqual(uids(ns), uidsBefore);
    assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 1, "no journal left");
  });
});
