// set -f with claim templates added or removed: what the manifest may ask (and what stays
// refused, each with why and what works), the pod template that mounts the new claims, the order the
// pods restart in, the claims a removed template leaves, and the plan and journal that carry it.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { StatefulSet } from "../../src/api/types";
import { journalFor } from "../../src/plan/journal";
import { manifestChange } from "../../src/plan/manifest";
import { buildPlan } from "../../src/plan/plan";
import { claimMounts, objectToCreate } from "../../src/plan/roll";
import type { Journal, Observed, PlanRequest } from "../../src/plan/types";
import { claim, pod, storageClass, sts } from "../fixtures/builders";

const now = "2026-11-29T12:00:00.000Z";
/** The cluster's object: pgdata mounted at /data, three replicas. */
const live = () => sts("db").withClaim("pgdata", "1Gi", "standard").mount("pgdata", "/data").replicas(3).live("uid-db", "7");
const withInit = (b: ReturnType<typeof sts>) => b.edit((s) => (s.spec.template.spec["initContainers"] = [{ name: "init", image: "busybox" }]));
const manifest = () => sts("db").withClaim("pgdata", "1Gi", "standard").mount("pgdata", "/data").replicas(3);

describe("manifestChange: templates added or removed, with their mounts", () => {
  const planned: [what: string, wanted: StatefulSet, added: string[], removed: string[], mounts: Record<string, string[]>][] = [
    ["a template added with its mount", manifest().withClaim("logs", "2Gi").mount("logs", "/logs").build(), ["logs"], [], { main: ["pgdata:/data", "logs:/logs"] }],
    [
      "a template added and mounted in an init container too",
      withInit(manifest())
        .withClaim("logs", "2Gi")
        .mount("logs", "/logs")
        .edit((s) => ((s.spec.template.spec["initContainers"] as { volumeMounts?: unknown[] }[])[0]!.volumeMounts = [{ name: "logs", mountPath: "/init-logs" }]))
        .build(),
      ["logs"],
      [],
      { main: ["pgdata:/data", "logs:/logs"], init: ["logs:/init-logs"] },
    ],
    [
      "a template added whose mount comes first in the manifest: it comes first in the pod template too",
      sts("db").withClaim("logs", "2Gi").withClaim("pgdata", "1Gi", "standard").mount("logs", "/logs").mount("pgdata", "/data").replicas(3).build(),
      ["logs"],
      [],
      { main: ["logs:/logs", "pgdata:/data"] },
    ],
    ["a template removed with its mount", sts("db").replicas(3).build(), [], ["pgdata"], { main: [] }],
  ];
  for (const [what, wanted, added, removed, mounts] of planned) {
    test(what, () => {
      const l = (
        wanted.spec.template.spec["initContainers"]
          ? withInit(sts("db").withClaim("pgdata", "1Gi", "standard").mount("pgdata", "/data").replicas(3))
          : sts("db").withClaim("pgdata", "1Gi", "standard").mount("pgdata", "/data").replicas(3)
      ).live("uid-db", "7");
      const change = manifestChange(l, wanted);
      assert.deepEqual(change.refusals, []);
      assert.deepEqual(change.directives, []);
      const set = change.templateSet!;
      assert.deepEqual(
        set.added.map((t) => t.metadata.name),
        added,
      );
      assert.deepEqual(set.removed, removed);
      const seen: Record<string, string[]> = {};
      for (const list of ["containers", "initContainers"] as const)
        for (const c of (set.podTemplate.spec[list] as { name: string; volumeMounts?: { name: string; mountPath: string }[] }[] | undefined) ?? [])
          seen[c.name] = (c.volumeMounts ?? []).map((m) => `${m.name}:${m.mountPath}`);
      assert.deepEqual(seen, mounts);
      // Nothing but the mounts differs from the manifest's pod template, so nothing is left for helm upgrade.
      assert.deepEqual(change.leftAlone, []);
      assert.deepEqual(
        set.order,
        (wanted.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name),
      );
    });
  }

  const refused: [what: string, live: StatefulSet, wanted: StatefulSet, why: RegExp][] = [
    ["a template added that nothing mounts", live(), manifest().withClaim("logs", "2Gi").build(), /adds claim template logs but no container of its pod template mounts it: nothing would use it;/],
    [
      "a mount of a claim the manifest does not define",
      live(),
      manifest().withClaim("logs", "2Gi").mount("logs", "/logs").mount("cache", "/cache").build(),
      /^container main of the manifest mounts "cache", which the manifest defines neither as a claim template nor as a volume of the pod template/,
    ],
    ["a removed template still mounted", live(), sts("db").mount("pgdata", "/data").replicas(3).build(), /mounts "pgdata", which the manifest defines neither/],
    [
      "a removed template replaced by a pod volume of its name",
      live(),
      sts("db").volume("pgdata").mount("pgdata", "/data").replicas(3).build(),
      /replaces claim template pgdata with a volume of the pod template of the same name/,
    ],
    [
      "a changed mount path of an existing claim",
      live(),
      sts("db").withClaim("pgdata", "1Gi", "standard").mount("pgdata", "/var/lib/data").withClaim("logs", "2Gi").mount("logs", "/logs").replicas(3).build(),
      /changes where claim pgdata is mounted \(container main at \/data -> container main at \/var\/lib\/data\): set -f changes only the mounts of the claim templates it adds or removes/,
    ],
    [
      "a new template mounted in a container the cluster's pod template lacks",
      live(),
      manifest().withClaim("logs", "2Gi").mount("logs", "/logs", "sidecar").build(),
      /mounts claim template logs in container sidecar, which the pod template in the cluster does not have: this tool adds only the mount/,
    ],
    [
      "a renamed template (an add and a remove: the data would have to move)",
      live(),
      sts("db").withClaim("data", "1Gi").mount("data", "/data").replicas(3).build(),
      /^the manifest names claim template\(s\) data where the cluster has pgdata: .* keep the template's name/,
    ],
  ];
  for (const [what, l, wanted, why] of refused) {
    test(`refuses ${what}`, () => {
      const change = manifestChange(l, wanted);
      assert.ok(
        change.refusals.some((r) => why.test(r)),
        change.refusals.join("\n"),
      );
      assert.equal(change.templateSet, undefined, "nothing is planned");
    });
  }
});

