// Who manages the StatefulSet (Argo CD, Flux, Helm, an operator), what the plan says of it (the
// exact commands that pause and resume it), and --pause-owner: the patches, the steps, the journal,
// and a rerun after a kill that resumes it.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { KubeObject, StatefulSet } from "../../src/api/types";
import { parseDirectives } from "../../src/plan/directive";
import { journalFor } from "../../src/plan/journal";
import { describeOwner, ownerLookups } from "../../src/plan/owner";
import type { ObservedOwner } from "../../src/plan/owner-types";
import { buildPlan } from "../../src/plan/plan";
import type { Journal, Observed } from "../../src/plan/types";
import { claim, pod, storageClass, sts } from "../fixtures/builders";

const now = "2026-11-29T12:00:00.000Z";
const argoTracked = () => sts("db").withClaim("pgdata", "1Gi").annotations({ "argocd.argoproj.io/tracking-id": "shop:apps/StatefulSet:prod/db" });
const fluxKustomized = () => sts("db").withClaim("pgdata", "1Gi").labels({ "kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system" });
const fluxHelmed = () =>
  sts("db")
    .withClaim("pgdata", "1Gi")
    .labels({ "helm.toolkit.fluxcd.io/name": "db", "helm.toolkit.fluxcd.io/namespace": "prod", "app.kubernetes.io/managed-by": "Helm" })
    .annotations({ "meta.helm.sh/release-name": "db" });
const helmed = () => sts("db").withClaim("pgdata", "1Gi").labels({ "app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/instance": "db" }).annotations({ "meta.helm.sh/release-name": "db" });

const app = (automated?: Record<string, unknown>, meta: Partial<KubeObject["metadata"]> = {}): KubeObject => ({
  apiVersion: "argoproj.io/v1alpha1",
  kind: "Application",
  metadata: { name: "shop", namespace: "argocd", ...meta },
  spec: { syncPolicy: automated ? { automated } : {} },
});
const flux = (kind: string, name: string, namespace: string, suspend?: boolean): KubeObject => ({ kind, metadata: { name, namespace }, spec: suspend === undefined ? {} : { suspend } });
const seen = (s: StatefulSet, object?: KubeObject, error?: string): ObservedOwner[] => ownerLookups(s).map((ref) => ({ ref, ...(object ? { object } : {}), ...(error ? { error } : {}) }));

describe("ownerLookups: what is read before planning", () => {
  const cases: [what: string, s: StatefulSet, lookups: string[]][] = [
    ["Argo CD's tracking annotation: the Application by name, in any namespace", argoTracked().build(), ["applications.argoproj.io/shop in *"]],
    [
      "an Application outside Argo CD's namespace (ns_name)",
      sts("db").annotations({ "argocd.argoproj.io/tracking-id": "team_shop:apps/StatefulSet:prod/db" }).build(),
      ["applications.argoproj.io/shop in team"],
    ],
    ["a Flux Kustomization", fluxKustomized().build(), ["kustomizations.kustomize.toolkit.fluxcd.io/apps in flux-system"]],
    ["a Flux HelmRelease (before Helm's own labels)", fluxHelmed().build(), ["helmreleases.helm.toolkit.fluxcd.io/db in prod"]],
    ["a Helm chart's app.kubernetes.io/instance: an Application of that name is looked for", helmed().build(), ["applications.argoproj.io/db in *"]],
    ["nothing named: nothing read", sts("db").build(), []],
  ];
  for (const [what, s, lookups] of cases)
    test(what, () =>
      assert.deepEqual(
        ownerLookups(s).map((r) => `${r.resource}.${r.group}/${r.name} in ${r.namespace ?? "*"}`),
        lookups,
      ),
    );
});

