// Adoption of running pods by the re-created StatefulSet, on a real node: Running, Ready pods with
// minReadySeconds, and OrderedReady with a pod that is not Ready. No pod, container or claim is
// replaced; every container keeps its id and restart count; every volume keeps its data.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { getSts, namespace, runPlugin, uids } from "../shared/harness";
import { allReady, create, exec, payloadSha, running, workload } from "../shared/node";
import { eventually } from "../shared/harness";

const shas = (ns: string, names: string[]) => Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));

describe("node: adoption of running pods", { timeout: 600_000 }, () => {
  test("Running, Ready pods with minReadySeconds: adopted as they are, still available", async (t) => {
    const ns = namespace(t, "node");
    create(workload("db", { replicas: 2, minReadySeconds: 5 }), ns);
    const before = await allReady(ns, "db", 2);
    await eventually("both pods available (minReadySeconds)", () => getSts(ns, "db").status?.availableReplicas === 2, 60_000);
    const data = shas(ns, ["db-0", "db-1"]);
    const ids = uids(ns);

    const r = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /verified: 2 pod\(s\) adopted/);
    const s = await eventually(
      "the new StatefulSet to count 2 available pods",
      () => {
        const x = getSts(ns, "db");
        return x.status?.availableReplicas === 2 && x.status?.readyReplicas === 2 ? x : undefined;
      },
      60_000,
    );
    assert.equal(s.spec.minReadySeconds, 5);
    assert.deepEqual(running(ns, "db"), before, "same pods, same containers, no restarts");
    assert.deepEqual(uids(ns), ids);
    assert.deepEqual(shas(ns, ["db-0", "db-1"]), data);
  });

  test("OrderedReady with a pod that is not Ready: adopted without a restart, and Ready again later", async (t) => {
    const ns = namespace(t, "node");
    create(workload("db", { replicas: 3, podManagementPolicy: "OrderedReady" }), ns);
    await allReady(ns, "db", 3);
    const data = shas(ns, ["db-0", "db-1", "db-2"]);
    // db-1's readiness probe fails from now on; its container keeps running.
    exec(ns, "db-1", "touch /tmp/unready");
    await eventually("db-1 not Ready", () => running(ns, "db")["db-1"]?.ready === false, 30_000);
    const before = running(ns, "db");
    const ids = uids(ns);

    const r = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /verified: 3 pod\(s\) adopted/);
    // A while for the controller to act on the not-Ready pod (it must not replace it).
    await new Promise((res) => setTimeout(res, 5000));
    assert.deepEqual(running(ns, "db"), before, "same pods and containers; db-1 still running, not Ready");
    assert.deepEqual(uids(ns), ids);

    exec(ns, "db-1", "rm /tmp/unready");
    const after = await allReady(ns, "db", 3);
    for (const n of ["db-0", "db-1", "db-2"]) {
      assert.equal(after[n]!.containerID, before[n]!.containerID, `${n}: same container`);
      assert.equal(after[n]!.restartCount, 0, `${n}: no restart`);
    }
    assert.deepEqual(shas(ns, ["db-0", "db-1", "db-2"]), data);
    assert.equal(getSts(ns, "db").status?.readyReplicas, 3);
  });
});
