// Who may use the plugin: a namespace admin, editor or viewer (the built-in ClusterRoles bound in
// one namespace, nothing at cluster scope), and the least-privilege Role that `rbac` prints, with
// each of its rules taken away in turn. Against the real control plane's RBAC; every case
// compares the uids of all pods and claims before and after.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { describe, test, type TestContext } from "node:test";
import { sts } from "../fixtures/builders";
import {
  apply,
  claims,
  denyStatefulSetCreate,
  eventually,
  getSts,
  kubectl,
  kubectlTry,
  namespace,
  plugin,
  runPlugin,
  settled,
  storageClassFor,
  uids,
  userKubeconfig,
  volumeFor,
} from "../shared/harness";

const journalExists = (ns: string) => kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code === 0;
const templateSize = (ns: string) => getSts(ns, "db").spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"];

/** A fresh namespace with db (claim template data 1Gi, two replicas), settled. */
async function prepared(t: TestContext): Promise<{ ns: string; before: Record<string, string> }> {
  const ns = namespace(t, "who");
  apply(sts("db", ns).withClaim("data", "1Gi").replicas(2).parallel().build(), ns);
  await settled(ns, "db", 2);
  return { ns, before: uids(ns) };
}

/** A user bound to a built-in ClusterRole by a RoleBinding in the namespace only. */
function boundTo(ns: string, clusterRole: "admin" | "edit" | "view"): string {
  const user = `${clusterRole}-${ns}`;
  const kc = userKubeconfig(user);
  kubectl(["create", "rolebinding", `${user}`, `--clusterrole=${clusterRole}`, `--user=${user}`, "-n", ns]);
  return kc;
}

/** The Role and RoleBinding that `kubectl appstorage rbac -n NS` prints, for `user` (the cluster-scope part left out). */
function rbacRole(ns: string, user: string, drop?: (rule: string) => boolean): string[] {
  const printed = execFileSync(plugin, ["rbac", "-n", ns], { encoding: "utf8" });
  const [role, binding] = printed.split("---\n");
  let kept = role!;
  if (drop) {
    // A rule is its comment lines, then apiGroups, resources and verbs: take the matching one away.
    const [head, body] = role!.split("rules:\n");
    const rules = body!.split(/(?<=verbs: \[.*\]\n)/).filter(Boolean);
    const dropped = rules.filter(drop);
    assert.equal(dropped.length, 1, "exactly one rule is dropped");
    kept = `${head}rules:\n${rules.filter((r) => r !== dropped[0]).join("")}`;
  }
  kubectl(["apply", "-f", "-"], { input: kept });
  kubectl(["apply", "-f", "-"], { input: binding!.replace("CHANGE-ME", user) });
  return rulesOf(role!);
}

function rulesOf(role: string): string[] {
  return [...role.matchAll(/resources: \["([^"]+)"\]/g)].map((m) => m[1]!);
}

function assertUnchanged(ns: string, before: Record<string, string>, rv: string | undefined): void {
  assert.deepEqual(uids(ns), before);
  assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
  assert.equal(journalExists(ns), false);
}

describe("a namespace admin (ClusterRole admin bound in one namespace)", () => {
  test("diff, set (size), a resume after an interrupted run, and show work; no storage class is read", async (t) => {
    const { ns, before } = await prepared(t);
    const kc = boundTo(ns, "admin");
    const diff = await runPlugin(["diff", "db", "data=2Gi", "-n", ns], { kubeconfig: kc });
    assert.equal(diff.code, 1, diff.stderr);
    assert.match(diff.stderr, /Warning: you may not list storage classes \(cluster scope\), so the default class and volume expansion could not be checked/);

    // Interrupted after the delete (a policy denies the re-create), then resumed by the same user.
    const allow = await denyStatefulSetCreate(t, ns);
    const denied = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { kubeconfig: kc });
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /could not re-create statefulset.apps\/db/);
    assert.ok(journalExists(ns));
    await allow();
    const resumed = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { kubeconfig: kc });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(resumed.stdout, "statefulset.apps/db recreated\n");
    assert.equal(templateSize(ns), "2Gi");
    assert.equal(journalExists(ns), false);
    assert.deepEqual(uids(ns), before);

    const show = await runPlugin(["show", "db", "-n", ns], { kubeconfig: kc });
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /data-db-1/);
    const all = await runPlugin(["show", "-A"], { kubeconfig: kc });
    assert.equal(all.code, 1);
    // Whichever of its lists the server refuses first, as kubectl get sts,pvc,pods -A would.
    assert.match(
      all.stderr,
      /^error: (statefulsets.apps|persistentvolumeclaims|pods) is forbidden: User "admin-[^"]+" cannot list resource "\w+" in API group "(apps)?" at the cluster scope; list one namespace with -n NAMESPACE instead of -A\n$/,
    );
  });

  test("a named storage class that cannot be read is refused naming the permission; --force passes it", async (t) => {
    const { ns, before } = await prepared(t);
    const kc = boundTo(ns, "admin");
    const rv = getSts(ns, "db").metadata.resourceVersion;
    const r = await runPlugin(["set", "db", "data=2Gi,fast", "-n", ns, "--yes"], { kubeconfig: kc });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /storage class "fast" could not be checked: you may not get storageclasses.storage.k8s.io "fast"/);
    assertUnchanged(ns, before, rv);
    const forced = await runPlugin(["set", "db", "data=2Gi,fast", "-n", ns, "--yes", "--force"], { kubeconfig: kc });
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal(getSts(ns, "db").spec.volumeClaimTemplates![0]!.spec.storageClassName, "fast");
    assert.deepEqual(uids(ns), before);
  });
});