describe("describeOwner: who, and how to pause and resume it", () => {
  test("Argo CD with automated sync: removing automated pauses it, putting it back as read resumes it", () => {
    const s = argoTracked().build();
    const owner = describeOwner(s, seen(s, app({ prune: true, selfHeal: true })))!;
    assert.equal(owner.manager, "Argo CD");
    assert.equal(owner.object, "Application argocd/shop");
    assert.equal(owner.active, true);
    assert.deepEqual(owner.pause!.pause, { spec: { syncPolicy: { automated: null } } });
    assert.deepEqual(owner.pause!.resume, { spec: { syncPolicy: { automated: { prune: true, selfHeal: true } } } });
    assert.deepEqual(owner.pauseCommands, [`kubectl patch applications.argoproj.io shop -n argocd --type merge -p '{"spec":{"syncPolicy":{"automated":null}}}'`]);
    assert.deepEqual(owner.resumeCommands, [`kubectl patch applications.argoproj.io shop -n argocd --type merge -p '{"spec":{"syncPolicy":{"automated":{"prune":true,"selfHeal":true}}}}'`]);
  });
  test("Flux Kustomization: spec.suspend, flux suspend and kubectl patch; resume removes what was absent", () => {
    const s = fluxKustomized().build();
    const owner = describeOwner(s, seen(s, flux("Kustomization", "apps", "flux-system")))!;
    assert.equal(owner.manager, "Flux");
    assert.deepEqual(owner.pauseCommands, [
      "flux suspend kustomization apps -n flux-system",
      `kubectl patch kustomizations.kustomize.toolkit.fluxcd.io apps -n flux-system --type merge -p '{"spec":{"suspend":true}}'`,
    ]);
    assert.deepEqual(owner.resumeCommands, [
      "flux resume kustomization apps -n flux-system",
      `kubectl patch kustomizations.kustomize.toolkit.fluxcd.io apps -n flux-system --type merge -p '{"spec":{"suspend":null}}'`,
    ]);
    assert.deepEqual(describeOwner(s, seen(s, flux("Kustomization", "apps", "flux-system", false)))!.pause!.resume, { spec: { suspend: false } });
  });
  const cases: [what: string, s: StatefulSet, owners: ObservedOwner[] | undefined, manager: string | undefined, active: boolean | undefined, note: RegExp | undefined][] = [
    ["Argo CD without automated sync: nothing to pause", argoTracked().build(), seen(argoTracked().build(), app()), "Argo CD", false, /has no automated sync/],
    ["Argo CD with automated.enabled false: nothing to pause", argoTracked().build(), seen(argoTracked().build(), app({ enabled: false, selfHeal: true })), "Argo CD", false, /has no automated sync/],
    [
      "an Application managed by a parent Application (app of apps)",
      argoTracked().build(),
      seen(argoTracked().build(), app({ selfHeal: true }, { labels: { "app.kubernetes.io/instance": "root" } })),
      "Argo CD",
      true,
      /app of apps\): a parent with self-heal puts its automated sync back/,
    ],
    ["an Application that could not be read: commands, no pause", argoTracked().build(), seen(argoTracked().build(), undefined, "forbidden"), "Argo CD", undefined, /could not be read \(forbidden\)/],
    [
      "Argo CD's Replace=true sync option",
      argoTracked().annotations({ "argocd.argoproj.io/sync-options": "Replace=true" }).build(),
      seen(argoTracked().build(), app({ selfHeal: true })),
      "Argo CD",
      true,
      /Replace=true has Argo CD delete and re-create it with background propagation/,
    ],
    [
      "a suspended Flux Kustomization",
      fluxKustomized().build(),
      seen(fluxKustomized().build(), flux("Kustomization", "apps", "flux-system", true)),
      "Flux",
      false,
      /^Kustomization flux-system\/apps is suspended/,
    ],
    ["a Flux HelmRelease", fluxHelmed().build(), seen(fluxHelmed().build(), flux("HelmRelease", "db", "prod")), "Flux", true, undefined],
    ["Helm alone (no Application of its instance's name)", helmed().build(), seen(helmed().build()), "Helm", false, /nothing to pause/],
    [
      "an operator",
      sts("db")
        .edit((s) => (s.metadata.ownerReferences = [{ apiVersion: "acid.zalan.do/v1", kind: "postgresql", name: "pg", uid: "u", controller: true }]))
        .build(),
      undefined,
      "operator",
      true,
      /no pause this tool knows for postgresql/,
    ],
    ["nobody", sts("db").build(), undefined, undefined, undefined, undefined],
  ];
  for (const [what, s, owners, manager, active, note] of cases) {
    test(what, () => {
      const owner = describeOwner(s, owners);
      assert.equal(owner?.manager, manager);
      assert.equal(owner?.active, active);
      if (note)
        assert.ok(
          owner!.notes.some((n) => note.test(n)),
          owner!.notes.join("\n"),
        );
      if (active !== true || manager === "operator") assert.equal(owner?.pause, undefined);
    });
  }
});

