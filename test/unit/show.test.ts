import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseDirectives } from "../../src/plan/directive";
import { desiredStatefulSet, stripForCreate } from "../../src/plan/desired";
import { apiVersion as journalApiVersion, type Journal } from "../../src/plan/types";
import { buildStorageReport, type StorageInputs } from "../../src/report/storage-report";
import { renderStorageReport } from "../../src/output/show";
import { toJson, toYaml } from "../../src/output/yaml";
import type { PersistentVolume } from "../../src/api/types";
import { claim, pod, storageClass, sts } from "../fixtures/builders";
import { assertGolden } from "../fixtures/golden";

function inNs<T extends { metadata: { namespace?: string } }>(ns: string, o: T): T {
  o.metadata.namespace = ns;
  return o;
}

function inputs(): StorageInputs {
  const pg = sts("postgresql-k8s", "prod").withClaim("pgdata", "2Gi").withClaim("wal", "1Gi", "fast-ssd").replicas(2).retention("Retain", "Delete").live("uid-pg");
  const cache = sts("cache", "dev").withClaim("data", "500M").live("uid-cache");
  const resizing = inNs("prod", claim("pgdata-postgresql-k8s-1", "3Gi", { capacity: "2Gi", storageClass: "standard" }));
  resizing.status!.conditions = [
    { type: "FileSystemResizePending", status: "True" },
    { type: "Other", status: "True" },
  ];
  const gone = sts("queue", "prod").withClaim("data", "1Gi").live("uid-q");
  const journal: Journal = {
    apiVersion: journalApiVersion,
    kind: "Journal",
    namespace: "prod",
    name: "queue",
    originalUid: "uid-q",
    originalResourceVersion: "9",
    request: ["data=2Gi"],
    step: "deleted",
    startedAt: "2026-11-29T11:00:00.000Z",
    updatedAt: "2026-11-29T11:00:01.000Z",
    by: "alice",
    holder: "h/1/x",
    leaseExpires: "2026-11-29T11:00:15.000Z",
    pods: [],
    claims: [],
    original: stripForCreate(gone),
    desired: desiredStatefulSet(gone, parseDirectives(["data=2Gi"])),
  };
  // Volumes: a hostPath folder (any node), a local folder of node-a, a CSI volume of the driver's node key, and one not listed.
  const on = <T extends { spec: { volumeName?: string } }>(volume: string, o: T): T => {
    o.spec.volumeName = volume;
    return o;
  };
  resizing.spec.volumeName = "pv-local";
  const affinity = (key: string, value: string) => ({ required: { nodeSelectorTerms: [{ matchExpressions: [{ key, operator: "In", values: [value] }] }] } });
  const volumes: PersistentVolume[] = [
    { metadata: { name: "pv-host" }, spec: { hostPath: { path: "/tmp/hostpath-provisioner/prod/pgdata-postgresql-k8s-0" } } },
    { metadata: { name: "pv-local" }, spec: { local: { path: "/var/local-path-provisioner/pv-local" }, nodeAffinity: affinity("kubernetes.io/hostname", "node-a") } },
    { metadata: { name: "pv-csi" }, spec: { csi: { driver: "ssd.example.com" }, nodeAffinity: affinity("topology.ssd.example.com/zone", "zone-1") } },
  ];
  const waiting = storageClass("fast-ssd", { expandable: true });
  waiting.volumeBindingMode = "WaitForFirstConsumer";
  return {
    statefulSets: [pg, cache],
    volumes,
    claims: [
      on("pv-host", inNs("prod", claim("pgdata-postgresql-k8s-0", "1Gi", { capacity: "1Gi", storageClass: "standard" }))),
      resizing,
      on("pv-csi", inNs("prod", claim("wal-postgresql-k8s-0", "1Gi", { capacity: "1Gi", storageClass: "fast-ssd" }))),
      on("pv-unlisted", inNs("prod", claim("pgdata-postgresql-k8s-5", "2Gi", { capacity: "2Gi", storageClass: "standard" }))),
      inNs("prod", claim("data-queue-0", "1Gi", { phase: "Pending" })),
      inNs("dev", claim("data-cache-0", "500M", { phase: "Pending", storageClass: "standard" })),
      inNs("dev", claim("unrelated", "1Gi")),
    ],
    pods: [inNs("prod", pod("postgresql-k8s-0", pg)), inNs("prod", pod("postgresql-k8s-1", pg)), inNs("dev", pod("cache-0", cache))],
    storageClasses: [storageClass("standard", { default: true }), waiting],
    journals: [journal],
  };
}

