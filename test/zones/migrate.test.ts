// --migrate-existing on three nodes in three zones (scripts/cluster up --nodes 3): three replicas
// spread over the zones, their volumes attached to one node at a time (VolumeAttachment), moved to
// appstorage-csi-b (WaitForFirstConsumer: the copy pod's node picks the zone) and to
// appstorage-csi-immediate (Immediate: the plugin names the replica's node on the new volume's claim,
// so the provisioner makes it in that zone); and a move whose node's kubelet stops half-way.
//
// Checked by the test itself: every replica back on its node, each new volume in its replica's zone
// and attached to that node only, no Multi-Attach error and no FailedScheduling event in the
// namespace, never two replicas down, the data read back (sha256), the old volumes kept.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { PersistentVolume, PersistentVolumeClaim } from "../../src/api/types";
import { startFaultProxy } from "../shared/faultproxy";
import { eventually, kubeconfig, kubectl, kubectlJson, namespace, runPlugin } from "../shared/harness";
import { allReady, copyImage, create, deleteKeptVolumes, maxDown, payloadSha, watchPods, whenTwoDown } from "../shared/node";
import { withUidWriter } from "../shared/move";
import { clusterScript, nodeObjects, placement, readyOf, spread, troubleEvents } from "./zones";

const names = ["db-0", "db-1", "db-2"];
const claimOf = (ns: string, name: string) => kubectlJson<PersistentVolumeClaim>(["get", "pvc", name, "-n", ns]);
const volume = (name: string) => kubectlJson<PersistentVolume>(["get", "pv", name]);

async function threeSpread(ns: string): Promise<Record<string, string>> {
  create(withUidWriter(spread("db", 3, "1Gi", "data")), ns);
  await allReady(ns, "db", 3, 240_000);
  const where = placement(ns);
  assert.equal(new Set(Object.values(where).map((w) => w.podZone)).size, 3, `one replica per zone: ${JSON.stringify(where)}`);
  return Object.fromEntries(names.map((n) => [n, where[`data-${n}`]!.node]));
}

/** Every claim on appstorage-csi-b and its replica back on its node; where each is now. */
function movedBack(ns: string, nodes: Record<string, string>): ReturnType<typeof placement> {
  const where = placement(ns);
  for (const n of names) {
    assert.equal(claimOf(ns, `data-${n}`).spec.storageClassName, "appstorage-csi-b", `${n}: moved`);
    assert.equal(where[`data-${n}`]!.node, nodes[n], `${n}: back on its node`);
  }
  return where;
}

async function moveTo(ns: string, cls: string): Promise<void> {
  const nodes = await threeSpread(ns);
  const before = await allReady(ns, "db", 3);
  const data = Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));
  const old = Object.fromEntries(names.map((n) => [n, claimOf(ns, `data-${n}`)]));
  const watch = watchPods(ns);
  const r = await runPlugin(["set", "db", `data=1Gi,${cls}`, "--migrate-existing", "--copy-image", copyImage, "--timeout", "240s", "-n", ns, "--yes"]);
  await watch.stop();
  assert.equal(r.code, 0, r.stderr);
  const after = await allReady(ns, "db", 3);
  const where = placement(ns);
  for (const n of names) {
    const w = where[`data-${n}`]!;
    assert.equal(w.node, nodes[n], `${n}: back on its node`);
    assert.deepEqual(w.volumeZones, [w.podZone], `${n}: its new volume lives in its zone`);
    assert.deepEqual(w.attachedTo, [w.node], `${n}: its new volume is attached to its node only`);
    assert.notEqual(after[n]!.uid, before[n]!.uid, `${n}: restarted once, on its new volume`);
    assert.equal(after[n]!.restartCount, 0, `${n}: its container never restarted`);
    assert.equal(payloadSha(ns, n), data[n], `${n}: the data read back`);
    const now = claimOf(ns, `data-${n}`);
    assert.equal(now.spec.storageClassName, cls);
    assert.notEqual(now.spec.volumeName, old[n]!.spec.volumeName);
    const kept = volume(old[n]!.spec.volumeName!);
    assert.equal(kept.spec.persistentVolumeReclaimPolicy, "Retain", `${n}: the old volume is kept`);
    assert.equal(kept.status?.phase, "Released");
  }
  assert.equal(maxDown(watch.seen, names), 1, `never more than one pod down:\n${whenTwoDown(watch.seen, names)}`);
  assert.deepEqual(troubleEvents(ns), [], "no Multi-Attach error and no FailedScheduling event");
}

