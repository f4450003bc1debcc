// set -f with a manifest that adds a claim template with the mount that uses it, or drops one with
// its mount, on the real control plane: diff, --dry-run=server, the refusals (each with why and what
// works), and the change itself, whose pods restart once each, one at a time, through the Eviction
// API. There is no kubelet here: the test plays it (playKubelet) and marks a pod Running and Ready
// once the claims it mounts are Bound, as a kubelet starts a pod only once its volumes are there; the
// StatefulSet controller, the garbage collector and the volume binder are the real ones. A kill
// during the restarts is finished by the same command.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test, type TestContext } from "node:test";
import { promisify } from "node:util";
import type { PersistentVolumeClaim, Pod, StatefulSet } from "../../src/api/types";
import { type StatefulSetBuilder, sts } from "../fixtures/builders";
import { apply, claims, eventually, getSts, kubeconfig, kubectlTry, namespace, pods, runPlugin, settled, storageClassFor, volumeFor } from "../shared/harness";
import { killAt } from "../shared/kill";
import { maxDown, watchPods } from "../shared/node";

const execFileAsync = promisify(execFile);
const kubectlAsync = async (args: string[]) => (await execFileAsync("kubectl", ["--kubeconfig", kubeconfig(), ...args], { maxBuffer: 32 * 2 ** 20 })).stdout;

/**
 * Plays the kubelet for one namespace (there is none here): a pod whose claims are all Bound is
 * marked Running and Ready, as a kubelet starts a pod once its volumes are attached.
 */
function playKubelet(ns: string): { stop: () => Promise<void> } {
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const [podList, claimList] = await Promise.all([kubectlAsync(["get", "pods", "-n", ns, "-o", "json"]), kubectlAsync(["get", "pvc", "-n", ns, "-o", "json"])]);
        const bound = new Set((JSON.parse(claimList) as { items: PersistentVolumeClaim[] }).items.filter((c) => c.status?.phase === "Bound").map((c) => c.metadata.name));
        for (const p of (JSON.parse(podList) as { items: Pod[] }).items) {
          if (p.metadata.deletionTimestamp || p.status?.phase === "Running") continue;
          if (!(p.spec?.volumes ?? []).every((v) => !v.persistentVolumeClaim || bound.has(v.persistentVolumeClaim.claimName))) continue;
          const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
          const status = { phase: "Running", conditions: ["Ready", "ContainersReady"].map((type) => ({ type, status: "True", lastTransitionTime: now })) };
          await kubectlAsync(["patch", "pod", p.metadata.name!, "-n", ns, "--subresource=status", "--type=merge", "-p", JSON.stringify({ status })]).catch(() => undefined);
        }
      } catch {
        // A namespace being deleted, a pod gone between list and patch: the next round sees.
      }
      await new Promise((r) => setTimeout(r, 150));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

const replicas = 3;
const members = ["db-0", "db-1", "db-2"];

/** db: OrderedReady, three replicas, each template's claims on volumes of their own (bound by the real binder). */
function db(ns: string, cls: string, templates: [name: string, path: string][]): StatefulSetBuilder {
  const b = sts("db", ns).replicas(replicas);
  for (const [name, path] of templates) b.withClaim(name, "1Gi", cls).mount(name, path);
  return b;
}

function volumes(t: TestContext, ns: string, cls: string, template: string): void {
  for (let o = 0; o < replicas; o++) volumeFor(t, ns, `${template}-db-${o}`, "1Gi", cls);
}

async function running(t: TestContext, prefix: string, templates: [string, string][]): Promise<{ ns: string; cls: string; live: StatefulSet }> {
  const ns = namespace(t, prefix);
  const cls = storageClassFor(t, ns, { expandable: false });
  for (const [name] of templates) volumes(t, ns, cls, name);
  const kubelet = playKubelet(ns);
  t.after(() => kubelet.stop());
  apply(db(ns, cls, templates).build(), ns);
  return { ns, cls, live: await settled(ns, "db", replicas, { ready: true }) };
}

