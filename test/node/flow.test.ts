// The seed's QA flow on running pods: postgresql-k8s with pgdata 1Gi, set pgdata=2Gi, scale to 2.
// Ordinal 0 keeps its pod (same uid), its container (same id, no restart) and its data (same
// checksum, read in the running container); ordinal 1 gets a 2Gi claim and a 2 GiB filesystem.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { claims, kubectl, namespace, runPlugin } from "../shared/harness";
import { aboutGiB, allReady, claimStatus, create, fsBytes, payloadSha, running, workload } from "../shared/node";

describe("node: the reference flow", { timeout: 600_000 }, () => {
  test("pgdata 1Gi -> 2Gi, scale 1 -> 2: pod 0 keeps its container and data, ordinal 1 gets a 2 GiB filesystem", async (t) => {
    const ns = namespace(t, "node");
    create(workload("postgresql-k8s", { claim: "pgdata", size: "1Gi" }), ns);
    const before = await allReady(ns, "postgresql-k8s", 1);
    assert.deepEqual(claimStatus(ns, "pgdata-postgresql-k8s-0"), { phase: "Bound", capacity: "1Gi", conditions: [] });
    assert.equal(before["postgresql-k8s-0"]!.restartCount, 0);
    const sha = payloadSha(ns, "postgresql-k8s-0");
    assert.ok(aboutGiB(fsBytes(ns, "postgresql-k8s-0"), 1), "a 1 GiB filesystem in pod 0");
    const claimUid = claims(ns)[0]!.metadata.uid;

    const r = await runPlugin(["set", "postgresql-k8s", "pgdata=2Gi", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "statefulset.apps/postgresql-k8s recreated\n");
    assert.match(r.stderr, /verified: 1 pod\(s\) adopted/);

    kubectl(["scale", "statefulset", "postgresql-k8s", "-n", ns, "--replicas=2"]);
    const after = await allReady(ns, "postgresql-k8s", 2);
    assert.deepEqual(after["postgresql-k8s-0"], before["postgresql-k8s-0"], "pod 0: same uid, same container, no restart");
    assert.equal(after["postgresql-k8s-1"]!.restartCount, 0);
    assert.equal(payloadSha(ns, "postgresql-k8s-0"), sha, "pod 0's data read back");
    assert.equal(claims(ns).find((c) => c.metadata.name === "pgdata-postgresql-k8s-0")!.metadata.uid, claimUid);
    assert.deepEqual(claimStatus(ns, "pgdata-postgresql-k8s-0"), { phase: "Bound", capacity: "1Gi", conditions: [] });
    assert.deepEqual(claimStatus(ns, "pgdata-postgresql-k8s-1"), { phase: "Bound", capacity: "2Gi", conditions: [] });
    const bytes = fsBytes(ns, "postgresql-k8s-1");
    assert.ok(aboutGiB(bytes, 2), `a 2 GiB filesystem in pod 1 (df: ${bytes} bytes)`);
    // Still the same container a while later (a late restart would show here).
    await new Promise((r2) => setTimeout(r2, 3000));
    assert.deepEqual(running(ns, "postgresql-k8s")["postgresql-k8s-0"], before["postgresql-k8s-0"]);
  });
});
