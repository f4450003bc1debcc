// A move a careful operator approves, on the real node: run by a user bound to exactly the roles
// `kubectl appstorage rbac -n NS` prints and nothing else, on a node with a NoSchedule taint (the
// replica tolerates it), with the tests' copy image (rsync, lab/node/images.sh). A claim with a tree
// of every kind of entry (test/shared/tree.ts, laid out from the host on the volume as kubelet
// mounted it) moves from appstorage-csi (xfs) to a class of ext4 volumes and back. Checked by the
// test itself:
// - every request of the run was allowed, none reads nodes/proxy, every one is granted by the printed
//   roles, and every verb of the roles --migrate-existing adds was used: they hold exactly what the
//   code uses;
// - every pod the moves created (watched as admitted): not privileged, capabilities dropped but a
//   faithful copy's, no privilege escalation, RuntimeDefault seccomp, no service account token, the
//   claim read-only, exactly the node's taints tolerated, the image asked for;
// - the tree on each new volume, read from the host (lstat to the nanosecond, sha256, getfattr):
//   equal to the one laid out, entry by entry; ext4's own lost+found is left out both ways.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, test, type TestContext } from "node:test";
import type { KubeNode, PersistentVolume, PersistentVolumeClaim, Pod } from "../../src/api/types";
import { startFaultProxy, type SeenRequest } from "../shared/faultproxy";
import { apply, kubectl, kubectlJson, kubectlTry, namespace, runPlugin, userKubeconfig } from "../shared/harness";
import { assertHardened } from "../shared/move";
import { allReady, copyImage, create, deleteKeptVolumes, kubeletRoot, watchToolPods, workload } from "../shared/node";
import { assertSameTree, hostTree, makeExactTree } from "../shared/tree";

interface RbacObject {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  subjects?: { kind: string; name: string; apiGroup?: string }[];
}

/** Where kubelet mounted a pod's claim on this host (below the node's kubelet root: kubeletRoot). */
function volumeOnHost(ns: string, pod: string, claim: string): string {
  const uid = kubectlJson<Pod>(["get", "pod", pod, "-n", ns]).metadata.uid!;
  const pv = kubectlJson<PersistentVolumeClaim>(["get", "pvc", claim, "-n", ns]).spec.volumeName!;
  const dir = join(kubeletRoot(), "pods", uid, "volumes", "kubernetes.io~csi", pv, "mount");
  assert.ok(existsSync(dir), `${ns}/${pod}'s claim ${claim} (volume ${pv}) is mounted on the host at ${dir}`);
  return dir;
}

/** A class of the project's driver whose volumes are ext4 (which makes its own lost+found), deleted when the test ends. */
function ext4Class(t: TestContext, ns: string): string {
  const name = `${ns}-ext4`;
  apply(
    {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name },
      provisioner: "csi.appstorage.local",
      parameters: { "csi.storage.k8s.io/fstype": "ext4" },
      allowVolumeExpansion: true,
      volumeBindingMode: "WaitForFirstConsumer",
      reclaimPolicy: "Delete",
    },
    ns,
  );
  t.after(() => kubectlTry(["delete", "storageclass", name, "--wait=false"]));
  return name;
}

/**
 * The objects `rbac -n NS` prints, applied for `user` (the subjects' CHANGE-ME), each
 * ClusterRoleBinding under a name of the test's own; removed when the test ends. Returns them.
 */
async function bindPrinted(t: TestContext, ns: string, user: string): Promise<RbacObject[]> {
  const printed = await runPlugin(["rbac", "-n", ns, "-o", "json"]);
  assert.equal(printed.code, 0, printed.stderr);
  const items = (JSON.parse(printed.stdout) as { items: RbacObject[] }).items;
  for (const o of items) {
    if (o.subjects) o.subjects = o.subjects.map((s) => ({ ...s, name: user }));
    if (o.kind === "ClusterRoleBinding") o.metadata.name = `${o.metadata.name}-${ns}`;
  }
  kubectl(["apply", "-f", "-"], { input: JSON.stringify({ apiVersion: "v1", kind: "List", items }) });
  t.after(() => {
    for (const o of items.filter((x) => x.kind.startsWith("Cluster"))) kubectlTry(["delete", o.kind.toLowerCase(), o.metadata.name, "--wait=false"]);
  });
  return items;
}

/** "verb resource" of every rule of the roles given. */
const grants = (roles: RbacObject[]) => new Set(roles.flatMap((r) => (r.rules ?? []).flatMap((rule) => rule.resources.flatMap((res) => rule.verbs.map((v) => `${v} ${res}`)))));

interface Moved {
  stderr: string;
  requests: SeenRequest[];
  pods: Pod[];
}

/** `set db DIRECTIVE --migrate-existing` as the user, through the test's proxy (every request seen), every pod of the tool's watched. */
async function moveAs(userConfig: string, ns: string, directive: string): Promise<Moved> {
  const watch = watchToolPods(ns);
  const proxy = await startFaultProxy(userConfig);
  let r: Awaited<ReturnType<typeof runPlugin>>;
  try {
    r = await runPlugin(["set", "db", directive, "--migrate-existing", "--copy-image", copyImage, "--timeout", "240s", "-n", ns, "--yes"], { kubeconfig: proxy.kubeconfig });
  } finally {
    await proxy.close();
  }
  await watch.stop();
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /claim data-db-0: verified \d+ files, \d+ bytes equal on both volumes/);
  return { stderr: r.stderr, requests: proxy.requests, pods: [...watch.pods.values()] };
}

