// The shrink check of --migrate-existing on the real node, for volumes that are folders of the host's
// file system: local-path with volumeType local (a `local` volume: statfs of its folder is the whole
// host file system, tens of GB here) and minikube's standard (a hostPath volume). On each, checked by
// the test: a shrink below the data is refused with nothing changed, in the bytes the data takes
// (measured by a pod), not the host disk's; then a shrink the data fits moves the claim within its
// class, every file's sha256 equal, the copy pods on the volume's node, the old volume kept.
// (appstorage-csi: test/node/migrate.test.ts and migrate-stats.test.ts.)
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { PersistentVolume, PersistentVolumeClaim } from "../../src/api/types";
import { getSts, kubectl, kubectlJson, kubectlTry, namespace, runPlugin, uids } from "../shared/harness";
import { affinityNodes, allReady, copyImage, create, deleteKeptVolumes, exec, treeInPod, treeOnHost, watchCopyPods, workload } from "../shared/node";

interface Case {
  storageClass: string;
  claimAnnotations?: Record<string, string>;
  /** The PV's volume source and the host folder its provisioner puts volumes in. */
  source: "local" | "hostPath";
  dataDir: string;
}

const cases: Case[] = [
  {
    storageClass: "local-path",
    claimAnnotations: { volumeType: "local" },
    source: "local",
    dataDir: "/var/local-path-provisioner",
  },
  { storageClass: "standard", source: "hostPath", dataDir: "/tmp/hostpath-provisioner" },
];

const claim0 = "data-db-0";
const claimOf = (ns: string) => kubectlJson<PersistentVolumeClaim>(["get", "pvc", claim0, "-n", ns]);
const volume = (name: string) => kubectlJson<PersistentVolume>(["get", "pv", name]);
const hostPathOf = (pv: PersistentVolume, source: string) => (pv.spec[source] as { path?: string } | undefined)?.path ?? "";
const leftovers = (ns: string) => kubectlJson<{ items: unknown[] }>(["get", "pods,pvc", "-n", ns, "-l", "appstorage.kubectl.io/claim"]).items;

