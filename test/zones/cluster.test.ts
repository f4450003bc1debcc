// Three nodes in three zones on this machine (scripts/cluster up --nodes 3, node scripts/test.mjs zones):
// each node has its own kubelet, containerd and pod network in namespaces of its own, an address that
// is not loopback, and a zone; the driver's volumes live in one zone and are attached to one node at
// a time (VolumeAttachment). Then the plugin's reference flow on three replicas spread over the zones.
import type { PersistentVolume, Pod } from "../../src/api/types";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, test } from "node:test";
import { claims, eventually, kubectl, kubectlJson, namespace, root, runPlugin } from "../shared/harness";
import { aboutGiB, allReady, claimStatus, create, fsBytes, payloadSha, running } from "../shared/node";
import { affinityZones, claimOf1Gi, clusterScript, nodeObjects, placement, readyOf, spread, untilTerm, workloadPod, zoneOfNode, zones } from "./zones";

describe("zones: three nodes in three zones", { timeout: 900_000 }, () => {
  test("every node Ready in its zone, at an address that is not loopback; logs, exec and nodes/proxy reach each kubelet", async (t) => {
    const nodes = nodeObjects();
    assert.deepEqual(nodes.map((n) => n.metadata.name).sort(), Object.keys(zones));
    for (const n of nodes) {
      assert.equal(readyOf(n), "True", `${n.metadata.name} Ready`);
      assert.equal(n.metadata.labels?.["topology.kubernetes.io/zone"], zones[n.metadata.name]);
      assert.equal(n.metadata.labels?.["topology.kubernetes.io/region"], "region-1");
      const ip = n.status?.addresses?.find((a) => a.type === "InternalIP")?.address ?? "";
      assert.match(ip, /^10\.211\.\d\.2$/, `${n.metadata.name}'s InternalIP is its own address (${ip})`);
      // nodes/proxy: the API server reaches the kubelet at that address.
      assert.equal(kubectl(["get", "--raw", `/api/v1/nodes/${n.metadata.name}/proxy/healthz`]), "ok");
    }
    const ns = namespace(t, "zones");
    for (const node of Object.keys(zones)) {
      create(workloadPod(`on-${node}`, `echo hello from ${node}; ${untilTerm}`, { spec: { nodeName: node, terminationGracePeriodSeconds: 1 } }), ns);
    }
    for (const node of Object.keys(zones)) {
      kubectl(["wait", "-n", ns, "--for=condition=Ready", `pod/on-${node}`, "--timeout=120s"]);
      await eventually(`the log of on-${node}`, () => kubectl(["logs", "-n", ns, `on-${node}`]) === `hello from ${node}\n`);
      assert.equal(kubectl(["exec", "-n", ns, `on-${node}`, "--", "cat", "/proc/sys/kernel/hostname"]).trim() !== "", true);
      // Each pod in its node's pod network (10.88.i.0/24).
      const ip = String(kubectlJson<Pod>(["get", "pod", "-n", ns, `on-${node}`]).status?.["podIP"] ?? "");
      assert.match(ip, new RegExp(`^10\\.88\\.${"abc".indexOf(node.slice(-1)) + 1}\\.`), `on-${node}'s address ${ip}`);
    }
  });

  test("the reference flow on three replicas spread over the zones: volumes in their pod's zone, attached to its node; set, scale, nothing restarted", async (t) => {
    const ns = namespace(t, "zones");
    create(spread("postgresql-k8s", 3, "1Gi"), ns);
    const before = await allReady(ns, "postgresql-k8s", 3, 240_000);
    const where = placement(ns);
    assert.deepEqual(new Set(Object.values(where).map((w) => w.podZone)), new Set(Object.values(zones)), "one replica per zone");
    for (const [claim, w] of Object.entries(where)) {
      assert.deepEqual(w.volumeZones, [w.podZone], `${claim}: its volume lives in its pod's zone`);
      assert.deepEqual(w.attachedTo, [w.node], `${claim}: attached to its pod's node only`);
    }
    const shas = Object.fromEntries(Object.keys(before).map((p) => [p, payloadSha(ns, p)]));
    const claimUids = Object.fromEntries(claims(ns).map((c) => [c.metadata.name!, c.metadata.uid!]));

    const r = await runPlugin(["set", "postgresql-k8s", "pgdata=2Gi", "-n", ns, "--yes"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "statefulset.apps/postgresql-k8s recreated\n");
    assert.match(r.stderr, /verified: 3 pod\(s\) adopted/);

    kubectl(["scale", "statefulset", "postgresql-k8s", "-n", ns, "--replicas=4"]);
    const after = await allReady(ns, "postgresql-k8s", 4, 240_000);
    for (const p of Object.keys(before)) {
      assert.deepEqual(after[p], before[p], `${p}: same uid, same container, no restart`);
      assert.equal(payloadSha(ns, p), shas[p], `${p}: data read back`);
      assert.equal(claims(ns).find((c) => c.metadata.name === `pgdata-${p}`)!.metadata.uid, claimUids[`pgdata-${p}`], `pgdata-${p}: same claim`);
      assert.equal(claimStatus(ns, `pgdata-${p}`).capacity, "1Gi");
    }
    assert.equal(claimStatus(ns, "pgdata-postgresql-k8s-3").capacity, "2Gi");
    assert.ok(aboutGiB(fsBytes(ns, "postgresql-k8s-3"), 2), "a 2 GiB filesystem for ordinal 3");
    const w3 = placement(ns)["pgdata-postgresql-k8s-3"]!;
    assert.deepEqual(w3.volumeZones, [w3.podZone], "ordinal 3's new volume in its pod's zone");
    assert.deepEqual(w3.attachedTo, [w3.node]);
    assert.deepEqual(running(ns, "postgresql-k8s")["postgresql-k8s-0"], before["postgresql-k8s-0"]);
  });

  test("an Immediate class: the provisioner picks the zone before any pod exists, and the pod follows its volume", async (t) => {
    const ns = namespace(t, "zones");
    create(claimOf1Gi("early", "appstorage-csi-immediate"), ns);
    await eventually("claim early Bound", () => claimStatus(ns, "early").phase === "Bound", 120_000);
    const pv = kubectlJson<PersistentVolume>(["get", "pv", claims(ns)[0]!.spec.volumeName!]);
    const [zone] = affinityZones(pv);
    assert.ok(zone && Object.values(zones).includes(zone), `the volume lives in one zone (${affinityZones(pv).join(",")})`);
    create(workloadPod("user", untilTerm, { claim: "early", spec: { terminationGracePeriodSeconds: 1 } }), ns);
    kubectl(["wait", "-n", ns, "--for=condition=Ready", "pod/user", "--timeout=120s"]);
    const node = (kubectlJson<Pod>(["get", "pod", "-n", ns, "user"]).spec as { nodeName?: string }).nodeName!;
    assert.equal(zoneOfNode(node), zone, "the pod runs in its volume's zone");
  });

  test("scripts/cluster node stop and start: the node goes NotReady while its containers keep running, then Ready with the same containers", async (t) => {
    const ns = namespace(t, "zones");
    create(workloadPod("stays", untilTerm, { spec: { nodeName: "node-c", terminationGracePeriodSeconds: 1, tolerations: [{ operator: "Exists" }] } }), ns);
    kubectl(["wait", "-n", ns, "--for=condition=Ready", "pod/stays", "--timeout=120s"]);
    const id = () => (kubectlJson<Pod>(["get", "pod", "-n", ns, "stays"]).status?.["containerStatuses"] as unknown as { containerID: string }[])[0]!.containerID;
    const container = id();
    const sh = clusterScript;
    sh(["node", "stop", "node-c"]);
    try {
      await eventually("node-c NotReady (or Unknown) once its kubelet stopped", () => readyOf(nodeObjects().find((n) => n.metadata.name === "node-c")!) !== "True", 120_000);
      // The container still runs in node-c's containerd.
      const tasks = execFileSync(
        "bash",
        [
          join(root, "lab", "node", "nodes.sh"),
          "exec",
          process.env["APPSTORAGE_CLUSTER_DIR"]!,
          "node-c",
          "ctr",
          "--address",
          `${process.env["APPSTORAGE_CLUSTER_DIR"]}/nodes/node-c/containerd/containerd.sock`,
          "-n",
          "k8s.io",
          "tasks",
          "ls",
        ],
        { encoding: "utf8" },
      );
      assert.match(tasks, new RegExp(`${container.replace("containerd://", "")}\\s+\\d+\\s+RUNNING`), "the container keeps running while its kubelet is down");
    } finally {
      sh(["node", "start", "node-c"]);
    }
    await eventually("node-c Ready again", () => readyOf(nodeObjects().find((n) => n.metadata.name === "node-c")!) === "True", 120_000);
    kubectl(["wait", "-n", ns, "--for=condition=Ready", "pod/stays", "--timeout=120s"]);
    assert.equal(id(), container, "the same container after the kubelet came back");
  });
});