function observed(s: StatefulSet, extra: Partial<Observed> = {}): Observed {
  return {
    statefulSet: s,
    claims: [claim("pgdata-db-0", "1Gi", { storageClass: "standard" })],
    pods: [pod("db-0", s)],
    storageClasses: [storageClass("standard", { default: true })],
    user: "alice",
    now,
    ...extra,
  };
}
const request = (pauseOwner?: boolean) => ({ namespace: "prod", name: "db", directives: parseDirectives(["pgdata=2Gi"]), force: false, ...(pauseOwner ? { pauseOwner } : {}) });

describe("buildPlan: the owner and --pause-owner", () => {
  const live = argoTracked().live();
  const withApp = observed(live, { owners: seen(live, app({ prune: true, selfHeal: true })) });

  test("without --pause-owner: a warning naming the owner and the commands, no owner steps", () => {
    const plan = buildPlan(withApp, request());
    assert.equal(plan.ownerPause, undefined);
    assert.ok(!plan.steps.includes("pause-owner"));
    assert.ok(
      plan.warnings.some((w) =>
        w.startsWith(
          "statefulset.apps/db is managed by Argo CD (Application argocd/shop; annotation argocd.argoproj.io/tracking-id=shop:apps/StatefulSet:prod/db), which may re-create or revert it while it is changed: pause it with: kubectl patch applications.argoproj.io shop -n argocd",
        ),
      ),
      plan.warnings.join("\n"),
    );
    assert.ok(plan.warnings.some((w) => w.endsWith("or pass --pause-owner")));
  });

  test("--pause-owner: paused after the journal is saved, resumed before it is removed; the journal holds both patches", () => {
    const plan = buildPlan(withApp, request(true));
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(plan.steps, ["write-journal", "pause-owner", "orphan-delete", "wait-gone", "create", "verify", "record", "resume-owner", "remove-journal"]);
    assert.deepEqual(plan.ownerPause!.ref, { group: "argoproj.io", version: "v1alpha1", resource: "applications", kind: "Application", name: "shop", namespace: "argocd" });
    const journal = journalFor(plan, { holder: "h", by: "alice", now: new Date(now) });
    assert.deepEqual(journal.owner, { pause: plan.ownerPause, paused: false });
  });

  test("a rerun after a kill (the journal says paused) pauses it again and resumes it at the end, with or without the flag", () => {
    const plan = buildPlan(withApp, request(true));
    const journal: Journal = { ...journalFor(plan, { holder: "h", by: "alice", now: new Date(now) }), step: "deleted", owner: { pause: plan.ownerPause!, paused: true } };
    for (const flag of [true, false]) {
      const rerun = buildPlan({ ...withApp, statefulSet: undefined, journal, holderGone: true }, request(flag));
      assert.equal(rerun.mode, "resume");
      assert.deepEqual(rerun.refusals, []);
      assert.deepEqual(rerun.steps, ["write-journal", "pause-owner", "create", "verify", "record", "resume-owner", "remove-journal"]);
      assert.deepEqual(rerun.ownerPause, plan.ownerPause);
      assert.ok(rerun.warnings.some((w) => /the earlier run paused Application argocd\/shop .* it stays paused until this run is done, then it is put back/.test(w)));
    }
  });

  test("a run killed after the pause but before any change (a stale journal): the owner reads as paused, the journal's patches put it back", () => {
    const plan = buildPlan(withApp, request(true));
    const journal: Journal = { ...journalFor(plan, { holder: "h", by: "alice", now: new Date(now) }), owner: { pause: plan.ownerPause!, paused: true } };
    // What is read now is the pause itself: no automated sync.
    const paused = { ...withApp, owners: seen(live, app()), journal, holderGone: true };
    for (const flag of [true, false]) {
      const rerun = buildPlan(paused, request(flag));
      assert.equal(rerun.mode, "fresh");
      assert.deepEqual(rerun.refusals, []);
      assert.deepEqual(rerun.ownerPause, plan.ownerPause, "the journal's patches, not the paused state read now");
      assert.deepEqual(rerun.steps, ["write-journal", "pause-owner", "orphan-delete", "wait-gone", "create", "verify", "record", "resume-owner", "remove-journal"]);
      assert.ok(
        rerun.warnings.some((w) =>
          w.startsWith("an earlier run paused Application argocd/shop (spec.syncPolicy.automated removed (no automated sync, no self-heal)) and was interrupted before it changed statefulset.apps/db"),
        ),
      );
    }
    // Nothing to change any more: the owner is put back and the journal removed.
    const done = buildPlan(paused, { ...request(), directives: parseDirectives(["pgdata=1Gi"]) });
    assert.deepEqual(done.steps, ["resume-owner", "remove-journal"]);
  });

  const refused: [what: string, o: Observed, why: RegExp][] = [
    ["nobody manages it", observed(sts("db").withClaim("pgdata", "1Gi").live()), /^--pause-owner: nothing that this tool can pause manages statefulset.apps\/db/],
    ["Helm: nothing runs between upgrades", observed(helmed().live()), /^--pause-owner pauses Argo CD, Flux and the operators Prometheus Operator, .*; statefulset.apps\/db is managed by Helm/],
    [
      "an Application that could not be read",
      observed(live, { owners: seen(live, undefined, "forbidden") }),
      /^--pause-owner: Argo CD .* cannot be paused by this tool: .*pause it with: kubectl get applications.argoproj.io shop -n argocd/,
    ],
  ];
  for (const [what, o, why] of refused)
    test(`--pause-owner is refused: ${what}`, () => {
      const plan = buildPlan(o, request(true));
      assert.ok(
        plan.refusals.some((r) => why.test(r.message) && !r.forceable),
        plan.refusals.map((r) => r.message).join("\n"),
      );
    });

  test("--pause-owner on an owner that is paused already: nothing to pause, said so", () => {
    const s = fluxKustomized().live();
    const plan = buildPlan(observed(s, { owners: seen(s, flux("Kustomization", "apps", "flux-system", true)) }), request(true));
    assert.deepEqual(plan.refusals, []);
    assert.ok(!plan.steps.includes("pause-owner"));
    assert.ok(plan.warnings.some((w) => w.startsWith("--pause-owner: Flux (Kustomization flux-system/apps;") && w.includes("needs no pause: Kustomization flux-system/apps is suspended")));
  });
});

