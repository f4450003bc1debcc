// --migrate-existing on the real node: a 3-replica StatefulSet whose pods keep writing moves to
// the second storage class (appstorage-csi-b), then shrinks, each claim copied by copy pods on the
// node through the real CSI driver and sidecars. Checked from outside the plugin: every pod's
// data (the payload's checksum, and the writer's numbered lines: none lost, none repeated), at
// most one pod down at any moment, each pod restarted once per move and never by a container
// restart, the claims re-created under their names on the new class, the old volumes kept
// (Retain, Released, labelled), and a scale-up getting the new template.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { kubectlJson, namespace, root, runPlugin, uids } from "../e2e/harness";
import type { PersistentVolume, PersistentVolumeClaim } from "../../src/api/types";
import { allReady, assertSequence, create, deleteKeptVolumes, exec, fsBytes, GiB, maxDown, payloadSha, watchPods, withWriter, workload, workloadImage } from "./node";

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
  test("3 replicas under write load move to appstorage-csi-b, then shrink: data kept, one pod down at a time, old volumes kept", async (t) => {
    const ns = namespace(t, "node");
    deleteKeptVolumes(t, ns);
    create(withWriter(workload("db", { replicas: 3, size: "1Gi" })), ns);
    await allReady(ns, "db", 3);

    await move(ns, "data=1Gi,appstorage-csi-b", "appstorage-csi-b", "1Gi");
    // A shrink: measured first (the data fits), then moved the same way.
    await move(ns, "data=512Mi,appstorage-csi-b", "appstorage-csi-b", "512Mi");
    for (const n of names) assert.ok(fsBytes(ns, n) < 0.6 * GiB, `${n}: df shows the smaller file system`);

    // A shrink below the data is refused before anything changes: kubelet's volume stats cannot be
    // read here (the API server does not proxy to a loopback node), so a pod measures each claim.
    exec(ns, "db-0", "head -c 380000000 /dev/zero > /data/big && sync");
    const before = uids(ns);
    const refused = await runPlugin(["set", "db", "data=350Mi,appstorage-csi-b", "--migrate-existing", "--copy-image", workloadImage, "-n", ns, "--yes"]);
    assert.notEqual(refused.code, 0);
    assert.deepEqual(uids(ns), before, "nothing changed");
    assert.match(refused.stderr, /error: claim data-db-0 holds \d+ bytes \(measured\), more than the new size 350Mi \(367001600 bytes\): choose a size of at least \d+ bytes; nothing was changed\n$/);
  });
});