function manifestFile(s: StatefulSet): string {
  const file = join(mkdtempSync(join(tmpdir(), "appstorage-manifest-")), "db.yaml");
  writeFileSync(file, JSON.stringify(s));
  return file;
}

const podUids = (ns: string) => Object.fromEntries(pods(ns).map((p) => [p.metadata.name!, p.metadata.uid!]));
const claimUids = (ns: string) => Object.fromEntries(claims(ns).map((c) => [c.metadata.name!, c.metadata.uid!]));
const volumesOf = (p: Pod) => (p.spec?.volumes ?? []).filter((v) => v.persistentVolumeClaim).map((v) => `${v.name}:${v.persistentVolumeClaim!.claimName}`);
const evicted = (stderr: string) => [...stderr.matchAll(/^\[[\d.]+s\] evicted pod (\S+) /gm)].map((m) => m[1]);

describe("set -f adds a claim template with its mount", () => {
  test("diff, --dry-run=server, the refusals; then every pod restarts once, lowest ordinal first, with its new claim; old claims keep their uids", async (t) => {
    const { ns, cls, live } = await running(t, "tpladd", [["pgdata", "/data"]]);
    const v2 = db(ns, cls, [
      ["pgdata", "/data"],
      ["logs", "/logs"],
    ]).build();
    const file = manifestFile(v2);
    const rv = live.metadata.resourceVersion;

    const diff = await runPlugin(["diff", "-f", file, "-n", ns]);
    assert.equal(diff.code, 1, diff.stderr);
    assert.match(diff.stdout, /^\+\s+name: logs$/m);
    assert.match(diff.stdout, /^\+\s+- mountPath: \/logs$/m);
    assert.match(
      diff.stderr,
      /^Warning: the manifest adds claim template\(s\) logs with the pod template's mounts: every pod of statefulset.apps\/db restarts once \(3 pod\(s\)\), one at a time, lowest ordinal first, through the Eviction API; existing claims and their data are untouched$/m,
    );

    // A budget that allows no disruption: the server's dry run of each eviction says so before any change.
    apply({ apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "db" }, spec: { maxUnavailable: 0, selector: { matchLabels: { app: "db" } } } }, ns);
    await eventually("the budget to be computed", () => kubectlTry(["get", "pdb", "db", "-n", ns, "-o", "jsonpath={.status.expectedPods}"]).stdout === "3");
    const dry = await runPlugin(["set", "-f", file, "-n", ns, "--dry-run=server"]);
    kubectlTry(["delete", "pdb", "db", "-n", ns]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stderr, /^Warning: a PodDisruptionBudget allows no eviction of pod db-0 now \(.*\): its restart will wait for the budget, up to --timeout$/m);
    assert.equal(dry.stdout, "statefulset.apps/db recreated (server dry run)\n");
    assert.match(
      dry.stderr,
      /server dry run: the re-created statefulset.apps\/db passes validation and admission \(claim templates pgdata, logs; the pod template mounts logs at main:\/logs\); then its 3 pod\(s\) would restart one at a time/,
    );
    const client = await runPlugin(["set", "-f", file, "-n", ns, "--dry-run=client"]);
    assert.equal(client.code, 0, client.stderr);
    assert.match(client.stdout, /^the pod template changes, so every pod of statefulset.apps\/db restarts once, one at a time, lowest ordinal first: .*: db-0, db-1, db-2$/m);
    assert.match(client.stdout, /^ {2}each is evicted \(the Eviction API: PodDisruptionBudgets are respected\)/m);

    // Refused, each with why and what works; nothing changes.
    const refusals: [StatefulSet, RegExp][] = [
      [
        db(ns, cls, [["pgdata", "/data"]])
          .withClaim("logs", "1Gi", cls)
          .build(),
        /nothing would use it; add its volumeMount to the pod template/,
      ],
      [
        db(ns, cls, [
          ["pgdata", "/data"],
          ["logs", "/logs"],
        ])
          .mount("cache", "/cache")
          .build(),
        /mounts "cache", which the manifest defines neither as a claim template nor as a volume/,
      ],
      [
        db(ns, cls, [
          ["pgdata", "/var/lib/data"],
          ["logs", "/logs"],
        ]).build(),
        /changes where claim pgdata is mounted \(container main at \/data -> container main at \/var\/lib\/data\)/,
      ],
      [db(ns, cls, [["data", "/data"]]).build(), /a renamed template gives every pod new, empty volumes .* keep the template's name/],
    ];
    for (const [wanted, why] of refusals) {
      const r = await runPlugin(["set", "-f", manifestFile(wanted), "-n", ns, "--yes"]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, why);
    }
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv, "nothing changed");

    volumes(t, ns, cls, "logs");
    const before = { pods: podUids(ns), claims: claimUids(ns) };
    const watch = watchPods(ns);
    const set = await runPlugin(["set", "-f", file, "-n", ns, "--yes"]);
    await watch.stop();
    assert.equal(set.code, 0, set.stderr);
    assert.equal(set.stdout, "statefulset.apps/db recreated\npod/db-0 restarted\npod/db-1 restarted\npod/db-2 restarted\n");
    assert.deepEqual(evicted(set.stderr), members, "one at a time, lowest ordinal first");
    assert.ok(maxDown(watch.seen, members) <= 1, "never more than one pod down");

    const after = getSts(ns, "db");
    assert.deepEqual(after.spec.updateStrategy, live.spec.updateStrategy, "the updateStrategy is put back exactly");
    assert.deepEqual(
      after.spec.volumeClaimTemplates!.map((c) => c.metadata.name),
      ["pgdata", "logs"],
    );
    const now = Object.fromEntries(pods(ns).map((p) => [p.metadata.name!, p]));
    for (const [o, name] of members.entries()) {
      const p = now[name]!;
      assert.notEqual(p.metadata.uid, before.pods[name], `${name} restarted`);
      assert.equal(p.metadata.labels!["controller-revision-hash"], after.status!.updateRevision, `${name} runs the new pod template`);
      assert.deepEqual(volumesOf(p).sort(), [`logs:logs-db-${o}`, `pgdata:pgdata-db-${o}`]);
    }
    const claimsNow = Object.fromEntries(claims(ns).map((c) => [c.metadata.name!, c]));
    for (const [o] of members.entries()) {
      assert.equal(claimsNow[`pgdata-db-${o}`]!.metadata.uid, before.claims[`pgdata-db-${o}`], "old claims keep their uid");
      assert.equal(claimsNow[`logs-db-${o}`]!.status!.phase, "Bound");
    }
    assert.notEqual(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 0, "the journal is removed");
    assert.equal((await runPlugin(["diff", "-f", file, "-n", ns])).code, 0, "nothing left to change");
    // undo puts templates back, it does not remove one: said, with what does.
    const undo = await runPlugin(["undo", "db", "-n", ns, "--yes"]);
    assert.equal(undo.code, 1, undo.stderr);
    assert.match(
      undo.stderr,
      /^error: revision 1 has no claim template logs, which a later change added with its mounts; undo does not remove templates: remove it with set -f and a manifest without it/m,
    );
  });
});