describe("a namespace editor (ClusterRole edit)", () => {
  test("diff and set (size) work; show works", async (t) => {
    const { ns, before } = await prepared(t);
    const kc = boundTo(ns, "edit");
    assert.equal((await runPlugin(["diff", "db", "data=2Gi", "-n", ns], { kubeconfig: kc })).code, 1);
    const r = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { kubeconfig: kc });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(templateSize(ns), "2Gi");
    assert.deepEqual(uids(ns), before);
    assert.equal((await runPlugin(["show", "-n", ns], { kubeconfig: kc })).code, 0);
  });
});

describe("a namespace viewer (ClusterRole view)", () => {
  test("show and diff work; set is refused naming the permissions; nothing changes", async (t) => {
    const { ns, before } = await prepared(t);
    const kc = boundTo(ns, "view");
    const rv = getSts(ns, "db").metadata.resourceVersion;
    const show = await runPlugin(["show", "db", "-n", ns], { kubeconfig: kc });
    assert.equal(show.code, 0, show.stderr);
    const diff = await runPlugin(["diff", "db", "data=2Gi", "-n", ns], { kubeconfig: kc });
    assert.equal(diff.code, 1, diff.stderr);
    assert.match(diff.stdout, /^\+\s+storage: 2Gi$/m);
    const set = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { kubeconfig: kc });
    assert.equal(set.code, 1);
    assert.match(
      set.stderr,
      /^error: you may not create secrets in namespace who-[0-9a-f]+, update secrets "appstorage-journal-db" .*delete statefulsets.apps "db" .*which this change needs; nothing was changed: ask for those permissions \(kubectl auth can-i create secrets -n who-/m,
    );
    assertUnchanged(ns, before, rv);
  });
});

describe("the Role that rbac prints", () => {
  test("set, a resume after an interrupted run, --resize-existing on a bound claim, history and undo all work with it alone", async (t) => {
    const ns = namespace(t, "who");
    const cls = storageClassFor(t, ns, { expandable: true });
    for (const i of [0, 1]) volumeFor(t, ns, `data-db-${i}`, "1Gi", cls);
    apply(sts("db", ns).withClaim("data", "1Gi", cls).replicas(2).parallel().build(), ns);
    await settled(ns, "db", 2);
    await eventually("claims bound", () => claims(ns).filter((c) => c.status?.phase === "Bound").length === 2, 60_000);
    const before = uids(ns);
    const user = `role-${ns}`;
    const kc = userKubeconfig(user);
    rbacRole(ns, user);

    const allow = await denyStatefulSetCreate(t, ns);
    const denied = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { kubeconfig: kc });
    assert.equal(denied.code, 1, denied.stderr);
    assert.match(denied.stderr, /could not re-create/);
    await allow();
    const resumed = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { kubeconfig: kc });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(templateSize(ns), "2Gi");

    const grow = await runPlugin(["set", "db", "data=3Gi", "--resize-existing", "-n", ns, "--yes"], { kubeconfig: kc });
    assert.equal(grow.code, 0, grow.stderr);
    assert.match(grow.stderr, /decided by the server's dry run of each claim patch/);
    assert.deepEqual(
      claims(ns).map((c) => c.spec.resources!.requests!["storage"]),
      ["3Gi", "3Gi"],
    );
    // history and undo with the Role alone: the templates go back, the grown claims keep 3Gi.
    assert.equal((await runPlugin(["history", "db", "-n", ns], { kubeconfig: kc })).code, 0);
    const undo = await runPlugin(["undo", "db", "-n", ns, "--yes"], { kubeconfig: kc });
    assert.equal(undo.code, 0, undo.stderr);
    assert.equal(templateSize(ns), "2Gi");
    assert.deepEqual(
      claims(ns).map((c) => c.spec.resources!.requests!["storage"]),
      ["3Gi", "3Gi"],
    );
    assert.deepEqual(uids(ns), before);
  });

  test("without any one of its rules, set is refused before any change, naming what is missing (or, for a rule set does not need, works)", async (t) => {
    const probeNs = namespace(t, "who");
    const all = rulesOf(execFileSync(plugin, ["rbac", "-n", probeNs], { encoding: "utf8" }).split("---\n")[0]!);
    // Rules a plain `set` of a size does not use: without them it still works.
    const notNeeded = new Set(["resourcequotas", "events", "pods/eviction"]);
    assert.deepEqual(
      [...notNeeded].filter((r) => !all.includes(r)),
      [],
      "the Role has every rule this test knows",
    );
    for (const resource of all) {
      const { ns, before } = await prepared(t);
      const user = `minus-${ns}`;
      const kc = userKubeconfig(user);
      rbacRole(ns, user, (rule) => rule.includes(`resources: ["${resource}"]`));
      const rv = getSts(ns, "db").metadata.resourceVersion;
      const r = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { kubeconfig: kc });
      if (notNeeded.has(resource)) {
        assert.equal(r.code, 0, `${resource}: ${r.stderr}`);
        if (resource === "events") assert.match(r.stderr, /you may not create events.events.k8s.io .*: the change is not recorded as an event/);
        assert.deepEqual(uids(ns), before);
        continue;
      }
      assert.equal(r.code, 1, `${resource}: ${r.stderr}`);
      assert.match(r.stderr.trim().split("\n").pop()!, new RegExp(`^error: .*${resource.split("/")[0]}`), `${resource}: ${r.stderr}`);
      assertUnchanged(ns, before, rv);
    }
  });
});
