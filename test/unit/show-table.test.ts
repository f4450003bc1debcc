// show's tables as kubectl prints its own: default columns that fit a terminal, -o wide adding the
// rest under the same names, --no-headers, --show-labels; and what the default view reads.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { KubeClient } from "../../src/kube/client";
import type { ReadRequest, RequestSpec } from "../../src/kube/api-request";
import type { KubeObject } from "../../src/api/types";
import { runShow, type ShowOptions } from "../../src/commands/show";
import { buildStorageReport, type StorageInputs } from "../../src/report/storage-report";
import { labelsText, renderStorageReport } from "../../src/output/show";
import { claim, pod, storageClass, sts } from "../fixtures/builders";

/** The reference flow's StatefulSet after `set pgdata=2Gi`: one template, one replica, its claim still 1Gi, on a CSI class. */
function postgres(opts: { defaultClass?: boolean } = {}): StorageInputs {
  const pg = sts("postgresql-k8s", "prod")
    .withClaim("pgdata", "2Gi", opts.defaultClass ? undefined : "csi-hostpath-sc")
    .live("uid-pg");
  pg.spec.volumeClaimTemplates![0]!.metadata.labels = { "app.kubernetes.io/name": "postgresql" };
  const c = claim("pgdata-postgresql-k8s-0", "1Gi", { capacity: "1Gi", storageClass: "csi-hostpath-sc" });
  c.metadata.namespace = "prod";
  c.metadata.labels = { app: "postgresql-k8s", "app.kubernetes.io/name": "postgresql" };
  c.spec.volumeName = "pvc-7f3e2a9c-1b2d-4c5e-8f90-0a1b2c3d4e5f";
  const p = pod("postgresql-k8s-0", pg);
  p.metadata.namespace = "prod";
  const cls = storageClass("csi-hostpath-sc", { expandable: true, default: opts.defaultClass === true });
  cls.provisioner = "hostpath.csi.k8s.io";
  return { statefulSets: [pg], claims: [c], pods: [p], storageClasses: [cls], journals: [] };
}

const columns = (line: string) => [...line].length;
/** A table's header names, split where kubectl's tabwriter puts three spaces or more. */
const headers = (text: string) =>
  text
    .split("\n")
    .filter((l) => /^STATEFULSET|^NAMESPACE/.test(l))
    .map((l) => l.split(/ {3,}/));

describe("show's default table", () => {
  for (const defaultClass of [false, true]) {
    test(`fits 120 columns for a one-template StatefulSet (postgresql-k8s, pgdata, a CSI class${defaultClass ? ", the default" : ""})`, () => {
      const text = renderStorageReport(buildStorageReport(postgres({ defaultClass })), { wide: false, namespaces: false });
      assert.match(text, /template 2Gi, claim 1Gi \(smaller\)/);
      for (const line of text.split("\n")) assert.ok(columns(line) <= 120, `${columns(line)} columns: ${line}`);
    });
  }

  test("-o wide shows every default column, under the same name and in the same order, and adds the rest", () => {
    const report = buildStorageReport(postgres());
    for (const namespaces of [false, true]) {
      const plain = headers(renderStorageReport(report, { wide: false, namespaces }));
      const wide = headers(renderStorageReport(report, { wide: true, namespaces }));
      assert.equal(plain.length, 2);
      plain.forEach((names, i) => {
        assert.deepEqual(
          wide[i]!.filter((h) => names.includes(h)),
          names,
        );
        assert.ok(wide[i]!.length > names.length);
      });
    }
  });

  test("-o wide adds what kubectl's wide would: retention, access modes, pods, conditions, volumes", () => {
    const [templates, claims] = headers(renderStorageReport(buildStorageReport(postgres()), { wide: true, namespaces: false }));
    for (const h of ["RETENTION (DELETED/SCALED)", "ACCESS MODES", "VOLUME MODE", "ATTRIBUTES CLASS", "REPLICAS"]) assert.ok(templates!.includes(h), h);
    for (const h of ["ORDINAL", "REQUEST", "POD", "POD PHASE", "CONDITIONS", "VOLUME"]) assert.ok(claims!.includes(h), h);
  });

  test("--no-headers: the same rows without the header lines", () => {
    const report = buildStorageReport(postgres());
    const withHeaders = renderStorageReport(report, { wide: false, namespaces: false });
    const without = renderStorageReport(report, { wide: false, namespaces: false, noHeaders: true });
    assert.ok(!/STATEFULSET|TEMPLATE|CLAIM/.test(without), without);
    assert.deepEqual(
      without.split("\n").map((l) => l.replace(/ +/g, " ")),
      withHeaders
        .split("\n")
        .filter((l) => !l.startsWith("STATEFULSET"))
        .map((l) => l.replace(/ +/g, " ")),
    );
  });

  test("--show-labels: a LABELS column, last, in kubectl's form", () => {
    const inputs = postgres();
    const report = buildStorageReport(inputs);
    const labels = {
      template: () => inputs.statefulSets[0]!.spec.volumeClaimTemplates![0]!.metadata.labels,
      claim: () => inputs.claims[0]!.metadata.labels,
    };
    const text = renderStorageReport(report, { wide: false, namespaces: false, labels });
    const [templates, claims] = headers(text);
    assert.equal(templates!.at(-1), "LABELS");
    assert.equal(claims!.at(-1), "LABELS");
    assert.match(text, /\s{3}app\.kubernetes\.io\/name=postgresql\n/);
    assert.match(text, /\s{3}app=postgresql-k8s,app\.kubernetes\.io\/name=postgresql\n/);
    assert.equal(labelsText(undefined), "<none>");
    assert.equal(labelsText({ b: "2", a: "1" }), "a=1,b=2");
  });

  test("a claim left by a scale-down: its ordinal column is wide, so the default view says it in words", () => {
    const inputs = postgres();
    const left = claim("pgdata-postgresql-k8s-3", "1Gi", { capacity: "1Gi", storageClass: "csi-hostpath-sc" });
    left.metadata.namespace = "prod";
    const report = buildStorageReport({ ...inputs, claims: [...inputs.claims, left] });
    assert.match(renderStorageReport(report, { wide: false, namespaces: false }), /^statefulset\.apps\/postgresql-k8s: pgdata-postgresql-k8s-3 is a claim left by an earlier scale-down/m);
    assert.match(renderStorageReport(report, { wide: true, namespaces: false }), /3 \(leftover\)/);
  });
});

