// --restart-pods with real graceful termination: a storage class whose volumes grow only when they
// are mounted (the driver's expansion=at-mount) makes kubelet's FileSystemResizePending real. The
// plugin evicts the pods one at a time, highest ordinal first; kubelet stops each container with
// SIGTERM (exit code 0), mounts the volume again and grows it; the data stays.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { eventually, namespace, runPlugin, uids } from "../shared/harness";
import { aboutGiB, allReady, atMountClass, claimStatus, create, fsBytes, maxDown, payloadSha, watchClaimConditions, watchPods, workload } from "../shared/node";

describe("node: --restart-pods", { timeout: 900_000 }, () => {
  test("FileSystemResizePending from the driver: pods restarted one at a time, gracefully, data kept", async (t) => {
    const ns = namespace(t, "node");
    const cls = atMountClass(t, ns);
    create(workload("db", { replicas: 2, size: "1Gi", storageClass: cls }), ns);
    const before = await allReady(ns, "db", 2);
    const names = ["db-0", "db-1"];
    const data = Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));
    const ids = uids(ns);

    const watch = watchPods(ns);
    const conditions = watchClaimConditions(ns);
    const r = await runPlugin(["set", "db", "data=2Gi", "--resize-existing", "--restart-pods", "--timeout", "240s", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    // The plugin saw each claim's condition before it went on; the watch has had time since.
    await eventually("the claims' watch to catch up", () => names.every((n) => conditions.seen.has(`data-${n}/NodeResizeError`)), 5_000).catch(() => undefined);
    await conditions.stop();
    // kubelet tried to grow them in the running pods first, and the driver refused: kubelet wrote
    // NodeResizeError on each claim, which the claims' watch saw. The plugin's "waiting for kubelet"
    // line is not required: kubelet may refuse before the plugin first looks (seen once in a cold
    // run); when the line is there, it comes before the restart decision.
    for (const n of names) {
      assert.ok(conditions.seen.has(`data-${n}/NodeResizeError`), `data-${n}: kubelet's NodeResizeError (seen: ${[...conditions.seen].join(", ")})`);
      const restartAt = r.stderr.search(new RegExp(`claim data-${n}: FileSystemResizePending \\(capacity 1Gi of 2Gi\\): the file system grows when its pod restarts`));
      assert.ok(restartAt >= 0, r.stderr);
      const waitingAt = r.stderr.search(new RegExp(`claim data-${n}: capacity 1Gi of 2Gi, FileSystemResizePending: waiting for kubelet`));
      assert.ok(waitingAt < restartAt, `data-${n}: waiting for kubelet comes before the restart decision`);
    }
    assert.match(r.stderr, /restarting 2 pod\(s\) one at a time, highest ordinal first: db-1, db-0/);
    assert.match(r.stdout, /pod\/db-1 evicted\npod\/db-0 evicted\n/);

    const after = await allReady(ns, "db", 2);
    await watch.stop();
    const now = uids(ns);
    for (const n of names) {
      assert.notEqual(after[n]!.uid, before[n]!.uid, `${n}: a new pod`);
      assert.notEqual(after[n]!.containerID, before[n]!.containerID, `${n}: a new container`);
      assert.equal(after[n]!.restartCount, 0, `${n}: the new container never restarted`);
      assert.equal(now[`pvc/data-${n}`], ids[`pvc/data-${n}`], `${n}: same claim`);
      assert.equal(payloadSha(ns, n), data[n], `${n}: data kept`);
      const bytes = fsBytes(ns, n);
      assert.ok(aboutGiB(bytes, 2), `${n}: df shows 2 GiB after the restart (${bytes} bytes)`);
      assert.deepEqual(claimStatus(ns, `data-${n}`), { phase: "Bound", capacity: "2Gi", conditions: [] });
    }
    // Graceful: each old container ended on SIGTERM with its own exit code 0 (a SIGKILL gives 137),
    // and never more than one pod was down.
    for (const n of names) {
      const exits = watch.seen.filter((x) => x.uid === before[n]!.uid && x.exitCode !== "").map((x) => x.exitCode);
      assert.ok(exits.length > 0 && exits.every((c) => c === "0"), `${n}: the old container exited 0 (seen: ${exits.join(",") || "none"})`);
    }
    assert.equal(maxDown(watch.seen, names), 1, "one pod down at a time");
  });
});
