// Who manages the StatefulSet, on the real control plane with the real CRDs of Argo CD's
// Application and Flux's Kustomization and HelmRelease (test/shared/crds.ts: from their Go modules):
// the plan names the owner and prints the exact commands that pause and resume it; --pause-owner
// pauses it before the first write and puts back exactly what it had after the last, or at once
// when the run stops; after a SIGKILL it stays paused, the journal says so, and the rerun resumes it.
//
// Argo CD's and Flux's controllers do not run here: their images come from a registry this lab
// does not use, and their modules need a newer Go than the machine's (the proxy says so for
// kustomize-controller v1.10.2). Where it matters, the test plays Argo CD's self-heal: while the
// Application syncs automatically, a StatefulSet missing from the cluster is a drift it would
// repair by applying the old object, so the test records every moment it sees that.
import assert from "node:assert/strict";
import { describe, test, type TestContext } from "node:test";
import type { KubeObject } from "../../src/api/types";
import { sts } from "../fixtures/builders";
import { apply, denyStatefulSetCreate, getSts, kubectl, kubectlJson, kubectlTry, namespace, runPlugin, settled } from "../shared/harness";
import { installOwnerCrds } from "../shared/crds";
import { watchEvents } from "../shared/watch";
import { killAt } from "../shared/kill";

const argoNamespace = "argocd";
const automated = { prune: true, selfHeal: true };

/** An Argo CD Application in Argo CD's default namespace, named for the test, removed after it. */
function application(t: TestContext, ns: string): string {
  const name = `shop-${ns}`;
  if (kubectlTry(["get", "namespace", argoNamespace]).code !== 0) kubectlTry(["create", "namespace", argoNamespace]);
  apply(
    {
      apiVersion: "argoproj.io/v1alpha1",
      kind: "Application",
      metadata: { name, namespace: argoNamespace },
      spec: {
        project: "default",
        source: { repoURL: "https://git.example.com/shop.git", path: "db", targetRevision: "main" },
        destination: { server: "https://kubernetes.default.svc", namespace: ns },
        syncPolicy: { automated },
      },
    },
    argoNamespace,
  );
  t.after(() => kubectlTry(["delete", "application", name, "-n", argoNamespace, "--wait=false"]));
  return name;
}

const appAutomated = (name: string) => kubectlJson<KubeObject & { spec: { syncPolicy?: { automated?: unknown } } }>(["get", "application", name, "-n", argoNamespace]).spec.syncPolicy?.automated;

async function tracked(t: TestContext, prefix: string): Promise<{ ns: string; app: string }> {
  installOwnerCrds();
  const ns = namespace(t, prefix);
  const app = application(t, ns);
  apply(
    sts("db", ns)
      .withClaim("pgdata", "1Gi")
      .replicas(2)
      .parallel()
      .annotations({ "argocd.argoproj.io/tracking-id": `${app}:apps/StatefulSet:${ns}/db` })
      .build(),
    ns,
  );
  await settled(ns, "db", 2);
  return { ns, app };
}

/**
 * Plays Argo CD's self-heal as the judge of when it would act: a StatefulSet missing while the
 * Application syncs automatically is a drift it repairs by applying the object it holds. Both are
 * watched, and the Application's state when the StatefulSet went and until it came back is read at
 * their resourceVersions, which etcd orders (one etcd here): no timing of the test's own reads counts.
 */
function selfHeal(ns: string, app: string): { stop: () => Promise<{ drifts: string[]; gaps: number }> } {
  const apps = watchEvents(["application", app, "-n", argoNamespace], "{.object.spec.syncPolicy.automated}");
  const sets = watchEvents(["statefulset", "db", "-n", ns], "");
  return {
    stop: async () => {
      const [a, s] = [await apps.stop(), await sets.stop()];
      const syncingAt = (rv: number) => a.filter((e) => e.rv <= rv).pop()?.extra !== "";
      const drifts: string[] = [];
      let gaps = 0;
      for (const [i, e] of s.entries()) {
        if (e.type !== "DELETED") continue;
        const back = s.slice(i + 1).find((x) => x.type === "ADDED")?.rv ?? Number.MAX_SAFE_INTEGER;
        gaps++;
        if (syncingAt(e.rv)) drifts.push(`deleted at ${e.rv} while syncing`);
        for (const x of a) if (x.rv > e.rv && x.rv < back && x.extra !== "") drifts.push(`resumed at ${x.rv} before the StatefulSet came back at ${back}`);
      }
      return { drifts, gaps };
    },
  };
}

