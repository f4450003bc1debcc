// --migrate-existing's copies are bounded by their progress, not by --timeout, on the real node: a
// copy pod is Ready while its bytes move (its readiness probe sums what its processes read and
// write, src/plan/migrate.ts progressProbe), and the run stops a copy only once it moved no byte for
// stallSeconds (src/plan/move.ts). Here the final copy, made while the replica is down, takes far
// longer than --timeout (30 s) and longer than stallSeconds (120 s): on SIGTERM (its eviction) the
// replica writes 96 MiB anew, so the final copy has that much to copy and to verify, and every
// container created once the replica runs gets at most 10m of a CPU (the namespace's LimitRange
// default), the copy pods among them. The final copy is a deleted pod (deleting it is its go), so
// this also shows that kubelet keeps probing a pod while it terminates. The move must finish by
// itself with the data equal: the payload, and the big file on the new volume and on the kept old one.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ApplyResult } from "../../src/plan/types";
import { stallSeconds } from "../../src/plan/move";
import { apply, kubectl, kubectlJson, namespace, runPlugin } from "../shared/harness";
import { allReady, copyImage, create, deleteKeptVolumes, exec, payloadSha, workload } from "../shared/node";
import { onKeptVolumes } from "../shared/move";
import type { PersistentVolumeClaim } from "../../src/api/types";

/** 128 MiB made a final copy of 278 s at 10m of a CPU here: 96 MiB keeps it well above stallSeconds. */
const bigMiB = 96;

describe("node: a copy bounded by its progress, not by --timeout", { timeout: 1_200_000 }, () => {
  test(`a final copy that outlasts --timeout and ${stallSeconds}s while its bytes move: waited for, the move finishes, the data equal`, async (t) => {
    const ns = namespace(t, "nodeprog");
    deleteKeptVolumes(t, ns);
    const sts = workload("db", { replicas: 1, size: "1Gi" });
    const container = (sts.spec.template.spec as { containers: { command: string[] }[]; terminationGracePeriodSeconds?: number }).containers[0]!;
    assert.ok(container.command[2]!.includes("trap 'exit 0' TERM"));
    container.command = [
      "sh",
      "-c",
      container.command[2]!.replace("trap 'exit 0' TERM", `trap 'head -c ${bigMiB * 1048576} /dev/urandom > /data/big.new && mv /data/big.new /data/big && sync; exit 0' TERM`),
    ];
    (sts.spec.template.spec as { terminationGracePeriodSeconds?: number }).terminationGracePeriodSeconds = 120;
    create(sts, ns);
    await allReady(ns, "db", 1);
    const payload = payloadSha(ns, "db-0");
    const old = kubectlJson<PersistentVolumeClaim>(["get", "pvc", "data-db-0", "-n", ns]).spec.volumeName!;
    apply({ apiVersion: "v1", kind: "LimitRange", metadata: { name: "slow" }, spec: { limits: [{ type: "Container", default: { cpu: "10m" }, defaultRequest: { cpu: "10m" } }] } }, ns);

    const started = Date.now();
    const r = await runPlugin(["set", "db", "data=1Gi,appstorage-csi-b", "--migrate-existing", "--copy-image", copyImage, "--timeout", "30s", "-n", ns, "--yes", "-o", "json"]);
    const took = (Date.now() - started) / 1000;
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout) as ApplyResult;
    const moved = result.migration!.claims[0]!;
    t.diagnostic(`the move took ${took.toFixed(0)} s; the final copy ${moved.finalSeconds} s; db-0 was down ${moved.downSeconds} s`);
    assert.ok((moved.finalSeconds ?? 0) > stallSeconds, `the final copy took ${moved.finalSeconds} s: longer than --timeout (30 s) and than ${stallSeconds} s`);
    assert.match(r.stderr, /claim data-db-0: verified \d+ files/);

    // Read back at full speed: without the LimitRange, and db-0 started again outside it (the pods that read would be throttled too).
    kubectl(["delete", "limitrange", "slow", "-n", ns]);
    kubectl(["delete", "pod", "db-0", "-n", ns, "--wait=true"]);
    await allReady(ns, "db", 1);
    assert.equal(payloadSha(ns, "db-0"), payload, "the payload moved");
    const big = exec(ns, "db-0", "sha256sum /data/big").split(/\s+/)[0];
    const kept = (await onKeptVolumes(ns, [old], "sha256sum /kept/0/big")).split(/\s+/)[0];
    assert.equal(big, kept, "the big file written at the eviction is on the new volume as on the old one");
    assert.equal(kubectlJson<PersistentVolumeClaim>(["get", "pvc", "data-db-0", "-n", ns]).spec.storageClassName, "appstorage-csi-b");
  });
});
