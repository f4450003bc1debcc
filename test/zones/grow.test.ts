// Growing existing claims on three nodes in three zones: three replicas spread over the zones, each
// volume attached to its pod's node. --resize-existing --wait-resize grows them online (the real
// external-resizer, then each node's kubelet); --restart-pods on a class whose volumes grow only at
// mount restarts them one at a time, and each comes back on its node, in its volume's zone.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { namespace, runPlugin, uids } from "../shared/harness";
import { aboutGiB, allReady, atMountClass, claimStatus, create, fsBytes, growsOnline, maxDown, payloadSha, watchPods } from "../shared/node";
import { placement, spread, troubleEvents, zones } from "./zones";

const names = ["db-0", "db-1", "db-2"];

/** Three replicas, one per zone, each volume in its pod's zone and attached to its node only. */
function assertSpread(ns: string): Record<string, string> {
  const where = placement(ns);
  assert.deepEqual(new Set(Object.values(where).map((w) => w.podZone)), new Set(Object.values(zones)), "one replica per zone");
  for (const [claim, w] of Object.entries(where)) {
    assert.deepEqual(w.volumeZones, [w.podZone], `${claim}: its volume lives in its pod's zone`);
    assert.deepEqual(w.attachedTo, [w.node], `${claim}: attached to its pod's node only`);
  }
  return Object.fromEntries(Object.entries(where).map(([claim, w]) => [claim, w.node]));
}

describe("zones: growing existing claims over three zones", { timeout: 1_200_000 }, () => {
  test("--resize-existing --wait-resize: every volume grown online on its node, same containers, same data", async (t) => {
    const ns = namespace(t, "zones");
    create(spread("db", 3, "1Gi", "data"), ns);
    const before = await allReady(ns, "db", 3, 240_000);
    const nodes = assertSpread(ns);
    await growsOnline(ns, "db", names, before, "240s");
    assert.deepEqual(assertSpread(ns), nodes, "every volume still attached to the same node");
  });

  test("--resize-existing --restart-pods: one pod down at a time, each back on its node in its volume's zone, no Multi-Attach or FailedScheduling", async (t) => {
    const ns = namespace(t, "zones");
    const cls = atMountClass(t, ns);
    create(spread("db", 3, "1Gi", "data", cls), ns);
    const before = await allReady(ns, "db", 3, 240_000);
    const nodes = assertSpread(ns);
    const data = Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));
    const ids = uids(ns);

    const watch = watchPods(ns);
    const r = await runPlugin(["set", "db", "data=2Gi", "--resize-existing", "--restart-pods", "--timeout", "300s", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /restarting 3 pod\(s\) one at a time, highest ordinal first: db-2, db-1, db-0/);
    assert.match(r.stdout, /pod\/db-2 evicted\npod\/db-1 evicted\npod\/db-0 evicted\n/);
    const after = await allReady(ns, "db", 3, 240_000);
    await watch.stop();
    const now = uids(ns);
    for (const n of names) {
      assert.notEqual(after[n]!.uid, before[n]!.uid, `${n}: a new pod`);
      assert.equal(after[n]!.restartCount, 0, `${n}: the new container never restarted`);
      assert.equal(now[`pvc/data-${n}`], ids[`pvc/data-${n}`], `${n}: same claim`);
      assert.equal(payloadSha(ns, n), data[n], `${n}: data kept`);
      assert.ok(aboutGiB(fsBytes(ns, n), 2), `${n}: df shows 2 GiB after the restart`);
      assert.deepEqual(claimStatus(ns, `data-${n}`), { phase: "Bound", capacity: "2Gi", conditions: [] });
    }
    assert.equal(maxDown(watch.seen, names), 1, "one pod down at a time");
    assert.deepEqual(assertSpread(ns), nodes, "every replica back on its node, its volume attached there only");
    assert.deepEqual(troubleEvents(ns), [], "no Multi-Attach error and no FailedScheduling event");
  });
});