describe("set -f removes a claim template with its mount", () => {
  test("every pod restarts once, highest ordinal first; the removed template's claims are kept, whatever the retention policy, and listed with their delete commands", async (t) => {
    const { ns, cls, live } = await running(t, "tplrm", [
      ["pgdata", "/data"],
      ["cache", "/cache"],
    ]);
    // whenDeleted: Delete gives the claims an ownerReference to the StatefulSet: the removed template's must lose it.
    kubectlTry(["patch", "sts", "db", "-n", ns, "--type=merge", "-p", JSON.stringify({ spec: { persistentVolumeClaimRetentionPolicy: { whenDeleted: "Delete", whenScaled: "Retain" } } })]);
    await settled(ns, "db", replicas, { ready: true });
    const before = { pods: podUids(ns), claims: claimUids(ns) };
    const v2 = db(ns, cls, [["pgdata", "/data"]])
      .edit((s) => (s.spec.persistentVolumeClaimRetentionPolicy = { whenDeleted: "Delete", whenScaled: "Retain" }))
      .build();
    const set = await runPlugin(["set", "-f", manifestFile(v2), "-n", ns, "--yes"]);
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(evicted(set.stderr), [...members].reverse(), "highest ordinal first");
    assert.match(
      set.stderr,
      new RegExp(
        `^Warning: claim template cache is removed: its claim\\(s\\) cache-db-0, cache-db-1, cache-db-2 are kept with their data, whatever persistentVolumeClaimRetentionPolicy says; delete them by hand once you no longer need them: kubectl delete persistentvolumeclaim cache-db-0 -n ${ns}; `,
        "m",
      ),
    );
    const after = getSts(ns, "db");
    assert.deepEqual(after.spec.updateStrategy, live.spec.updateStrategy);
    for (const p of pods(ns)) assert.ok(!volumesOf(p).some((v) => v.startsWith("cache:")), `${p.metadata.name} no longer mounts cache`);
    const claimsNow = Object.fromEntries(claims(ns).map((c) => [c.metadata.name!, c]));
    for (const o of [0, 1, 2]) {
      const cache = claimsNow[`cache-db-${o}`]!;
      assert.equal(cache.metadata.uid, before.claims[`cache-db-${o}`], "the removed template's claims are kept");
      assert.deepEqual(cache.metadata.ownerReferences ?? [], [], "and owned by nothing that would delete them");
      assert.equal(claimsNow[`pgdata-db-${o}`]!.metadata.uid, before.claims[`pgdata-db-${o}`]);
    }
  });
});

