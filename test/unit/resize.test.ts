// The pure parts of the work on existing claims: grammar, flags, which claims grow, quota
// arithmetic, refusals, resize states, restart order, and how the plan shows it.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { commandLine, existingOf } from "../fixtures/command-line";
import type { PersistentVolumeClaim, ResourceQuota } from "../../src/api/types";
import { renderPlan } from "../../src/output/plan";
import { parseDirective, formatDirective, parseDirectives } from "../../src/plan/directive";
import { desiredStatefulSet, stripForCreate } from "../../src/plan/desired";
import { apiVersion as journalApiVersion, type Journal } from "../../src/plan/types";
import { buildPlan } from "../../src/plan/plan";
import type { Observed, PlanRequest } from "../../src/plan/types";
import { podComingUp, resizeState, restartOrder } from "../../src/plan/resize";
import { checkQuotas, type Growth } from "../../src/plan/quota";
import type { ExistingClaimsOptions as ExistingOptions } from "../../src/plan/existing-claims-types";
import { claim, pod, storageClass, sts } from "../fixtures/builders";
import { assertGolden } from "../fixtures/golden";

const now = "2026-11-29T12:00:00.000Z";
const resize: ExistingOptions = { resize: true, vac: false, waitResize: false, restartPods: false };

function bound(name: string, size: string, extra: { capacity?: string; storageClass?: string; phase?: string; vac?: string; conditions?: string[] } = {}): PersistentVolumeClaim {
  const c = claim(name, size, { capacity: extra.capacity ?? size, storageClass: extra.storageClass ?? "fast", phase: extra.phase ?? "Bound" });
  c.metadata.resourceVersion = "7";
  if (extra.phase && extra.phase !== "Bound") delete c.status!.capacity;
  if (extra.vac) c.spec.volumeAttributesClassName = extra.vac;
  if (extra.conditions) c.status!.conditions = extra.conditions.map((type) => ({ type, status: "True" }));
  return c;
}

const db = (replicas = 3, size = "1Gi") => sts("db").withClaim("data", size, "fast").withClaim("logs", "1Gi", "fast").replicas(replicas).live("uid-db", "42");

function observed(claims: PersistentVolumeClaim[], extra: Partial<Observed> = {}, replicas = 3): Observed {
  const s = db(replicas);
  return {
    statefulSet: s,
    claims,
    pods: Array.from({ length: replicas }, (_, i) => pod(`db-${i}`, s)),
    storageClasses: [storageClass("fast", { expandable: true }), storageClass("fixed", { expandable: false })],
    existing: { resourceQuotas: [], volumeAttributesClasses: ["gold", "silver"] },
    user: "alice",
    now,
    ...extra,
  };
}

/** existing: the flags (default --resize-existing); null: no flag at all. */
const req = (directives: string[], existing: ExistingOptions | null = resize): PlanRequest => ({
  namespace: "prod",
  name: "db",
  directives: parseDirectives(directives),
  force: false,
  existing: existing ?? undefined,
});

describe("directive grammar: vac=", () => {
  const cases: [string, object][] = [
    ["pgdata=vac=fast-iops", { claim: "pgdata", volumeAttributesClass: "fast-iops" }],
    ["pgdata=2Gi,vac=fast-iops", { claim: "pgdata", size: "2Gi", volumeAttributesClass: "fast-iops" }],
    ["pgdata=vac=gold,ssd,3Gi", { claim: "pgdata", size: "3Gi", storageClass: "ssd", volumeAttributesClass: "gold" }],
    ["pgdata=class=vac,vac=class", { claim: "pgdata", storageClass: "vac", volumeAttributesClass: "class" }],
  ];
  for (const [text, want] of cases) test(text, () => assert.deepEqual(parseDirective(text), want));
  const refused: [string, RegExp][] = [
    ["pgdata=vac=", /empty item/],
    ["pgdata=vac=a,vac=b", /two volume attributes classes/],
    ["pgdata=vac=Gold_1", /not a valid volume attributes class name/],
  ];
  for (const [text, why] of refused) test(`refuses ${text}`, () => assert.throws(() => parseDirective(text), why));
  test("formats size, class, then vac=", () => {
    for (const text of ["pgdata=vac=gold", "pgdata=2Gi,vac=gold", "pgdata=2Gi,ssd,vac=gold"]) assert.equal(formatDirective(parseDirective(text)), text);
  });
});

