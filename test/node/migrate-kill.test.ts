// --migrate-existing killed at every step, on the real node: a one-replica StatefulSet whose pod
// writes, `set --migrate-existing` SIGKILLed as soon as it reports reaching each step (the new
// volume's claim, the first copy, the final copy's pod started to wait, the orphan delete, the
// eviction, the final copy, that pod told to go, the verification, the old volume set to Retain, the old claim removed, the claim re-created, the
// StatefulSet re-created, the pod Ready again), then the same command run again. After each:
// the rerun converges (exit 0), the pod runs on the new class with the same data (payload
// checksum, and the writer's numbered lines with no gap), the old volume is kept (Retain), and
// no copy pod or claim of the tool's is left. A kill counts only when it killed a live process.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { PersistentVolume, PersistentVolumeClaim, Pod } from "../../src/api/types";
import { eventually, kubeconfig, kubectl, kubectlJson, namespace, plugin, runPlugin } from "../e2e/harness";
import { allReady, assertSequence, create, deleteKeptVolumes, payloadSha, withWriter, workload, workloadImage } from "./node";

/** What the plugin prints as it reaches each step: it is killed right after the line. */
const steps: [string, RegExp][] = [
  ["the new volume's claim created", /created claim appstorage-new-data-db-0 for a new volume/],
  ["the first copy started", /claim data-db-0: copying to a new volume/],
  ["the first copy done", /claim data-db-0: copied \d+ bytes/],
  ["the final copy's pod started, waiting", /started copy pod appstorage-copy-data-db-0 for the final copy/],
  ["the StatefulSet orphan-deleted", /so nothing re-creates db-0 while its claim moves/],
  ["the pod evicted", /pod\/db-0 evicted/],
  ["the final copy started", /claim data-db-0: final copy of what changed/],
  ["the final copy's pod told to go", /told copy pod appstorage-copy-data-db-0 to make the final copy/],
  ["the copy verified", /claim data-db-0: verified \d+ files/],
  ["the old volume set to Retain", /set to reclaim policy Retain and labelled/],
  ["the old claim removed", /claim data-db-0 \(uid [^)]+\) removed/],
  ["the claim re-created on the new volume", /claim data-db-0 re-created on volume/],
  ["the StatefulSet re-created", /created statefulset\.apps\/db again/],
  ["the pod Ready again", /db-0 is Ready on claim data-db-0/],
];

/** Runs the plugin and SIGKILLs it right after a stderr line matches; whether the kill hit a live process. */
function killedAt(args: string[], at: RegExp, stateDir: string): Promise<{ killed: boolean; stderr: string; code: number | null }> {
  return new Promise((resolve) => {
    const child = spawn(plugin, [...args, "--kubeconfig", kubeconfig()], {
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", APPSTORAGE_STATE_DIR: stateDir },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    let killed = false;
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (!killed && at.test(stderr) && child.exitCode === null) killed = child.kill("SIGKILL");
    });
    child.on("close", (code, signal) => resolve({ killed: killed && signal === "SIGKILL", stderr, code }));
  });
}