function journalOf(ns: string): { step: string; owner?: { paused: boolean; pause: { resume: unknown } } } {
  const data = kubectl(["get", "secret", "appstorage-journal-db", "-n", ns, "-o", "jsonpath={.data.journal\\.json}"]);
  return JSON.parse(Buffer.from(data, "base64").toString("utf8"));
}

describe("Argo CD", () => {
  test("the plan names the Application and the commands; --pause-owner pauses it around the re-create and puts its automated sync back exactly", async (t) => {
    const { ns, app } = await tracked(t, "argo");
    const diff = await runPlugin(["diff", "db", "pgdata=2Gi", "-n", ns]);
    assert.equal(diff.code, 1, diff.stderr);
    assert.ok(
      diff.stderr.includes(
        `Warning: statefulset.apps/db is managed by Argo CD (Application ${argoNamespace}/${app}; annotation argocd.argoproj.io/tracking-id=${app}:apps/StatefulSet:${ns}/db), which may re-create or revert it while it is changed: pause it with: kubectl patch applications.argoproj.io ${app} -n ${argoNamespace} --type merge -p '{"spec":{"syncPolicy":{"automated":null}}}'; resume it after with: kubectl patch applications.argoproj.io ${app} -n ${argoNamespace} --type merge -p '{"spec":{"syncPolicy":{"automated":{"prune":true,"selfHeal":true}}}}', or pass --pause-owner\n`,
      ),
      diff.stderr,
    );
    // -l reads the Application too (once for all the StatefulSets that name it).
    const many = await runPlugin(["diff", "-l", "app=db", "pgdata=2Gi", "-n", ns]);
    assert.match(
      many.stderr,
      new RegExp(`^Warning: statefulset.apps/db in namespace ${ns}: statefulset.apps/db is managed by Argo CD \\(Application ${argoNamespace}/${app};.*or pass --pause-owner$`, "m"),
    );
    // The commands as printed do what they say.
    const pause = diff.stderr.match(/pause it with: (kubectl patch [^;]+);/)![1]!;
    const resume = diff.stderr.match(/resume it after with: (kubectl patch .+'), or pass/)![1]!;
    kubectl(splitShell(pause).slice(1));
    assert.equal(appAutomated(app), undefined);
    kubectl(splitShell(resume).slice(1));
    assert.deepEqual(appAutomated(app), automated);

    // Without --pause-owner the judge sees the drift Argo CD would repair (the judge judges).
    const unpaused = selfHeal(ns, app);
    assert.equal((await runPlugin(["set", "db", "pgdata=2Gi", "-n", ns, "--yes"])).code, 0);
    assert.equal((await unpaused.stop()).drifts.length, 1);

    const argo = selfHeal(ns, app);
    const set = await runPlugin(["set", "db", "pgdata=3Gi", "-n", ns, "--yes", "--pause-owner"]);
    const seen = await argo.stop();
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stderr, new RegExp(`paused application.argoproj.io/${app} in namespace ${argoNamespace} \\(spec.syncPolicy.automated removed \\(no automated sync, no self-heal\\)\\)`));
    assert.match(set.stderr, new RegExp(`resumed application.argoproj.io/${app} in namespace ${argoNamespace}`));
    assert.ok(set.stderr.indexOf("paused application") < set.stderr.indexOf("deleted statefulset.apps/db"), "paused before the first write to the StatefulSet");
    assert.ok(set.stderr.indexOf("resumed application") > set.stderr.indexOf("verified:"), "resumed after the last");
    assert.equal(seen.gaps, 1, "the watch saw the StatefulSet go and come back");
    assert.deepEqual(seen.drifts, [], "never missing while Argo CD could self-heal");
    assert.deepEqual(appAutomated(app), automated, "put back exactly");
    assert.equal(getSts(ns, "db").spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "3Gi");
  });

  // Killed while the orphan delete is held (nothing changed yet: the journal is stale, yet it holds
  // the pause), and while the re-create is held (the StatefulSet is gone: the journal decides).
  const kills: [at: string, said: RegExp][] = [
    [
      "delete statefulsets",
      /an earlier run paused Application argocd\/\S+ \(spec.syncPolicy.automated removed .* and was interrupted before it changed statefulset.apps\/db; it is put back as it was before that run/,
    ],
    ["create statefulsets", /the earlier run paused Application argocd\/\S+ \(spec.syncPolicy.automated removed .*\); it stays paused until this run is done, then it is put back/],
  ];
  for (const [at, said] of kills)
    test(`a SIGKILL at ${at}, after the pause, leaves it paused and says so in the journal; the rerun, without the flag, finishes and resumes it`, async (t) => {
      const { ns, app } = await tracked(t, "argokill");
      await killAt(["set", "db", "pgdata=2Gi", "-n", ns, "--yes", "--pause-owner"], { signature: at, nth: 0 }, "hold");
      assert.equal(appAutomated(app), undefined, "still paused after the kill");
      const journal = journalOf(ns);
      assert.equal(journal.owner?.paused, true);
      assert.deepEqual(journal.owner?.pause.resume, { spec: { syncPolicy: { automated } } });
      const rerun = await runPlugin(["set", "db", "pgdata=2Gi", "-n", ns, "--yes"]);
      assert.equal(rerun.code, 0, rerun.stderr);
      assert.match(rerun.stderr, said);
      assert.match(rerun.stderr, /resumed application.argoproj.io/);
      assert.deepEqual(appAutomated(app), automated, "put back exactly");
      assert.equal(getSts(ns, "db").spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "2Gi");
      assert.notEqual(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 0);
    });
});

/** A word list as a POSIX shell reads a command printed with single-quoted words. */
function splitShell(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

/** A StatefulSet db that Flux's Kustomization apps applies (labels), in a namespace of its own; suspend() reads the Kustomization's spec.suspend. */
async function kustomized(t: TestContext, prefix: string): Promise<{ ns: string; suspend: () => string }> {
  installOwnerCrds();
  const ns = namespace(t, prefix);
  apply(
    {
      apiVersion: "kustomize.toolkit.fluxcd.io/v1",
      kind: "Kustomization",
      metadata: { name: "apps", namespace: ns },
      spec: { interval: "10m", prune: true, sourceRef: { kind: "GitRepository", name: "shop" }, path: "./db" },
    },
    ns,
  );
  apply(sts("db", ns).withClaim("pgdata", "1Gi").labels({ "kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": ns }).build(), ns);
  await settled(ns, "db", 1);
  return { ns, suspend: () => kubectl(["get", "kustomization", "apps", "-n", ns, "-o", "jsonpath={.spec.suspend}"]) };
}

describe("Flux", () => {
  test("a run that stops resumes the Kustomization at once, with the journal kept; the rerun pauses it again and resumes it at the end", async (t) => {
    const { ns, suspend } = await kustomized(t, "flux");
    const diff = await runPlugin(["diff", "db", "pgdata=2Gi", "-n", ns]);
    assert.ok(
      diff.stderr.includes(
        `pause it with: flux suspend kustomization apps -n ${ns}  or  kubectl patch kustomizations.kustomize.toolkit.fluxcd.io apps -n ${ns} --type merge -p '{"spec":{"suspend":true}}'; resume it after with: flux resume kustomization apps -n ${ns}  or  kubectl patch kustomizations.kustomize.toolkit.fluxcd.io apps -n ${ns} --type merge -p '{"spec":{"suspend":null}}', or pass --pause-owner`,
      ),
      diff.stderr,
    );

    // The re-create is denied (a site policy): the run stops after the delete, and the Kustomization is resumed at once.
    const lift = await denyStatefulSetCreate(t, ns);
    const stopped = await runPlugin(["set", "db", "pgdata=2Gi", "-n", ns, "--yes", "--pause-owner"]);
    assert.equal(stopped.code, 1, stopped.stderr);
    assert.match(stopped.stderr, /paused kustomization.kustomize.toolkit.fluxcd.io\/apps/);
    assert.match(stopped.stderr, /resumed kustomization.kustomize.toolkit.fluxcd.io\/apps .*\{"spec":\{"suspend":null\}\}/);
    assert.equal(suspend(), "", "resumed: spec.suspend as it was (absent)");
    assert.equal(journalOf(ns).owner?.paused, false);
    await lift();
    const rerun = await runPlugin(["set", "db", "pgdata=2Gi", "-n", ns, "--yes", "--pause-owner"]);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stderr, /paused kustomization/);
    assert.match(rerun.stderr, /resumed kustomization/);
    assert.equal(suspend(), "");
    assert.equal(getSts(ns, "db").spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "2Gi");
  });

  test("a SIGKILL at the re-create, after the pause, leaves the Kustomization suspended and says so in the journal; the rerun, without the flag, finishes and resumes it", async (t) => {
    const { ns, suspend } = await kustomized(t, "fluxkill");
    await killAt(["set", "db", "pgdata=2Gi", "-n", ns, "--yes", "--pause-owner"], { signature: "create statefulsets", nth: 0 }, "hold");
    assert.equal(suspend(), "true", "still suspended after the kill");
    const journal = journalOf(ns);
    assert.equal(journal.owner?.paused, true);
    assert.deepEqual(journal.owner?.pause.resume, { spec: { suspend: null } });
    const rerun = await runPlugin(["set", "db", "pgdata=2Gi", "-n", ns, "--yes"]);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stderr, /resumed kustomization.kustomize.toolkit.fluxcd.io\/apps/);
    assert.equal(suspend(), "", "resumed: spec.suspend as it was (absent)");
    assert.equal(getSts(ns, "db").spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "2Gi");
    assert.notEqual(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 0);
  });

  test("a HelmRelease: named with flux suspend helmrelease; a suspended one needs no pause; Helm alone refuses --pause-owner", async (t) => {
    installOwnerCrds();
    const ns = namespace(t, "fluxhelm");
    apply(
      {
        apiVersion: "helm.toolkit.fluxcd.io/v2",
        kind: "HelmRelease",
        metadata: { name: "db", namespace: ns },
        spec: { interval: "10m", suspend: true, chart: { spec: { chart: "db", sourceRef: { kind: "HelmRepository", name: "charts" } } } },
      },
      ns,
    );
    apply(
      sts("db", ns)
        .withClaim("pgdata", "1Gi")
        .labels({ "helm.toolkit.fluxcd.io/name": "db", "helm.toolkit.fluxcd.io/namespace": ns, "app.kubernetes.io/managed-by": "Helm" })
        .annotations({ "meta.helm.sh/release-name": "db" })
        .build(),
      ns,
    );
    apply(sts("plain", ns).withClaim("pgdata", "1Gi").labels({ "app.kubernetes.io/managed-by": "Helm" }).annotations({ "meta.helm.sh/release-name": "plain" }).build(), ns);
    await settled(ns, "db", 1);
    const dry = await runPlugin(["set", "db", "pgdata=2Gi", "-n", ns, "--pause-owner", "--dry-run=client"]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(
      dry.stderr,
      new RegExp(
        `^Warning: --pause-owner: Flux \\(HelmRelease ${ns}/db; labels helm.toolkit.fluxcd.io/name=db, helm.toolkit.fluxcd.io/namespace=${ns}\\) needs no pause: HelmRelease ${ns}/db is suspended`,
        "m",
      ),
    );
    assert.match(dry.stdout, /^managed by Flux: HelmRelease \S+\/db/m);
    kubectl(["patch", "helmrelease", "db", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}']);
    const active = await runPlugin(["diff", "db", "pgdata=2Gi", "-n", ns]);
    assert.match(
      active.stderr,
      new RegExp(
        `pause it with: flux suspend helmrelease db -n ${ns}  or  kubectl patch helmreleases.helm.toolkit.fluxcd.io db -n ${ns} --type merge -p '\\{"spec":\\{"suspend":true\\}\\}'; resume it after with: flux resume helmrelease db -n ${ns}  or  kubectl patch helmreleases.helm.toolkit.fluxcd.io db -n ${ns} --type merge -p '\\{"spec":\\{"suspend":false\\}\\}'`,
      ),
    );
    const helmOnly = await runPlugin(["set", "plain", "pgdata=2Gi", "-n", ns, "--pause-owner", "--yes"]);
    assert.equal(helmOnly.code, 1);
    assert.match(
      helmOnly.stderr,
      /^error: --pause-owner pauses Argo CD, Flux and the operators Prometheus Operator, OpenTelemetry Operator, RabbitMQ Cluster Operator, ECK; statefulset.apps\/plain is managed by Helm \(release plain; annotation meta.helm.sh\/release-name=plain\): Helm changes it only when someone runs helm upgrade/m,
    );
  });
});
