import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseDirectives } from "../../src/plan/directive";
import { changeAnnotation, desiredStatefulSet, stripForCreate } from "../../src/plan/desired";
import { apiVersion as journalApiVersion, type Journal } from "../../src/plan/types";
import { buildPlan } from "../../src/plan/plan";
import { contentDigest } from "../../src/plan/seal";
import type { Observed } from "../../src/plan/types";
import type { StatefulSet } from "../../src/api/types";
import { claim, pod, storageClass, sts } from "../fixtures/builders";

const now = "2026-11-29T12:00:00.000Z";

function observed(s: StatefulSet | undefined, extra: Partial<Observed> = {}): Observed {
  const owner = s ?? sts("db").live();
  return {
    statefulSet: s,
    claims: [claim("pgdata-db-0", "1Gi", { capacity: "1Gi", storageClass: "standard" })],
    pods: [pod("db-0", owner)],
    storageClasses: [storageClass("standard", { default: true }), storageClass("fast-ssd")],
    user: "alice",
    now,
    ...extra,
  };
}

const request = (...directives: string[]) => ({ namespace: "default", name: "db", directives: parseDirectives(directives), force: false });
const db = () => sts("db").withClaim("pgdata", "1Gi");

describe("buildPlan: a fresh change", () => {
  test("the reference flow: pgdata 1Gi -> 2Gi", () => {
    const plan = buildPlan(observed(db().live("uid-db", "42")), request("pgdata=2Gi"));
    const { contentDigest: digest, ...target } = plan.target;
    assert.deepEqual(target, { namespace: "default", name: "db", uid: "uid-db", resourceVersion: "42" });
    assert.match(digest ?? "", /^sha256:[0-9a-f]{64}$/);
    assert.equal(plan.mode, "fresh");
    assert.deepEqual(plan.changes, [{ claim: "pgdata", before: { size: "1Gi" }, after: { size: "2Gi" } }]);
    assert.deepEqual(plan.steps, ["write-journal", "orphan-delete", "wait-gone", "create", "verify", "record", "remove-journal"]);
    assert.deepEqual(plan.refusals, []);
    assert.equal(plan.claims.length, 1);
    assert.equal(plan.claims[0]!.effect, "keeps");
    assert.equal(plan.claims[0]!.pod, "db-0");
    assert.deepEqual(plan.newOrdinals, { from: 1, templates: [{ claim: "pgdata", size: "2Gi", storageClass: "standard (default)" }] });
    assert.deepEqual(plan.pods, [{ name: "db-0", uid: "uid-db-0", revision: "rev-1" }]);
    assert.equal(plan.desired.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "2Gi");
  });

  test("a pod being re-created (an eviction) is not a rolling update: revisions equal, one pod fewer updated", () => {
    const s = db().live();
    s.status = { ...s.status, replicas: 3, updatedReplicas: 2 };
    assert.deepEqual(buildPlan(observed(s), request("pgdata=2Gi")).refusals, []);
  });

  test("the plan is plain data that survives JSON", () => {
    const plan = buildPlan(observed(db().live()), request("pgdata=2Gi"));
    assert.deepEqual(JSON.parse(JSON.stringify(plan)), plan);
    // A class and an attributes class too: the objects of a fresh plan are not passed through JSON again.
    const classed = buildPlan(observed(db().live()), request("pgdata=3Gi,fast,vac=gold"));
    assert.deepEqual(JSON.parse(JSON.stringify(classed)), classed);
    assert.equal(plan.apiVersion, "appstorage.kubectl.io/v1alpha1");
  });

  test("same size by value is no change", () => {
    const plan = buildPlan(observed(db().live()), request("pgdata=1024Mi"));
    assert.equal(plan.noChange, true);
    assert.deepEqual(plan.steps, []);
  });

  test("a storage class change", () => {
    const plan = buildPlan(observed(db().live()), request("pgdata=fast-ssd"));
    assert.equal(plan.noChange, false);
    assert.equal(plan.desired.spec.volumeClaimTemplates![0]!.spec.storageClassName, "fast-ssd");
    assert.equal(plan.desired.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "1Gi");
  });

  test("claims left by a scale-down are listed as leftovers", () => {
    const plan = buildPlan(
      observed(db().live(), { claims: [claim("pgdata-db-0", "1Gi"), claim("pgdata-db-3", "1Gi"), claim("pgdata-other-0", "1Gi"), claim("pgdata-db-x", "1Gi")] }),
      request("pgdata=2Gi"),
    );
    assert.deepEqual(
      plan.claims.map((c) => [c.name, c.leftover]),
      [
        ["pgdata-db-0", false],
        ["pgdata-db-3", true],
      ],
    );
  });

  test("pods of another controller are not ours", () => {
    const other = sts("db").live("uid-other");
    other.kind = "StatefulSet";
    const foreign = pod("db-1", other);
    foreign.metadata.ownerReferences = [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "x", uid: "u", controller: true }];
    const plan = buildPlan(observed(db().live(), { pods: [pod("db-0", db().live()), foreign] }), request("pgdata=2Gi"));
    assert.deepEqual(
      plan.pods.map((p) => p.name),
      ["db-0"],
    );
  });
});

