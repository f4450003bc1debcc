// The proof that nothing is ever lost: `set` with a fault at every request, killed at every
// request boundary, racing other writers, run by users missing one permission each, and fed bad
// input. After each, the pods and claims have the uids they had before, and a plain rerun
// converges to the desired object. Figures go to dist/reliability-summary.json (README "Safety").
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test, type TestContext } from "node:test";
import type { StatefulSet } from "../../src/kube/types";
import { sts } from "../fixtures/builders";
import { type Fault, type FaultKind, startFaultProxy } from "./faultproxy";
import { apply, getSts, kubeconfig, kubectl, kubectlJson, kubectlTry, namespace, plugin, pods, root, runPlugin, settled, uids, userKubeconfig } from "./harness";

const summary = { setRunsWithFaults: 0, faultsInjected: 0, faultKinds: new Set<string>(), crashPoints: 0, permissionCases: 0, badInputCases: 0, reruns: 0, uidsCompared: 0, lost: 0 };
after(() => {
  mkdirSync(join(root, "dist"), { recursive: true });
  writeFileSync(join(root, "dist", "reliability-summary.json"), `${JSON.stringify({ ...summary, faultKinds: [...summary.faultKinds].sort() }, null, 2)}\n`);
});

type Shape = { parallel: boolean; retention: "Retain" | "Delete" };

async function prepared(t: TestContext, shape: Shape = { parallel: true, retention: "Retain" }): Promise<{ ns: string; before: Record<string, string> }> {
  const ns = namespace(t, "rel");
  const b = sts("db", ns).withClaim("data", "1Gi").replicas(3).retention(shape.retention);
  if (shape.parallel) b.parallel();
  apply(b.build(), ns);
  await settled(ns, "db", 3, { ready: !shape.parallel });
  return { ns, before: uids(ns) };
}

function assertNothingLost(ns: string, before: Record<string, string>, context: string): void {
  const now = uids(ns);
  summary.uidsCompared += Object.keys(before).length;
  for (const [name, uid] of Object.entries(before)) {
    if (now[name] !== uid) summary.lost += 1;
    assert.equal(now[name], uid, `${context}: ${name} was replaced or deleted`);
  }
}

/** A plain rerun (no faults) finishes the job: the desired templates, every pod adopted, no journal. */
async function assertConverges(ns: string, before: Record<string, string>, context: string): Promise<void> {
  const rerun = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes", "--timeout", "60s"]);
  summary.reruns += 1;
  assert.equal(rerun.code, 0, `${context}: rerun failed: ${rerun.stderr}`);
  assert.match(rerun.stdout, /^statefulset.apps\/db (recreated|unchanged)\n$/, context);
  const s: StatefulSet = getSts(ns, "db");
  assert.equal(s.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "2Gi", context);
  for (const p of pods(ns)) assert.equal(p.metadata.ownerReferences?.find((r) => r.controller)?.uid, s.metadata.uid, `${context}: ${p.metadata.name} not adopted`);
  assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 1, `${context}: journal left behind`);
  assertNothingLost(ns, before, context);
}

/** The requests of one clean `set`, through the proxy, to know how many indices there are. */
async function baseline(t: TestContext): Promise<{ kind: string }[]> {
  const { ns } = await prepared(t);
  const proxy = await startFaultProxy(kubeconfig());
  try {
    const r = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { kubeconfig: proxy.kubeconfig });
    assert.equal(r.code, 0, r.stderr);
    return proxy.requests.map((x) => ({ kind: x.kind }));
  } finally {
    await proxy.close();
  }
}

// APPSTORAGE_FAULT_MATRIX=reduced (scripts/test.mjs --version: the older control planes): one fault of
// each kind, and SIGKILLs around the writes only; the full matrix runs on the default control plane.
const reduced = process.env["APPSTORAGE_FAULT_MATRIX"] === "reduced";
const destructive = (kind: string) => /^(DELETE statefulsets|POST statefulsets|POST secrets|PUT secrets|DELETE secrets)$/.test(kind);

