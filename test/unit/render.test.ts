import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseDirectives } from "../../src/plan/directive";
import { buildPlan } from "../../src/plan/plan";
import { unifiedDiff } from "../../src/output/diff";
import { formatOrdinals } from "../../src/output/ordinals";
import { renderPlan } from "../../src/output/plan";
import { renderTable } from "../../src/output/table";
import { toJson, toYaml } from "../../src/output/yaml";
import { claim, pod, storageClass, sts } from "../fixtures/builders";
import { assertGolden } from "../fixtures/golden";

function referencePlan() {
  const s = sts("postgresql-k8s", "prod").withClaim("pgdata", "1Gi").withClaim("logs", "512Mi", "standard").replicas(2).live("uid-pg", "1234");
  return buildPlan(
    {
      statefulSet: s,
      claims: [
        claim("pgdata-postgresql-k8s-0", "1Gi", { capacity: "1Gi", storageClass: "standard" }),
        claim("pgdata-postgresql-k8s-1", "1536Mi", { capacity: "1536Mi", storageClass: "standard" }),
        claim("logs-postgresql-k8s-0", "512Mi", { phase: "Pending", storageClass: "standard" }),
        claim("pgdata-postgresql-k8s-4", "1Gi", { capacity: "1Gi", storageClass: "standard" }),
      ],
      pods: [pod("postgresql-k8s-0", s), pod("postgresql-k8s-1", s)],
      storageClasses: [storageClass("standard", { default: true }), storageClass("fast-ssd", { expandable: true })],
      user: "alice",
      now: "2026-11-29T12:00:00.000Z",
    },
    { namespace: "prod", name: "postgresql-k8s", directives: parseDirectives(["pgdata=2Gi,fast-ssd"]), force: false },
  );
}

/** Issue 18: class "nosuch" never existed; OrderedReady made pod 0 and its claim and stopped there. */
function stuckPlan() {
  const s = sts("db", "shop").withClaim("data", "2Gi", "nosuch").replicas(3).live("uid-db", "77");
  const leftover = claim("data-db-4", "2Gi", { phase: "Pending", storageClass: "nosuch" });
  return buildPlan(
    {
      statefulSet: s,
      claims: [claim("data-db-0", "2Gi", { phase: "Pending", storageClass: "nosuch" }), leftover],
      pods: [pod("db-0", s)],
      storageClasses: [storageClass("bars-expandable", { expandable: true })],
      user: "alice",
      now: "2026-11-29T12:00:00.000Z",
    },
    { namespace: "shop", name: "db", directives: parseDirectives(["data=1Gi,bars-expandable"]), force: false },
  );
}

describe("rendering (golden files)", () => {
  test("the plan names the ordinals that get the new template, why a claim is stuck and what would replace it", () => assertGolden("plan-pending.txt", renderPlan(stuckPlan())));
  test("the plan, as set shows it before asking", () => assertGolden("plan.txt", renderPlan(referencePlan())));
  test("the plan as YAML (-o yaml)", () => assertGolden("plan.yaml", toYaml(referencePlan())));
  test("the diff of the StatefulSet", () => {
    const plan = referencePlan();
    assertGolden("diff.txt", unifiedDiff("live/x", "merged/x", plan.original, plan.desired, false));
  });
  test("colour only when asked", () => {
    const plan = referencePlan();
    const coloured = unifiedDiff("live/x", "merged/x", plan.original, plan.desired, true);
    assert.match(coloured, /\u001b\[3\dm-/);
    assert.doesNotMatch(unifiedDiff("live/x", "merged/x", plan.original, plan.desired, false), /\u001b/);
  });
  test("ordinals as a person reads them", () => {
    const cases: [number[], string][] = [
      [[], ""],
      [[3], "3"],
      [[1, 2], "1 and 2"],
      [[0, 2, 5], "0, 2 and 5"],
      [[1, 2, 3, 4], "1 to 4"],
      [[0, 1, 2, 7, 9, 10], "0 to 2, 7, 9 and 10"],
    ];
    for (const [ordinals, text] of cases) assert.equal(formatOrdinals(ordinals), text, JSON.stringify(ordinals));
  });
  test("no diff for equal objects", () => assert.equal(unifiedDiff("a", "b", { a: 1 }, { a: 1 }, false), ""));
  test("a kubectl-style table", () =>
    assertGolden(
      "table.txt",
      renderTable(
        ["name", "size"],
        [
          ["a", "1Gi"],
          ["long-name", "10Gi"],
        ],
      ),
    ));
  test("JSON is indented like kubectl's", () => assert.equal(toJson({ a: [1] }), '{\n    "a": [\n        1\n    ]\n}\n'));
});
