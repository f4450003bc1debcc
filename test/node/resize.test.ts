// --resize-existing --wait-resize through the real external-resizer and kubelet's online expansion:
// the filesystem in the running pod grows, and the container is never restarted.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { namespace, runPlugin, uids } from "../e2e/harness";
import { aboutGiB, allReady, claimStatus, create, fsBytes, payloadSha, running, workload } from "./node";

describe("node: growing existing claims online", { timeout: 600_000 }, () => {
  test("set data=2Gi --resize-existing --wait-resize: df in each pod shows 2 GiB, same containers, same data", async (t) => {
    const ns = namespace(t, "node");
    create(workload("db", { replicas: 2, size: "1Gi" }), ns);
    const before = await allReady(ns, "db", 2);
    const names = ["db-0", "db-1"];
    const data = Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));
    for (const n of names) assert.ok(aboutGiB(fsBytes(ns, n), 1), `${n}: 1 GiB before`);
    const ids = uids(ns);

    const r = await runPlugin(["set", "db", "data=2Gi", "--resize-existing", "--wait-resize", "--timeout", "180s", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    for (const n of names) assert.match(r.stderr, new RegExp(`claim data-${n}: resized: capacity 2Gi`));
    // kubelet's part, online: never a restart asked for.
    assert.doesNotMatch(r.stderr, /restart|Warning/);
    for (const n of names) {
      assert.deepEqual(claimStatus(ns, `data-${n}`), { phase: "Bound", capacity: "2Gi", conditions: [] });
      const bytes = fsBytes(ns, n);
      assert.ok(aboutGiB(bytes, 2), `${n}: df shows 2 GiB (${bytes} bytes)`);
      assert.equal(payloadSha(ns, n), data[n], `${n}: data kept`);
    }
    assert.deepEqual(running(ns, "db"), before, "same pods, same containers, no restarts");
    assert.deepEqual(uids(ns), ids);
  });
});
