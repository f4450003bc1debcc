// --resize-existing --wait-resize through the real external-resizer and kubelet's online expansion:
// the filesystem in the running pod grows, and the container is never restarted.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { namespace } from "../shared/harness";
import { aboutGiB, allReady, create, fsBytes, growsOnline, workload } from "../shared/node";

describe("node: growing existing claims online", { timeout: 600_000 }, () => {
  test("set data=2Gi --resize-existing --wait-resize: df in each pod shows 2 GiB, same containers, same data", async (t) => {
    const ns = namespace(t, "node");
    create(workload("db", { replicas: 2, size: "1Gi" }), ns);
    const before = await allReady(ns, "db", 2);
    const names = ["db-0", "db-1"];
    for (const n of names) assert.ok(aboutGiB(fsBytes(ns, n), 1), `${n}: 1 GiB before`);
    await growsOnline(ns, "db", names, before, "180s");
  });
});
