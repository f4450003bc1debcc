// How --migrate-existing knows how much data a claim holds before a shrink, on the real node: a pod
// measures it (du) once the change is confirmed, before anything else changes. kubelet's volume
// stats are never read: they are served through nodes/proxy, which lets whoever may read it run
// commands in any pod of the node (kubernetes#136550). The claim is on appstorage-csi, a file system
// of its own. Checked through the test's proxy (test/shared/faultproxy.ts), which sees every request
// of the run: none goes to a node's proxy; and the measuring pod, as admitted, is hardened like every
// copy pod (only DAC_OVERRIDE added, to read every file).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { startFaultProxy } from "../shared/faultproxy";
import { getSts, kubeconfig, kubectlJson, namespace, runPlugin, uids } from "../shared/harness";
import { assertHardened } from "../shared/move";
import { allReady, copyImage, create, exec, watchToolPods, workload } from "../shared/node";

const leftovers = (ns: string) => kubectlJson<{ items: unknown[] }>(["get", "pods,pvc", "-n", ns, "-l", "appstorage.kubectl.io/claim"]).items;

describe("node: the data a shrink must fit, measured by a pod; never kubelet's stats", { timeout: 600_000 }, () => {
  test("600 MB on a 1Gi appstorage-csi claim, shrink to 512Mi: refused by the measuring pod, no request through a node's proxy, nothing changed", async (t) => {
    const ns = namespace(t, "nodestat");
    create(workload("db", { replicas: 1, size: "1Gi", storageClass: "appstorage-csi" }), ns);
    await allReady(ns, "db", 1);
    exec(ns, "db-0", "head -c 600000000 /dev/zero > /data/big && sync");
    const before = uids(ns);
    const rv = getSts(ns, "db").metadata.resourceVersion;
    const args = ["set", "db", "data=512Mi", "--migrate-existing", "--copy-image", copyImage, "-n", ns, "--yes"];

    const watch = watchToolPods(ns);
    const proxy = await startFaultProxy(kubeconfig());
    let r: Awaited<ReturnType<typeof runPlugin>>;
    try {
      r = await runPlugin(args, { kubeconfig: proxy.kubeconfig });
    } finally {
      await proxy.close();
    }
    await watch.stop();
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /Warning: claim data-db-0 shrinks to 512Mi: set measures its data with a pod once the change is confirmed, and refuses before anything else changes if it does not fit\n/);
    const measured = /\nerror: claim data-db-0 holds (\d+) bytes \(measured\), more than the new size 512Mi \(536870912 bytes\): choose a size of at least \d+ bytes; nothing was changed\n$/.exec(
      r.stderr,
    );
    assert.ok(measured && Number(measured[1]) >= 600_000_000, r.stderr);
    assert.deepEqual(
      proxy.requests.filter((q) => /\/proxy(\/|$|\?)/.test(q.path)).map((q) => q.path),
      [],
      "no request through a node's proxy",
    );
    const pods = [...watch.pods.values()];
    assert.deepEqual(
      pods.map((p) => p.metadata.name),
      ["appstorage-measure-data-db-0"],
    );
    assertHardened(pods[0]!, copyImage, []);
    assert.deepEqual((pods[0]!.spec as { containers: { securityContext: { capabilities: { add: string[] } } }[] }).containers[0]!.securityContext.capabilities.add, ["DAC_OVERRIDE"]);

    assert.deepEqual(uids(ns), before, "nothing changed");
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv, "the StatefulSet untouched");
    assert.deepEqual(leftovers(ns), [], "no pod left");
  });
});