describe("buildStorageReport", () => {
  const report = buildStorageReport(inputs());
  const pg = report.items.find((i) => i.name === "postgresql-k8s")!;
  test("every StatefulSet, sorted, and one known only from its journal", () => {
    assert.deepEqual(
      report.items.map((i) => [i.namespace, i.name, i.exists]),
      [
        ["dev", "cache", true],
        ["prod", "postgresql-k8s", true],
        ["prod", "queue", false],
      ],
    );
  });
  test("templates resolve the default class and know expansion", () => {
    assert.deepEqual(
      pg.templates.map((t) => [t.name, t.size, t.storageClass, t.defaultClass, t.expandable]),
      [
        ["pgdata", "2Gi", "standard", true, false],
        ["wal", "1Gi", "fast-ssd", false, true],
      ],
    );
  });
  test("claims per ordinal with drift, conditions, pods and leftovers", () => {
    assert.deepEqual(
      pg.claims.map((c) => [c.name, c.ordinal, c.leftover, c.pod ?? null, c.conditions, c.differences]),
      [
        ["pgdata-postgresql-k8s-0", 0, false, "postgresql-k8s-0", [], ["template 2Gi, claim 1Gi (smaller)"]],
        ["wal-postgresql-k8s-0", 0, false, "postgresql-k8s-0", [], []],
        ["pgdata-postgresql-k8s-1", 1, false, "postgresql-k8s-1", ["FileSystemResizePending"], ["template 2Gi, claim 3Gi (larger)", "requested 3Gi, capacity 2Gi"]],
        ["pgdata-postgresql-k8s-5", 5, true, null, [], []],
      ],
    );
  });
  test("retention policy and pending change", () => {
    assert.deepEqual(pg.retentionPolicy, { whenDeleted: "Retain", whenScaled: "Delete" });
    const q = report.items.find((i) => i.name === "queue")!;
    assert.equal(q.pendingChange!.finishCommand, "kubectl appstorage set queue data=2Gi -n prod");
  });
  test("each claim's volume, and what each class can do with the claims whose volumes are tied to a place", () => {
    assert.deepEqual(
      pg.claims.map((c) => [c.name, c.volumeSource ?? null, c.volumeTopology ?? null]),
      [
        ["pgdata-postgresql-k8s-0", "hostPath", null],
        ["wal-postgresql-k8s-0", "csi ssd.example.com", "topology.ssd.example.com/zone=zone-1"],
        ["pgdata-postgresql-k8s-1", "local", "node node-a"],
        ["pgdata-postgresql-k8s-5", null, null],
      ],
    );
    assert.deepEqual(report.storageClasses, [
      {
        name: "fast-ssd",
        provisioner: "example.com/test",
        default: false,
        expandable: true,
        volumeBindingMode: "WaitForFirstConsumer",
        boundVolumes: [{ where: "topology.ssd.example.com/zone=zone-1", claims: ["prod/wal-postgresql-k8s-0"] }],
      },
      {
        name: "standard",
        provisioner: "example.com/test",
        default: true,
        expandable: false,
        volumeBindingMode: "Immediate",
        boundVolumes: [{ where: "node node-a", claims: ["prod/pgdata-postgresql-k8s-1"] }],
      },
    ]);
  });
  test("the schema is versioned", () => assert.deepEqual([report.apiVersion, report.kind], ["appstorage.kubectl.io/v1alpha1", "StorageReport"]));
});

describe("show rendering (golden files)", () => {
  const report = buildStorageReport(inputs());
  test("table", () => assertGolden("show-table.txt", renderStorageReport(report, { wide: false, namespaces: true })));
  test("wide", () => assertGolden("show-wide.txt", renderStorageReport(report, { wide: true, namespaces: false })));
  test("json", () => assertGolden("show.json", toJson(report)));
  test("yaml", () => assertGolden("show.yaml", toYaml(report)));
});

/**
 * Issue 18: claims that never bound. db: class "nosuch" does not exist (the template was fixed
 * since); queue: its provisioner reported ProvisioningFailed (an older claim of the same name had
 * an event too, which must not count); cache: WaitForFirstConsumer, and a leftover of it that no
 * longer matches; web: a bound claim unlike its template, which never gets advice.
 */