describe("faults at every request", () => {
  test("500, 503, 429, resets, stalls and dropped watches: every run converges, nothing lost", async (t) => {
    const requests = await baseline(t);
    const kinds: FaultKind[] = ["500", "503", "429", "reset-before", "reset-after", "stall", "drop-watch"];
    const plan: Fault[] = [];
    requests.forEach((r, i) => {
      // Every index gets one kind in rotation; the writes that matter get every kind.
      const forIndex = destructive(r.kind) ? kinds.filter((k) => k !== "drop-watch") : [kinds[i % kinds.length]!];
      for (const kind of forIndex) plan.push({ nth: i, kind });
    });
    const faults = reduced ? kinds.flatMap((k) => plan.find((f) => f.kind === k && (k === "drop-watch" || destructive(requests[f.nth]!.kind))) ?? []) : plan;
    for (const fault of faults) {
      const { ns, before } = await prepared(t);
      const proxy = await startFaultProxy(kubeconfig(), [fault]);
      const context = `fault ${fault.kind} at request ${fault.nth} (${requests[fault.nth]!.kind})`;
      try {
        await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes", "--request-timeout", "2s", "--timeout", "30s"], { kubeconfig: proxy.kubeconfig });
        summary.setRunsWithFaults += 1;
        if (proxy.requests.some((r) => r.fault)) {
          summary.faultsInjected += 1;
          summary.faultKinds.add(fault.kind);
        }
      } finally {
        await proxy.close();
      }
      assertNothingLost(ns, before, context);
      await assertConverges(ns, before, context);
      kubectlTry(["delete", "namespace", ns, "--wait=false"]);
    }
    assert.ok(reduced ? summary.faultKinds.size === kinds.length : summary.faultsInjected >= requests.length, `faults injected: ${summary.faultsInjected} of ${faults.length}`);
  });
});

/** Runs set through a proxy that holds request `nth` (before or after the server saw it), SIGKILLs it there. */
async function killAt(ns: string, nth: number, when: "hold" | "hold-after"): Promise<string> {
  const proxy = await startFaultProxy(kubeconfig(), [{ nth, kind: when }]);
  try {
    const child = spawn(plugin, ["set", "db", "data=2Gi", "-n", ns, "--yes", "--kubeconfig", proxy.kubeconfig], {
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", APPSTORAGE_STATE_DIR: mkdtempSync(join(tmpdir(), "appstorage-state-")) },
      stdio: "ignore",
    });
    const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
    const outcome = await Promise.race([proxy.held.then((h) => h.request.kind), exited.then(() => "exited")]);
    child.kill("SIGKILL");
    await exited;
    return outcome;
  } finally {
    await proxy.close();
  }
}

describe("SIGKILL at every request boundary", () => {
  test("Parallel, Retain: killed before and after each request, the rerun converges", async (t) => {
    const requests = await baseline(t);
    for (let i = 0; i < requests.length; i++) {
      if (reduced && !destructive(requests[i]!.kind)) continue;
      for (const when of ["hold", "hold-after"] as const) {
        const { ns, before } = await prepared(t);
        const at = await killAt(ns, i, when);
        summary.crashPoints += 1;
        const context = `killed ${when === "hold" ? "before" : "after"} request ${i} (${at})`;
        assertNothingLost(ns, before, context);
        await assertConverges(ns, before, context);
        kubectlTry(["delete", "namespace", ns, "--wait=false"]);
      }
    }
  });

  for (const shape of [
    { parallel: false, retention: "Retain" },
    { parallel: true, retention: "Delete" },
    { parallel: false, retention: "Delete" },
  ] as Shape[]) {
    test(`${shape.parallel ? "Parallel" : "OrderedReady"}, ${shape.retention}: killed around every write`, async (t) => {
      const requests = await baseline(t);
      for (let i = 0; i < requests.length; i++) {
        if (!destructive(requests[i]!.kind)) continue;
        for (const when of ["hold", "hold-after"] as const) {
          const { ns, before } = await prepared(t, shape);
          const at = await killAt(ns, i, when);
          summary.crashPoints += 1;
          const context = `${JSON.stringify(shape)} killed ${when === "hold" ? "before" : "after"} request ${i} (${at})`;
          assertNothingLost(ns, before, context);
          await assertConverges(ns, before, context);
          kubectlTry(["delete", "namespace", ns, "--wait=false"]);
        }
      }
    });
  }
});

describe("races", () => {
  test("a scale while the StatefulSet is gone fails; the re-created object keeps the planned replicas", async (t) => {
    const { ns, before } = await prepared(t);
    const proxy = await startFaultProxy(kubeconfig(), [{ nth: 0, kind: "hold", match: (r) => r.kind === "POST statefulsets" }]);
    try {
      const run = runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { kubeconfig: proxy.kubeconfig });
      const held = await proxy.held;
      const scale = kubectlTry(["scale", "statefulset", "db", "-n", ns, "--replicas=5"]);
      assert.equal(scale.code, 1);
      assert.match(scale.stderr, /not found/);
      held.release();
      const r = await run;
      assert.equal(r.code, 0, r.stderr);
    } finally {
      await proxy.close();
    }
    assert.equal(getSts(ns, "db").spec.replicas, 3);
    assertNothingLost(ns, before, "scale while gone");
  });

  test("another writer between plan and delete: the precondition refuses, nothing changes", async (t) => {
    const { ns, before } = await prepared(t);
    const proxy = await startFaultProxy(kubeconfig(), [{ nth: 0, kind: "hold", match: (r) => r.kind === "DELETE statefulsets" }]);
    try {
      const run = runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { kubeconfig: proxy.kubeconfig });
      const held = await proxy.held;
      kubectl(["annotate", "statefulset", "db", "-n", ns, "edited=meanwhile"]);
      held.release();
      const r = await run;
      assert.equal(r.code, 1);
      assert.match(r.stderr, /changed since it was read .* nothing was changed/);
    } finally {
      await proxy.close();
    }
    const s = getSts(ns, "db");
    assert.equal(s.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "1Gi");
    assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 1);
    assertNothingLost(ns, before, "stale plan");
  });
});