describe("flags", () => {
  const cases: [string[], object | undefined][] = [
    [[], undefined],
    [["--resize-existing"], { resize: true, vac: false, waitResize: false, restartPods: false }],
    [["--resize-existing", "--wait-resize"], { resize: true, vac: false, waitResize: true, restartPods: false }],
    [["--resize-existing", "--restart-pods"], { resize: true, vac: false, waitResize: true, restartPods: true }],
    [["--vac-existing", "--wait-resize"], { resize: false, vac: true, waitResize: true, restartPods: false }],
  ];
  for (const [flags, want] of cases) {
    test(`set ${flags.join(" ") || "(none)"}`, () => {
      const p = commandLine(["set", "db", "data=2Gi", ...flags]);
      assert.equal(p.kind, "set");
      assert.deepEqual(existingOf(p), want);
    });
  }
  test("diff takes them too", () => {
    const p = commandLine(["diff", "db", "data=2Gi", "--resize-existing"]);
    assert.ok(p.kind === "diff" && existingOf(p)?.resize === true);
  });
  for (const flag of ["--wait-resize", "--restart-pods"]) {
    test(`${flag} alone is refused`, () =>
      assert.throws(() => commandLine(["set", "db", "data=2Gi", flag]), new RegExp(`${flag} works on the claims that --resize-existing or --vac-existing change`)));
  }
});

describe("which claims grow", () => {
  const cases: [string, PersistentVolumeClaim[], string[], [string, string | undefined][]][] = [
    [
      "every smaller claim of the named template, decided from the claim, not the template",
      [bound("data-db-0", "1Gi"), bound("data-db-1", "2Gi"), bound("data-db-2", "1536Mi"), bound("logs-db-0", "1Gi")],
      ["data=2Gi"],
      [
        ["data-db-0", "1Gi -> 2Gi"],
        ["data-db-1", undefined],
        ["data-db-2", "1536Mi -> 2Gi"],
      ],
    ],
    [
      "equal by value is no growth",
      [bound("data-db-0", "2048Mi"), bound("data-db-1", "2Gi")],
      ["data=2Gi"],
      [
        ["data-db-0", undefined],
        ["data-db-1", undefined],
      ],
    ],
    [
      "a class-only directive grows claims to the template's size",
      [bound("data-db-0", "512Mi"), bound("data-db-1", "1Gi")],
      ["data=fixed"],
      [
        ["data-db-0", "512Mi -> 1Gi"],
        ["data-db-1", undefined],
      ],
    ],
    [
      "leftovers of a scale-down grow too",
      [bound("data-db-0", "1Gi"), bound("data-db-5", "1Gi")],
      ["data=2Gi"],
      [
        ["data-db-0", "1Gi -> 2Gi"],
        ["data-db-5", "1Gi -> 2Gi"],
      ],
    ],
    [
      "decimal and binary compare by value",
      [bound("data-db-0", "2G"), bound("data-db-1", "1Gi")],
      ["data=2Gi"],
      [
        ["data-db-0", "2G -> 2Gi"],
        ["data-db-1", "1Gi -> 2Gi"],
      ],
    ],
  ];
  for (const [name, claims, directives, want] of cases) {
    test(name, () => {
      const plan = buildPlan(observed(claims), req(directives));
      assert.deepEqual(plan.refusals, []);
      assert.deepEqual(
        plan.existing!.claims.map((c) => [c.name, c.grow ? `${c.grow.from} -> ${c.grow.to}` : undefined]),
        want,
      );
    });
  }

  test("steps: the claims grow after the journal is saved and before the StatefulSet is touched", () => {
    const plan = buildPlan(observed([bound("data-db-0", "1Gi")]), req(["data=2Gi"], { ...resize, restartPods: true, waitResize: true }));
    assert.deepEqual(plan.steps, ["write-journal", "grow-claims", "orphan-delete", "wait-gone", "create", "verify", "record", "remove-journal", "wait-resize", "restart-pods"]);
    assert.equal(plan.existing!.claims[0]!.resourceVersion, "7", "the patch is guarded by the version read");
  });

  test("template already as asked: only the claims change, nothing is re-created", () => {
    const plan = buildPlan(
      observed([bound("data-db-0", "1Gi")], { statefulSet: sts("db").withClaim("data", "2Gi", "fast").withClaim("logs", "1Gi", "fast").replicas(3).live("uid-db") }),
      req(["data=2Gi"]),
    );
    assert.equal(plan.noChange, false);
    assert.deepEqual(plan.steps, ["grow-claims"]);
  });

  test("nothing to do at all is no change", () => {
    const plan = buildPlan(
      observed([bound("data-db-0", "2Gi")], { statefulSet: sts("db").withClaim("data", "2Gi", "fast").withClaim("logs", "1Gi", "fast").replicas(3).live("uid-db") }),
      req(["data=2Gi"]),
    );
    assert.equal(plan.noChange, true);
    assert.deepEqual(plan.steps, []);
  });

  test("without the flags existing claims are left alone and nothing extra is planned", () => {
    const plan = buildPlan(observed([bound("data-db-0", "1Gi")]), req(["data=2Gi"], null));
    assert.equal(plan.existing, undefined);
    assert.deepEqual(plan.steps, ["write-journal", "orphan-delete", "wait-gone", "create", "verify", "record", "remove-journal"]);
  });

  test("--wait-resize follows claims whose capacity lags, also those grown by an earlier run", () => {
    const claims = [bound("data-db-0", "2Gi", { capacity: "1Gi" }), bound("data-db-1", "1Gi"), bound("data-db-2", "2Gi")];
    const plan = buildPlan(observed(claims), req(["data=2Gi"], { ...resize, waitResize: true }));
    assert.deepEqual(
      plan.existing!.claims.map((c) => [c.name, c.follow, !!c.grow]),
      [
        ["data-db-0", true, false],
        ["data-db-1", true, true],
        ["data-db-2", false, false],
      ],
    );
  });

  test("--vac-existing sets the attributes class on every claim of the template, growing none", () => {
    const claims = [bound("data-db-0", "1Gi"), bound("data-db-1", "1Gi", { vac: "gold" }), bound("data-db-2", "1Gi", { vac: "silver" })];
    const plan = buildPlan(observed(claims), req(["data=2Gi,vac=gold"], { resize: false, vac: true, waitResize: false, restartPods: false }));
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(
      plan.existing!.claims.map((c) => [c.name, c.grow, c.setVolumeAttributesClass]),
      [
        ["data-db-0", undefined, { to: "gold" }],
        ["data-db-1", undefined, undefined],
        ["data-db-2", undefined, { from: "silver", to: "gold" }],
      ],
    );
    assert.equal(plan.desired.spec.volumeClaimTemplates![0]!.spec.volumeAttributesClassName, "gold");
    assert.deepEqual(plan.changes[0]!.after, { size: "2Gi", storageClass: "fast", volumeAttributesClass: "gold" });
  });

  test("a template change of the attributes class alone is a change", () => {
    const plan = buildPlan(observed([]), req(["data=vac=gold"], null));
    assert.equal(plan.noChange, false);
  });
});