describe("buildPlan: refusals (nothing changes)", () => {
  const cases: [string, () => Observed, string[], RegExp, boolean][] = [
    ["unknown claim template", () => observed(db().live()), ["data=2Gi"], /claim template "data" not found in statefulset.apps\/db \(it has: pgdata\)/, false],
    ["unknown storage class", () => observed(db().live()), ["pgdata=2Gi,gold"], /storage class "gold" not found/, false],
    [
      "being deleted",
      () =>
        observed(
          db()
            .edit((s) => (s.metadata.deletionTimestamp = now))
            .live(),
        ),
      ["pgdata=2Gi"],
      /is being deleted/,
      false,
    ],
    [
      "rolling update in progress",
      () => {
        const s = db().live();
        s.status!.updateRevision = "db-new";
        return observed(s);
      },
      ["pgdata=2Gi"],
      /rolling update is in progress .*--force/,
      true,
    ],
    [
      "fewer pods updated than replicas, revisions not reported",
      () => {
        const s = db().live();
        s.status = { observedGeneration: 1, replicas: 3, updatedReplicas: 2 };
        return observed(s);
      },
      ["pgdata=2Gi"],
      /rolling update is in progress \(2 of 3 pods updated\).*--force/,
      true,
    ],
    [
      "controller not caught up",
      () => {
        const s = db().live();
        s.metadata.generation = 3;
        return observed(s);
      },
      ["pgdata=2Gi"],
      /has not yet seen the latest change/,
      true,
    ],
    [
      "controller owner",
      () =>
        observed(
          db()
            .edit((s) => (s.metadata.ownerReferences = [{ apiVersion: "x/v1", kind: "PostgresCluster", name: "pg", uid: "u", controller: true }]))
            .live(),
        ),
      ["pgdata=2Gi"],
      /controlled by PostgresCluster pg/,
      true,
    ],
    [
      "another run holds the lock",
      () => observed(db().live("uid-1"), { journal: journal({ leaseExpires: "2026-11-29T12:00:10.000Z" }) }),
      ["pgdata=2Gi"],
      /another kubectl appstorage set is working/,
      false,
    ],
  ];
  for (const [name, obs, directives, why, forceable] of cases) {
    test(name, () => {
      const plan = buildPlan(obs(), request(...directives));
      assert.equal(plan.refusals.length, 1, JSON.stringify(plan.refusals));
      assert.match(plan.refusals[0]!.message, why);
      assert.equal(plan.refusals[0]!.forceable, forceable);
      const forced = buildPlan(obs(), { ...request(...directives), force: true });
      assert.equal(forced.refusals.length, forceable ? 0 : 1);
      if (forceable) assert.ok(forced.warnings.some((w) => w.startsWith("forced past:")));
    });
  }

  test("an unknown StatefulSet cannot be planned", () => {
    assert.throws(() => buildPlan(observed(undefined), request("pgdata=2Gi")), /statefulsets.apps "db" not found in namespace "default"/);
  });
});

describe("buildPlan: warnings", () => {
  const cases: [string, () => StatefulSet, RegExp][] = [
    ["Helm", () => db().labels({ "app.kubernetes.io/managed-by": "Helm" }).live(), /managed by Helm/],
    ["Helm annotations", () => db().annotations({ "meta.helm.sh/release-name": "pg" }).live(), /managed by Helm/],
    ["Argo CD", () => db().labels({ "argocd.argoproj.io/instance": "pg" }).live(), /managed by Argo CD/],
    ["Flux", () => db().labels({ "kustomize.toolkit.fluxcd.io/name": "pg" }).live(), /managed by Flux/],
    ["whenScaled: Delete", () => db().retention("Retain", "Delete").live(), /whenScaled=Delete/],
  ];
  for (const [name, s, why] of cases) {
    test(name, () => {
      const plan = buildPlan(observed(s()), request("pgdata=2Gi"));
      assert.deepEqual(plan.refusals, []);
      assert.ok(
        plan.warnings.some((w) => why.test(w)),
        JSON.stringify(plan.warnings),
      );
    });
  }
  test("a smaller template", () => {
    const plan = buildPlan(observed(db().live()), request("pgdata=512Mi"));
    assert.ok(plan.warnings.some((w) => /shrinks from 1Gi to 512Mi/.test(w)));
  });
});