function observed(s: StatefulSet, extra: Partial<Observed> = {}): Observed {
  return {
    statefulSet: s,
    claims: [0, 1, 2].map((o) => claim(`pgdata-db-${o}`, "1Gi", { capacity: "1Gi", storageClass: "standard" })),
    pods: [0, 1, 2].map((o) => pod(`db-${o}`, s)),
    storageClasses: [storageClass("standard", { default: true })],
    user: "alice",
    now,
    ...extra,
  };
}

/** The request set -f makes for `wanted` against the live object. */
function requestFor(l: StatefulSet, wanted: StatefulSet, more: Partial<PlanRequest> = {}): PlanRequest {
  const change = manifestChange(l, wanted);
  assert.deepEqual(change.refusals, []);
  return { namespace: "default", name: "db", directives: change.directives, force: false, overwrite: true, fromManifest: true, templateSet: change.templateSet!, ...more };
}

describe("buildPlan: templates added or removed", () => {
  test("an added template: the pods restart once, lowest ordinal first, under OnDelete; the strategy is put back", () => {
    const l = live();
    const plan = buildPlan(observed(l), requestFor(l, manifest().withClaim("logs", "2Gi").mount("logs", "/logs").build()));
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(plan.request, ["+logs"]);
    assert.deepEqual(plan.steps, ["write-journal", "orphan-delete", "wait-gone", "create", "verify", "record", "roll-pods", "restore-strategy", "remove-journal"]);
    assert.deepEqual(plan.roll!.order, ["db-0", "db-1", "db-2"]);
    assert.match(plan.roll!.orderReason, /^lowest ordinal first: the StatefulSet controller stops at the first pod that lacks the new volume/);
    assert.deepEqual(
      plan.roll!.added.map((a) => [a.claim, a.size, a.storageClass, claimMounts(plan.desired.spec.template, a.claim)]),
      [["logs", "2Gi", "standard (default)", [{ container: "main", path: "/logs" }]]],
    );
    assert.deepEqual(
      plan.desired.spec.volumeClaimTemplates!.map((t) => t.metadata.name),
      ["pgdata", "logs"],
    );
    // The object as it ends up keeps its strategy; the one created has OnDelete while the pods restart.
    assert.deepEqual(plan.desired.spec.updateStrategy, l.spec.updateStrategy);
    assert.deepEqual(objectToCreate(plan.desired, plan.roll).spec.updateStrategy, { type: "OnDelete" });
    assert.ok(
      plan.warnings.some((w) =>
        /^the manifest adds claim template\(s\) logs with the pod template's mounts: every pod of statefulset.apps\/db restarts once \(3 pod\(s\)\), one at a time, lowest ordinal first, through the Eviction API; existing claims and their data are untouched$/.test(
          w,
        ),
      ),
    );
    assert.ok(
      plan.claims.every((c) => c.template === "pgdata"),
      "existing claims are kept as they are",
    );
  });

  test("a removed template: highest ordinal first; its claims are kept and listed with the command that would delete them", () => {
    const l = sts("db").withClaim("pgdata", "1Gi", "standard").withClaim("cache", "1Gi", "standard").mount("pgdata", "/data").mount("cache", "/cache").replicas(3).live("uid-db", "7");
    const o = observed(l, { claims: [...observed(l).claims, ...[0, 1, 2].map((n) => claim(`cache-db-${n}`, "1Gi", { storageClass: "standard" }))] });
    const l2 = JSON.parse(JSON.stringify(l)) as StatefulSet;
    l2.spec.persistentVolumeClaimRetentionPolicy = { whenDeleted: "Delete", whenScaled: "Delete" };
    for (const s of [l, l2]) {
      const plan = buildPlan({ ...o, statefulSet: s }, requestFor(s, manifest().build()));
      assert.deepEqual(plan.refusals, []);
      assert.deepEqual(plan.request, ["-cache"]);
      assert.deepEqual(plan.roll!.order, ["db-2", "db-1", "db-0"]);
      assert.deepEqual(
        plan.roll!.removed[0]!.claims,
        [0, 1, 2].map((n) => ({ name: `cache-db-${n}`, uid: `uid-cache-db-${n}`, deleteCommand: `kubectl delete persistentvolumeclaim cache-db-${n} -n default` })),
      );
      assert.ok(
        plan.warnings.some((w) =>
          w.startsWith("claim template cache is removed: its claim(s) cache-db-0, cache-db-1, cache-db-2 are kept with their data, whatever persistentVolumeClaimRetentionPolicy says"),
        ),
      );
      assert.deepEqual(claimMounts(plan.desired.spec.template, "cache"), []);
      assert.deepEqual(
        plan.desired.spec.volumeClaimTemplates!.map((t) => t.metadata.name),
        ["pgdata"],
      );
    }
  });

  test("a size change with the added template: both in one re-create", () => {
    const l = live();
    const plan = buildPlan(observed(l), requestFor(l, sts("db").withClaim("pgdata", "2Gi", "standard").mount("pgdata", "/data").withClaim("logs", "2Gi").mount("logs", "/logs").replicas(3).build()));
    assert.deepEqual(plan.request, ["pgdata=2Gi", "+logs"]);
    assert.equal(plan.desired.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "2Gi");
    assert.ok(plan.steps.includes("roll-pods"));
  });

  test("with --pause-owner: the owner stays paused until the pods restarted and the strategy is back", () => {
    const l = live();
    l.metadata.labels = { ...l.metadata.labels, "kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system" };
    const owners = [
      {
        ref: { group: "kustomize.toolkit.fluxcd.io", version: "v1", resource: "kustomizations", kind: "Kustomization", namespace: "flux-system", name: "apps" },
        object: { metadata: { name: "apps", namespace: "flux-system" }, spec: {} },
      },
    ];
    const plan = buildPlan(observed(l, { owners }), requestFor(l, manifest().withClaim("logs", "2Gi").mount("logs", "/logs").build(), { pauseOwner: true }));
    assert.deepEqual(plan.steps, ["write-journal", "pause-owner", "orphan-delete", "wait-gone", "create", "verify", "record", "roll-pods", "restore-strategy", "resume-owner", "remove-journal"]);
  });

  test("--migrate-existing does not go with it", () => {
    const l = live();
    const plan = buildPlan(
      observed(l),
      requestFor(l, manifest().withClaim("logs", "2Gi").mount("logs", "/logs").build(), {
        existing: { resize: false, vac: false, waitResize: false, restartPods: false, migrate: { copyImage: "x" } },
      }),
    );
    assert.ok(plan.refusals.some((r) => /--migrate-existing does not go with claim templates added or removed/.test(r.message)));
  });

  test("the journal carries the roll, and a rerun after the restarts began goes on from the pods' revisions", () => {
    const l = live();
    const plan = buildPlan(observed(l), requestFor(l, manifest().withClaim("logs", "2Gi").mount("logs", "/logs").build()));
    const journal: Journal = { ...journalFor(plan, { holder: "h", by: "alice", now: new Date(now) }), step: "rolling", leaseExpires: now };
    assert.deepEqual(journal.roll, plan.roll);
    const recreated = { ...objectToCreate(plan.desired, plan.roll), metadata: { ...plan.desired.metadata, uid: "uid-new", resourceVersion: "9" } };
    const rerun = buildPlan(observed(recreated, { journal, holderGone: true }), requestFor(l, manifest().withClaim("logs", "2Gi").mount("logs", "/logs").build()));
    assert.equal(rerun.mode, "resume");
    assert.deepEqual(rerun.refusals, []);
    assert.deepEqual(rerun.steps, ["write-journal", "roll-pods", "restore-strategy", "remove-journal"]);
    assert.deepEqual(rerun.roll, plan.roll);
    for (const [step, steps] of [
      ["created", ["write-journal", "verify", "record", "roll-pods", "restore-strategy", "remove-journal"]],
      ["rolled", ["write-journal", "roll-pods", "restore-strategy", "remove-journal"]],
    ] as const) {
      const again = buildPlan(observed(recreated, { journal: { ...journal, step }, holderGone: true }), requestFor(l, manifest().withClaim("logs", "2Gi").mount("logs", "/logs").build()));
      assert.deepEqual(again.steps, steps, step);
    }
    // Deleted but not re-created yet: the whole rest, restarts included.
    const gone = buildPlan(
      observed(l, { statefulSet: undefined, journal: { ...journal, step: "deleted" }, holderGone: true }),
      requestFor(l, manifest().withClaim("logs", "2Gi").mount("logs", "/logs").build()),
    );
    assert.deepEqual(gone.steps, ["write-journal", "create", "verify", "record", "roll-pods", "restore-strategy", "remove-journal"]);
  });
});
