// How --migrate-existing knows how much data a claim holds before a shrink, on the real node, both
// ways: through kubelet's volume stats (GET nodes/NAME/proxy/stats/summary, which the plan reads)
// and through the pod that measures the data (du) once the change is confirmed. The claim is on
// appstorage-csi, whose volume is a file system of its own, so kubelet's usedBytes is its data.
//
// The API server refuses to proxy nodes/proxy to a loopback address, and the test node's kubelet
// serves on loopback only: the first run goes through the test's proxy (test/shared/faultproxy.ts),
// which serves that one path from kubelet itself (kubelet's own answer, over its own port), so the
// plan refuses the shrink from kubelet's stats with no pod; the second run reaches the API server
// directly, whose node proxy fails here, so the stats are unknown and the pod measures the data.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { startFaultProxy } from "../shared/faultproxy";
import { getSts, kubeconfig, kubectlJson, namespace, runPlugin, uids } from "../shared/harness";
import { allReady, awaitPodVolumes, create, exec, workload, workloadImage } from "../shared/node";

const kubeletPort = () => Number(process.env["APPSTORAGE_PORT_BASE"]) + 5;
const leftovers = (ns: string) => kubectlJson<{ items: unknown[] }>(["get", "pods,pvc", "-n", ns, "-l", "appstorage.kubectl.io/claim"]).items;

describe("node: the data a shrink must fit, from kubelet's volume stats and from a pod's du", { timeout: 600_000 }, () => {
  test("600 MB on a 1Gi appstorage-csi claim, shrink to 512Mi: refused by the plan from kubelet's stats (no pod), and by the measuring pod without them; nothing changed", async (t) => {
    const ns = namespace(t, "nodestat");
    create(workload("db", { replicas: 1, size: "1Gi", storageClass: "appstorage-csi" }), ns);
    await allReady(ns, "db", 1);
    exec(ns, "db-0", "head -c 600000000 /dev/zero > /data/big && sync");
    const node = kubectlJson<{ spec: { nodeName: string } }>(["get", "pod", "db-0", "-n", ns]).spec.nodeName;
    // kubelet computes volume stats once a minute: wait until they show the data.
    const stats = await awaitPodVolumes(ns, "db-0", node, (v) => v.some((x) => x.claim === "data-db-0" && (x.usedBytes ?? 0) >= 600_000_000));
    t.diagnostic(`kubelet's stats: ${JSON.stringify(stats)}`);
    const before = uids(ns);
    const rv = getSts(ns, "db").metadata.resourceVersion;
    const args = ["set", "db", "data=512Mi", "--migrate-existing", "--copy-image", workloadImage, "-n", ns, "--yes"];

    const proxy = await startFaultProxy(kubeconfig(), [], { kubeletPort: kubeletPort() });
    let viaStats: Awaited<ReturnType<typeof runPlugin>>;
    try {
      viaStats = await runPlugin(args, { kubeconfig: proxy.kubeconfig });
    } finally {
      await proxy.close();
    }
    assert.equal(viaStats.code, 1, viaStats.stderr);
    const used = /^error: claim data-db-0 holds (\d+) bytes \(kubelet's volume stats\), more than the new size 512Mi \(536870912 bytes\): choose a size of at least \d+ bytes/m.exec(viaStats.stderr);
    assert.ok(used && Number(used[1]) >= 600_000_000, viaStats.stderr);
    assert.ok(
      proxy.requests.some((r) => r.path.startsWith(`/api/v1/nodes/${node}/proxy/stats/summary`) && r.serverStatus === 200),
      "the plan read kubelet's stats summary",
    );
    assert.ok(!proxy.requests.some((r) => r.signature === "create pods"), "no pod: the plan itself refused");

    const viaPod = await runPlugin(args);
    assert.equal(viaPod.code, 1, viaPod.stderr);
    assert.match(viaPod.stderr, /Warning: claim data-db-0 shrinks to 512Mi: kubelet's volume stats could not tell how much data it holds \(.*\), so set measures it with a pod/);
    const measured = /\nerror: claim data-db-0 holds (\d+) bytes \(measured\), more than the new size 512Mi \(536870912 bytes\): choose a size of at least \d+ bytes; nothing was changed\n$/.exec(
      viaPod.stderr,
    );
    assert.ok(measured && Number(measured[1]) >= 600_000_000, viaPod.stderr);

    assert.deepEqual(uids(ns), before, "nothing changed");
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv, "the StatefulSet untouched");
    assert.deepEqual(leftovers(ns), [], "no pod left");
  });
});