/** A client that answers every list from `objects` (by path) and records each request: path, query, accept. */
function recording(objects: Record<string, KubeObject[]>): { client: KubeClient; requests: RequestSpec[] } {
  const requests: RequestSpec[] = [];
  const client = {
    namespace: "prod",
    target: { context: "c", cluster: "c", server: "https://fake.invalid", namespace: "prod" },
    request: async <T>(spec: RequestSpec): Promise<T> => {
      requests.push(spec);
      return { metadata: {}, items: objects[spec.path] ?? [] } as T;
    },
    watch: async () => false,
  } as unknown as KubeClient;
  return { client, requests };
}

async function reads(output: string | undefined, pending = false): Promise<string[]> {
  const inputs = postgres();
  if (pending) inputs.claims[0]!.status = { phase: "Pending" };
  delete inputs.claims[0]!.spec.volumeName;
  const { client, requests } = recording({
    "/apis/apps/v1/namespaces/prod/statefulsets": inputs.statefulSets,
    "/api/v1/namespaces/prod/persistentvolumeclaims": inputs.claims,
    "/api/v1/namespaces/prod/pods": inputs.pods,
    "/apis/storage.k8s.io/v1/storageclasses": inputs.storageClasses,
  });
  const opts: ShowOptions = { flags: {}, allNamespaces: false, ...(output ? { output } : {}) };
  let out = "";
  const sink = { write: (s: string) => (out += s) };
  await runShow(opts, { streams: { in: process.stdin, out: sink, errOut: sink }, env: {}, platform: "linux", now: () => new Date(), connect: async () => client });
  assert.match(out, /postgresql-k8s/);
  return requests.map((spec) => {
    const r = spec as ReadRequest;
    const query = Object.entries(r.query ?? {})
      .filter(([k, v]) => v !== undefined && k !== "limit")
      .map(([k, v]) => `${k}=${v}`)
      .join("&");
    return `${r.path}${query ? `?${query}` : ""}${r.accept?.includes("PartialObjectMetadataList") ? " (metadata)" : ""}`;
  });
}

describe("what show reads", () => {
  test("the default view: the pods' metadata, only the kept volumes, and no events while every claim is bound", async () => {
    const paths = await reads(undefined);
    assert.ok(paths.includes("/api/v1/namespaces/prod/pods (metadata)"), paths.join("\n"));
    assert.ok(paths.includes("/api/v1/persistentvolumes?labelSelector=app.kubernetes.io/managed-by=kubectl-appstorage"), paths.join("\n"));
    assert.ok(!paths.some((p) => p.includes("/events")), paths.join("\n"));
    assert.equal(paths.length, 6, paths.join("\n"));
  });
  test("the default view reads events once a claim never bound (its notes say why it is Pending)", async () => {
    const paths = await reads(undefined, true);
    assert.ok(
      paths.some((p) => p.includes("/events")),
      paths.join("\n"),
    );
  });
  test("-o wide and -o json read whole pods, every volume and the events", async () => {
    for (const output of ["wide", "json"]) {
      const paths = await reads(output);
      assert.ok(paths.includes("/api/v1/namespaces/prod/pods"), paths.join("\n"));
      assert.ok(paths.includes("/api/v1/persistentvolumes"), paths.join("\n"));
      assert.ok(
        paths.some((p) => p.includes("/events")),
        paths.join("\n"),
      );
    }
  });
});