describe("quota arithmetic (exact, BigInt)", () => {
  const quota = (name: string, hard: Record<string, string>, used: Record<string, string> | undefined, extra: Partial<ResourceQuota["spec"]> = {}): ResourceQuota => ({
    metadata: { name },
    spec: { hard, ...extra },
    status: { hard, ...(used ? { used } : {}) },
  });
  const g = (claim: string, charged: string, to: string, storageClass = "fast"): Growth => ({ claim, charged, to, storageClass });
  const cases: [string, ResourceQuota[], Growth[], { quota: string; resource: string; needed: string; left: string; fits: boolean }[], number][] = [
    [
      "room enough",
      [quota("q", { "requests.storage": "10Gi" }, { "requests.storage": "3Gi" })],
      [g("a", "1Gi", "2Gi"), g("b", "1Gi", "2Gi")],
      [{ quota: "q", resource: "requests.storage", needed: "2Gi", left: "7Gi", fits: true }],
      0,
    ],
    [
      "exactly full still fits",
      [quota("q", { "requests.storage": "5Gi" }, { "requests.storage": "3Gi" })],
      [g("a", "1Gi", "3Gi")],
      [{ quota: "q", resource: "requests.storage", needed: "2Gi", left: "2Gi", fits: true }],
      0,
    ],
    [
      "one byte too many",
      [quota("q", { "requests.storage": "5Gi" }, { "requests.storage": "3Gi" })],
      [g("a", "1Gi", "3221225473")],
      [{ quota: "q", resource: "requests.storage", needed: "2147483649", left: "2Gi", fits: false }],
      0,
    ],
    [
      "used above hard leaves nothing",
      [quota("q", { "requests.storage": "3Gi" }, { "requests.storage": "4Gi" })],
      [g("a", "1Gi", "2Gi")],
      [{ quota: "q", resource: "requests.storage", needed: "1Gi", left: "0", fits: false }],
      0,
    ],
    [
      "mixed units",
      [quota("q", { "requests.storage": "10G" }, { "requests.storage": "5G" })],
      [g("a", "1Gi", "2Gi"), g("b", "1G", "2G")],
      [{ quota: "q", resource: "requests.storage", needed: "2073741824", left: "5G", fits: true }],
      0,
    ],
    [
      "per storage class: only that class counts",
      [quota("q", { "fast.storageclass.storage.k8s.io/requests.storage": "4Gi" }, { "fast.storageclass.storage.k8s.io/requests.storage": "3Gi" })],
      [g("a", "1Gi", "2Gi"), g("b", "1Gi", "5Gi", "slow")],
      [{ quota: "q", resource: "fast.storageclass.storage.k8s.io/requests.storage", needed: "1Gi", left: "1Gi", fits: true }],
      0,
    ],
    ["quotas on other resources are ignored", [quota("q", { pods: "10" }, { pods: "3" })], [g("a", "1Gi", "2Gi")], [], 0],
    ["a quota not counted yet is left to the server", [quota("q", { "requests.storage": "10Gi" }, undefined)], [g("a", "1Gi", "2Gi")], [], 1],
    ["scoped quotas are left to the server", [quota("q", { "requests.storage": "1Gi" }, { "requests.storage": "1Gi" }, { scopes: ["VolumeAttributesClass"] })], [g("a", "1Gi", "2Gi")], [], 1],
    ["a growth of nothing needs nothing", [quota("q", { "requests.storage": "1Gi" }, { "requests.storage": "1Gi" })], [g("a", "2Gi", "2Gi")], [], 0],
  ];
  for (const [name, quotas, growth, want, warnings] of cases) {
    test(name, () => {
      const r = checkQuotas(quotas, growth);
      assert.deepEqual(
        r.checks.map(({ quota: q, resource, needed, left, fits }) => ({ quota: q, resource, needed, left, fits })),
        want,
      );
      assert.equal(r.warnings.length, warnings, JSON.stringify(r.warnings));
    });
  }

  test("the charge is the larger of request and allocatedResources", () => {
    const c = bound("data-db-0", "1Gi");
    c.status!.allocatedResources = { storage: "1536Mi" };
    const plan = buildPlan(
      observed([c], { existing: { resourceQuotas: [quota("q", { "requests.storage": "10Gi" }, { "requests.storage": "2Gi" })], volumeAttributesClasses: [] } }),
      req(["data=2Gi"]),
    );
    assert.equal(plan.existing!.growth, "512Mi");
    assert.equal(plan.existing!.quotas[0]!.needed, "512Mi");
  });
});

