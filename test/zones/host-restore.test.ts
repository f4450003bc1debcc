// scripts/cluster down leaves the host as scripts/cluster up --nodes 3 found it (test/shared/host.ts
// reads the host independently of lab/node/host.sh, which records and restores). In between,
// one pod per node runs with a volume of the driver (WaitForFirstConsumer: made in that node's zone,
// attached to that node), and all three still run when down starts. Beyond the snapshot: no
// process of the cluster is left (kubelets, containerds, shims, driver, attacher).
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { leftovers, snapshot } from "../shared/host";
import { claimOf1Gi, cluster, workloadPod, zones } from "./zones";

const state = process.env["APPSTORAGE_CLUSTER_DIR"] ?? "";

/** The command lines of the processes that name the cluster's state folder (its nodes' kubelets, containerds, driver). */
function clusterProcesses(): string[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid)
    .flatMap((p) => {
      try {
        const cmd = readFileSync(`/proc/${p}/cmdline`, "utf8").replaceAll("\0", " ").trim();
        return cmd.includes(state) ? [`${p}: ${cmd}`] : [];
      } catch {
        return [];
      }
    });
}

describe("zones: scripts/cluster down restores the host", { timeout: 900_000 }, () => {
  test("the host after up --nodes 3, a running pod with an attached volume on each node, and down is the host before; no process of the cluster left", () => {
    assert.ok(state, "APPSTORAGE_CLUSTER_DIR is set (node scripts/test.mjs zones sets it)");
    // The suite's cluster is up (scripts/test.mjs zones starts it): the comparison starts from no node at all.
    execFileSync("bash", [cluster, "down"], { stdio: ["ignore", "ignore", "inherit"] });
    assert.deepEqual(clusterProcesses(), [], "no process of the cluster before up");
    const before = snapshot();
    const up = spawnSync("bash", [cluster, "up", "--nodes", "3"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    assert.equal(up.status, 0, "scripts/cluster up --nodes 3");
    const kc = up.stdout.trim().split("\n").pop()!;
    const k = (args: string[], input?: string) => execFileSync("kubectl", ["--kubeconfig", kc, ...args], { encoding: "utf8", input });
    const items = Object.keys(zones).flatMap((node) => [
      claimOf1Gi(`host-restore-${node}`, "appstorage-csi", "default"),
      workloadPod(`host-restore-${node}`, "echo data > /data/f; sleep 3600", { claim: `host-restore-${node}`, namespace: "default", spec: { nodeSelector: { "kubernetes.io/hostname": node } } }),
    ]);
    k(["create", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items }));
    for (const node of Object.keys(zones)) {
      k(["wait", "--for=condition=Ready", `pod/host-restore-${node}`, "--timeout=180s"]);
      assert.equal(k(["exec", `host-restore-${node}`, "--", "cat", "/data/f"]), "data\n");
    }
    const attached = JSON.parse(k(["get", "volumeattachments", "-o", "json"])) as { items: { spec: { nodeName: string }; status?: { attached?: boolean } }[] };
    assert.deepEqual(
      attached.items
        .filter((a) => a.status?.attached)
        .map((a) => a.spec.nodeName)
        .sort(),
      Object.keys(zones),
      "one volume attached to each node",
    );
    const during = snapshot();
    assert.ok(clusterProcesses().length >= 3 * 2, "each node's kubelet and containerd run");
    // The nodes did change the host (or this test would prove nothing): each has its own network
    // namespace and a veth into it; its pods' cgroups are the host's.
    for (const part of ["links", "netns", "cgroups"]) {
      assert.notDeepEqual(during[part], before[part], `running nodes change ${part}`);
    }

    execFileSync("bash", [cluster, "down"], { stdio: ["ignore", "ignore", "inherit"] });
    const after = snapshot();
    assert.deepEqual(clusterProcesses(), [], "no process of the cluster after down");
    assert.deepEqual(leftovers(before, after), [], "the host after down as before up --nodes 3");
  });
});
