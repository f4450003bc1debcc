// scripts/cluster down leaves the host as scripts/cluster up --node found it. The snapshot here is
// taken independently of lab/node/host.sh (which records and restores): sysctls, netfilter
// (iptables-save and nft), links, network namespaces, mounts, loop devices, kubepods cgroups, and
// the paths kubelet and containerd hard-wire, and the data folders of the storage provisioners of the
// classes standard and local-path. In between, a pod with a CSI volume and a volume of each of those
// classes runs (mounts, a loop device, a veth, a network namespace, cgroups, the provisioners' host
// folders), and is still running when down starts.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, test } from "node:test";
import { root } from "../shared/harness";
import { dataFolders, leftovers, snapshot } from "../shared/host";

const cluster = join(root, "scripts", "cluster");
const claim = (name: string, storageClassName?: string) => ({
  apiVersion: "v1",
  kind: "PersistentVolumeClaim",
  metadata: { name, namespace: "default" },
  spec: { accessModes: ["ReadWriteOnce"], ...(storageClassName ? { storageClassName } : {}), resources: { requests: { storage: "1Gi" } } },
});

describe("node: scripts/cluster down restores the host", { timeout: 600_000 }, () => {
  test("the host after up --node, a running pod with a volume, and down is the host before", () => {
    // This suite's own cluster may be up (scripts/test.mjs node starts it): the comparison starts
    // from no node at all.
    execFileSync("bash", [cluster, "down"], { stdio: ["ignore", "ignore", "inherit"] });
    const before = snapshot();
    const up = spawnSync("bash", [cluster, "up", "--node"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    assert.equal(up.status, 0, "scripts/cluster up --node");
    const kc = up.stdout.trim().split("\n").pop()!;
    const k = (args: string[], input?: string) => execFileSync("kubectl", ["--kubeconfig", kc, ...args], { encoding: "utf8", input });
    k(
      ["create", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
          claim("host-restore"),
          claim("host-restore-standard", "standard"),
          claim("host-restore-local-path", "local-path"),
          {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: "host-restore", namespace: "default" },
            spec: {
              containers: [
                {
                  name: "app",
                  image: "appstorage.local/workload:1",
                  imagePullPolicy: "Never",
                  command: ["sh", "-c", "for d in /data /standard /local-path; do echo data > $d/f; done; sleep 3600"],
                  volumeMounts: [
                    { name: "v", mountPath: "/data" },
                    { name: "standard", mountPath: "/standard" },
                    { name: "local-path", mountPath: "/local-path" },
                  ],
                },
              ],
              volumes: [
                { name: "v", persistentVolumeClaim: { claimName: "host-restore" } },
                { name: "standard", persistentVolumeClaim: { claimName: "host-restore-standard" } },
                { name: "local-path", persistentVolumeClaim: { claimName: "host-restore-local-path" } },
              ],
            },
          },
        ],
      }),
    );
    k(["wait", "--for=condition=Ready", "pod/host-restore", "--timeout=120s"]);
    for (const d of ["/data", "/standard", "/local-path"]) assert.equal(k(["exec", "host-restore", "--", "cat", `${d}/f`]), "data\n");
    const during = snapshot();
    // Each provisioner's host folder holds the claim's volume.
    for (const dir of dataFolders) {
      assert.ok(
        during.paths!.some((p) => p.startsWith(`${dir}/`)),
        `${dir} has a volume: ${during.paths!.filter((p) => p.startsWith(dir)).join(", ")}`,
      );
    }
    // The node did change the host (or this test would prove nothing).
    for (const part of ["sysctl", "mounts", "links", "netns", "cgroups", "loops", "paths"]) {
      assert.notDeepEqual(during[part], before[part], `a running node changes ${part}`);
    }

    execFileSync("bash", [cluster, "down"], { stdio: ["ignore", "ignore", "inherit"] });
    const after = snapshot();
    // Every part's differences at once, as lines: what down left changed.
    assert.deepEqual(leftovers(before, after), [], "the host after down as before up --node");
    for (const part of Object.keys(before)) assert.deepEqual(after[part], before[part], `${part} after down as before up --node`);
  });
});
