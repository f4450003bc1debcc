// --migrate-existing on the real node: a 3-replica StatefulSet whose pods keep writing moves to
// the second storage class (appstorage-csi-b), then shrinks, each claim copied by copy pods on the
// node through the real CSI driver and sidecars (the tests' copy image: rsync); a shrink below the
// data is refused by the pod that measures it; and 3 replicas each onto, off and
// within the classes users already have: appstorage-csi to rancher's local-path (bigger), minikube's
// standard to appstorage-csi (bigger), local-path to local-path (smaller), each copied on its node.
//
// Checked by the test itself, from outside the plugin, against each kept old volume (mounted again
// by a pod of the test's own once the move is done):
// - the writer's lines (each carries the writing pod's uid and counts from 1 in every pod): the old
//   volume's whole log, the last line of every old pod included, is the start of the new volume's,
//   and the rest is the new pod's own, from its first line;
// - every entry's type, owner, group, mode, modification time, size, symlink target and sha256,
//   listed by stat on both volumes (a tree of every kind of entry, and a 200 MiB file);
// - a large file changed in 3 of its 16 MiB blocks after the first copy finished (the plugin held at
//   its orphan delete meanwhile): the plugin rewrote exactly 3 blocks;
// and: at most one pod down at any moment, highest ordinal first, each pod restarted once per move
// and never by a container restart, the claims re-created under their names on the new class, the
// old volumes kept (Retain, Released, labelled), the copy pods on the replica's node.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { kubeconfig, kubectlJson, namespace, root, runPlugin, uids } from "../shared/harness";
import { startFaultProxy } from "../shared/faultproxy";
import type { PersistentVolume, PersistentVolumeClaim } from "../../src/api/types";
import {
  aboutGiB,
  affinityNodes,
  allReady,
  copyImage,
  create,
  deleteKeptVolumes,
  exec,
  fsBytes,
  GiB,
  maxDown,
  payloadSha,
  watchCopyPods,
  watchPods,
  watchToolPods,
  whenTwoDown,
  workload,
} from "../shared/node";
import { assertHardened, assertLogMoved, keptTreesAndLogs, makeBigFile, makeTree, statInPod, touchBlocks, withUidWriter } from "../shared/move";

const names = ["db-0", "db-1", "db-2"];

const claimOf = (ns: string, name: string) => kubectlJson<PersistentVolumeClaim>(["get", "pvc", name, "-n", ns]);
const volume = (name: string) => kubectlJson<PersistentVolume>(["get", "pv", name]);

/** While the plugin is held at the first move's orphan delete (its first copy done), `meanwhile` changes the data. */
interface MoveOptions {
  meanwhile?: () => void;
  /** Large-file blocks the final copy of data-db-2 must rewrite. */
  blocks?: number;
}

/** Every kept volume's tree and log, read by a pod of the test's own, against the moved claim's. */
async function assertKeptAndMoved(ns: string, oldVolumes: Record<string, string>): Promise<void> {
  const kept = await keptTreesAndLogs(
    ns,
    names.map((n) => oldVolumes[n]!),
  );
  for (const [i, n] of names.entries()) {
    const newTree = statInPod(ns, n, ["./load.log"]);
    assert.equal(newTree, kept[i]!.tree, `${n}: every entry's type, owner, group, mode, mtime, size, link target and sha256 on the new volume as on the kept one`);
    assert.match(newTree, /\.\/payload\|sha256\|/);
    const uid = kubectlJson<{ metadata: { uid: string } }>(["get", "pod", n, "-n", ns]).metadata.uid;
    assertLogMoved(kept[i]!.log, exec(ns, n, "cat /data/load.log"), uid, n);
  }
}

