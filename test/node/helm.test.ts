// The Helm flow on a real node, with running pods: helm install v1 of the test chart (its pods
// Running, each writing data onto its claim of the CSI driver), helm upgrade to v2 (a bigger claim
// template, another chart label on it) refused by the server as users see it, `helm template v2 |
// kubectl appstorage set -f - --yes`, and the same upgrade then goes through. No pod restarted
// (container ids and restart counts), every claim kept (uids, sizes), every payload's checksum equal,
// read in the running containers. Then v3 of the chart, which adds a claim template (wal) and its
// mount: the upgrade is refused too, `set -f` restarts each pod once, one at a time, with its new
// claim mounted and its old claim and data kept, and the upgrade then goes through without a
// rollout. With the real Helm 4 and Helm 3 (lab/tools/helm/build.sh).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, test } from "node:test";
import { claims, eventually, getSts, helm, kubeconfig, kubectl, namespace, root, runPlugin, uids } from "../shared/harness";
import { allReady, claimStatus, maxDown, running, watchPods, workloadImage } from "../shared/node";

const chart = (version: 1 | 2 | 3) => join(root, "test", "fixtures", "helm", `db-${version}`);
// The node's image (no registry here); the chart's own default names one a user would pull.
const values = ["--set", `image=${workloadImage}`];

