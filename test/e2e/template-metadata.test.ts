// Claim template labels and annotations on the command line (--template-label, --template-annotation,
// --overwrite, as kubectl label and annotate), --relabel-existing on the existing claims, and set -f
// with every guarantee set has (diff, --dry-run, --plan, preflight, verification, journal and
// resume, history, undo), on the real control plane. Every pod and claim keeps its uid.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test, type TestContext } from "node:test";
import type { StatefulSet } from "../../src/api/types";
import { sts } from "../fixtures/builders";
import { apply, claims, denyStatefulSetCreate, getSts, kubeconfig, kubectl, kubectlTry, namespace, plugin, runPlugin, settled, uids, userKubeconfig } from "../shared/harness";

const template = (s: StatefulSet) => s.spec.volumeClaimTemplates![0]!;

/** db: claim template data (1Gi, labels tier=silver and chart=db-1), two replicas, settled. */
async function db(t: TestContext, prefix: string): Promise<string> {
  const ns = namespace(t, prefix);
  apply(manifest(ns, "1Gi", { tier: "silver", chart: "db-1" }), ns);
  await settled(ns, "db", 2);
  return ns;
}

function manifest(ns: string, size: string, labels: Record<string, string>): StatefulSet {
  return sts("db", ns)
    .withClaim("data", size)
    .replicas(2)
    .parallel()
    .edit((s) => (s.spec.volumeClaimTemplates![0]!.metadata.labels = labels))
    .build();
}

const claimLabels = (ns: string) => Object.fromEntries(claims(ns).map((c) => [c.metadata.name!, c.metadata.labels ?? {}]));