describe("permissions", () => {
  const full = [
    { apiGroups: ["apps"], resources: ["statefulsets"], verbs: ["get", "list", "watch", "create", "delete"] },
    { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] },
    { apiGroups: [""], resources: ["persistentvolumeclaims"], verbs: ["get", "list"] },
    { apiGroups: [""], resources: ["secrets"], verbs: ["get", "create", "update", "delete"] },
    { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create"] },
  ];
  const cases: [string, (rules: typeof full) => typeof full, boolean, RegExp][] = [
    ["may not delete statefulsets", (r) => r.map((x) => (x.resources[0] === "statefulsets" ? { ...x, verbs: x.verbs.filter((v) => v !== "delete") } : x)), true, /you may not delete statefulsets.apps "db"/],
    ["may not create statefulsets", (r) => r.map((x) => (x.resources[0] === "statefulsets" ? { ...x, verbs: x.verbs.filter((v) => v !== "create") } : x)), true, /you may not create statefulsets.apps/],
    ["may not write the journal", (r) => r.map((x) => (x.resources[0] === "secrets" ? { ...x, verbs: ["get"] } : x)), true, /you may not create secrets in namespace rel-[0-9a-f]+, which this change needs; nothing was changed/],
    ["may not read storage classes", (r) => r, false, /storageclasses.storage.k8s.io is forbidden: User "[^"]+" cannot list resource "storageclasses"/],
  ];
  for (const [name, rules, canReadClasses, why] of cases) {
    test(`${name}: refused before any change, naming the permission`, async (t) => {
      const { ns, before } = await prepared(t);
      const user = `u-${ns}`;
      const kc = userKubeconfig(user);
      apply({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "appstorage" }, rules: rules(full) }, ns);
      apply({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "appstorage" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "appstorage" }, subjects: [{ kind: "User", name: user }] }, ns);
      if (canReadClasses) {
        apply({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: `sc-${ns}` }, rules: [{ apiGroups: ["storage.k8s.io"], resources: ["storageclasses"], verbs: ["get", "list"] }] }, ns);
        apply({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: `sc-${ns}` }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: `sc-${ns}` }, subjects: [{ kind: "User", name: user }] }, ns);
        t.after(() => {
          kubectlTry(["delete", "clusterrolebinding", `sc-${ns}`]);
          kubectlTry(["delete", "clusterrole", `sc-${ns}`]);
        });
      }
      const rv = getSts(ns, "db").metadata.resourceVersion;
      const r = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { kubeconfig: kc });
      summary.permissionCases += 1;
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, why);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
      assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 1);
      assertNothingLost(ns, before, name);
    });
  }
});