function journal(extra: Partial<Journal> = {}): Journal {
  const original = stripForCreate(db());
  return {
    apiVersion: journalApiVersion,
    kind: "Journal",
    namespace: "prod",
    name: "db",
    originalUid: "uid-db",
    originalResourceVersion: "41",
    request: ["data=2Gi"],
    step: "growing",
    startedAt: now,
    updatedAt: now,
    by: "alice",
    holder: "elsewhere/1/x",
    leaseExpires: "2026-11-29T11:59:00.000Z",
    pods: [],
    claims: [],
    original,
    desired: desiredStatefulSet(original, parseDirectives(["data=2Gi"])),
    existing: { options: resize, claims: [{ name: "data-db-0", uid: "uid-data-db-0", from: "1Gi", to: "2Gi" }] },
    ...extra,
  };
}

describe("refusals (nothing changes)", () => {
  const quotaFull: ResourceQuota = { metadata: { name: "team" }, spec: { hard: { "requests.storage": "4Gi" } }, status: { hard: { "requests.storage": "4Gi" }, used: { "requests.storage": "3Gi" } } };
  const cases: [string, Observed, PlanRequest, RegExp][] = [
    [
      "a shrink",
      observed([bound("data-db-0", "1Gi"), bound("data-db-1", "3Gi")]),
      req(["data=2Gi"]),
      /data-db-1 \(3Gi\) already request more than the new size; this tool never shrinks a claim; nothing was changed: ask for at least 3Gi/,
    ],
    ["a claim not bound", observed([bound("data-db-0", "1Gi", { phase: "Pending" })]), req(["data=2Gi"]), /data-db-0 \(Pending\) are not Bound/],
    [
      "a class without expansion",
      observed([bound("data-db-0", "1Gi", { storageClass: "fixed" })]),
      req(["data=2Gi"]),
      /have storage class "fixed", which does not allow volume expansion; nothing was changed: use --migrate-existing for bigger claims \(new volumes of the new size, the data copied\), or drop --resize-existing, or enable allowVolumeExpansion on the class if its provisioner can expand volumes$/m,
    ],
    ["a class that does not exist", observed([bound("data-db-0", "1Gi", { storageClass: "gone" })]), req(["data=2Gi"]), /storage class "gone", which does not exist/],
    [
      "a quota too small, named",
      observed([bound("data-db-0", "1Gi"), bound("data-db-1", "1Gi")], { existing: { resourceQuotas: [quotaFull] } }),
      req(["data=2Gi"]),
      /growing 2 claim\(s\) needs 2Gi more requests.storage, but resourcequota "team" has 1Gi left \(used 3Gi of 4Gi\); nothing was changed: raise its requests.storage to at least 5Gi/,
    ],
    ["an unknown attributes class", observed([bound("data-db-0", "1Gi")]), req(["data=vac=bronze"]), /volume attributes class "bronze" not found/],
    [
      "attributes classes not served",
      observed([bound("data-db-0", "1Gi")], { existing: { resourceQuotas: [] } }),
      req(["data=vac=gold"]),
      /this server does not serve VolumeAttributesClass .* drop vac=/,
    ],
    [
      "--vac-existing without vac=",
      observed([bound("data-db-0", "1Gi")]),
      req(["data=2Gi"], { resize: false, vac: true, waitResize: false, restartPods: false }),
      /--vac-existing needs a directive that names a volume attributes class/,
    ],
    [
      "an interrupted growth dropped by a rerun without the flag",
      observed([bound("data-db-0", "2Gi"), bound("data-db-1", "1Gi")], { journal: journal() }),
      req(["data=2Gi"], null),
      /an interrupted run was changing the existing claims of statefulset.apps\/db \(data=2Gi --resize-existing\); finish it with: kubectl appstorage set db data=2Gi --resize-existing -n prod/,
    ],
  ];
  for (const [name, obs, request, why] of cases) {
    test(name, () => {
      const plan = buildPlan(obs, request);
      assert.equal(plan.refusals.length, 1, JSON.stringify(plan.refusals));
      assert.match(plan.refusals[0]!.message, why);
      assert.equal(plan.refusals[0]!.forceable, false);
      assert.equal(buildPlan(obs, { ...request, force: true }).refusals.length, 1, "never forceable");
    });
  }

  test("an interrupted growth resumed with the flag continues from the claims' sizes", () => {
    const plan = buildPlan(observed([bound("data-db-0", "2Gi"), bound("data-db-1", "1Gi")], { journal: journal() }), req(["data=2Gi"]));
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(
      plan.existing!.claims.filter((c) => c.grow).map((c) => c.name),
      ["data-db-1"],
    );
  });

  test("a quota that cannot be read is a warning, the server still checks it", () => {
    const plan = buildPlan(observed([bound("data-db-0", "1Gi")], { existing: { quotaError: "forbidden" } }), req(["data=2Gi"]));
    assert.deepEqual(plan.refusals, []);
    assert.ok(plan.warnings.some((w) => /resource quotas could not be read \(forbidden\)/.test(w)));
  });
});