describe("node: a move a careful operator approves", { timeout: 900_000 }, () => {
  test("as a user bound to exactly the printed roles, on a tainted node: a tree of every kind of entry moves xfs -> ext4 -> xfs, every pod hardened, every entry kept", async (t) => {
    const ns = namespace(t, "trust");
    deleteKeptVolumes(t, ns);
    const ext4 = ext4Class(t, ns);

    // A NoSchedule taint on the node, which the replica tolerates: its copy pods must tolerate it, and nothing more.
    const node = kubectlJson<{ items: KubeNode[] }>(["get", "nodes"]).items[0]!.metadata.name!;
    const taint = { key: "appstorage.test/trust", value: ns, effect: "NoSchedule" };
    kubectl(["taint", "node", node, `${taint.key}=${taint.value}:${taint.effect}`]);
    t.after(() => kubectlTry(["taint", "node", node, `${taint.key}-`]));
    const taints = kubectlJson<KubeNode>(["get", "node", node]).spec?.taints ?? [];
    assert.ok(taints.some((x) => x.key === taint.key));
    const sts = workload("db", { replicas: 1, size: "1Gi" });
    (sts.spec.template.spec as Record<string, unknown>)["tolerations"] = [{ key: taint.key, operator: "Equal", value: taint.value, effect: taint.effect }];
    create(sts, ns);
    await allReady(ns, "db", 1);

    // A user with no permission of its own, bound to exactly what rbac prints.
    const user = `trust-${ns}`;
    const userConfig = userKubeconfig(user);
    const roles = (await bindPrinted(t, ns, user)).filter((o) => o.kind === "Role" || o.kind === "ClusterRole");
    const granted = grants(roles);
    const migrateRoles = roles.filter((r) => ["kubectl-appstorage-migrate", "kubectl-appstorage-persistentvolumes", "kubectl-appstorage-nodes"].includes(r.metadata.name));
    assert.equal(migrateRoles.length, 3, roles.map((r) => r.metadata.name).join(", "));
    const can = (...args: string[]) => kubectlTry(["auth", "can-i", ...args], { kubeconfig: userConfig }).stdout.trim();
    assert.equal(can("get", "nodes", "--subresource=proxy"), "no", "never nodes/proxy");
    assert.equal(can("create", "pods", "-n", "default"), "no", "nothing in another namespace");
    assert.equal(can("patch", "persistentvolumes"), "yes");

    // The tree, laid out from the host on the claim's volume (xfs).
    const source = volumeOnHost(ns, "db-0", "data-db-0");
    makeExactTree(source);
    const laidOut = hostTree(source, ["lost+found"]);
    assert.ok(!existsSync(join(source, "lost+found")), "xfs makes no lost+found");

    const moves: Moved[] = [];
    for (const [directive, cls, ownLostFound] of [
      [`data=1Gi,${ext4}`, ext4, true],
      ["data=1Gi,appstorage-csi", "appstorage-csi", false],
    ] as const) {
      const before = kubectlJson<PersistentVolumeClaim>(["get", "pvc", "data-db-0", "-n", ns]);
      const moved = await moveAs(userConfig, ns, directive);
      moves.push(moved);
      t.diagnostic(`${directive}: ${moved.pods.length} pod(s) of the tool's; ${moved.requests.length} request(s)`);
      await allReady(ns, "db", 1);
      const now = kubectlJson<PersistentVolumeClaim>(["get", "pvc", "data-db-0", "-n", ns]);
      assert.equal(now.spec.storageClassName, cls);
      assert.notEqual(now.spec.volumeName, before.spec.volumeName, "on a new volume");
      assert.equal(kubectlJson<PersistentVolume>(["get", "pv", before.spec.volumeName!]).spec.persistentVolumeReclaimPolicy, "Retain", "the old volume kept");

      // Every pod the move created, hardened (the first copy's, the final copy's, and any other).
      assert.ok(moved.pods.length >= 2, `the copy pods were seen: ${moved.pods.map((p) => p.metadata.name).join(", ")}`);
      for (const p of moved.pods) assertHardened(p, copyImage, taints);

      // The tree on the new volume, read from the host: every entry as laid out.
      const dir = volumeOnHost(ns, "db-0", "data-db-0");
      assertSameTree(hostTree(dir, ["lost+found"]), laidOut, `after ${directive}`);
      assert.equal(existsSync(join(dir, "lost+found")), ownLostFound, ownLostFound ? "ext4's own lost+found is there, the new volume's own" : "ext4's lost+found was not copied");
    }

    // Exactly what the code uses: allowed, granted by the printed roles, and every verb --migrate-existing's roles hold used.
    const requests = moves.flatMap((m) => m.requests).filter((r) => !r.resource.startsWith("selfsubject"));
    assert.deepEqual(
      requests.filter((r) => r.serverStatus === 403).map((r) => `${r.signature} ${r.path}`),
      [],
      "no request forbidden",
    );
    assert.deepEqual(
      requests.filter((r) => /\/proxy(\/|$|\?)/.test(r.path)).map((r) => r.path),
      [],
      "nothing through a node's proxy",
    );
    const used = new Set(requests.map((r) => `${r.verb} ${r.resource}`));
    assert.deepEqual([...used].filter((u) => !granted.has(u)).sort(), [], "every request granted by a printed role");
    assert.deepEqual([...grants(migrateRoles)].filter((g) => !used.has(g)).sort(), [], "every verb of the roles --migrate-existing adds was used");
  });
});
