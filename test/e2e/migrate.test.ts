// --migrate-existing against the real control plane, where no node is needed: what it refuses
// before anything changes (Pod Security refusing the copy pods, found by a server dry run; a
// namespace admin without rights on PersistentVolumes; a shrink whose data cannot be measured;
// block volumes; ReadWriteOncePod without consent), and what diff shows. Each refusal: one line,
// a non-zero exit, every uid and the StatefulSet's resourceVersion unchanged, no journal, no
// copy pod. The moves themselves run on the real node (test/node/migrate.test.ts).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, type TestContext, test } from "node:test";
import { sts } from "../fixtures/builders";
import { apply, claims, eventually, getSts, kubeconfig, kubectl, kubectlTry, markReady, namespace, plugin, runPlugin, settled, storageClassFor, uids, userKubeconfig } from "../shared/harness";
import { grantStorageClasses } from "../shared/rbac";
import { defaultCopyImage } from "../../src/plan/migration-types";
import { copyPod } from "../../src/plan/migrate";

/** Two replicas whose claims are bound to prepared volumes; `mode` and `access` as the claim template asks. */
async function boundDb(t: TestContext, ns: string, cls: string, opts: { mode?: "Block"; access?: string; name?: string; template?: string } = {}): Promise<void> {
  const sts_ = opts.name ?? "db";
  const template = opts.template ?? "data";
  for (let i = 0; i < 2; i++) {
    const name = `pv-${ns}-${i}`;
    apply(
      {
        apiVersion: "v1",
        kind: "PersistentVolume",
        metadata: { name },
        spec: {
          capacity: { storage: "1Gi" },
          accessModes: [opts.access ?? "ReadWriteOnce"],
          ...(opts.mode ? { volumeMode: opts.mode } : {}),
          persistentVolumeReclaimPolicy: "Retain",
          storageClassName: cls,
          hostPath: { path: `/tmp/appstorage-e2e/${name}` },
          claimRef: { namespace: ns, name: `${template}-${sts_}-${i}` },
        },
      },
      ns,
    );
    t.after(() => kubectlTry(["delete", "pv", name, "--wait=false"]));
  }
  const b = sts(sts_, ns).withClaim(template, "1Gi", cls).replicas(2).parallel().build();
  const spec = b.spec.volumeClaimTemplates![0]!.spec;
  if (opts.mode) spec.volumeMode = opts.mode;
  if (opts.access) spec.accessModes = [opts.access];
  apply(b, ns);
  await settled(ns, sts_, 2);
  await eventually("2 claims bound", () => claims(ns).filter((c) => c.status?.phase === "Bound").length === 2, 60_000);
}

/** A namespace with two storage classes and the StatefulSet bound on the first. */
async function prepared(t: TestContext): Promise<{ ns: string; cls: string; other: string }> {
  const ns = namespace(t, "mig");
  const cls = storageClassFor(t, ns, { expandable: true });
  const other = storageClassFor(t, ns, { expandable: false });
  await boundDb(t, ns, cls);
  return { ns, cls, other };
}

/** What a refusal leaves as it was, read now: the function returned checks it (every uid, db's resourceVersion, no journal, no copy pod). */
function unchangedFrom(ns: string): () => void {
  const before = uids(ns);
  const rv = getSts(ns, "db").metadata.resourceVersion;
  return () => {
    assert.deepEqual(uids(ns), before);
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
    assert.notEqual(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 0, "no journal");
    assert.equal(kubectl(["get", "pods", "-n", ns, "-l", "appstorage.kubectl.io/claim", "-o", "name"]).trim(), "", "no copy pod");
  };
}

/** The plugin with `args` in ns (as `kubeconfig`'s user) refuses: exit 1, stderr matching each pattern, nothing changed; its stderr. */
async function assertRefused(ns: string, args: string[], stderr: RegExp[], kubeconfig?: string): Promise<string> {
  const assertNothingChanged = unchangedFrom(ns);
  const r = await runPlugin([...args, "-n", ns], { kubeconfig });
  assert.equal(r.code, 1, r.stderr);
  for (const pattern of stderr) assert.match(r.stderr, pattern);
  assertNothingChanged();
  return r.stderr;
}

/** set --migrate-existing of db's data onto the storage class `to`, confirmed. */
const moveTo = (to: string) => ["set", "db", `data=1Gi,${to}`, "--migrate-existing", "--yes"];

