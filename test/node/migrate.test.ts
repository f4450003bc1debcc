// --migrate-existing on the real node: a 3-replica StatefulSet whose pods keep writing moves to
// the second storage class (appstorage-csi-b), then shrinks, each claim copied by copy pods on the
// node through the real CSI driver and sidecars; a shrink below the data is refused, by the pod that
// measures it or by kubelet's volume stats once they show the data; and 3 replicas each onto, off and
// within the classes users already have: appstorage-csi to rancher's local-path (bigger), minikube's
// standard to appstorage-csi (bigger), local-path to local-path (smaller), each copied on its node. Checked from
// outside the plugin: every pod's data (the payload's checksum, and the writer's numbered lines: none
// lost, none repeated), at most one pod down at any moment, each pod restarted once per move and never
// by a container restart, the claims re-created under their names on the new class, the old volumes
// kept (Retain, Released, labelled), the copy pods on the replica's node.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { kubectlJson, namespace, root, runPlugin, uids } from "../e2e/harness";
import type { PersistentVolume, PersistentVolumeClaim } from "../../src/api/types";
import {
  aboutGiB,
  affinityNodes,
  allReady,
  assertSequence,
  create,
  deleteKeptVolumes,
  exec,
  fsBytes,
  GiB,
  maxDown,
  payloadSha,
  watchCopyPods,
  watchPods,
  withWriter,
  workload,
  workloadImage,
} from "./node";

const names = ["db-0", "db-1", "db-2"];

const claimOf = (ns: string, name: string) => kubectlJson<PersistentVolumeClaim>(["get", "pvc", name, "-n", ns]);
const volume = (name: string) => kubectlJson<PersistentVolume>(["get", "pv", name]);

async function move(ns: string, directive: string, expectClass: string, expectSize: string): Promise<void> {
  const before = await allReady(ns, "db", 3);
  const data = Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));
  const claims = Object.fromEntries(names.map((n) => [n, claimOf(ns, `data-${n}`)]));
  const watch = watchPods(ns);
  const r = await runPlugin(["set", "db", directive, "--migrate-existing", "--copy-image", workloadImage, "--timeout", "240s", "-n", ns, "--yes"]);
  await watch.stop();
  assert.equal(r.code, 0, r.stderr);
  // One run's output, for the README (the section says at which commit it was made).
  writeFileSync(join(root, "dist", `node-migrate-${directive.replace(/[^\w]+/g, "-")}.txt`), `$ kubectl appstorage set db ${directive} --migrate-existing --yes\n${r.stdout}${r.stderr}`);
  // One at a time, highest ordinal first, each copied while its pod ran, then verified.
  const order = [...r.stderr.matchAll(/claim (data-db-\d): copying to a new volume/g)].map((m) => m[1]);
  assert.deepEqual(order, ["data-db-2", "data-db-1", "data-db-0"], r.stderr);
  for (const n of names) assert.match(r.stderr, new RegExp(`claim data-${n}: verified \\d+ files, \\d+ bytes equal on both volumes`));
  const after = await allReady(ns, "db", 3);
  for (const n of names) {
    assert.notEqual(after[n]!.uid, before[n]!.uid, `${n}: restarted once, on its new volume`);
    assert.equal(after[n]!.restartCount, 0, `${n}: its container never restarted`);
    assert.equal(payloadSha(ns, n), data[n], `${n}: the payload is the same data`);
    assertSequence(ns, n);
    const now = claimOf(ns, `data-${n}`);
    const old = claims[n]!;
    assert.notEqual(now.metadata.uid, old.metadata.uid, `${n}: the claim was re-created`);
    assert.notEqual(now.spec.volumeName, old.spec.volumeName, `${n}: on a new volume`);
    assert.equal(now.spec.storageClassName, expectClass);
    assert.equal(now.status?.capacity?.["storage"], expectSize);
    assert.deepEqual(now.metadata.labels, old.metadata.labels, `${n}: the claim's labels are kept`);
    const kept = volume(old.spec.volumeName!);
    assert.equal(kept.spec.persistentVolumeReclaimPolicy, "Retain", `${n}: the old volume is kept`);
    assert.equal(kept.status?.phase, "Released");
    assert.equal(kept.metadata.labels?.["appstorage.kubectl.io/claim"], `data-${n}`);
    assert.equal(kept.metadata.labels?.["appstorage.kubectl.io/namespace"], ns);
    assert.equal(volume(now.spec.volumeName!).spec.persistentVolumeReclaimPolicy, "Delete", `${n}: the new volume has its class's policy back`);
  }
  assert.equal(maxDown(watch.seen, names), 1, "never more than one pod down");
  // No copy pod and no claim of the tool's is left.
  assert.deepEqual(kubectlJson<{ items: unknown[] }>(["get", "pods,pvc", "-n", ns, "-l", "appstorage.kubectl.io/claim"]).items, []);
}

