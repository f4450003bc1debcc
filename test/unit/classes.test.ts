// What a storage class can do, and what a volume is and where it can be used, as show and the plan say it. Pure.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { PersistentVolume } from "../../src/api/types";
import { classViews, volumeSource, volumeTopology } from "../../src/plan/classes";
import { classLines } from "../../src/output/classes";
import { claim, storageClass } from "../fixtures/builders";

const pv = (spec: Record<string, unknown>): PersistentVolume => ({ metadata: { name: "pv" }, spec });
const term = (...e: { key: string; operator?: string; values?: string[] }[]) => ({ matchExpressions: e });
const affinity = (...terms: ReturnType<typeof term>[]) => ({ required: { nodeSelectorTerms: terms } });

describe("a volume: what it is and where it can be used", () => {
  const cases: { name: string; spec: Record<string, unknown>; source?: string; where?: string }[] = [
    {
      name: "local-path's hostPath folder with node affinity",
      spec: { hostPath: { path: "/var/lp/x" }, nodeAffinity: affinity(term({ key: "kubernetes.io/hostname", operator: "In", values: ["vm"] })) },
      source: "hostPath",
      where: "node vm",
    },
    { name: "minikube's hostPath folder (any node)", spec: { hostPath: { path: "/tmp/hostpath-provisioner/ns/c" } }, source: "hostPath" },
    { name: "a local volume", spec: { local: { path: "/mnt/disk1" }, nodeAffinity: affinity(term({ key: "kubernetes.io/hostname", values: ["n1"] })) }, source: "local", where: "node n1" },
    {
      name: "a CSI volume of a zone",
      spec: { csi: { driver: "ebs.csi.aws.com" }, nodeAffinity: affinity(term({ key: "topology.ebs.csi.aws.com/zone", operator: "In", values: ["eu-west-1a"] })) },
      source: "csi ebs.csi.aws.com",
      where: "topology.ebs.csi.aws.com/zone=eu-west-1a",
    },
    {
      name: "either of two nodes",
      spec: { local: { path: "/x" }, nodeAffinity: affinity(term({ key: "kubernetes.io/hostname", values: ["a"] }), term({ key: "kubernetes.io/hostname", values: ["b"] })) },
      source: "local",
      where: "node a or node b",
    },
    {
      name: "affinity that names no single place (NotIn, several values): anywhere it allows",
      spec: { nfs: { server: "s", path: "/e" }, nodeAffinity: affinity(term({ key: "zone", operator: "NotIn", values: ["z"] }, { key: "pool", values: ["p", "q"] })) },
      source: "nfs",
    },
  ];
  for (const k of cases) {
    test(k.name, () => {
      assert.equal(volumeSource(pv(k.spec)), k.source);
      assert.equal(volumeTopology(pv(k.spec)), k.where);
    });
  }
});

describe("storage classes in words", () => {
  const lp = storageClass("local-path");
  lp.provisioner = "rancher.io/local-path";
  lp.volumeBindingMode = "WaitForFirstConsumer";
  const csi = storageClass("appstorage-csi", { default: true, expandable: true });
  csi.provisioner = "csi.appstorage.local";
  csi.volumeBindingMode = "WaitForFirstConsumer";
  const std = storageClass("standard");
  std.provisioner = "k8s.io/minikube-hostpath";
  std.volumeBindingMode = "Immediate";
  const claims = ["data-db-0", "data-db-1"].map((n, i) => ({
    ...claim(n, "1Gi", { storageClass: "local-path" }),
    spec: { ...claim(n, "1Gi").spec, storageClassName: "local-path", volumeName: `pv-${i}` },
  }));
  const volumes = [0, 1].map((i) => ({ metadata: { name: `pv-${i}` }, spec: { hostPath: { path: `/var/lp/${i}` }, nodeAffinity: affinity(term({ key: "kubernetes.io/hostname", values: ["vm"] })) } }));

  test("the three classes of the test node, a missing one left out, an unreadable one said so", () => {
    const views = classViews(["local-path", "appstorage-csi", "standard", "local-path", "nosuch", undefined, ""], [lp, csi, std], true, "appstorage-csi", claims, volumes);
    assert.deepEqual(
      views.map((v) => [v.name, v.default, v.expandable, v.volumeBindingMode, v.boundVolumes ?? null]),
      [
        ["local-path", false, false, "WaitForFirstConsumer", [{ where: "node vm", claims: ["data-db-0", "data-db-1"] }]],
        ["appstorage-csi", true, true, "WaitForFirstConsumer", null],
        ["standard", false, false, "Immediate", null],
      ],
    );
    assert.equal(
      classLines(views),
      [
        "storage class local-path (rancher.io/local-path): volumes do not expand (a claim gets bigger only by --migrate-existing: a new volume, the data copied); binds a claim once its first pod is scheduled, on that pod's node (WaitForFirstConsumer); volumes tied to node vm: data-db-0, data-db-1",
        "storage class appstorage-csi (csi.appstorage.local, the default): volumes expand (--resize-existing grows claims in place); binds a claim once its first pod is scheduled, on that pod's node (WaitForFirstConsumer)",
        "storage class standard (k8s.io/minikube-hostpath): volumes do not expand (a claim gets bigger only by --migrate-existing: a new volume, the data copied); binds a claim as soon as it is created (Immediate)",
        "",
      ].join("\n"),
    );
    const unread = classViews(["nosuch"], [], false, undefined, [], undefined);
    assert.equal(classLines(unread), "storage class nosuch: could not be read, so what it can do is unknown\n");
    assert.deepEqual(classViews(["local-path"], [lp], true, undefined, claims, undefined)[0]!.boundVolumes, undefined, "volumes not read: nothing said about them");
  });
});