describe("set --migrate-existing: refused before anything changes", () => {
  test("a namespace whose Pod Security refuses root pods: found by a dry run of the copy pod", async (t) => {
    const { ns, other } = await prepared(t);
    kubectl(["label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted"]);
    const stderr = await assertRefused(ns, moveTo(other), [
      new RegExp(
        `^error: the copy pods of --migrate-existing run as root \\(to keep every file's owner\\), and namespace ${ns} refuses them: .*violates PodSecurity "restricted:latest".*; nothing was changed: allow them while the claims move, for example with kubectl label namespace ${ns} pod-security.kubernetes.io/enforce=baseline --overwrite\\n$`,
      ),
    ]);
    // What restricted objects to is only what keeping owners needs (root, and capabilities beyond
    // NET_BIND_SERVICE): never privilege, escalation, seccomp or the volumes.
    const violations = /violates PodSecurity "restricted:latest": (.*?); nothing was changed/.exec(stderr)?.[1] ?? "";
    assert.match(violations, /runAsNonRoot/);
    assert.doesNotMatch(violations, /privileged|allowPrivilegeEscalation|seccompProfile|restricted volume types|host/, violations);
    // The baseline profile admits every copy pod as the tool makes it (a server dry run of each mode).
    kubectl(["label", "namespace", ns, "pod-security.kubernetes.io/enforce=baseline", "--overwrite"]);
    const m = {
      claim: "data-db-0",
      template: "data",
      ordinal: 0,
      uid: "u",
      volume: "pv",
      accessModes: ["ReadWriteOnce"],
      from: {},
      to: { size: "1Gi" },
      offline: false,
      phase: "pending" as const,
      copiedSince: 1,
    };
    for (const mode of ["copy", "sync", "measure"] as const) {
      const admitted = kubectlTry(["create", "--dry-run=server", "-n", ns, "-f", "-"], { input: JSON.stringify(copyPod(m, ns, "db", mode, defaultCopyImage, "wait")) });
      assert.equal(admitted.code, 0, `${mode}: ${admitted.stderr}`);
      assert.doesNotMatch(admitted.stderr, /Warning/, mode);
    }
  });

  test("a ResourceQuota with no room for a copy pod, or for the claim of a new volume: found by dry runs, said with what to do", async (t) => {
    const { ns, other } = await prepared(t);
    const quota = (hard: Record<string, string>) => {
      apply({ apiVersion: "v1", kind: "ResourceQuota", metadata: { name: "q" }, spec: { hard } }, ns);
      // Admission counts against the quota's status, which kube-controller-manager fills in.
      return eventually(
        "the quota's usage counted",
        () => {
          const used = JSON.parse(kubectl(["get", "resourcequota", "q", "-n", ns, "-o", "json"])).status?.used ?? {};
          return Object.keys(hard).every((k) => used[k] === hard[k]);
        },
        60_000,
      );
    };
    await quota({ pods: "2" });
    await assertRefused(ns, moveTo(other), [
      new RegExp(
        `^error: the server refused a copy pod of --migrate-existing \\(dry run\\): .*exceeded quota: q.*; nothing was changed: a ResourceQuota of namespace ${ns} has no room for it: raise it \\(kubectl describe resourcequota -n ${ns}\\) or free some\n$`,
      ),
    ]);
    kubectl(["delete", "resourcequota", "q", "-n", ns]);
    await quota({ persistentvolumeclaims: "2" });
    await assertRefused(ns, moveTo(other), [
      new RegExp(
        `^error: the server refused the claim of a new volume for claim data-db-1 \\(dry run\\): .*exceeded quota: q.*; nothing was changed: a ResourceQuota of namespace ${ns} has no room for it: raise it \\(kubectl describe resourcequota -n ${ns}\\) or free some\n$`,
      ),
    ]);
  });

  test("a namespace admin has no rights on PersistentVolumes: the preflight names them", async (t) => {
    const { ns, other } = await prepared(t);
    const user = `admin-${ns}`;
    const kc = userKubeconfig(user);
    kubectl(["create", "rolebinding", user, "--clusterrole=admin", `--user=${user}`, "-n", ns]);
    // The storage classes are readable (a named class is checked), as a cluster admin grants with rbac's optional ClusterRole.
    grantStorageClasses(t, ns, user, ["get", "list"]);
    await assertRefused(
      ns,
      moveTo(other),
      [
        // 1.32's admin ClusterRole has no events.k8s.io create: a warning may come first.
        /(?:^|\n)error: you may not get persistentvolumes, patch persistentvolumes, which this change needs; nothing was changed: ask for those permissions \(kubectl auth can-i get persistentvolumes; kubectl auth can-i patch persistentvolumes; kubectl appstorage rbac prints a Role with all of them\)\n$/,
      ],
      kc,
    );
  });

  test("a shrink that needs its data measured, answered N at the prompt: no pod was ever created", async (t) => {
    const { ns } = await prepared(t);
    const assertNothingChanged = unchangedFrom(ns);
    // A real terminal (script(1) gives the plugin a pty), so set shows the plan and asks.
    const cmd = [plugin, "set", "db", "data=512Mi", "--migrate-existing", "--timeout", "20s", "-n", ns, "--kubeconfig", kubeconfig()].map((a) => `'${a}'`).join(" ");
    const child = spawn("script", ["-qfec", cmd, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number>((r) => child.on("close", (c) => r(c ?? -1)));
    await eventually("the confirmation prompt", () => /\[y\/N\]/.test(output), 30_000);
    assert.equal(kubectl(["get", "pods", "-n", ns, "-l", "appstorage.kubectl.io/claim", "-o", "name"]).trim(), "", "no measuring pod before the answer");
    child.stdin.write("n\n");
    assert.equal(await exited, 1, output);
    assert.match(output, /cancelled; nothing was changed/);
    assertNothingChanged();
    // Not even created and removed: the namespace has no event of a pod of the tool's.
    assert.doesNotMatch(kubectl(["get", "events", "-n", ns, "-o", "name"]), /appstorage-measure/);
  });

  test("a shrink whose data cannot be measured here (no node runs the measuring pod), a block volume, ReadWriteOncePod without consent", async (t) => {
    const { ns, cls, other } = await prepared(t);
    // No node here: the pod that would measure the data never runs, and the run stops at --timeout.
    await assertRefused(
      ns,
      ["set", "db", "data=512Mi", "--migrate-existing", "--timeout", "5s", "--yes"],
      [
        /Warning: claim data-db-1 shrinks to 512Mi: set measures its data with a pod once the change is confirmed, and refuses before anything else changes if it does not fit\n/,
        /\nerror: timed out after 5s measuring the data of claim data-db-1 \(pod appstorage-measure-data-db-1 did not finish: kubectl describe pod appstorage-measure-data-db-1 -n [\w-]+\); nothing was changed\n$/,
      ],
    );

    const blockNs = namespace(t, "mig");
    await boundDb(t, blockNs, cls, { mode: "Block" });
    await assertRefused(blockNs, moveTo(other), [
      /^error: claim data-db-0 of statefulset.apps\/db is a block volume \(volumeMode Block\): --migrate-existing copies files and does not support block volumes yet \(and 1 more refusal\(s\)\)\n$/,
    ]);

    const onceNs = namespace(t, "mig");
    await boundDb(t, onceNs, cls, { access: "ReadWriteOncePod" });
    // diff shows the cost and asks for no flag it lacks; set without a terminal or --yes refuses, as for any change.
    const once = await runPlugin(["diff", "db", `data=1Gi,${other}`, "--migrate-existing", "-n", onceNs]);
    assert.equal(once.code, 1, once.stderr);
    assert.match(once.stderr, /Warning: claim data-db-0 is ReadWriteOncePod: no second pod may mount it while its pod runs, so its replica is down for the whole copy, not only the final one\n/);
    assert.doesNotMatch(once.stderr, /--yes/);
    await assertRefused(
      onceNs,
      ["set", "db", `data=1Gi,${other}`, "--migrate-existing"],
      [/error: refusing to re-create statefulset.apps\/db without confirmation: there is no terminal to ask on; review it with kubectl appstorage diff, then pass --yes\n$/],
    );
  });

  test("diff shows every claim that moves, in order, and changes nothing", async (t) => {
    const { ns, other } = await prepared(t);
    const assertNothingChanged = unchangedFrom(ns);
    const r = await runPlugin(["diff", "db", `data=1Gi,${other}`, "--migrate-existing", "-n", ns]);
    assert.equal(r.code, 1, r.stderr);
    assert.ok(r.stderr.includes(`claims moved to new volumes with their data (one at a time, in this order; copy image ${defaultCopyImage}):\n`), r.stderr);
    const rows = r.stderr.split("\n").filter((l) => /^data-db-\d /.test(l) && / pending$/.test(l));
    assert.deepEqual(
      rows.map((l) => l.split(/\s+/)[0]),
      ["data-db-1", "data-db-0"],
    );
    // Per claim, its phase and the actions its move has left, in order.
    assert.match(
      r.stderr,
      /\n {2}data-db-1 \(pending\): create claim appstorage-new-data-db-1, first copy by pod appstorage-copy-data-db-1, record copied, remove pod appstorage-copy-data-db-1, start pod appstorage-copy-data-db-1 to wait for the final copy, orphan-delete statefulset.apps\/db, evict db-1, record stopped, tell pod appstorage-copy-data-db-1 to make the final copy and verify \(delete it: SIGTERM is its go\), record verified, .*, create statefulset.apps\/db, give the new volume its reclaim policy back, record swapped, record done\n {2}data-db-0 \(pending\): create claim appstorage-new-data-db-0, /,
    );
    const plan = JSON.parse((await runPlugin(["diff", "db", `data=1Gi,${other}`, "--migrate-existing", "-n", ns, "-o", "json"])).stdout);
    assert.deepEqual(plan.steps, ["write-journal", "orphan-delete", "wait-gone", "create", "verify", "record", "migrate", "remove-journal"]);
    assert.deepEqual(
      plan.moves.map((v: { claim: string; phase: string; left: unknown[] }) => [v.claim, v.phase, v.left.length]),
      [
        ["data-db-1", "pending", 20],
        ["data-db-0", "pending", 20],
      ],
    );
    assertNothingChanged();
  });
});

describe("--migrate-existing with the longest names Kubernetes allows", () => {
  test("a 63-character claim template of a 52-character StatefulSet: every object it would create passes the server's validation", async (t) => {
    const ns = namespace(t, "miglong");
    const cls = storageClassFor(t, ns, { expandable: true });
    const other = storageClassFor(t, ns, { expandable: false });
    // 52: the longest StatefulSet name whose pods' controller-revision-hash label still fits 63 characters.
    const name = `s${"x".repeat(50)}s`;
    const template = `t${"y".repeat(61)}t`;
    await boundDb(t, ns, cls, { name, template });
    const before = uids(ns);
    // A server dry run sends the copy pod (with the new claim's labels) to admission and validation.
    const r = await runPlugin(["set", name, `${template}=1Gi,${other}`, "--migrate-existing", "--dry-run=server", "-n", ns]);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /Invalid value|must be no more than 63/);
    assert.deepEqual(uids(ns), before);
  });
});

describe("--migrate-existing reads a constant number of requests", () => {
  /** StatefulSets labelled `group`, one replica each, whose pods run on `node` (bound and marked Running as a scheduler and kubelet would). */
  async function onNode(ns: string, node: string, names: string[], group: string): Promise<void> {
    for (const name of names) {
      apply(sts(name, ns).withClaim("data", "1Gi").labels({ group }).build(), ns);
      await settled(ns, name, 1);
      const binding = { apiVersion: "v1", kind: "Binding", metadata: { name: `${name}-0` }, target: { apiVersion: "v1", kind: "Node", name: node } };
      kubectl(["create", "--raw", `/api/v1/namespaces/${ns}/pods/${name}-0/binding`, "-f", "-"], { input: JSON.stringify(binding) });
      markReady(ns, `${name}-0`);
    }
  }

  test("set -l over three StatefulSets on one node makes the requests set -l over one makes: one list of pods, one read of the node, none through its proxy", async (t) => {
    const ns = namespace(t, "migreq");
    const node = `appstorage-${ns}`;
    kubectl(["create", "-f", "-"], { input: JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name: node } }) });
    t.after(() => kubectlTry(["delete", "node", node, "--wait=false"]));
    await onNode(ns, node, ["a", "b", "c"], "many");
    await onNode(ns, node, ["solo"], "one");
    const requests = async (group: string) => {
      const log = join(mkdtempSync(join(tmpdir(), "appstorage-log-")), "requests");
      const r = await runPlugin(["set", "-l", `group=${group}`, "data=2Gi", "--migrate-existing", "--dry-run=client", "-n", ns], { env: { APPSTORAGE_REQUEST_LOG: log } });
      const lines = readFileSync(log, "utf8").split("\n").filter(Boolean);
      return { r, lines };
    };
    const before = uids(ns);
    const one = await requests("one");
    const many = await requests("many");
    assert.equal(many.r.code, one.r.code, `${one.r.stderr}\n${many.r.stderr}`);
    const nodeReads = (lines: string[]) => lines.filter((l) => l === `GET /api/v1/nodes/${node}`).length;
    // One read of the node (its taints, whether it is cordoned) however many StatefulSets run there;
    // never its proxy (kubelet's stats need nodes/proxy, which lets its holder run commands in its pods).
    assert.equal(nodeReads(one.lines), 1, one.lines.join("\n"));
    assert.equal(nodeReads(many.lines), 1, many.lines.join("\n"));
    assert.deepEqual(
      [...one.lines, ...many.lines].filter((l) => l.includes("/proxy")),
      [],
    );
    const podLists = (lines: string[]) => lines.filter((l) => l.startsWith(`GET /api/v1/namespaces/${ns}/pods?`)).length;
    assert.equal(podLists(many.lines), 2, "the plan's list of pod metadata and one list of pods for their nodes");
    assert.equal(many.lines.length, one.lines.length, `over three:\n${many.lines.join("\n")}\nover one:\n${one.lines.join("\n")}`);
    assert.deepEqual(uids(ns), before, "a client dry run changes nothing");
  });
});