async function move(ns: string, directive: string, expectClass: string, expectSize: string, opts: MoveOptions = {}): Promise<string> {
  const before = await allReady(ns, "db", 3);
  const data = Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));
  const claims = Object.fromEntries(names.map((n) => [n, claimOf(ns, `data-${n}`)]));
  const watch = watchPods(ns);
  const tools = watchToolPods(ns);
  // The re-create's orphan delete is the first; the first move's (data-db-2, once its first copy is done) the second.
  const proxy = await startFaultProxy(kubeconfig(), opts.meanwhile ? [{ kind: "hold", signature: "delete statefulsets", nth: 1 }] : []);
  let r: Awaited<ReturnType<typeof runPlugin>>;
  try {
    const running = runPlugin(["set", "db", directive, "--migrate-existing", "--copy-image", copyImage, "--timeout", "240s", "-n", ns, "--yes"], { kubeconfig: proxy.kubeconfig });
    if (opts.meanwhile) {
      const held = await proxy.nextHeld(240_000);
      opts.meanwhile();
      held.release();
    }
    r = await running;
  } finally {
    await proxy.close();
  }
  await watch.stop();
  await tools.stop();
  assert.equal(r.code, 0, r.stderr);
  // Every pod the move created (copy pods, measuring pods), hardened; the node has no taint.
  assert.ok(tools.pods.size >= 6, `the copy pods were seen: ${[...tools.pods.values()].map((p) => p.metadata.name).join(", ")}`);
  for (const p of tools.pods.values()) assertHardened(p, copyImage, []);
  // One run's output, for the README (the section says at which commit it was made).
  writeFileSync(join(root, "dist", `node-migrate-${directive.replace(/[^\w]+/g, "-")}.txt`), `$ kubectl appstorage set db ${directive} --migrate-existing --yes\n${r.stdout}${r.stderr}`);
  // One at a time, highest ordinal first, each copied while its pod ran, then verified.
  const order = [...r.stderr.matchAll(/claim (data-db-\d): copying to a new volume/g)].map((m) => m[1]);
  assert.deepEqual(order, ["data-db-2", "data-db-1", "data-db-0"], r.stderr);
  const evicted = [...r.stderr.matchAll(/pod\/(db-\d) evicted/g)].map((m) => m[1]);
  assert.deepEqual(evicted, ["db-2", "db-1", "db-0"], "evicted highest ordinal first, each once");
  for (const n of names) assert.match(r.stderr, new RegExp(`claim data-${n}: verified \\d+ files, \\d+ bytes equal on both volumes`));
  if (opts.blocks !== undefined) assert.match(r.stderr, new RegExp(`claim data-db-2: verified .*, ${opts.blocks} block\\(s\\) rewritten in 1 large file\\(s\\)`), r.stderr);
  const after = await allReady(ns, "db", 3);
  const oldVolumes: Record<string, string> = {};
  for (const n of names) {
    assert.notEqual(after[n]!.uid, before[n]!.uid, `${n}: restarted once, on its new volume`);
    assert.equal(after[n]!.restartCount, 0, `${n}: its container never restarted`);
    const seenUids = [...new Set(watch.seen.filter((s) => s.name === n).map((s) => s.uid))];
    assert.deepEqual(seenUids.sort(), [before[n]!.uid, after[n]!.uid].sort(), `${n}: exactly one new pod`);
    assert.equal(payloadSha(ns, n), data[n], `${n}: the payload is the same data`);
    const now = claimOf(ns, `data-${n}`);
    const old = claims[n]!;
    oldVolumes[n] = old.spec.volumeName!;
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
  assert.equal(maxDown(watch.seen, names), 1, `never more than one pod down:\n${whenTwoDown(watch.seen, names)}`);
  // No copy pod and no claim of the tool's is left.
  assert.deepEqual(kubectlJson<{ items: unknown[] }>(["get", "pods,pvc", "-n", ns, "-l", "appstorage.kubectl.io/claim"]).items, []);
  await assertKeptAndMoved(ns, oldVolumes);
  return r.stderr;
}

describe("node: --migrate-existing", { timeout: 1_500_000 }, () => {
  test("3 replicas under write load move to appstorage-csi-b (a tree of every kind of entry, a 200 MiB file changed in 3 blocks after the first copy), then shrink; a shrink below the data refused", async (t) => {
    const ns = namespace(t, "node");
    deleteKeptVolumes(t, ns);
    create(withUidWriter(workload("db", { replicas: 3, size: "1Gi" })), ns);
    await allReady(ns, "db", 3);
    makeTree(ns, "db-2");
    makeBigFile(ns, "db-2", 200);
    const bigBefore = exec(ns, "db-2", "sha256sum /data/big");

    await move(ns, "data=1Gi,appstorage-csi-b", "appstorage-csi-b", "1Gi", {
      meanwhile: () => {
        touchBlocks(ns, "db-2", [1, 5, 9]);
        exec(ns, "db-2", "printf changed > /data/tree/a/b/file && sync");
      },
      blocks: 3,
    });
    assert.notEqual(exec(ns, "db-2", "sha256sum /data/big"), bigBefore, "the change made after the first copy is on the new volume");
    // A shrink: measured first (the data fits), then moved the same way.
    await move(ns, "data=512Mi,appstorage-csi-b", "appstorage-csi-b", "512Mi");
    for (const n of names) assert.ok(fsBytes(ns, n) < 0.6 * GiB, `${n}: df shows the smaller file system`);

    // A shrink below the data is refused before anything changes: the pod that measures every shrink
    // refuses it once the change is confirmed (kubelet's stats are never read: they need nodes/proxy).
    exec(ns, "db-0", "head -c 380000000 /dev/zero > /data/big && sync");
    const before = uids(ns);
    const stsBefore = kubectlJson<{ metadata: { resourceVersion: string } }>(["get", "statefulset", "db", "-n", ns]).metadata.resourceVersion;
    const shrink = ["set", "db", "data=350Mi,appstorage-csi-b", "--migrate-existing", "--copy-image", copyImage, "-n", ns, "--yes"];
    const tooSmall = (source: string) =>
      new RegExp(`error: claim data-db-0 holds (\\d+) bytes \\((?:${source})\\), more than the new size 350Mi \\(367001600 bytes\\): choose a size of at least \\d+ bytes(; nothing was changed)?\n$`);
    const refused = await runPlugin(shrink);
    t.diagnostic(`right after the write: ${refused.stderr}`);
    assert.equal(refused.code, 1, refused.stderr);
    const m = tooSmall("measured").exec(refused.stderr);
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
      create(withUidWriter(workload("db", { replicas: 3, size: "1Gi", storageClass: c.from })), ns);
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
