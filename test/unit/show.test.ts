import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseDirectives } from "../../src/plan/directive";
import { desiredStatefulSet, stripForCreate } from "../../src/plan/desired";
import { apiVersion as journalApiVersion, type Journal } from "../../src/plan/types";
import { buildStorageReport, type StorageInputs } from "../../src/report/storage-report";
import { renderStorageReport } from "../../src/output/show";
import { toJson, toYaml } from "../../src/output/yaml";
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
  resizing.status!.conditions = [{ type: "FileSystemResizePending", status: "True" }, { type: "Other", status: "True" }];
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
  return {
    statefulSets: [pg, cache],
    claims: [
      inNs("prod", claim("pgdata-postgresql-k8s-0", "1Gi", { capacity: "1Gi", storageClass: "standard" })),
      resizing,
      inNs("prod", claim("wal-postgresql-k8s-0", "1Gi", { capacity: "1Gi", storageClass: "fast-ssd" })),
      inNs("prod", claim("pgdata-postgresql-k8s-5", "2Gi", { capacity: "2Gi", storageClass: "standard" })),
      inNs("prod", claim("data-queue-0", "1Gi", { phase: "Pending" })),
      inNs("dev", claim("data-cache-0", "500M", { phase: "Pending", storageClass: "standard" })),
      inNs("dev", claim("unrelated", "1Gi")),
    ],
    pods: [inNs("prod", pod("postgresql-k8s-0", pg)), inNs("prod", pod("postgresql-k8s-1", pg)), inNs("dev", pod("cache-0", cache))],
    storageClasses: [storageClass("standard", { default: true }), storageClass("fast-ssd", { expandable: true })],
    journals: [journal],
  };
}

describe("buildStorageReport", () => {
  const report = buildStorageReport(inputs());
  const pg = report.items.find((i) => i.name === "postgresql-k8s")!;
  test("every StatefulSet, sorted, and one known only from its journal", () => {
    assert.deepEqual(report.items.map((i) => [i.namespace, i.name, i.exists]), [["dev", "cache", true], ["prod", "postgresql-k8s", true], ["prod", "queue", false]]);
  });
  test("templates resolve the default class and know expansion", () => {
    assert.deepEqual(pg.templates.map((t) => [t.name, t.size, t.storageClass, t.defaultClass, t.expandable]), [["pgdata", "2Gi", "standard", true, false], ["wal", "1Gi", "fast-ssd", false, true]]);
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
  test("the schema is versioned", () => assert.deepEqual([report.apiVersion, report.kind], ["appstorage.kubectl.io/v1alpha1", "StorageReport"]));
});

describe("show rendering (golden files)", () => {
  const report = buildStorageReport(inputs());
  test("table", () => assertGolden("show-table.txt", renderStorageReport(report, { wide: false, namespaces: true })));
  test("wide", () => assertGolden("show-wide.txt", renderStorageReport(report, { wide: true, namespaces: false })));
  test("json", () => assertGolden("show.json", toJson(report)));
  test("yaml", () => assertGolden("show.yaml", toYaml(report)));
});