function journal(extra: Partial<Journal> = {}): Journal {
  const original = stripForCreate(db().live("uid-1"));
  return {
    apiVersion: journalApiVersion,
    kind: "Journal",
    namespace: "default",
    name: "db",
    originalUid: "uid-1",
    originalResourceVersion: "100",
    request: ["pgdata=2Gi"],
    step: "deleting",
    startedAt: "2026-11-29T11:59:00.000Z",
    updatedAt: "2026-11-29T11:59:00.000Z",
    by: "alice",
    holder: "host/1/abc",
    leaseExpires: "2026-11-29T11:59:15.000Z",
    pods: [{ name: "db-0", uid: "uid-db-0", revision: "rev-1" }],
    claims: [{ name: "pgdata-db-0", uid: "uid-pgdata-db-0" }],
    original,
    desired: desiredStatefulSet(original, parseDirectives(["pgdata=2Gi"])),
    ...extra,
  };
}

describe("buildPlan: resuming from a journal", () => {
  test("object gone: create, verify, clean up", () => {
    const plan = buildPlan(observed(undefined, { journal: journal() }), request("pgdata=2Gi"));
    assert.equal(plan.mode, "resume");
    assert.deepEqual(plan.steps, ["write-journal", "create", "verify", "record", "remove-journal"]);
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(plan.desired, plan.journal!.desired);
  });
  test("still being deleted: wait, then create", () => {
    const s = db().live("uid-1");
    s.metadata.deletionTimestamp = now;
    const plan = buildPlan(observed(s, { journal: journal() }), request("pgdata=2Gi"));
    assert.deepEqual(plan.steps, ["write-journal", "wait-gone", "create", "verify", "record", "remove-journal"]);
  });
  test("already re-created with the new templates: verify and clean up", () => {
    const plan = buildPlan(observed(sts("db").withClaim("pgdata", "2048Mi").live("uid-2"), { journal: journal() }), request("pgdata=2Gi"));
    assert.deepEqual(plan.steps, ["write-journal", "verify", "record", "remove-journal"]);
  });
  test("a different request while one is pending is refused with the command that finishes it", () => {
    const plan = buildPlan(observed(undefined, { journal: journal() }), request("pgdata=3Gi"));
    assert.match(plan.refusals[0]!.message, /pending \(pgdata=2Gi.*finish it first with: kubectl appstorage set db pgdata=2Gi -n default/);
  });
  test("a live lease means another run is working", () => {
    const plan = buildPlan(observed(undefined, { journal: journal({ leaseExpires: "2026-11-29T12:00:05.000Z" }) }), request("pgdata=2Gi"));
    assert.match(plan.refusals[0]!.message, /another kubectl appstorage set is working/);
  });
  test("the original untouched: the journal is stale and the change is planned afresh", () => {
    const plan = buildPlan(observed(db().live("uid-1", "101"), { journal: journal() }), request("pgdata=2Gi"));
    assert.equal(plan.mode, "fresh");
    assert.equal(plan.target.resourceVersion, "101");
    assert.ok(plan.journal);
  });
  test("re-created by someone else with other templates: planned afresh with a warning", () => {
    const plan = buildPlan(observed(db().live("uid-3"), { journal: journal() }), request("pgdata=2Gi"));
    assert.equal(plan.mode, "fresh");
    assert.ok(plan.warnings.some((w) => /re-created by someone else/.test(w)));
  });
});

describe("the desired object", () => {
  const rich = () =>
    sts("db")
      .withClaim("pgdata", "1Gi")
      .withClaim("logs", "1Gi", "standard")
      .annotations({ "kubectl.kubernetes.io/last-applied-configuration": "{}" })
      .edit((s) => {
        s.spec.template.metadata!.annotations = { "kubectl.kubernetes.io/restartedAt": "2026-11-01T00:00:00Z" };
        s.spec.template.spec["initContainers"] = [{ name: "init", image: "busybox" }];
        s.spec.template.spec["tolerations"] = [{ key: "k", operator: "Exists" }];
        s.spec.template.spec["futureField"] = { kept: true };
        s.spec.updateStrategy = { type: "RollingUpdate", rollingUpdate: { partition: 1 } };
        s.spec["revisionHistoryLimit"] = 3;
        s.spec["minReadySeconds"] = 5;
        s.spec.ordinals = { start: 2 };
        s.spec.podManagementPolicy = "Parallel";
        s.metadata.finalizers = ["example.com/keep", "orphan"];
        s.spec.volumeClaimTemplates![0]!["status"] = { phase: "Pending" };
      })
      .live("uid-1", "7");

  test("is the original except the changed claim template", () => {
    const original = rich();
    const desired = desiredStatefulSet(original, parseDirectives(["pgdata=2Gi"]));
    const expected = JSON.parse(JSON.stringify(original)) as StatefulSet;
    delete expected.status;
    for (const k of ["uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"]) delete expected.metadata[k];
    expected.metadata.finalizers = ["example.com/keep"];
    expected.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"] = "2Gi";
    assert.deepEqual(desired, expected);
    assert.deepEqual(desired.spec.template, original.spec.template);
  });

  test("carries the change annotation when given", () => {
    const desired = desiredStatefulSet(rich(), parseDirectives(["pgdata=2Gi"]), { by: "alice", at: now, from: ["pgdata=1Gi"], to: ["pgdata=2Gi"] });
    assert.deepEqual(JSON.parse(desired.metadata.annotations![changeAnnotation]!), { by: "alice", at: now, from: ["pgdata=1Gi"], to: ["pgdata=2Gi"] });
  });

  test("a size equal by value is left as written", () => {
    const desired = desiredStatefulSet(rich(), parseDirectives(["pgdata=1024Mi"]));
    assert.equal(desired.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "1Gi");
  });
});

describe("buildPlan: which ordinals get the new template (issue 18)", () => {
  // The case of the issue: class "nosuch" does not exist; OrderedReady created pod 0 and its
  // claim (Pending forever) and never reached ordinals 1 and 2.
  const nosuch = () => sts("db").withClaim("data", "2Gi", "nosuch").replicas(3).live("uid-db", "7");
  const stuck = () => {
    const s = nosuch();
    return observed(s, {
      claims: [claim("data-db-0", "2Gi", { phase: "Pending", storageClass: "nosuch" })],
      pods: [pod("db-0", s)],
      storageClasses: [storageClass("bars-expandable", { expandable: true })],
    });
  };

  test("ordinals below replicas without a claim, and a scale-up, get the new template; ordinal 0 keeps its claim", () => {
    const plan = buildPlan(stuck(), request("data=1Gi,bars-expandable"));
    assert.deepEqual(plan.ordinals, { start: 0, replicas: 3, scaleUpFrom: 3, templates: [{ claim: "data", keep: [0], create: [1, 2], leftover: [] }] });
    assert.deepEqual(plan.newOrdinals, { from: 3, templates: [{ claim: "data", size: "1Gi", storageClass: "bars-expandable" }] });
  });

  test("why ordinal 0's claim is stuck, and the commands that would replace it (never run by the tool)", () => {
    const plan = buildPlan(stuck(), request("data=1Gi,bars-expandable"));
    const c = plan.claims[0]!;
    assert.deepEqual(c.pendingReason, { reason: "StorageClassNotFound", stuck: true, message: 'storage class "nosuch" does not exist' });
    assert.equal(c.recreateByHand!.command, "kubectl delete pvc data-db-0 -n default && kubectl delete pod db-0 -n default");
    assert.match(c.recreateByHand!.warning, /pod db-0 restarts/);
    assert.equal(c.volumeName, undefined);
    // The plan's steps hold no delete of a claim or a pod: only the StatefulSet's orphan delete.
    assert.deepEqual(plan.steps, ["write-journal", "orphan-delete", "wait-gone", "create", "verify", "record", "remove-journal"]);
  });

  test("a never-bound claim that matches the new template gets no advice", () => {
    const plan = buildPlan(stuck(), request("data=2Gi"));
    assert.equal(plan.noChange, true);
    assert.equal(plan.claims[0]!.recreateByHand, undefined);
    assert.equal(plan.claims[0]!.pendingReason!.reason, "StorageClassNotFound");
  });

  test("a bound claim never gets such advice, however it differs", () => {
    const s = sts("db").withClaim("data", "1Gi", "standard").live();
    const bound = claim("data-db-0", "1Gi", { capacity: "1Gi", storageClass: "standard" });
    bound.spec.volumeName = "pv-1";
    const plan = buildPlan(observed(s, { claims: [bound], pods: [pod("db-0", s)] }), request("data=5Gi,fast-ssd"));
    assert.equal(plan.claims[0]!.recreateByHand, undefined);
    assert.equal(plan.claims[0]!.pendingReason, undefined);
    assert.equal(plan.claims[0]!.volumeName, "pv-1");
  });

  test("a WaitForFirstConsumer claim is waiting for its pod, not stuck", () => {
    const s = sts("db").withClaim("data", "1Gi", "wffc").live();
    const wffc = { ...storageClass("wffc"), volumeBindingMode: "WaitForFirstConsumer" };
    const plan = buildPlan(observed(s, { claims: [claim("data-db-0", "1Gi", { phase: "Pending", storageClass: "wffc" })], storageClasses: [wffc, storageClass("fast-ssd")] }), request("data=2Gi"));
    assert.deepEqual(plan.claims[0]!.pendingReason, {
      reason: "WaitForFirstConsumer",
      stuck: false,
      message: 'storage class "wffc" has volumeBindingMode WaitForFirstConsumer, so the volume is provisioned once pod db-0 is scheduled',
    });
    assert.equal(plan.claims[0]!.recreateByHand!.command, "kubectl delete pvc data-db-0 -n default && kubectl delete pod db-0 -n default");
  });

  test("leftovers above replicas are reused by a scale-up; ordinals per template", () => {
    const s = sts("db").withClaim("data", "1Gi").withClaim("logs", "1Gi").replicas(2).live();
    const plan = buildPlan(observed(s, { claims: ["data-db-0", "data-db-1", "data-db-5", "logs-db-0"].map((n) => claim(n, "1Gi", { storageClass: "standard" })) }), request("data=2Gi"));
    assert.deepEqual(plan.ordinals.templates, [
      { claim: "data", keep: [0, 1], create: [], leftover: [5] },
      { claim: "logs", keep: [0], create: [1], leftover: [] },
    ]);
  });
});

describe("buildPlan: a decimal size beside binary ones", () => {
  const cases: [what: string, template: string, directive: string, note: RegExp | undefined][] = [
    [
      "2G on a 1Gi template: both values in bytes and the binary spelling",
      "1Gi",
      "pgdata=2G",
      /^pgdata=2G is 2000000000 bytes \(a decimal G\), while 1Gi there is binary: for 2147483648 bytes write pgdata=2Gi$/,
    ],
    ["500M on a 1Gi template", "1Gi", "pgdata=500M", /^pgdata=500M is 500000000 bytes \(a decimal M\), while 1Gi there is binary: for 524288000 bytes write pgdata=500Mi$/],
    ["2Gi: binary like the template, no note", "1Gi", "pgdata=2Gi", undefined],
    ["2G on a 1G template (and a 1G claim): all decimal, no note", "1G", "pgdata=2G", undefined],
  ];
  for (const [what, template, directive, note] of cases) {
    test(what, () => {
      const claims = [claim("pgdata-db-0", template, { capacity: template, storageClass: "standard" })];
      const plan = buildPlan(observed(sts("db").withClaim("pgdata", template).live(), { claims }), request(directive));
      const notes = plan.warnings.filter((w) => / is \d+ bytes \(a decimal /.test(w));
      if (note) assert.match(notes.join("\n"), note);
      else assert.deepEqual(notes, []);
      // The size keeps kubectl's meaning: 2G stays 2G.
      assert.equal(plan.changes[0]!.after.size, directive.split("=")[1]);
    });
  }
});

describe("contentDigest: a delete guarded by resourceVersion is retried only when the status alone moved on", () => {
  const read = () => sts("db").withClaim("pgdata", "1Gi").labels({ app: "db" }).live("uid-1", "7");

  test("equal when only the status and server-set metadata changed", () => {
    const first = read();
    const later = read();
    later.metadata.resourceVersion = "8";
    later.metadata["managedFields"] = [{ manager: "kube-controller-manager", operation: "Update", subresource: "status" }];
    later.status = { ...(later.status ?? {}), observedGeneration: 3, readyReplicas: 1, currentRevision: "db-abc" };
    assert.equal(contentDigest(later), contentDigest(first));
  });

  test("different when a label, an annotation or the spec changed", () => {
    const first = contentDigest(read());
    const labelled = read();
    labelled.metadata.labels = { app: "db", tier: "x" };
    const annotated = read();
    annotated.metadata.annotations = { note: "y" };
    const scaled = read();
    scaled.spec.replicas = 5;
    for (const changed of [labelled, annotated, scaled]) assert.notEqual(contentDigest(changed), first);
  });

  test("a fresh plan carries it, so apply can tell", () => {
    const original = read();
    const plan = buildPlan(observed(original), request("pgdata=2Gi"));
    assert.equal(plan.target.contentDigest, contentDigest(original));
  });
});