describe("a kill while the pods restart", () => {
  test("leaves the journal and updateStrategy OnDelete; the same command goes on from the pods' revisions and puts the strategy back", async (t) => {
    const { ns, cls, live } = await running(t, "tplkill", [["pgdata", "/data"]]);
    volumes(t, ns, cls, "logs");
    const file = manifestFile(
      db(ns, cls, [
        ["pgdata", "/data"],
        ["logs", "/logs"],
      ]).build(),
    );
    const before = claimUids(ns);
    // Killed after the server evicted db-1, before the plugin heard back.
    await killAt(["set", "-f", file, "-n", ns, "--yes"], { signature: "create pods/eviction", nth: 1 }, "hold-after");
    assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 0, "the journal is kept");
    assert.deepEqual(getSts(ns, "db").spec.updateStrategy, { type: "OnDelete" });
    const rerun = await runPlugin(["set", "-f", file, "-n", ns, "--yes"]);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stderr, /an earlier run was restarting the pods of statefulset.apps\/db and was interrupted; going on from where it stopped/);
    assert.match(rerun.stderr, /pod db-0 runs the new pod template already/);
    assert.equal(rerun.stdout, "statefulset.apps/db recreated\npod/db-2 restarted\n");
    assert.deepEqual(evicted(rerun.stderr), ["db-2"], "db-1 was evicted by the killed run and is not evicted again");
    const after = getSts(ns, "db");
    assert.deepEqual(after.spec.updateStrategy, live.spec.updateStrategy);
    for (const p of pods(ns)) assert.equal(p.metadata.labels!["controller-revision-hash"], after.status!.updateRevision);
    const now = claimUids(ns);
    for (const [name, uid] of Object.entries(before)) assert.equal(now[name], uid);
    assert.notEqual(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 0);
  });
});
