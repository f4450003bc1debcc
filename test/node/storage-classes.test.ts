// The storage users already have, on the real node (lab/node/storage.sh): minikube's class
// standard (its storage-provisioner, k8s.io/minikube-hostpath: Immediate binding, a host folder as a
// hostPath volume without node affinity) and local-path, the provisioner kind and k3s ship
// (rancher.io/local-path: WaitForFirstConsumer, a host folder as a hostPath volume with node
// affinity). Neither can expand a volume, and neither has a size of its own: df in the pod shows
// the host's disk. On each class: the reference flow, checked by the test itself (claim uids and
// sizes, pod uid, container id, restart count, the payload's checksum), and --resize-existing
// refused before anything changes; then --migrate-existing from each of them to appstorage-csi,
// bigger, with the data compared file by file.
import assert from "node:assert/strict";
import { statfsSync } from "node:fs";
import { describe, type TestContext, test } from "node:test";
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from "../../src/api/types";
import { getSts, kubectl, kubectlJson, kubectlTry, namespace, runPlugin, uids } from "../shared/harness";
import { aboutGiB, affinityNodes, allReady, create, deleteKeptVolumes, exec, fsBytes, payloadSha, running, treeInPod, treeOnHost, watchCopyPods, workload, workloadImage } from "../shared/node";

interface UsersClass {
  name: string;
  provisioner: string;
  binding: "Immediate" | "WaitForFirstConsumer";
  /** The host folder the provisioner puts its volumes in. */
  dataDir: string;
  /** Whether its volumes are tied to the node (nodeAffinity on the PV). */
  nodeAffinity: boolean;
}

const classes: UsersClass[] = [
  { name: "standard", provisioner: "k8s.io/minikube-hostpath", binding: "Immediate", dataDir: "/tmp/hostpath-provisioner", nodeAffinity: false },
  { name: "local-path", provisioner: "rancher.io/local-path", binding: "WaitForFirstConsumer", dataDir: "/var/local-path-provisioner", nodeAffinity: true },
];

const sts = "postgresql-k8s";
const claim0 = "pgdata-postgresql-k8s-0";
const claim1 = "pgdata-postgresql-k8s-1";
const claimOf = (ns: string, name: string) => kubectlJson<PersistentVolumeClaim>(["get", "pvc", name, "-n", ns]);
const volume = (name: string) => kubectlJson<PersistentVolume>(["get", "pv", name]);
const journalExists = (ns: string) => kubectlTry(["get", "secret", `appstorage-journal-${sts}`, "-n", ns]).code === 0;

/** kubectl get pvc and kubectl get pods of the namespace, into the test's log. */
function show(t: TestContext, ns: string, when: string): void {
  for (const what of ["pvc", "pods"]) {
    t.diagnostic(`${when}: kubectl get ${what} -n ${ns} -o wide`);
    for (const line of kubectl(["get", what, "-n", ns, "-o", "wide"]).trimEnd().split("\n")) t.diagnostic(`  ${line}`);
  }
}

/** Request, capacity, phase, class and uid of a claim, as the test compares them. */
function claimSeen(ns: string, name: string) {
  const c = claimOf(ns, name);
  return { uid: c.metadata.uid, phase: c.status?.phase, request: c.spec.resources?.requests?.["storage"], capacity: c.status?.capacity?.["storage"], storageClass: c.spec.storageClassName };
}

/** The hostPath volume behind a claim: its host folder, in the class's data folder, and its node affinity. */
function assertHostVolume(cls: UsersClass, pv: PersistentVolume, node: string): string {
  const path = (pv.spec as { hostPath?: { path?: string } }).hostPath?.path ?? "";
  assert.ok(path.startsWith(`${cls.dataDir}/`), `${pv.metadata.name}: a hostPath volume under ${cls.dataDir} (got ${JSON.stringify(pv.spec)})`);
  assert.deepEqual(affinityNodes(pv), cls.nodeAffinity ? [node] : [], `${pv.metadata.name}: node affinity`);
  return path;
}