describe("node: the shrink check of volumes that are host folders", { timeout: 900_000 }, () => {
  for (const k of cases) {
    test(`${k.storageClass}${k.claimAnnotations ? " (volumeType local)" : ""}: a shrink below the data is refused in the data's bytes, nothing changed; one it fits moves the claim, every file equal`, async (t) => {
      const ns = namespace(t, "node");
      deleteKeptVolumes(t, ns);
      create(workload("db", { replicas: 1, size: "1Gi", storageClass: k.storageClass, ...(k.claimAnnotations ? { claimAnnotations: k.claimAnnotations } : {}) }), ns);
      const before = await allReady(ns, "db", 1);
      const node = kubectlJson<{ spec: { nodeName: string } }>(["get", "pod", "db-0", "-n", ns]).spec.nodeName;
      const oldClaim = claimOf(ns);
      const oldVolume = volume(oldClaim.spec.volumeName!);
      const oldDir = hostPathOf(oldVolume, k.source);
      assert.ok(oldDir.startsWith(`${k.dataDir}/`), `a ${k.source} volume under ${k.dataDir}: ${JSON.stringify(oldVolume.spec)}`);
      exec(
        ns,
        "db-0",
        "mkdir -p /data/sub/deeper && head -c 5000000 /dev/urandom > /data/sub/deeper/blob && : > /data/sub/empty && ln -s payload /data/link && head -c 300000000 /dev/zero > /data/big && sync",
      );

      // Below the data: refused once a pod measured it, and nothing changed.
      const stsBefore = getSts(ns, "db");
      const uidsBefore = uids(ns);
      const tree = treeInPod(ns, "db-0");
      const refused = await runPlugin(["set", "db", "data=256Mi", "--migrate-existing", "--copy-image", copyImage, "--timeout", "120s", "-n", ns, "--yes"]);
      t.diagnostic(`set db data=256Mi --migrate-existing: exit ${refused.code}\n${refused.stderr}`);
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(refused.stderr, new RegExp(`Warning: claim ${claim0} shrinks to 256Mi: set measures its data with a pod once the change is confirmed`));
      const m = /error: claim data-db-0 holds (\d+) bytes \(measured\), more than the new size 256Mi \(268435456 bytes\): choose a size of at least (\d+) bytes; nothing was changed\n$/.exec(
        refused.stderr,
      );
      assert.ok(m, refused.stderr);
      const measured = Number(m[1]);
      assert.ok(measured >= 300_000_000 && measured < 320_000_000, `the data's bytes (300 MB, 5 MB and the 1 MiB payload), not the host disk's: ${measured}`);
      assert.equal(getSts(ns, "db").metadata.resourceVersion, stsBefore.metadata.resourceVersion, "the StatefulSet was not touched");
      assert.deepEqual(uids(ns), uidsBefore, "every pod and claim kept its uid");
      assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 1, "no journal was written");
      assert.deepEqual(leftovers(ns), [], "the measuring pod is gone, no claim of the tool's");
      assert.equal(treeInPod(ns, "db-0"), tree);

      // The data fits 512Mi once the big file is gone: the claim moves within its class.
      exec(ns, "db-0", "rm /data/big && sync");
      const kept = treeInPod(ns, "db-0");
      assert.equal(kept.trim().split("\n").length, 3, kept);
      const copies = watchCopyPods(ns);
      const r = await runPlugin(["set", "db", "data=512Mi", "--migrate-existing", "--copy-image", copyImage, "--timeout", "240s", "-n", ns, "--yes"]);
      await copies.stop();
      t.diagnostic(`set db data=512Mi --migrate-existing: exit ${r.code}\n${r.stderr}`);
      for (const what of ["pvc", "pods"]) t.diagnostic(kubectl(["get", what, "-n", ns, "-o", "wide"]));
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, new RegExp(`claim ${claim0}: its data takes \\d+ bytes, which fits 512Mi`));
      assert.match(r.stderr, new RegExp(`claim ${claim0}: verified \\d+ files, \\d+ bytes equal on both volumes`));
      assert.ok(copies.nodes.size >= 2, `the measuring pod and the copy pods were seen: ${JSON.stringify([...copies.nodes])}`);
      assert.deepEqual([...new Set(copies.nodes.values())], [node], `every pod of the tool's ran on the volume's node: ${JSON.stringify([...copies.nodes])}`);

      const after = await allReady(ns, "db", 1);
      assert.notEqual(after["db-0"]!.uid, before["db-0"]!.uid, "db-0 restarted once, on its new volume");
      assert.equal(after["db-0"]!.restartCount, 0);
      assert.equal(treeInPod(ns, "db-0"), kept, "every file's sha256 on the new volume");
      assert.equal(exec(ns, "db-0", "readlink /data/link").trim(), "payload");
      const now = claimOf(ns);
      assert.notEqual(now.metadata.uid, oldClaim.metadata.uid, "the claim was re-created");
      assert.deepEqual([now.spec.storageClassName, now.spec.resources?.requests?.["storage"], now.status?.capacity?.["storage"]], [k.storageClass, "512Mi", "512Mi"]);
      const newVolume = volume(now.spec.volumeName!);
      // Both new claims carry the template's annotations, so local-path makes the same kind of volume
      // as before the move (a `local` one for volumeType local), not its default hostPath.
      assert.deepEqual(now.metadata.annotations?.["volumeType"], k.claimAnnotations?.["volumeType"], "the re-created claim kept the template's annotations");
      assert.ok(hostPathOf(newVolume, k.source).startsWith(`${k.dataDir}/`), `the new volume is a ${k.source} folder of ${k.storageClass}: ${JSON.stringify(newVolume.spec)}`);
      if (k.storageClass === "local-path") assert.deepEqual(affinityNodes(newVolume), [node], "bound to the node");
      const old = volume(oldVolume.metadata.name!);
      assert.deepEqual([old.spec.persistentVolumeReclaimPolicy, old.status?.phase], ["Retain", "Released"], "the old volume is kept");
      assert.equal(treeOnHost(oldDir), kept, "the old volume's folder on the host as it was");
      assert.equal(getSts(ns, "db").spec.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.["storage"], "512Mi");
      assert.deepEqual(leftovers(ns), []);
    });
  }
});