describe("operators with a known switch: found by the ownerReference, paused by their own field", () => {
  const owned = (apiVersion: string, kind: string, name = "main") =>
    sts("alertmanager-main")
      .withClaim("data", "1Gi")
      .edit((s) => (s.metadata.ownerReferences = [{ apiVersion, kind, name, uid: "u", controller: true }]));
  const cr = (apiVersion: string, kind: string, extra: Partial<KubeObject> = {}): KubeObject => ({ apiVersion, kind, metadata: { name: "main", namespace: "prod" }, spec: {}, ...extra });
  const prod = (b: ReturnType<typeof owned>) => b.edit((s) => (s.metadata.namespace = "prod"));

  test("each operator's resource is looked up where its StatefulSet is (an ownerReference is in the same namespace)", () => {
    const cases: [apiVersion: string, kind: string, lookup: string][] = [
      ["monitoring.coreos.com/v1", "Alertmanager", "alertmanagers.monitoring.coreos.com/main in prod"],
      ["monitoring.coreos.com/v1", "Prometheus", "prometheuses.monitoring.coreos.com/main in prod"],
      ["opentelemetry.io/v1beta1", "OpenTelemetryCollector", "opentelemetrycollectors.opentelemetry.io/main in prod"],
      ["rabbitmq.com/v1beta1", "RabbitmqCluster", "rabbitmqclusters.rabbitmq.com/main in prod"],
      ["elasticsearch.k8s.elastic.co/v1", "Elasticsearch", "elasticsearches.elasticsearch.k8s.elastic.co/main in prod"],
    ];
    for (const [apiVersion, kind, lookup] of cases)
      assert.deepEqual(
        ownerLookups(prod(owned(apiVersion, kind)).build()).map((r) => `${r.resource}.${r.group}/${r.name} in ${r.namespace}`),
        [lookup],
        kind,
      );
    assert.deepEqual(ownerLookups(prod(owned("acid.zalan.do/v1", "postgresql")).build()), [], "an operator without a known switch: nothing read");
    assert.deepEqual(
      ownerLookups(prod(owned("monitoring.coreos.com/v1", "Alertmanager")).labels({ "app.kubernetes.io/instance": "main" }).build()).map(
        (r) => `${r.resource}.${r.group}/${r.name} in ${r.namespace ?? "*"}`,
      ),
      ["applications.argoproj.io/main in *", "alertmanagers.monitoring.coreos.com/main in prod"],
      "the operator's label app.kubernetes.io/instance: an Application of that name is looked for too",
    );
  });

  const switches: [what: string, apiVersion: string, kind: string, read: Partial<KubeObject>, pause: unknown, resume: unknown][] = [
    ["Prometheus Operator: spec.paused", "monitoring.coreos.com/v1", "Alertmanager", {}, { spec: { paused: true } }, { spec: { paused: null } }],
    ["Prometheus Operator: spec.paused false put back as read", "monitoring.coreos.com/v1", "Prometheus", { spec: { paused: false } }, { spec: { paused: true } }, { spec: { paused: false } }],
    [
      "OpenTelemetry Operator: spec.managementState",
      "opentelemetry.io/v1beta1",
      "OpenTelemetryCollector",
      { spec: { managementState: "managed" } },
      { spec: { managementState: "unmanaged" } },
      { spec: { managementState: "managed" } },
    ],
    [
      "RabbitMQ: the label rabbitmq.com/pauseReconciliation",
      "rabbitmq.com/v1beta1",
      "RabbitmqCluster",
      {},
      { metadata: { labels: { "rabbitmq.com/pauseReconciliation": "true" } } },
      { metadata: { labels: { "rabbitmq.com/pauseReconciliation": null } } },
    ],
    [
      "ECK: the annotation eck.k8s.elastic.co/managed",
      "elasticsearch.k8s.elastic.co/v1",
      "Elasticsearch",
      {},
      { metadata: { annotations: { "eck.k8s.elastic.co/managed": "false" } } },
      { metadata: { annotations: { "eck.k8s.elastic.co/managed": null } } },
    ],
  ];
  for (const [what, apiVersion, kind, read, pause, resume] of switches)
    test(what, () => {
      const s = prod(owned(apiVersion, kind)).build();
      const object = { ...cr(apiVersion, kind), ...read, metadata: { ...cr(apiVersion, kind).metadata, ...read.metadata } };
      const owner = describeOwner(s, seen(s, object))!;
      assert.equal(owner.manager, "operator");
      assert.equal(owner.active, true);
      assert.deepEqual(owner.pause?.pause, pause);
      assert.deepEqual(owner.pause?.resume, resume);
      assert.equal(owner.pauseCommands?.[0], `kubectl patch ${owner.pause!.ref.resource}.${owner.pause!.ref.group} main -n prod --type merge -p '${JSON.stringify(pause)}'`);
      assert.ok(owner.notes.some((n) => n.includes(`change the storage in the ${kind} too before resuming it`)));
    });

  test("already paused: nothing to pause; not readable: the commands by hand", () => {
    const s = prod(owned("monitoring.coreos.com/v1", "Alertmanager")).build();
    const paused = describeOwner(s, seen(s, cr("monitoring.coreos.com/v1", "Alertmanager", { spec: { paused: true } })))!;
    assert.equal(paused.active, false);
    assert.equal(paused.pause, undefined);
    assert.match(paused.notes[0]!, /^Alertmanager prod\/main is paused \(spec.paused: true\)/);
    const unread = describeOwner(s, seen(s, undefined, 'alertmanagers.monitoring.coreos.com "main" is forbidden'))!;
    assert.equal(unread.pause, undefined);
    assert.deepEqual(unread.pauseCommands, [`kubectl patch alertmanagers.monitoring.coreos.com main -n prod --type merge -p '{"spec":{"paused":true}}'`]);
    assert.deepEqual(unread.resumeCommands, [`kubectl patch alertmanagers.monitoring.coreos.com main -n prod --type merge -p '{"spec":{"paused":null}}'`]);
  });

  const planOf = (object: KubeObject | undefined, pauseOwner?: boolean) => {
    const s = prod(owned("monitoring.coreos.com/v1", "Alertmanager")).live();
    const o = { ...observed(s, { owners: seen(s, object) }), claims: [claim("data-alertmanager-main-0", "1Gi", { storageClass: "standard" })], pods: [pod("alertmanager-main-0", s)] };
    return buildPlan(o, { namespace: "prod", name: "alertmanager-main", directives: parseDirectives(["data=2Gi"]), force: false, ...(pauseOwner ? { pauseOwner } : {}) });
  };
  test("without --pause-owner: refused as controlled, with --pause-owner and the commands named", () => {
    const plan = planOf(cr("monitoring.coreos.com/v1", "Alertmanager"));
    assert.ok(
      plan.refusals.some(
        (r) =>
          r.forceable &&
          r.message ===
            "statefulset.apps/alertmanager-main is controlled by Alertmanager main, which would fight the change or re-create the old object; change the storage through it, pass --pause-owner to pause it while this runs, or pass --force",
      ),
      plan.refusals.map((r) => r.message).join("\n"),
    );
    assert.ok(
      plan.warnings.some((w) => w.includes(`pause it with: kubectl patch alertmanagers.monitoring.coreos.com main -n prod --type merge -p '{"spec":{"paused":true}}'`)),
      plan.warnings.join("\n"),
    );
  });
  test("--pause-owner: no refusal; paused after the journal is written, left paused at the end with the command that resumes it", () => {
    const plan = planOf(cr("monitoring.coreos.com/v1", "Alertmanager"), true);
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(plan.steps.slice(0, 2), ["write-journal", "pause-owner"]);
    assert.deepEqual(plan.steps.slice(-2), ["resume-owner", "remove-journal"]);
    assert.deepEqual(plan.ownerPause, {
      ref: { group: "monitoring.coreos.com", version: "v1", resource: "alertmanagers", kind: "Alertmanager", namespace: "prod", name: "main" },
      pause: { spec: { paused: true } },
      resume: { spec: { paused: null } },
      what: "spec.paused: true",
      keep: true,
    });
    assert.ok(
      plan.warnings.includes(
        `--pause-owner leaves Alertmanager prod/main paused (spec.paused: true) when the change is done, as its operator would make the StatefulSet match it again: change the storage in the Alertmanager to match, then resume it with: kubectl patch alertmanagers.monitoring.coreos.com main -n prod --type merge -p '{"spec":{"paused":null}}'`,
      ),
      plan.warnings.join("\n"),
    );
  });
  test("paused already: no refusal and no pause, with or without --pause-owner", () => {
    for (const pauseOwner of [false, true]) {
      const plan = planOf(cr("monitoring.coreos.com/v1", "Alertmanager", { spec: { paused: true } }), pauseOwner);
      assert.deepEqual(plan.refusals, [], `pauseOwner=${pauseOwner}`);
      assert.ok(!plan.steps.includes("pause-owner"));
      assert.ok(
        plan.warnings.some((w) => w.includes("Alertmanager prod/main is paused (spec.paused: true)")),
        plan.warnings.join("\n"),
      );
    }
  });
  test("an operator without a known switch: --pause-owner is refused and names the ones it knows", () => {
    const s = prod(owned("acid.zalan.do/v1", "postgresql")).live();
    const plan = buildPlan(observed(s), { ...request(true), name: "alertmanager-main" });
    assert.ok(plan.refusals.some((r) => /^--pause-owner pauses Argo CD, Flux and the operators Prometheus Operator, OpenTelemetry Operator, RabbitMQ Cluster Operator, ECK; /.test(r.message)));
  });
});