function pendingInputs(): StorageInputs {
  const ns = "shop";
  const db = sts("db", ns).withClaim("data", "1Gi", "bars-expandable").replicas(3).live("uid-db");
  const queue = sts("queue", ns).withClaim("data", "2Gi", "slow").live("uid-queue");
  const cache = sts("cache", ns).withClaim("data", "1Gi", "local-wffc").live("uid-cache");
  const web = sts("web", ns).withClaim("data", "2Gi", "bars-expandable").live("uid-web");
  const bound = inNs(ns, claim("data-web-0", "1Gi", { capacity: "1Gi", storageClass: "standard" }));
  bound.spec.volumeName = "pv-web-0";
  const event = (name: string, uid: string, message: string, at: string, count: number) => ({
    metadata: { name: `${name}.${count}`, namespace: ns },
    involvedObject: { kind: "PersistentVolumeClaim", namespace: ns, name, uid },
    reason: "ProvisioningFailed",
    type: "Warning",
    message,
    count,
    lastTimestamp: at,
    source: { component: "example.com/slow_node-1_1234" },
  });
  return {
    statefulSets: [db, queue, cache, web],
    claims: [
      inNs(ns, claim("data-db-0", "1Gi", { phase: "Pending", storageClass: "nosuch" })),
      inNs(ns, claim("data-queue-0", "2Gi", { phase: "Pending", storageClass: "slow" })),
      inNs(ns, claim("data-cache-0", "1Gi", { phase: "Pending", storageClass: "local-wffc" })),
      inNs(ns, claim("data-cache-3", "512Mi", { phase: "Pending", storageClass: "local-wffc" })),
      bound,
    ],
    pods: [inNs(ns, pod("db-0", db)), inNs(ns, pod("queue-0", queue)), inNs(ns, pod("cache-0", cache)), inNs(ns, pod("web-0", web))],
    storageClasses: [
      storageClass("standard", { default: true }),
      storageClass("bars-expandable", { expandable: true }),
      { ...storageClass("slow"), provisioner: "example.com/slow" },
      { ...storageClass("local-wffc"), volumeBindingMode: "WaitForFirstConsumer" },
    ],
    journals: [],
    events: [
      event("data-queue-0", "uid-data-queue-0", 'failed to provision volume with StorageClass "slow": quota exceeded', "2026-11-29T11:00:00Z", 1),
      event("data-queue-0", "uid-data-queue-0", 'failed to provision volume with StorageClass "slow": rpc error: code = ResourceExhausted desc = no space left in pool', "2026-11-29T11:05:00Z", 4),
      event("data-queue-0", "uid-an-older-claim", "an older claim of the same name", "2026-11-29T11:10:00Z", 1),
    ],
  };
}

describe("show: claims that never bound", () => {
  const report = buildStorageReport(pendingInputs());
  const claimOf = (sts: string) => report.items.find((i) => i.name === sts)!.claims;
  test("a class that does not exist: stuck, and the commands that re-create the claim from the template", () => {
    const c = claimOf("db")[0]!;
    assert.deepEqual(c.pendingReason, { reason: "StorageClassNotFound", stuck: true, message: 'storage class "nosuch" does not exist' });
    assert.deepEqual(c.recreateByHand, {
      command: "kubectl delete pvc data-db-0 -n shop && kubectl delete pod db-0 -n shop",
      warning: "pod db-0 restarts: the StatefulSet controller creates it again, with a new claim",
    });
    assert.equal(c.volumeName, undefined);
  });
  test("ProvisioningFailed: the latest event of this claim (by uid), and no advice when it matches its template", () => {
    const c = claimOf("queue")[0]!;
    assert.deepEqual(c.pendingReason, {
      reason: "ProvisioningFailed",
      stuck: true,
      message: 'the provisioner example.com/slow of storage class "slow" reported ProvisioningFailed',
      event: {
        message: 'failed to provision volume with StorageClass "slow": rpc error: code = ResourceExhausted desc = no space left in pool',
        count: 4,
        lastTimestamp: "2026-11-29T11:05:00Z",
        source: "example.com/slow_node-1_1234",
      },
    });
    assert.equal(c.recreateByHand, undefined);
  });
  test("WaitForFirstConsumer: not stuck; a leftover unlike its template gets the claim's delete alone", () => {
    const [c0, c3] = claimOf("cache");
    assert.deepEqual([c0!.pendingReason!.reason, c0!.pendingReason!.stuck, c0!.recreateByHand], ["WaitForFirstConsumer", false, undefined]);
    assert.match(c0!.pendingReason!.message, /once pod cache-0 is scheduled/);
    assert.match(c3!.pendingReason!.message, /once a pod that uses the claim is scheduled/);
    assert.equal(c3!.recreateByHand!.command, "kubectl delete pvc data-cache-3 -n shop");
  });
  test("ordinals below replicas without a claim get it from the template", () => {
    assert.deepEqual(
      report.items.map((i) => [i.name, i.templates[0]!.ordinalsWithoutClaim ?? null]),
      [
        ["cache", null],
        ["db", [1, 2]],
        ["queue", null],
        ["web", null],
      ],
    );
  });
  test("a bound claim never gets such advice", () => {
    const c = claimOf("web")[0]!;
    assert.deepEqual([c.differences.length > 0, c.pendingReason, c.recreateByHand, c.volumeName], [true, undefined, undefined, "pv-web-0"]);
  });
  test("classes that could not be read tell nothing about a missing class", () => {
    const unknown = buildStorageReport({ ...pendingInputs(), storageClasses: [], storageClassesUnknown: true });
    assert.equal(unknown.items.find((i) => i.name === "db")!.claims[0]!.pendingReason, undefined);
  });
  test("table", () => assertGolden("show-pending-table.txt", renderStorageReport(report, { wide: false, namespaces: false })));
  test("wide: the provisioner's message", () => assertGolden("show-pending-wide.txt", renderStorageReport(report, { wide: true, namespaces: true })));
  test("json", () => assertGolden("show-pending.json", toJson(report)));
});