describe("node: --migrate-existing killed at every step", { timeout: 2_400_000 }, () => {
  let kills = 0;
  for (const [name, at] of steps) {
    test(`killed after ${name}: the same command finishes the move, the data is kept`, async (t) => {
      const ns = namespace(t, "node");
      deleteKeptVolumes(t, ns);
      create(withWriter(workload("db", { replicas: 1, size: "512Mi" })), ns);
      await allReady(ns, "db", 1);
      const data = payloadSha(ns, "db-0");
      const old = kubectlJson<PersistentVolumeClaim>(["get", "pvc", "data-db-0", "-n", ns]);
      const args = ["set", "db", "data=512Mi,appstorage-csi-b", "--migrate-existing", "--copy-image", workloadImage, "--timeout", "240s", "-n", ns, "--yes"];
      const stateDir = mkdtempSync(join(tmpdir(), "appstorage-state-"));
      const k = await killedAt(args, at, stateDir);
      assert.ok(k.killed, `the run was not killed after ${name} (exit ${k.code}):\n${k.stderr}`);
      kills += 1;
      const rerun = await runPlugin(args, { stateDir });
      assert.equal(rerun.code, 0, `after a kill after ${name}:\n${k.stderr}\n--- rerun:\n${rerun.stderr}`);
      await allReady(ns, "db", 1);
      assert.equal(payloadSha(ns, "db-0"), data, "the payload is the same data");
      assertSequence(ns, "db-0");
      const now = kubectlJson<PersistentVolumeClaim>(["get", "pvc", "data-db-0", "-n", ns]);
      assert.equal(now.spec.storageClassName, "appstorage-csi-b");
      assert.notEqual(now.spec.volumeName, old.spec.volumeName);
      const kept = kubectlJson<PersistentVolume>(["get", "pv", old.spec.volumeName!]);
      assert.equal(kept.spec.persistentVolumeReclaimPolicy, "Retain", "the old volume is kept");
      assert.equal(kubectlJson<PersistentVolume>(["get", "pv", now.spec.volumeName!]).spec.persistentVolumeReclaimPolicy, "Delete", "the new volume has its class's policy back");
      assert.deepEqual(kubectlJson<{ items: unknown[] }>(["get", "pods,pvc", "-n", ns, "-l", "appstorage.kubectl.io/claim"]).items, [], "no copy pod or claim of the tool's left");
      assert.notEqual((await runPlugin(["show", "db", "-n", ns])).stdout.indexOf(old.spec.volumeName!), -1, "show lists the kept volume");
      t.diagnostic(`kills that landed so far: ${kills}`);
    });
  }

  test("a waiting final-copy pod that does not start when told to is replaced after 20 s: the move finishes, the data is kept", async (t) => {
    const ns = namespace(t, "node");
    deleteKeptVolumes(t, ns);
    create(withWriter(workload("db", { replicas: 1, size: "512Mi" })), ns);
    await allReady(ns, "db", 1);
    const data = payloadSha(ns, "db-0");
    const args = ["set", "db", "data=512Mi,appstorage-csi-b", "--migrate-existing", "--copy-image", workloadImage, "--timeout", "240s", "-n", ns, "--yes"];
    const stateDir = mkdtempSync(join(tmpdir(), "appstorage-state-"));
    const k = await killedAt(args, /started copy pod appstorage-copy-data-db-0 for the final copy/, stateDir);
    assert.ok(k.killed, `the run was not killed once the final copy's pod started (exit ${k.code}):\n${k.stderr}`);
    // In its place, a pod that looks the same to the tool but never reads its signal (as if its downward API volume were never updated).
    const real = kubectlJson<Pod>(["get", "pod", "appstorage-copy-data-db-0", "-n", ns]);
    kubectl(["delete", "pod", "appstorage-copy-data-db-0", "-n", ns, "--grace-period=1", "--wait=true"]);
    create(
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "appstorage-copy-data-db-0", labels: real.metadata.labels, annotations: real.metadata.annotations },
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 0,
          containers: [{ name: "copy", image: workloadImage, imagePullPolicy: "Never", command: ["sleep", "3600"], readinessProbe: { exec: { command: ["false"] }, periodSeconds: 1 } }],
        },
      },
      ns,
    );
    await eventually("the stand-in copy pod running", () => kubectlJson<Pod>(["get", "pod", "appstorage-copy-data-db-0", "-n", ns]).status?.phase === "Running", 60_000);
    const rerun = await runPlugin(args, { stateDir });
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stderr, /copy pod appstorage-copy-data-db-0 did not start the final copy within 20s of being told to/);
    await allReady(ns, "db", 1);
    assert.equal(payloadSha(ns, "db-0"), data, "the payload is the same data");
    assertSequence(ns, "db-0");
    assert.equal(kubectlJson<PersistentVolumeClaim>(["get", "pvc", "data-db-0", "-n", ns]).spec.storageClassName, "appstorage-csi-b");
    assert.deepEqual(kubectlJson<{ items: unknown[] }>(["get", "pods,pvc", "-n", ns, "-l", "appstorage.kubectl.io/claim"]).items, [], "no copy pod or claim of the tool's left");
  });
});