describe("resize state, from the claim's status", () => {
  const cases: [string, PersistentVolumeClaim, string][] = [
    ["capacity reached", bound("a", "2Gi"), "none"],
    ["requested, no resizer yet", bound("a", "2Gi", { capacity: "1Gi" }), "requested"],
    ["Resizing", bound("a", "2Gi", { capacity: "1Gi", conditions: ["Resizing"] }), "resizing"],
    ["FileSystemResizePending", bound("a", "2Gi", { capacity: "1Gi", conditions: ["FileSystemResizePending"] }), "filesystem-resize-pending"],
    [
      "NodeResizePending (allocatedResourceStatuses)",
      (() => {
        const c = bound("a", "2Gi", { capacity: "1Gi" });
        c.status!.allocatedResourceStatuses = { storage: "NodeResizePending" };
        return c;
      })(),
      "filesystem-resize-pending",
    ],
    [
      "ControllerResizeInfeasible",
      (() => {
        const c = bound("a", "2Gi", { capacity: "1Gi" });
        c.status!.allocatedResourceStatuses = { storage: "ControllerResizeInfeasible" };
        return c;
      })(),
      "infeasible",
    ],
    ["Pending claim", bound("a", "2Gi", { phase: "Pending" }), "none"],
  ];
  for (const [name, c, want] of cases) test(name, () => assert.equal(resizeState(c), want));
});