describe("bad input", () => {
  test("each is one line, a non-zero exit, and changes nothing", async (t) => {
    const { ns, before } = await prepared(t);
    const kc = kubeconfig();
    const dir = mkdtempSync(join(tmpdir(), "appstorage-bad-"));
    const corrupt = join(dir, "corrupt");
    writeFileSync(corrupt, "apiVersion: v1\nclusters: [\n");
    const unreachable = join(dir, "unreachable");
    writeFileSync(unreachable, readFileSync(kc, "utf8").replace(/server: https:\/\/127\.0\.0\.1:\d+/, "server: https://127.0.0.1:1"));
    const cases: [string[], RegExp][] = [
      [["set", "db", "data=0"], /greater than zero/],
      [["set", "db", "data=-5Gi"], /greater than zero/],
      [["set", "db", "data=1.5"], /whole number of bytes/],
      [["set", "db", "data=100m"], /whole number of bytes/],
      [["set", "db", "data=2GB"], /unknown suffix "GB"/],
      [["set", "db", "data=2gi"], /unknown suffix "gi"/],
      [["set", "db", "data=1e999"], /out of range/],
      [["set", "db", "data=99Ei"], /too large/],
      [["set", "db", "data=9223372036854775808"], /too large/],
      [["set", "db", "data=1..2Gi"], /size|quantity|suffix/],
      [["set", "db", "data=2Gi,3Gi"], /two sizes/],
      [["set", "db", "data=a,b"], /two storage classes/],
      [["set", "db", "data=Fast_SSD"], /neither a size/],
      [["set", "db", "data=2Gi,no-such-class"], /storage class "no-such-class" not found/],
      [["set", "db", "nope=2Gi"], /claim template "nope" not found/],
      [["set", "db", "data=2Gi", "data=3Gi"], /named twice/],
      [["set", "db", "data="], /neither a size nor a storage class/],
      [["set", "db", "=2Gi"], /names no claim template/],
      [["set", "db", "data"], /not a directive/],
      [["set", "db", "data=2Gi", "stray"], /not a directive/],
      [["set", "db"], /needs a StatefulSet name and at least one/],
      [["set"], /needs a StatefulSet name/],
      [["set", "db", "data=2Gi", "--bogus"], /Unknown argument: bogus/],
      [["set", "db", "data=2Gi", "--dry-run=maybe"], /Invalid dry-run value \(maybe\)/],
      [["set", "db", "data=2Gi", "-o", "xml"], /invalid --output "xml"/],
      [["set", "db", "data=2Gi", "--timeout", "forever"], /invalid --timeout/],
      [["set", "no-such-sts", "data=2Gi"], /statefulsets.apps "no-such-sts" not found/],
      [["set", "db", "data=2Gi", "-n", "no-such-namespace"], /namespace "no-such-namespace" not found/],
      [["set", "db", "data=2Gi", "--kubeconfig", join(dir, "missing")], /kubeconfig ".*missing" does not exist/],
      [["set", "db", "data=2Gi", "--kubeconfig", corrupt], /cannot load kubeconfig|not a kubeconfig/],
      [["set", "db", "data=2Gi", "--context", "nope"], /context "nope" does not exist/],
      [["set", "db", "data=2Gi", "--kubeconfig", unreachable, "--request-timeout", "2s"], /connection to the server .* failed/],
      [["diff", "db", "data=Zero"], /neither a size/],
      [["show", "-o", "xml"], /invalid --output/],
      [["frobnicate"], /Unknown argument|unknown command/],
    ];
    const rv = getSts(ns, "db").metadata.resourceVersion;
    for (const [args, why] of cases) {
      const withNs = args.includes("-n") ? args : [...args, "-n", ns];
      const r = await runPlugin(args[0] === "set" ? [...withNs, "--yes"] : withNs, { kubeconfig: kc });
      summary.badInputCases += 1;
      assert.ok(r.code !== 0, `${args.join(" ")}: exit ${r.code}`);
      assert.match(r.stderr, why, args.join(" "));
      assert.equal(r.stderr.trim().split("\n").length, 1, `${args.join(" ")}: ${r.stderr}`);
      assert.equal(r.stdout, "", args.join(" "));
    }
    assert.ok(cases.length >= 30);
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
    assertNothingLost(ns, before, "bad input");
  });
});

describe("security", () => {
  test("the journal and its local copy hold no credentials; the copy is 0600 in a 0700 folder", async (t) => {
    const { ns } = await prepared(t);
    const stateDir = mkdtempSync(join(tmpdir(), "appstorage-sec-"));
    const proxy = await startFaultProxy(kubeconfig(), [{ nth: 0, kind: "500", match: (r) => r.kind === "POST statefulsets" }]);
    let r;
    try {
      r = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { kubeconfig: proxy.kubeconfig, stateDir, env: { APPSTORAGE_DEBUG: "1" } });
    } finally {
      await proxy.close();
    }
    assert.equal(r.code, 1, "the create failed and the journal stays");
    const secret = kubectlJson<{ data: Record<string, string> }>(["get", "secret", "appstorage-journal-db", "-n", ns]);
    const journal = Buffer.from(secret.data["journal.json"]!, "base64").toString();
    const kc = readFileSync(kubeconfig(), "utf8");
    const secrets = [...kc.matchAll(/(client-key-data|client-certificate-data|certificate-authority-data): (\S+)/g)].map((m) => m[2]!);
    const journalDir = join(stateDir, "journal");
    const files = readdirSync(journalDir);
    assert.equal(files.length, 1);
    const local = readFileSync(join(journalDir, files[0]!), "utf8");
    for (const text of [journal, local, r.stdout, r.stderr]) {
      for (const s of secrets) assert.ok(!text.includes(s.slice(0, 40)), "credential material leaked");
      assert.doesNotMatch(text, /BEGIN (RSA |EC )?PRIVATE KEY|BEGIN CERTIFICATE|Authorization|Bearer /);
    }
    assert.equal(statSync(journalDir).mode & 0o777, 0o700);
    assert.equal(statSync(join(journalDir, files[0]!)).mode & 0o777, 0o600);
    const rerun = await runPlugin(["set", "db", "data=2Gi", "-n", ns, "--yes"], { stateDir });
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.deepEqual(readdirSync(journalDir), [], "local copy removed when done");
  });
});
