// --migrate-existing stopping on the real node, each time with what to do and nothing else changed:
// - a copy image the node does not have and cannot pull (no registry answers here): the pod that
//   measures a shrink is refused before anything changes, and so is a move, by the short pod that
//   proves the copy image starts on the replicas' node, before the journal is written (ErrImagePull
//   or ImagePullBackOff, the image, --copy-image): the StatefulSet untouched, no journal, no pod
//   left; the same command with an image the node has then moves every claim;
// - a copy pod the scheduler finds no room for (the namespace's LimitRange asks 200 GiB of memory
//   for every container without requests): the run stops once it has been Unschedulable for 20 s,
//   with the scheduler's message; the short pod that proves the copy image starts on the replicas'
//   node, before the journal is written, is the first to meet it: nothing changed; without that
//   LimitRange the rerun moves every claim;
// - a verification that fails (the new volume changed behind the copy: the plugin killed once its
//   first copy was done, the copy's payload changed by a pod of the test's own): the claim and its
//   volume untouched, the StatefulSet back with the replica Ready on its old claim; the rerun
//   copies anew and moves it;
// - a replica that does not come back Ready on its new volume (its readiness probe refuses a file
//   system of 2 GiB): the run stops at --timeout saying where the old volume is, which is intact;
// - a move that cannot finish once its replica is down (a policy of the test's own refuses to set
//   the old volume's reclaim policy to Retain, after the final copy was verified): tried forward a
//   few times, then the replica brought back up on its old volume, Ready, its data as it was; the
//   rerun, without the policy, moves it.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { PersistentVolume, PersistentVolumeClaim, Pod, StatefulSet } from "../../src/api/types";
import { apply, denyingPolicy, eventually, kubeconfig, kubectl, kubectlJson, kubectlTry, namespace, plugin, runPlugin, uids } from "../shared/harness";
import { allReady, copyImage, create, deleteKeptVolumes, maxDown, payloadSha, type Running, watchPods, workload, workloadImage } from "../shared/node";
import { onKeptVolumes, withUidWriter } from "../shared/move";

const missingImage = "appstorage.local/not-on-this-node:1";
const claimOf = (ns: string, name: string) => kubectlJson<PersistentVolumeClaim>(["get", "pvc", name, "-n", ns]);
const toolObjects = (ns: string) =>
  kubectlJson<{ items: { kind: string; metadata: { name: string } }[] }>(["get", "pods,pvc", "-n", ns, "-l", "appstorage.kubectl.io/claim"]).items.map((o) => `${o.kind}/${o.metadata.name}`);
const moveArgs = (ns: string, directive: string, image = copyImage, timeout = "240s") => ["set", "db", directive, "--migrate-existing", "--copy-image", image, "--timeout", timeout, "-n", ns, "--yes"];

/** The pods as they run (uid, container, restarts) and the claims' uids: what "nothing else changed" compares. */
function snapshot(ns: string, pods: Record<string, Running>): { pods: Record<string, Running>; claims: Record<string, string> } {
  // The harness names claims "pvc/NAME" (test/shared/harness.ts, uids); an empty set would compare equal whatever happened.
  const claims = Object.fromEntries(Object.entries(uids(ns)).filter(([k]) => k.startsWith("pvc/")));
  assert.ok(Object.keys(claims).length > 0, `no claim in namespace ${ns} to compare`);
  return { pods, claims };
}

/** Runs the plugin and SIGKILLs it right after a stderr line matches. */
function killedAt(args: string[], at: RegExp): Promise<{ killed: boolean; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(plugin, [...args, "--kubeconfig", kubeconfig()], {
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", APPSTORAGE_STATE_DIR: mkdtempSync(join(tmpdir(), "appstorage-state-")) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    let killed = false;
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (!killed && at.test(stderr) && child.exitCode === null) killed = child.kill("SIGKILL");
    });
    child.on("close", (_code, signal) => resolve({ killed: killed && signal === "SIGKILL", stderr }));
  });
}