describe("node: --migrate-existing", { timeout: 1_500_000 }, () => {
  test("3 replicas under write load move to appstorage-csi-b, then shrink: data kept, one pod down at a time, old volumes kept; a shrink below the data refused", async (t) => {
    const ns = namespace(t, "node");
    deleteKeptVolumes(t, ns);
    create(withWriter(workload("db", { replicas: 3, size: "1Gi" })), ns);
    await allReady(ns, "db", 3);

    await move(ns, "data=1Gi,appstorage-csi-b", "appstorage-csi-b", "1Gi");
    // A shrink: measured first (the data fits), then moved the same way.
    await move(ns, "data=512Mi,appstorage-csi-b", "appstorage-csi-b", "512Mi");
    for (const n of names) assert.ok(fsBytes(ns, n) < 0.6 * GiB, `${n}: df shows the smaller file system`);

    // A shrink below the data is refused before anything changes. Just after the write, kubelet's
    // stats (computed once a minute) may not show it yet: then the pod that measures every shrink
    // refuses it once the change is confirmed; once they show it, the plan itself does, with no pod.
    exec(ns, "db-0", "head -c 380000000 /dev/zero > /data/big && sync");
    const before = uids(ns);
    const stsBefore = kubectlJson<{ metadata: { resourceVersion: string } }>(["get", "statefulset", "db", "-n", ns]).metadata.resourceVersion;
    const shrink = ["set", "db", "data=350Mi,appstorage-csi-b", "--migrate-existing", "--copy-image", workloadImage, "-n", ns, "--yes"];
    const tooSmall = (source: string) =>
      new RegExp(`error: claim data-db-0 holds (\\d+) bytes \\((?:${source})\\), more than the new size 350Mi \\(367001600 bytes\\): choose a size of at least \\d+ bytes(; nothing was changed)?\n$`);
    const refused = await runPlugin(shrink);
    t.diagnostic(`right after the write: ${refused.stderr}`);
    assert.equal(refused.code, 1, refused.stderr);
    const m = tooSmall("measured|kubelet's volume stats").exec(refused.stderr);
    assert.ok(m && Number(m[1]) >= 380_000_000, refused.stderr);
    assert.deepEqual(uids(ns), before, "nothing changed");
    assert.equal(kubectlJson<{ metadata: { resourceVersion: string } }>(["get", "statefulset", "db", "-n", ns]).metadata.resourceVersion, stsBefore, "the StatefulSet was not touched");
  });

  // The storage users already have (test/node/storage-classes.test.ts has one replica of each):
  // onto, off and within the host-folder classes, three replicas that keep writing, each copied on
  // the node its old volume is on, each new volume of the class asked for.
  const classMoves = [
    { from: "appstorage-csi", directive: "data=2Gi,local-path", to: "local-path", size: "2Gi", what: "bigger" },
    { from: "standard", directive: "data=2Gi,appstorage-csi", to: "appstorage-csi", size: "2Gi", what: "bigger, off minikube's host folders" },
    { from: "local-path", directive: "data=512Mi,local-path", to: "local-path", size: "512Mi", what: "smaller, measured by a pod: kubelet has no stats for a host folder" },
  ];
  for (const c of classMoves) {
    test(`3 replicas under write load move from ${c.from} to ${c.to}, 1Gi -> ${c.size} (${c.what}): each copied on its node to a volume of ${c.to}`, async (t) => {
      const ns = namespace(t, "node");
      deleteKeptVolumes(t, ns);
      create(withWriter(workload("db", { replicas: 3, size: "1Gi", storageClass: c.from })), ns);
      await allReady(ns, "db", 3);
      const nodes = Object.fromEntries(names.map((n) => [n, kubectlJson<{ spec: { nodeName: string } }>(["get", "pod", n, "-n", ns]).spec.nodeName]));
      const copies = watchCopyPods(ns);
      await move(ns, c.directive, c.to, c.size);
      await copies.stop();
      t.diagnostic(`copy pods and their nodes: ${JSON.stringify([...copies.nodes])}`);
      for (const n of names) {
        const mine = [...copies.nodes].filter(([pod]) => pod === `appstorage-copy-data-${n}`);
        assert.ok(mine.length > 0, `${n}: its copy pods were seen`);
        assert.deepEqual([...new Set(mine.map(([, node]) => node))], [nodes[n]], `${n}: copied on its replica's node`);
        const pv = volume(claimOf(ns, `data-${n}`).spec.volumeName!);
        if (c.to === "local-path") {
          // local-path's volume: a host folder of that node (WaitForFirstConsumer: made where the copy pod ran).
          assert.ok(((pv.spec["hostPath"] as { path?: string } | undefined)?.path ?? "").startsWith("/var/local-path-provisioner/"), JSON.stringify(pv.spec));
          assert.deepEqual(affinityNodes(pv), [nodes[n]], `${n}: the new volume is bound to the node it was copied on`);
        } else {
          assert.equal((pv.spec as { csi?: { driver?: string } }).csi?.driver, "csi.appstorage.local", JSON.stringify(pv.spec));
          assert.ok(aboutGiB(fsBytes(ns, n), 2), `${n}: df shows a 2 GiB file system of its own`);
        }
        assert.equal(kubectlJson<{ spec: { nodeName: string } }>(["get", "pod", n, "-n", ns]).spec.nodeName, nodes[n], `${n}: back on that node`);
      }
    });
  }
});