describe("--template-label, --template-annotation and --relabel-existing on the live objects", () => {
  test("as kubectl label: another value needs --overwrite; the template changes, the existing claims with --relabel-existing; nothing restarted", async (t) => {
    const ns = await db(t, "tlabel");
    // A label of the user's own on one claim: --relabel-existing keeps it.
    kubectl(["label", "pvc", "data-db-0", "-n", ns, "team=x"]);
    const before = uids(ns);
    const rv = getSts(ns, "db").metadata.resourceVersion;

    const bad = await runPlugin(["set", "db", "--template-label", "tier=gold", "-n", ns, "--yes"]);
    assert.equal(bad.code, 1);
    assert.equal(
      bad.stderr,
      `error: --template-label "tier=gold" names no claim template: write CLAIM:KEY=VALUE to set or CLAIM:KEY- to remove, for example --template-label data:tier=gold (see 'kubectl appstorage --help')\n`,
    );
    const noOverwrite = await runPlugin(["set", "db", "--template-label", "data:tier=gold", "-n", ns, "--yes"]);
    assert.equal(noOverwrite.code, 1);
    assert.match(noOverwrite.stderr, /^error: 'tier' already has a value \(silver\) on claim template data, and --overwrite is false; add --overwrite to change it\n$/);
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv, "nothing changed");

    const args = ["db", "--template-label", "data:tier=gold", "--template-label", "data:chart-", "--template-annotation", "data:backup.example.com/schedule=daily 02:00", "--overwrite", "-n", ns];
    const diff = await runPlugin(["diff", ...args, "--relabel-existing"]);
    assert.equal(diff.code, 1, diff.stderr);
    assert.match(diff.stdout, new RegExp(`^\\+\\+\\+ merged/apps\\.v1\\.StatefulSet\\.${ns}\\.db$`, "m"));
    assert.match(diff.stdout, /^-\s+chart: db-1$/m);
    assert.match(diff.stdout, /^\+\s+backup\.example\.com\/schedule: daily 02:00$/m);
    for (const c of ["data-db-0", "data-db-1"]) assert.match(diff.stdout, new RegExp(`^--- live/v1\\.PersistentVolumeClaim\\.${ns}\\.${c}$`, "m"));
    assert.match(diff.stderr, /existing claims: 2 of 2 get their template's labels and annotations/);
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv, "diff changes nothing");

    const set = await runPlugin(["set", ...args, "--relabel-existing", "--yes"]);
    assert.equal(set.code, 0, set.stderr);
    assert.equal(set.stdout, "statefulset.apps/db recreated\npersistentvolumeclaim/data-db-0 labeled\npersistentvolumeclaim/data-db-1 labeled\n");
    assert.match(set.stderr, /patched claim data-db-0: labels chart-, tier=gold; annotations backup\.example\.com\/schedule=daily 02:00\n/);
    const after = getSts(ns, "db");
    assert.deepEqual(template(after).metadata.labels, { tier: "gold" });
    assert.deepEqual(template(after).metadata.annotations, { "backup.example.com/schedule": "daily 02:00" });
    const labels = claimLabels(ns);
    assert.deepEqual(labels["data-db-0"], { app: "db", team: "x", tier: "gold" }, "the selector's label and the user's own are kept");
    assert.deepEqual(labels["data-db-1"], { app: "db", tier: "gold" });
    for (const c of claims(ns)) assert.equal(c.metadata.annotations?.["backup.example.com/schedule"], "daily 02:00");
    assert.deepEqual(uids(ns), before, "every pod and claim kept its uid");
    assert.equal((await runPlugin(["diff", ...args, "--relabel-existing"])).code, 0, "nothing left to change");

    // Removing a key; the history names each change in the words that ask for it.
    const drop = await runPlugin(["set", "db", "--template-annotation", "data:backup.example.com/schedule-", "--relabel-existing", "-n", ns, "--yes"]);
    assert.equal(drop.code, 0, drop.stderr);
    assert.equal(drop.stdout, "statefulset.apps/db recreated\npersistentvolumeclaim/data-db-0 annotated\npersistentvolumeclaim/data-db-1 annotated\n");
    assert.equal(template(getSts(ns, "db")).metadata.annotations, undefined);
    for (const c of claims(ns)) assert.equal(c.metadata.annotations?.["backup.example.com/schedule"], undefined);
    const history = await runPlugin(["history", "db", "-n", ns]);
    assert.match(history.stdout, /--template-label=data:chart- --template-label=data:tier=gold '--template-annotation=data:backup.example.com\/schedule=daily 02:00'/);
    assert.match(history.stdout, /--template-annotation=data:backup.example.com\/schedule-/);
    assert.deepEqual(uids(ns), before);
  });

  test("templates already as asked: only the claims are patched, the StatefulSet is not re-created; a rerun changes nothing", async (t) => {
    const ns = await db(t, "tlabel");
    const before = uids(ns);
    const rv = getSts(ns, "db").metadata.resourceVersion;
    const set = await runPlugin(["set", "db", "--template-label", "data:tier=silver", "--relabel-existing", "-n", ns, "--yes"]);
    assert.equal(set.code, 0, set.stderr);
    // The claims were made from the template, so they carry its labels already.
    assert.equal(set.stdout, "statefulset.apps/db unchanged\n");
    kubectl(["label", "pvc", "data-db-1", "-n", ns, "tier-", "chart=old", "--overwrite"]);
    const again = await runPlugin(["set", "db", "--template-label", "data:tier=silver", "--relabel-existing", "-n", ns, "--yes"]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, "statefulset.apps/db unchanged\npersistentvolumeclaim/data-db-1 labeled\n");
    assert.deepEqual(claimLabels(ns)["data-db-1"], { app: "db", tier: "silver", chart: "db-1" });
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv, "the StatefulSet is not touched");
    assert.deepEqual(uids(ns), before);
  });

  test("the preflight names the permission --relabel-existing needs, before anything changes", async (t) => {
    const ns = await db(t, "tlabel");
    const before = uids(ns);
    const rv = getSts(ns, "db").metadata.resourceVersion;
    const user = `relabel-${ns}`;
    const kc = userKubeconfig(user);
    // The Role `rbac` prints, without patch on claims.
    const [role, binding] = execFileSync(plugin, ["rbac", "-n", ns], { encoding: "utf8" }).split("---\n");
    const withoutPatch = role!.replace(/(resources: \["persistentvolumeclaims"\]\n\s+verbs: \[[^\]]*), "patch"\]/, "$1]");
    assert.notEqual(withoutPatch, role, "the claims rule lost its patch verb");
    kubectl(["apply", "-f", "-"], { input: withoutPatch });
    kubectl(["apply", "-f", "-"], { input: binding!.replace("CHANGE-ME", user) });
    const refused = await runPlugin(["set", "db", "data=2Gi", "--template-label", "data:tier=gold", "--overwrite", "--relabel-existing", "-n", ns, "--yes"], { kubeconfig: kc });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, new RegExp(`^error: you may not patch persistentvolumeclaims in namespace ${ns}, which this change needs; nothing was changed`, "m"));
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
    // The same with a manifest (set -f): the same permission is named.
    const manifestRefused = await runPlugin(["set", "-f", "-", "--relabel-existing", "--yes"], { kubeconfig: kc, input: JSON.stringify(manifest(ns, "2Gi", { tier: "gold" })) });
    assert.equal(manifestRefused.code, 1);
    assert.match(manifestRefused.stderr, new RegExp(`^error: you may not patch persistentvolumeclaims in namespace ${ns}, which this change needs; nothing was changed`, "m"));
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv);
    // Without the flag the same user changes the template.
    const set = await runPlugin(["set", "db", "data=2Gi", "--template-label", "data:tier=gold", "--overwrite", "-n", ns, "--yes"], { kubeconfig: kc });
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(uids(ns), before);
  });
});

