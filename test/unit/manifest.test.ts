import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { StatefulSet } from "../../src/api/types";
import { desiredStatefulSet } from "../../src/plan/desired";
import { formatDirective } from "../../src/plan/directive";
import { differs, manifestChange, statefulSetsOf } from "../../src/plan/manifest";
import { sts } from "../fixtures/builders";

const live = () => {
  const s = sts("db").withClaim("pgdata", "1Gi", "standard").build();
  // What the server adds: defaults the manifest leaves out.
  s.spec.volumeClaimTemplates![0]!.spec.volumeMode = "Filesystem";
  s.spec.revisionHistoryLimit = 10;
  return s;
};
const withTemplate = (s: StatefulSet, edit: (t: NonNullable<StatefulSet["spec"]["volumeClaimTemplates"]>[number]) => void) => {
  edit(s.spec.volumeClaimTemplates![0]!);
  return s;
};

describe("statefulSetsOf: the documents of helm template, kustomize build or a List", () => {
  test("StatefulSets kept, in order; Lists opened; other kinds counted; empty documents ignored", () => {
    const a = sts("a").build();
    const b = sts("b").build();
    const { statefulSets, skipped } = statefulSetsOf([
      { apiVersion: "v1", kind: "Service", metadata: { name: "a" } },
      a,
      null,
      { apiVersion: "v1", kind: "List", items: [b, { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } }] },
    ]);
    assert.deepEqual(
      statefulSets.map((s) => s.metadata.name),
      ["a", "b"],
    );
    assert.deepEqual(
      [...skipped],
      [
        ["Service", 1],
        ["ConfigMap", 1],
      ],
    );
  });
  test("a document that is not an object, or a StatefulSet without a name, is refused", () => {
    assert.throws(() => statefulSetsOf(["text"]), /a document is not a Kubernetes object/);
    assert.throws(() => statefulSetsOf([{ apiVersion: "apps/v1", kind: "StatefulSet", metadata: {} }]), /has no metadata.name/);
  });
});

describe("manifestChange: the directives that make the live claim templates the manifest's", () => {
  const cases: [what: string, wanted: StatefulSet, directives: string[]][] = [
    ["the same manifest: nothing", sts("db").withClaim("pgdata", "1Gi", "standard").build(), []],
    ["1024Mi is 1Gi: nothing", sts("db").withClaim("pgdata", "1024Mi", "standard").build(), []],
    ["a size", sts("db").withClaim("pgdata", "2Gi", "standard").build(), ["pgdata=2Gi"]],
    ["a class", sts("db").withClaim("pgdata", "1Gi", "fast").build(), ["pgdata=fast"]],
    [
      "labels (a chart's version label)",
      withTemplate(sts("db").withClaim("pgdata", "2Gi", "standard").build(), (t) => (t.metadata.labels = { "helm.sh/chart": "db-2.0.0" })),
      ["pgdata=2Gi --template-label=pgdata:helm.sh/chart=db-2.0.0"],
    ],
    ["annotations", withTemplate(sts("db").withClaim("pgdata", "1Gi", "standard").build(), (t) => (t.metadata.annotations = { backup: "daily" })), ["--template-annotation=pgdata:backup=daily"]],
    ["access modes", withTemplate(sts("db").withClaim("pgdata", "1Gi", "standard").build(), (t) => (t.spec.accessModes = ["ReadWriteOncePod"])), ["pgdata=access=ReadWriteOncePod"]],
  ];
  for (const [what, wanted, directives] of cases) {
    test(what, () => {
      const change = manifestChange(live(), wanted);
      assert.deepEqual(change.refusals, []);
      assert.deepEqual(change.directives.map(formatDirective), directives);
      // Applied, the live templates equal the manifest's in every field it sets.
      const desired = desiredStatefulSet(live(), change.directives);
      assert.equal(differs(wanted.spec.volumeClaimTemplates, desired.spec.volumeClaimTemplates), false);
    });
  }

  test("labels the manifest drops are dropped", () => {
    const l = withTemplate(live(), (t) => (t.metadata.labels = { old: "x" }));
    const change = manifestChange(l, sts("db").withClaim("pgdata", "1Gi", "standard").build());
    assert.deepEqual(change.directives.map(formatDirective), ["--template-label=pgdata:old-"]);
    assert.equal(desiredStatefulSet(l, change.directives).spec.volumeClaimTemplates![0]!.metadata.labels, undefined);
  });

  // Templates added or removed with their mounts are planned (test/unit/roll.test.ts); these stay refused.
  const refused: [what: string, wanted: StatefulSet, why: RegExp][] = [
    ["an added template nothing mounts", sts("db").withClaim("pgdata", "1Gi").withClaim("logs", "1Gi").build(), /^the manifest adds claim template logs but no container .* nothing would use it/],
    [
      "a renamed template",
      sts("db").withClaim("data", "1Gi").build(),
      /^the manifest names claim template\(s\) data where the cluster has pgdata: a renamed template gives every pod new, empty volumes/,
    ],
  ];
  for (const [what, wanted, why] of refused) {
    test(`refuses ${what}`, () => {
      const change = manifestChange(live(), wanted);
      assert.equal(change.refusals.length, 1);
      assert.match(change.refusals[0]!, why);
      assert.deepEqual(change.directives, [], "nothing is planned");
    });
  }

  test("what it changes beyond the claim templates is named, server defaults are not", () => {
    const wanted = sts("db").withClaim("pgdata", "1Gi", "standard").replicas(3).build();
    wanted.spec.template.metadata = { ...wanted.spec.template.metadata, annotations: { rollout: "v2" } };
    wanted.metadata.labels = { ...wanted.metadata.labels, "app.kubernetes.io/version": "2" };
    assert.deepEqual(manifestChange(live(), wanted).leftAlone, ["metadata.labels", "spec.replicas", "spec.template (the pod template: the next upgrade rolls every pod)"]);
    assert.deepEqual(manifestChange(live(), sts("db").withClaim("pgdata", "1Gi", "standard").build()).leftAlone, [], "revisionHistoryLimit and volumeMode are the server's defaults");
  });
});