describe("zones: --migrate-existing over three zones", { timeout: 1_800_000 }, () => {
  test("to appstorage-csi-b (WaitForFirstConsumer): every replica back on its node, each new volume in its zone, attached there only", async (t) => {
    const ns = namespace(t, "zones");
    deleteKeptVolumes(t, ns);
    await moveTo(ns, "appstorage-csi-b");
  });

  test("to appstorage-csi-immediate (Immediate): the new volume made in the zone of the replica it is for", async (t) => {
    const ns = namespace(t, "zones");
    deleteKeptVolumes(t, ns);
    await moveTo(ns, "appstorage-csi-immediate");
  });

  test("a cordoned node, and a maxUnavailable budget (no eviction once the StatefulSet is orphan-deleted), refuse up front, nothing changed; uncordoned, under minAvailable 2, every claim moves, never two down", async (t) => {
    const ns = namespace(t, "zones");
    deleteKeptVolumes(t, ns);
    const nodes = await threeSpread(ns);
    create({ apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "db" }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: "db" } } } }, ns);
    const node = nodes["db-1"]!;
    kubectl(["cordon", node]);
    t.after(() => kubectl(["uncordon", node]));
    const uids = Object.fromEntries(names.map((n) => [n, claimOf(ns, `data-${n}`).metadata.uid]));
    const podUids = () =>
      kubectlJson<{ items: { metadata: { uid: string } }[] }>(["get", "pods", "-n", ns])
        .items.map((p) => p.metadata.uid)
        .sort();
    const pods = podUids();
    const args = ["set", "db", "data=1Gi,appstorage-csi-b", "--migrate-existing", "--copy-image", copyImage, "--timeout", "240s", "-n", ns, "--yes"];
    const unchanged = () => {
      for (const n of names) assert.equal(claimOf(ns, `data-${n}`).metadata.uid, uids[n], `${n}: the same claim`);
      assert.deepEqual(podUids(), pods, "no pod created or deleted");
    };
    const refused = await runPlugin(args);
    assert.notEqual(refused.code, 0, refused.stderr);
    assert.match(refused.stderr, new RegExp(`node ${node}, where db-1 runs, is cordoned: .*uncordon it first \\(kubectl uncordon ${node}\\), or pass --force to move it anyway`), refused.stderr);
    // One line: the first refusal, and how many more (the budget's).
    assert.match(refused.stderr, /\(and 1 more refusal\(s\)\)\n$/, refused.stderr);
    unchanged();

    kubectl(["uncordon", node]);
    const budget = await runPlugin(args);
    assert.notEqual(budget.code, 0, budget.stderr);
    assert.doesNotMatch(budget.stderr, /is cordoned/);
    assert.match(budget.stderr, /PodDisruptionBudget db \(maxUnavailable 1\) covers the pods of statefulset\.apps\/db: .*"minAvailable":2/, budget.stderr);
    unchanged();

    // The same bound as the budget's patch in the refusal says.
    kubectl(["patch", "pdb", "db", "-n", ns, "--type", "merge", "-p", '{"spec":{"maxUnavailable":null,"minAvailable":2}}']);
    const watch = watchPods(ns);
    const r = await runPlugin(args);
    await watch.stop();
    assert.equal(r.code, 0, r.stderr);
    await allReady(ns, "db", 3);
    movedBack(ns, nodes);
    assert.equal(maxDown(watch.seen, names), 1, `never more than one pod down:\n${whenTwoDown(watch.seen, names)}`);
    assert.deepEqual(troubleEvents(ns), []);
  });

  test("a node's kubelet stopped while its replica's claim is copied: the run stops within --timeout naming the node, nothing lost; once the node is back the same command finishes", async (t) => {
    const ns = namespace(t, "zones");
    deleteKeptVolumes(t, ns);
    const nodes = await threeSpread(ns);
    const node = nodes["db-2"]!;
    const data = Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));
    const uids = Object.fromEntries(names.map((n) => [n, claimOf(ns, `data-${n}`).metadata.uid]));
    const args = ["set", "db", "data=1Gi,appstorage-csi-b", "--migrate-existing", "--copy-image", copyImage, "--timeout", "60s", "-n", ns, "--yes"];
    // Held at the first copy pod's create (data-db-2's, the highest ordinal): its node's kubelet stops first.
    // Counted from the first claim the move creates: the pods that prove the copy image starts on each
    // node are created before it (before the journal), and are not the move's.
    const proxy = await startFaultProxy(kubeconfig(), [{ kind: "hold", signature: "create pods", after: "create persistentvolumeclaims" }]);
    let r: Awaited<ReturnType<typeof runPlugin>>;
    let started = 0;
    try {
      const running = runPlugin(args, { kubeconfig: proxy.kubeconfig });
      const held = await proxy.nextHeld(240_000);
      clusterScript(["node", "stop", node]);
      t.after(() => clusterScript(["node", "start", node]));
      await eventually(`${node} not Ready once its kubelet stopped`, () => readyOf(nodeObjects().find((n) => n.metadata.name === node)!) !== "True", 180_000);
      started = Date.now();
      held.release();
      r = await running;
    } finally {
      await proxy.close();
    }
    const took = (Date.now() - started) / 1000;
    assert.notEqual(r.code, 0, r.stderr);
    // Stopped by the 60 s --timeout, not by the default 5 minutes: the margin is for a loaded 2-core machine.
    assert.ok(took < 60 + 120, `stopped within --timeout (60s) and a margin, in ${took}s`);
    const last = r.stderr.trim().split("\n").at(-1) ?? "";
    assert.match(
      last,
      new RegExp(
        `node ${node}, where claim data-db-2's move runs, is not Ready .*: the claim and its old volume are as they were, and the move goes on from where it stopped: once node ${node} is Ready again \\(kubectl get node ${node}\\), run the same command again$`,
      ),
      r.stderr,
    );
    // Nothing lost: every claim is the one it was, on its old volume.
    for (const n of names) assert.equal(claimOf(ns, `data-${n}`).metadata.uid, uids[n], `${n}: the same claim`);

    clusterScript(["node", "start", node]);
    await eventually(`${node} Ready again`, () => readyOf(nodeObjects().find((n) => n.metadata.name === node)!) === "True", 180_000);
    const again = await runPlugin(args.map((a) => (a === "60s" ? "240s" : a)));
    assert.equal(again.code, 0, again.stderr);
    await allReady(ns, "db", 3);
    const where = movedBack(ns, nodes);
    for (const n of names) {
      assert.deepEqual(where[`data-${n}`]!.attachedTo, [nodes[n]]);
      assert.equal(payloadSha(ns, n), data[n], `${n}: the data read back`);
    }
  });
});