describe("set -f has every guarantee set has", () => {
  test("diff -f as a plan, --dry-run=client and server, set --plan, verification, history and undo", async (t) => {
    const ns = await db(t, "mguar");
    const before = uids(ns);
    const rv = getSts(ns, "db").metadata.resourceVersion;
    const v2 = JSON.stringify(manifest(ns, "2Gi", { tier: "gold", chart: "db-2" }));
    const dir = mkdtempSync(join(tmpdir(), "appstorage-mguar-"));

    const planned = await runPlugin(["diff", "-f", "-", "-o", "yaml"], { input: v2 });
    assert.equal(planned.code, 1, planned.stderr);
    assert.match(planned.stdout, /^kind: Plan$/m);
    writeFileSync(join(dir, "plan.yaml"), planned.stdout);

    const client = await runPlugin(["set", "-f", "-", "--dry-run=client"], { input: v2 });
    assert.equal(client.code, 0, client.stderr);
    assert.match(client.stdout, /claim template data: 1Gi, labels chart=db-1,tier=silver -> 2Gi, labels chart=db-2,tier=gold/);
    assert.match(client.stdout, /statefulset\.apps\/db recreated \(dry run\)\n$/);
    const server = await runPlugin(["set", "-f", "-", "--dry-run=server"], { input: v2 });
    assert.equal(server.code, 0, server.stderr);
    assert.match(server.stderr, /server dry run: the re-created statefulset\.apps\/db passes validation and admission/);
    assert.equal(getSts(ns, "db").metadata.resourceVersion, rv, "dry runs change nothing");

    const applied = await runPlugin(["set", "--plan", join(dir, "plan.yaml"), "--yes"]);
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stderr, /verified: 2 pod\(s\) adopted by uid \S+ unchanged \(same uid and revision\), 2 claim\(s\) unchanged/);
    assert.equal(template(getSts(ns, "db")).spec.resources!.requests!["storage"], "2Gi");
    assert.equal((await runPlugin(["diff", "-f", "-"], { input: v2 })).code, 0);

    const history = await runPlugin(["history", "db", "-n", ns, "-o", "json"]);
    const revisions = (JSON.parse(history.stdout) as { revisions: { revision: number; change?: string }[] }).revisions;
    assert.deepEqual(
      revisions.map((r) => r.change),
      [undefined, "data=2Gi --template-label=data:chart=db-2 --template-label=data:tier=gold"],
    );
    const undo = await runPlugin(["undo", "db", "-n", ns, "--yes"]);
    assert.equal(undo.code, 0, undo.stderr);
    assert.equal(template(getSts(ns, "db")).spec.resources!.requests!["storage"], "1Gi");
    assert.deepEqual(template(getSts(ns, "db")).metadata.labels, { tier: "silver", chart: "db-1" });
    assert.deepEqual(uids(ns), before);
  });

  test("several StatefulSets: all planned first (one refused: nothing changes), then changed side by side", async (t) => {
    const ns = namespace(t, "mmany");
    const web = (size: string, claim = "data") => sts("web", ns).withClaim(claim, size).replicas(2).parallel().build();
    apply(manifest(ns, "1Gi", { tier: "silver", chart: "db-1" }), ns);
    apply(web("1Gi"), ns);
    await settled(ns, "db", 2);
    await settled(ns, "web", 2);
    const before = uids(ns);
    const list = (items: unknown[]) => JSON.stringify({ apiVersion: "v1", kind: "List", items });
    const refused = await runPlugin(["set", "-f", "-", "--yes"], { input: list([manifest(ns, "2Gi", { tier: "gold" }), web("2Gi", "logs")]) });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, new RegExp(`^refused: statefulset\\.apps/web in namespace ${ns}: the manifest names claim template\\(s\\) logs where the cluster has data`, "m"));
    assert.match(refused.stderr, /^error: 1 of 2 StatefulSet\(s\) refused \(listed above\); nothing was changed/m);
    assert.equal(template(getSts(ns, "db")).spec.resources!.requests!["storage"], "1Gi", "db is not changed either");
    const set = await runPlugin(["set", "-f", "-", "--yes"], { input: list([manifest(ns, "2Gi", { tier: "gold" }), web("3Gi")]) });
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stderr, new RegExp(`^\\[[0-9.]+s\\] ${ns}/db: verified: 2 pod\\(s\\) adopted`, "m"));
    assert.match(set.stderr, new RegExp(`^${ns}\\s+web\\s+recreated`, "m"));
    assert.deepEqual(
      ["db", "web"].map((n) => template(getSts(ns, n)).spec.resources!.requests!["storage"]),
      ["2Gi", "3Gi"],
    );
    assert.deepEqual(uids(ns), before);
  });

  test("interrupted after the delete (the re-create denied): the journal is kept, and the same set -f finishes it", async (t) => {
    const ns = await db(t, "mresume");
    const before = uids(ns);
    const v2 = JSON.stringify(manifest(ns, "2Gi", { tier: "gold", chart: "db-1" }));
    const probe = { ...manifest(ns, "2Gi", {}), metadata: { name: "probe" } };
    const lift = await denyStatefulSetCreate(t, ns, { allowed: "object.spec.volumeClaimTemplates[0].spec.resources.requests.storage != '2Gi'", message: "no 2Gi claims here", probe });
    const failed = await runPlugin(["set", "-f", "-", "--yes"], { input: v2 });
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /could not re-create statefulset\.apps\/db: .*no 2Gi claims here; its pods keep running without a controller and the journal is kept/);
    assert.equal(kubectlTry(["get", "statefulset", "db", "-n", ns]).code, 1, "deleted, not re-created");
    // The command that finishes it is a command line (the manifest's change, as words; its -f - cannot be read again), with the run's --kubeconfig.
    const show = await runPlugin(["show", "db", "-n", ns]);
    assert.ok(show.stdout.includes(`finish it with: kubectl appstorage set db data=2Gi --template-label=data:tier=gold --kubeconfig ${kubeconfig()} -n ${ns}\n`), show.stdout);
    await lift();
    const resumed = await runPlugin(["set", "-f", "-", "--yes"], { input: v2 });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr, /statefulset\.apps\/db does not exist: an earlier run deleted it \(orphaning its pods\) and was interrupted; re-creating it now/);
    assert.equal(template(getSts(ns, "db")).spec.resources!.requests!["storage"], "2Gi");
    assert.equal(template(getSts(ns, "db")).metadata.labels!["tier"], "gold");
    assert.equal(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 1, "the journal is removed");
    assert.deepEqual(uids(ns), before);
  });
});