function run(cmd: string, args: string[], input?: string): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { encoding: "utf8", input, env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", KUBECONFIG: kubeconfig() } });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** Runs a script in the chart's container (named db). */
function inPod(ns: string, pod: string, script: string): string {
  return kubectl(["exec", "-n", ns, pod, "-c", "db", "--", "sh", "-c", script]);
}

/** 1 MiB of random bytes on each pod's claim, written once: a new, empty volume would not have them. */
function writePayloads(ns: string, pods: string[]): Record<string, string> {
  return Object.fromEntries(pods.map((p) => [p, inPod(ns, p, "head -c 1048576 /dev/urandom > /data/payload && sync && sha256sum /data/payload").split(/\s+/)[0]!]));
}
const payloads = (ns: string, pods: string[]) => Object.fromEntries(pods.map((p) => [p, inPod(ns, p, "sha256sum /data/payload").split(/\s+/)[0]!]));
/**
 * helm upgrade to the chart's version goes through, leaves nothing for diff -f of its manifest, and
 * starts no rollout: whatever it set in motion shows once the StatefulSet controller has seen the
 * upgraded object (a changed pod template as a new update revision), so that is waited for, not a while.
 */
async function upgradeWithoutRollout(h: string, ns: string, version: 2 | 3, manifest: string): Promise<void> {
  const upgrade = run(h, ["upgrade", "db", chart(version), "-n", ns, ...values]);
  assert.equal(upgrade.code, 0, upgrade.stderr);
  assert.equal((await runPlugin(["diff", "-f", "-", "-n", ns], { input: manifest })).code, 0, "nothing left to change");
  await eventually(
    "the StatefulSet controller observed the upgraded object",
    () => {
      const s = getSts(ns, "db");
      return (s.status?.observedGeneration ?? 0) >= (s.metadata.generation ?? 1);
    },
    120_000,
  );
  const upgraded = getSts(ns, "db");
  assert.equal(upgraded.status?.updateRevision, upgraded.status?.currentRevision, "no rollout: the upgrade left the pod template as it was");
}
const requests = (ns: string) => Object.fromEntries(claims(ns).map((c) => [c.metadata.name!, [c.status?.phase, c.spec.resources?.requests?.["storage"], c.status?.capacity?.["storage"]]]));

for (const major of [4, 3] as const) {
  describe(`node: Helm ${major}, a chart upgrade that changes the claim template, with running pods`, { timeout: 600_000 }, () => {
    test("refused by the server, goes through after set -f; no pod restarted, every claim and its data kept", async (t) => {
      const ns = namespace(t, `helm${major}`);
      const h = helm(major);
      t.after(() => run(h, ["uninstall", "db", "-n", ns]));
      const install = run(h, ["install", "db", chart(1), "-n", ns, ...values]);
      assert.equal(install.code, 0, install.stderr);
      const pods = ["db-0", "db-1"];
      await allReady(ns, "db", 2);
      const data = writePayloads(ns, pods);
      const before = running(ns, "db");
      const ids = uids(ns);
      const sizes = requests(ns);
      assert.deepEqual(sizes, { "pgdata-db-0": ["Bound", "1Gi", "1Gi"], "pgdata-db-1": ["Bound", "1Gi", "1Gi"] });

      const refused = run(h, ["upgrade", "db", chart(2), "-n", ns, ...values]);
      assert.notEqual(refused.code, 0, "the upgrade must fail before the plugin runs");
      assert.match(refused.stderr, /UPGRADE FAILED: .*StatefulSet.apps "db" is invalid: spec(\.volumeClaimTemplates)?: (Invalid value|Forbidden)/);

      const manifest = run(h, ["template", "db", chart(2), "-n", ns, ...values]);
      assert.equal(manifest.code, 0, manifest.stderr);
      const diff = await runPlugin(["diff", "-f", "-", "-n", ns], { input: manifest.stdout });
      assert.equal(diff.code, 1, diff.stderr);
      // The CSI class expands volumes: the way to bigger existing claims is named.
      assert.match(diff.stderr, /^existing claims keep their size: pgdata-db-0, pgdata-db-1 \(1Gi, template pgdata 2Gi\): add --resize-existing to grow them too$/m);
      const relabel = major === 4 ? ["--relabel-existing"] : [];
      const set = await runPlugin(["set", "-f", "-", "-n", ns, "--yes", ...relabel], { input: manifest.stdout });
      assert.equal(set.code, 0, set.stderr);
      assert.equal(set.stdout, `statefulset.apps/db recreated\n${major === 4 ? "persistentvolumeclaim/pgdata-db-0 labeled\npersistentvolumeclaim/pgdata-db-1 labeled\n" : ""}`);
      assert.match(set.stderr, /verified: 2 pod\(s\) adopted by uid \S+ unchanged \(same uid and revision\), 2 claim\(s\) unchanged/);

      await upgradeWithoutRollout(h, ns, 2, manifest.stdout);
      const after = await allReady(ns, "db", 2);
      assert.deepEqual(after, before, "same pods, same containers, no restarts");
      assert.deepEqual(uids(ns), ids, "every pod and claim kept its uid");
      assert.deepEqual(requests(ns), sizes, "every claim kept its size");
      assert.deepEqual(payloads(ns, pods), data, "every payload read back in the running containers");
      assert.deepEqual(
        claims(ns).map((c) => c.metadata.labels?.["helm.sh/chart"]),
        major === 4 ? ["db-2.0.0", "db-2.0.0"] : ["db-1.0.0", "db-1.0.0"],
      );
    });

    test("an upgrade that adds a claim template: refused, goes through after set -f; each pod restarted once, one at a time, with its new claim mounted; old claims and data kept", async (t) => {
      const ns = namespace(t, `helm${major}add`);
      const h = helm(major);
      t.after(() => run(h, ["uninstall", "db", "-n", ns]));
      const install = run(h, ["install", "db", chart(1), "-n", ns, ...values]);
      assert.equal(install.code, 0, install.stderr);
      const pods = ["db-0", "db-1"];
      const first = await allReady(ns, "db", 2);
      const data = writePayloads(ns, pods);
      const ids = uids(ns);

      const refused = run(h, ["upgrade", "db", chart(3), "-n", ns, ...values]);
      assert.notEqual(refused.code, 0, "the upgrade must fail before the plugin runs");
      assert.match(refused.stderr, /UPGRADE FAILED: .*StatefulSet.apps "db" is invalid: spec(\.volumeClaimTemplates)?: (Invalid value|Forbidden)/);

      const manifest = run(h, ["template", "db", chart(3), "-n", ns, ...values]);
      assert.equal(manifest.code, 0, manifest.stderr);
      const watch = watchPods(ns);
      const set = await runPlugin(["set", "-f", "-", "-n", ns, "--yes", "--timeout", "240s"], { input: manifest.stdout });
      assert.equal(set.code, 0, set.stderr);
      assert.equal(set.stdout, "statefulset.apps/db recreated\npod/db-0 restarted\npod/db-1 restarted\n");
      const added = await allReady(ns, "db", 2);
      await watch.stop();
      assert.ok(maxDown(watch.seen, pods) <= 1, "never more than one replica down");
      for (const [o, n] of pods.entries()) {
        assert.notEqual(added[n]!.uid, first[n]!.uid, `${n}: restarted once`);
        assert.equal(claimStatus(ns, `wal-db-${o}`).phase, "Bound", `${n}: its new claim is Bound`);
        assert.match(inPod(ns, n, "grep -c ' /wal ' /proc/mounts || true").trim(), /^1$/, `${n}: and mounted at /wal`);
        assert.equal(uids(ns)[`pvc/pgdata-${n}`], ids[`pvc/pgdata-${n}`], `${n}: the old claim kept its uid`);
      }
      assert.deepEqual(payloads(ns, pods), data, "every payload read back in the new containers");

      await upgradeWithoutRollout(h, ns, 3, manifest.stdout);
      assert.deepEqual(await allReady(ns, "db", 2), added, "the upgrade restarted nothing");
    });
  });
}