describe("node: --migrate-existing stops with what to do", { timeout: 1_500_000 }, () => {
  test("a copy image the node cannot pull: a shrink refused before anything changes, a move stopped within a minute with no pod left; another image moves every claim", async (t) => {
    const ns = namespace(t, "nodestop");
    deleteKeptVolumes(t, ns);
    create(withUidWriter(workload("db", { replicas: 2, size: "1Gi" })), ns);
    const before = snapshot(ns, await allReady(ns, "db", 2));
    const rv = kubectlJson<StatefulSet>(["get", "statefulset", "db", "-n", ns]).metadata.resourceVersion;

    // The shrink's measuring pod, the first step after consent: refused, nothing changed at all.
    const shrink = await runPlugin(moveArgs(ns, "data=512Mi", missingImage));
    assert.equal(shrink.code, 1, shrink.stderr);
    assert.match(
      shrink.stderr,
      new RegExp(
        `\\nerror: pod appstorage-measure-data-db-1, which measures the data of claim data-db-1, cannot start: (ErrImagePull|ImagePullBackOff) \\(.*\\); image ${missingImage}; the pod was removed and nothing was changed: pass --copy-image with an image the node can pull or already has \\(it needs rsync .*\\), then run the same command again\\n$`,
      ),
    );
    assert.equal(kubectlJson<StatefulSet>(["get", "statefulset", "db", "-n", ns]).metadata.resourceVersion, rv, "the StatefulSet untouched");
    assert.deepEqual(toolObjects(ns), [], "no pod left");

    // A move: before the journal is written, a short pod on the replicas' node proves the copy image starts there; it cannot.
    const started = Date.now();
    const stopped = await runPlugin(moveArgs(ns, "data=1Gi,appstorage-csi-b", missingImage));
    const took = (Date.now() - started) / 1000;
    t.diagnostic(`stopped after ${took.toFixed(1)} s: ${stopped.stderr.trim().split("\n").at(-1)}`);
    assert.equal(stopped.code, 1, stopped.stderr);
    // Stopped by the pod's state (about 20 s here), not by --timeout (240 s here): the margin is for a loaded 2-core machine.
    assert.ok(took < 150, `stopped well before --timeout (${took} s)`);
    assert.match(
      stopped.stderr,
      new RegExp(
        `\\nerror: the copy image ${missingImage} cannot start on node \\S+: (ErrImagePull|ImagePullBackOff) \\(.*\\); the pod was removed and nothing was changed: pass --copy-image with an image the node can pull or already has \\(it needs rsync .*\\), then run the same command again\\n$`,
      ),
    );
    assert.equal(kubectlJson<StatefulSet>(["get", "statefulset", "db", "-n", ns]).metadata.resourceVersion, rv, "the StatefulSet untouched");
    assert.notEqual(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 0, "no journal");
    assert.deepEqual(toolObjects(ns), [], "no pod and no claim of the tool's left");
    const now = await allReady(ns, "db", 2);
    assert.deepEqual(snapshot(ns, now), before, "every pod, container and claim as before");

    // The same command with an image the node has moves both claims.
    const again = await runPlugin(moveArgs(ns, "data=1Gi,appstorage-csi-b"));
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /the copy image appstorage\.local\/copy:1 starts on /);
    for (const n of ["db-0", "db-1"]) assert.equal(claimOf(ns, `data-${n}`).spec.storageClassName, "appstorage-csi-b");
    assert.deepEqual(toolObjects(ns), []);
  });

  test("a copy pod no node has room for: refused once Unschedulable for 20 s, with the scheduler's message, before anything changes; without the LimitRange the rerun moves every claim", async (t) => {
    const ns = namespace(t, "nodestop");
    deleteKeptVolumes(t, ns);
    create(withUidWriter(workload("db", { replicas: 2, size: "1Gi" })), ns);
    const before = snapshot(ns, await allReady(ns, "db", 2));
    // Every container created from now on without requests asks for 200 GiB of memory.
    apply({ apiVersion: "v1", kind: "LimitRange", metadata: { name: "big" }, spec: { limits: [{ type: "Container", default: { memory: "200Gi" }, defaultRequest: { memory: "200Gi" } }] } }, ns);
    const started = Date.now();
    const stopped = await runPlugin(moveArgs(ns, "data=1Gi,appstorage-csi-b"));
    const took = (Date.now() - started) / 1000;
    t.diagnostic(`stopped after ${took.toFixed(1)} s`);
    assert.equal(stopped.code, 1, stopped.stderr);
    // Stopped by the pod's state (about 20 s here), not by --timeout (240 s here): the margin is for a loaded 2-core machine.
    assert.ok(took < 150, `stopped well before --timeout (${took} s)`);
    assert.match(
      stopped.stderr,
      /\nerror: the copy image appstorage\.local\/copy:1 cannot start on node \S+: Unschedulable \(0\/1 nodes are available: .*Insufficient memory.*\); the pod was removed and nothing was changed: the copy pods must run on node \S+, where the claim's replica runs, and tolerate only the taints that node had when the change was planned \(none\): make room there \(or lower the namespace's LimitRange defaults\), then run the same command again\n$/,
    );
    assert.notEqual(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 0, "no journal");
    assert.deepEqual(toolObjects(ns), [], "no pod and no claim of the tool's left");
    assert.deepEqual(snapshot(ns, await allReady(ns, "db", 2)), before, "every pod, container and claim as before");
    kubectl(["delete", "limitrange", "big", "-n", ns]);
    const again = await runPlugin(moveArgs(ns, "data=1Gi,appstorage-csi-b"));
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(toolObjects(ns), []);
  });

  test("a verification that fails (the new volume changed behind the copy): the claim untouched, the StatefulSet back; the rerun copies anew and moves it", async (t) => {
    const ns = namespace(t, "nodestop");
    deleteKeptVolumes(t, ns);
    create(withUidWriter(workload("db", { replicas: 2, size: "1Gi" })), ns);
    await allReady(ns, "db", 2);
    const payload = payloadSha(ns, "db-1");
    const old = claimOf(ns, "data-db-1");
    const k = await killedAt(moveArgs(ns, "data=1Gi,appstorage-csi-b"), /claim data-db-1: copied \d+ bytes/);
    assert.ok(k.killed, k.stderr);
    // The copy's payload changed behind the plugin's back (same size, other bytes, its time set back as
    // the source's: rsync alone would find it up to date), by a pod of the test's own.
    apply(
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "tamper" },
        spec: {
          restartPolicy: "Never",
          containers: [
            {
              name: "t",
              image: workloadImage,
              imagePullPolicy: "Never",
              command: ["sh", "-c", "head -c 1048576 /dev/urandom > /dst/payload && touch -r /src/payload /dst/payload && sync"],
              volumeMounts: [
                { name: "dst", mountPath: "/dst" },
                { name: "src", mountPath: "/src", readOnly: true },
              ],
            },
          ],
          volumes: [
            { name: "dst", persistentVolumeClaim: { claimName: "appstorage-new-data-db-1" } },
            { name: "src", persistentVolumeClaim: { claimName: "data-db-1", readOnly: true } },
          ],
        },
      },
      ns,
    );
    await eventually("the tamper pod done", () => kubectlJson<Pod>(["get", "pod", "tamper", "-n", ns]).status?.phase === "Succeeded", 120_000);
    kubectl(["delete", "pod", "tamper", "-n", ns, "--wait=true"]);

    const failed = await runPlugin(moveArgs(ns, "data=1Gi,appstorage-csi-b"));
    assert.equal(failed.code, 1, failed.stderr);
    assert.match(
      failed.stderr,
      new RegExp(
        `\\nerror: claim data-db-1: verification failed \\(the volumes differ: .*payload.*\\); the claim and its volume ${old.spec.volumeName} were not changed and statefulset.apps/db is back; the copy on claim appstorage-new-data-db-1 is removed: run the same command again to copy it anew; db-1 is Ready again on its old volume ${old.spec.volumeName}\\n$`,
      ),
    );
    const back = claimOf(ns, "data-db-1");
    assert.equal(back.metadata.uid, old.metadata.uid, "the claim untouched");
    assert.equal(back.spec.volumeName, old.spec.volumeName);
    assert.equal(kubectlJson<PersistentVolume>(["get", "pv", old.spec.volumeName!]).spec.persistentVolumeReclaimPolicy, "Delete", "its volume untouched");
    await allReady(ns, "db", 2);
    assert.equal(payloadSha(ns, "db-1"), payload, "db-1 back on its old claim, its data as it was");
    assert.deepEqual(toolObjects(ns), [], "no pod and no claim of the tool's left");

    const again = await runPlugin(moveArgs(ns, "data=1Gi,appstorage-csi-b"));
    assert.equal(again.code, 0, again.stderr);
    await allReady(ns, "db", 2);
    assert.equal(payloadSha(ns, "db-1"), payload, "moved with its data");
    assert.equal(claimOf(ns, "data-db-1").spec.storageClassName, "appstorage-csi-b");
  });

  test("a replica that does not come back Ready on its new volume: the run stops at --timeout with its old volume intact and named", async (t) => {
    const ns = namespace(t, "nodestop");
    deleteKeptVolumes(t, ns);
    const sts = withUidWriter(workload("db", { replicas: 2, size: "1Gi" }));
    // Ready only on a file system smaller than 1.5 GiB: never on the 2 GiB volume it moves to.
    const probe = "test -f /data/payload && [ $(df -k /data | awk 'NR == 2 { print $2 }') -lt 1572864 ]";
    (sts.spec.template.spec as { containers: { readinessProbe: { exec: { command: string[] } } }[] }).containers[0]!.readinessProbe.exec.command = ["sh", "-c", probe];
    create(sts, ns);
    const before = await allReady(ns, "db", 2);
    const payload = payloadSha(ns, "db-1");
    const old = claimOf(ns, "data-db-1");
    const r = await runPlugin(moveArgs(ns, "data=2Gi,appstorage-csi-b", copyImage, "40s"));
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `\\nerror: timed out after 40s waiting for db-1 to be Ready on the new volume; its old volume ${old.spec.volumeName} is kept with the data as it was \\(Retain\\); to go back, run: kubectl appstorage show db -n ${ns}, and see README "Moving existing claims"\\n$`,
      ),
    );
    const kept = kubectlJson<PersistentVolume>(["get", "pv", old.spec.volumeName!]);
    assert.equal(kept.spec.persistentVolumeReclaimPolicy, "Retain", "the old volume is kept");
    assert.equal((await onKeptVolumes(ns, [old.spec.volumeName!], "sha256sum /kept/0/payload")).split(/\s+/)[0], payload, "the old volume's data intact");
    const now = kubectlJson<{ items: Pod[] }>(["get", "pods", "-n", ns, "-l", "app=db"]).items;
    const db0 = now.find((p) => p.metadata.name === "db-0")!;
    assert.equal(db0.metadata.uid, before["db-0"]!.uid, "db-0 was not stopped: the run stopped at db-1");
    assert.match((await runPlugin(["show", "db", "-n", ns])).stdout, new RegExp(old.spec.volumeName!), "show lists the kept volume");
  });
  test("a move that cannot finish once its replica is down: the replica back up on its old volume, Ready, its data as it was; the rerun moves it", async (t) => {
    const ns = namespace(t, "nodestop");
    deleteKeptVolumes(t, ns);
    create(withUidWriter(workload("db", { replicas: 2, size: "1Gi" })), ns);
    const before = await allReady(ns, "db", 2);
    const payload = payloadSha(ns, "db-1");
    const old = claimOf(ns, "data-db-1");
    // Setting a volume of this namespace's claims to Retain is refused: the move cannot keep db-1's old volume, after its final copy was verified.
    const message = "retaining volumes is refused by test policy";
    const lift = await denyingPolicy(t, ns, {
      name: `deny-retain-${ns}`,
      rule: { apiGroups: [""], resources: ["persistentvolumes"], operations: ["UPDATE"] },
      expression: `!(has(object.spec.claimRef) && object.spec.claimRef.namespace == '${ns}' && object.spec.persistentVolumeReclaimPolicy == 'Retain' && oldObject.spec.persistentVolumeReclaimPolicy != 'Retain')`,
      message,
      probe: () => kubectlTry(["patch", "pv", old.spec.volumeName!, "--dry-run=server", "-p", '{"spec":{"persistentVolumeReclaimPolicy":"Retain"}}']),
    });
    const seen = watchPods(ns);
    const r = await runPlugin(moveArgs(ns, "data=1Gi,appstorage-csi-b"));
    await seen.stop();
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /claim data-db-1: verified \d+ files/, "the final copy was verified first");
    assert.match(r.stderr, new RegExp(`${message}; trying again, onto the new volume`), "forward first");
    assert.match(r.stderr, new RegExp(`\\nerror: .*${message}; db-1 is Ready again on its old volume ${old.spec.volumeName}\\n$`));
    const now = await allReady(ns, "db", 2);
    assert.equal(now["db-0"]!.uid, before["db-0"]!.uid, "db-0 was never stopped");
    assert.notEqual(now["db-1"]!.uid, before["db-1"]!.uid, "db-1 was stopped, and is back");
    const back = claimOf(ns, "data-db-1");
    assert.equal(back.metadata.uid, old.metadata.uid, "on its own claim, as it was");
    assert.equal(back.spec.volumeName, old.spec.volumeName);
    assert.equal(payloadSha(ns, "db-1"), payload, "its data as it was");
    assert.ok(maxDown(seen.seen, ["db-0", "db-1"]) <= 1, "never two down");

    await lift();
    const again = await runPlugin(moveArgs(ns, "data=1Gi,appstorage-csi-b"));
    assert.equal(again.code, 0, again.stderr);
    await allReady(ns, "db", 2);
    assert.equal(payloadSha(ns, "db-1"), payload, "moved with its data");
    for (const n of ["db-0", "db-1"]) assert.equal(claimOf(ns, `data-${n}`).spec.storageClassName, "appstorage-csi-b");
    assert.equal(kubectlJson<PersistentVolume>(["get", "pv", old.spec.volumeName!]).spec.persistentVolumeReclaimPolicy, "Retain", "the old volume kept");
    assert.deepEqual(toolObjects(ns), []);
  });
});