test("restart order: highest ordinal first, only claims with a pod", () => {
  const order = restartOrder([
    { ordinal: 0, pod: "db-0", leftover: false },
    { ordinal: 2, pod: "db-2", leftover: false },
    { ordinal: 1, pod: "db-1", leftover: false },
    { ordinal: 7, leftover: true },
  ]);
  assert.deepEqual(
    order.map((c) => c.pod),
    ["db-2", "db-1", "db-0"],
  );
});

describe("a pod whose claims wait for a restart is coming up already (not evicted again)", () => {
  const waiting = (since: string) => {
    const c = bound("data-db-1", "2Gi", { capacity: "1Gi" });
    c.status!.conditions = [{ type: "FileSystemResizePending", status: "True", lastTransitionTime: since }];
    return c;
  };
  const p = (created: string, extra: { ready?: boolean; deleting?: boolean } = {}) => {
    const x = pod("db-1", db());
    x.metadata.creationTimestamp = created;
    if (extra.deleting) x.metadata.deletionTimestamp = "2026-11-29T12:00:09Z";
    if (extra.ready) x.status = { phase: "Running", conditions: [{ type: "Ready", status: "True" }] };
    return x;
  };
  const since = "2026-11-29T12:00:05Z";
  const cases: [string, Parameters<typeof podComingUp>[0], PersistentVolumeClaim[], boolean][] = [
    ["gone: its StatefulSet re-creates it", undefined, [waiting(since)], true],
    ["terminating", p("2026-11-29T11:00:00Z", { deleting: true }), [waiting(since)], true],
    ["not Ready, created after the claim began to wait", p("2026-11-29T12:00:07Z"), [waiting(since)], true],
    ["not Ready, created in the same second", p(since), [waiting(since)], true],
    ["not Ready, older than the wait (crashing on a full disk): a restart finishes it", p("2026-11-29T11:00:00Z"), [waiting(since)], false],
    ["Ready: decided by its claims", p("2026-11-29T12:00:07Z", { ready: true }), [waiting(since)], false],
    ["created between two claims' waits: the later one needs a restart", p("2026-11-29T12:00:07Z"), [waiting(since), waiting("2026-11-29T12:00:08Z")], false],
    ["no time on the condition", p("2026-11-29T12:00:07Z"), [bound("data-db-1", "2Gi", { capacity: "1Gi", conditions: ["FileSystemResizePending"] })], false],
  ];
  for (const [name, x, claims, want] of cases) test(name, () => assert.equal(podComingUp(x, claims), want));
});

test("the plan, per claim (golden)", () => {
  const claims = [
    bound("data-db-0", "1Gi"),
    bound("data-db-1", "2Gi", { capacity: "1Gi", conditions: ["FileSystemResizePending"] }),
    bound("data-db-2", "1536Mi", { vac: "silver" }),
    bound("logs-db-0", "1Gi"),
  ];
  const quotas: ResourceQuota[] = [
    { metadata: { name: "team" }, spec: { hard: { "requests.storage": "20Gi" } }, status: { hard: { "requests.storage": "20Gi" }, used: { "requests.storage": "5632Mi" } } },
  ];
  const plan = buildPlan(
    observed(claims, { existing: { resourceQuotas: quotas, volumeAttributesClasses: ["gold"] } }),
    req(["data=2Gi,vac=gold"], { resize: true, vac: false, waitResize: true, restartPods: true }),
  );
  assert.deepEqual(plan.refusals, []);
  assertGolden("plan-existing.txt", renderPlan(plan));
});