describe("node: the storage classes users already have", { timeout: 1_200_000 }, () => {
  test("standard and local-path are there as their users know them; appstorage-csi stays the default", () => {
    const isDefault = (c: StorageClass) => c.metadata.annotations?.["storageclass.kubernetes.io/is-default-class"] === "true";
    for (const cls of classes) {
      const c = kubectlJson<StorageClass>(["get", "storageclass", cls.name]);
      assert.equal(c.provisioner, cls.provisioner, cls.name);
      assert.equal(c.volumeBindingMode, cls.binding, cls.name);
      assert.notEqual(c.allowVolumeExpansion, true, `${cls.name} cannot expand`);
      assert.equal(isDefault(c), false, `${cls.name} is not the default class`);
    }
    assert.equal(isDefault(kubectlJson<StorageClass>(["get", "storageclass", "appstorage-csi"])), true);
  });

  for (const cls of classes) {
    test(`${cls.name}: pgdata 1Gi -> 2Gi, scale 1 -> 2: pod 0 keeps its container, claim and data; ordinal 1 gets 2Gi`, async (t) => {
      const ns = namespace(t, "node");
      create(workload(sts, { claim: "pgdata", size: "1Gi", storageClass: cls.name }), ns);
      const before = await allReady(ns, sts, 1);
      show(t, ns, "before");
      const pod0 = before[`${sts}-0`]!;
      assert.equal(pod0.restartCount, 0);
      const c0 = claimSeen(ns, claim0);
      assert.deepEqual({ ...c0, uid: undefined }, { uid: undefined, phase: "Bound", request: "1Gi", capacity: "1Gi", storageClass: cls.name });
      const node = kubectlJson<{ spec: { nodeName: string } }>(["get", "pod", `${sts}-0`, "-n", ns]).spec.nodeName;
      assertHostVolume(cls, volume(claimOf(ns, claim0).spec.volumeName!), node);
      const sha = payloadSha(ns, `${sts}-0`);

      const r = await runPlugin(["set", sts, "pgdata=2Gi", "-n", ns, "--yes"]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `statefulset.apps/${sts} recreated\n`);

      kubectl(["scale", "statefulset", sts, "-n", ns, "--replicas=2"]);
      const after = await allReady(ns, sts, 2);
      show(t, ns, "after set pgdata=2Gi and scale to 2");
      assert.deepEqual(after[`${sts}-0`], pod0, "pod 0: same uid, same container, no restart");
      assert.equal(payloadSha(ns, `${sts}-0`), sha, "pod 0's data read back");
      assert.deepEqual(claimSeen(ns, claim0), c0, "claim 0: same uid, still 1Gi");
      assert.equal(after[`${sts}-1`]!.restartCount, 0);
      const c1 = claimSeen(ns, claim1);
      assert.deepEqual({ ...c1, uid: undefined }, { uid: undefined, phase: "Bound", request: "2Gi", capacity: "2Gi", storageClass: cls.name });
      const dir1 = assertHostVolume(cls, volume(claimOf(ns, claim1).spec.volumeName!), node);
      // No size of its own: the pod's file system is the host's, whatever the claim says.
      const host = statfsSync(dir1);
      assert.equal(fsBytes(ns, `${sts}-1`), Math.floor((host.blocks * host.bsize) / 1024) * 1024, "df in pod 1 shows the host's disk");
      // Still the same container a while later (a late restart would show here).
      await new Promise((res) => setTimeout(res, 3000));
      assert.deepEqual(running(ns, sts)[`${sts}-0`], pod0);
    });

    test(`${cls.name}: --resize-existing is refused before anything changes, naming --migrate-existing`, async (t) => {
      const ns = namespace(t, "node");
      create(workload(sts, { claim: "pgdata", size: "1Gi", storageClass: cls.name }), ns);
      const before = await allReady(ns, sts, 1);
      const stsBefore = getSts(ns, sts);
      const uidsBefore = uids(ns);
      const c0 = claimSeen(ns, claim0);

      const r = await runPlugin(["set", sts, "pgdata=2Gi", "--resize-existing", "-n", ns, "--yes"]);
      show(t, ns, "after the refused set --resize-existing");
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stdout, "");
      assert.equal(
        r.stderr,
        `error: claim(s) ${claim0} have storage class "${cls.name}", which does not allow volume expansion; nothing was changed: ` +
          "use --migrate-existing for bigger claims (new volumes of the new size, the data copied), or drop --resize-existing, " +
          "or enable allowVolumeExpansion on the class if its provisioner can expand volumes\n",
      );
      const stsAfter = getSts(ns, sts);
      assert.equal(stsAfter.metadata.uid, stsBefore.metadata.uid);
      assert.equal(stsAfter.metadata.resourceVersion, stsBefore.metadata.resourceVersion, "the StatefulSet was not touched");
      assert.deepEqual(uids(ns), uidsBefore, "every pod and claim kept its uid");
      assert.deepEqual(claimSeen(ns, claim0), c0, "claim 0 still 1Gi");
      assert.deepEqual(running(ns, sts)[`${sts}-0`], before[`${sts}-0`], "pod 0: same container, no restart");
      assert.equal(journalExists(ns), false, "no journal was written");
    });
  }

  for (const cls of classes) {
    test(`${cls.name} -> appstorage-csi, 1Gi -> 2Gi with --migrate-existing: the data equal file by file, copied on the volume's node`, async (t) => {
      const ns = namespace(t, "node");
      deleteKeptVolumes(t, ns);
      create(workload(sts, { claim: "pgdata", size: "1Gi", storageClass: cls.name }), ns);
      const before = await allReady(ns, sts, 1);
      const pod0 = `${sts}-0`;
      // More than the payload: a subfolder, a larger file, a symlink, an empty file.
      exec(ns, pod0, "mkdir -p /data/sub/deeper && head -c 5000000 /dev/urandom > /data/sub/deeper/blob && : > /data/sub/empty && ln -s payload /data/link && sync");
      const node = kubectlJson<{ spec: { nodeName: string } }>(["get", "pod", pod0, "-n", ns]).spec.nodeName;
      const oldClaim = claimOf(ns, claim0);
      const oldDir = assertHostVolume(cls, volume(oldClaim.spec.volumeName!), node);
      const tree = treeInPod(ns, pod0);
      assert.equal(treeOnHost(oldDir), tree, "the pod's /data is the host folder of the volume");
      assert.equal(tree.trim().split("\n").length, 3, tree);
      show(t, ns, "before");

      const copies = watchCopyPods(ns);
      const r = await runPlugin(["set", sts, "pgdata=2Gi,appstorage-csi", "--migrate-existing", "--copy-image", workloadImage, "--timeout", "240s", "-n", ns, "--yes"]);
      await copies.stop();
      show(t, ns, "after set pgdata=2Gi,appstorage-csi --migrate-existing");
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, new RegExp(`claim ${claim0}: verified \\d+ files, \\d+ bytes equal on both volumes`));
      assert.ok(copies.nodes.size > 0, "copy pods were seen");
      assert.deepEqual([...new Set(copies.nodes.values())], [node], `every copy pod ran on the volume's node: ${JSON.stringify([...copies.nodes])}`);

      const after = await allReady(ns, sts, 1);
      assert.notEqual(after[pod0]!.uid, before[pod0]!.uid, "pod 0 restarted once, on its new volume");
      assert.equal(after[pod0]!.restartCount, 0);
      assert.equal(treeInPod(ns, pod0), tree, "the data on the new volume, file by file");
      assert.equal(exec(ns, pod0, "readlink /data/link").trim(), "payload");
      const now = claimSeen(ns, claim0);
      assert.notEqual(now.uid, oldClaim.metadata.uid, "the claim was re-created");
      assert.deepEqual({ ...now, uid: undefined }, { uid: undefined, phase: "Bound", request: "2Gi", capacity: "2Gi", storageClass: "appstorage-csi" });
      const newVolume = volume(claimOf(ns, claim0).spec.volumeName!);
      assert.equal((newVolume.spec as { csi?: { driver?: string } }).csi?.driver, "csi.appstorage.local");
      assert.ok(aboutGiB(fsBytes(ns, pod0), 2), "a 2 GiB file system of its own now");
      // The old volume is kept (Retain), its folder and data untouched.
      const kept = volume(oldClaim.spec.volumeName!);
      assert.equal(kept.spec.persistentVolumeReclaimPolicy, "Retain");
      assert.equal(kept.status?.phase, "Released");
      assert.equal(treeOnHost(oldDir), tree, "the old volume's folder on the host as before");
      assert.deepEqual(getSts(ns, sts).spec.volumeClaimTemplates?.[0]?.spec?.storageClassName, "appstorage-csi");
    });
  }
});
