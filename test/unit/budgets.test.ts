// PodDisruptionBudgets that would hold every move of --migrate-existing (pods without a controller
// while the StatefulSet is orphan-deleted): found up front, with the patch that makes an equal bound.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { PodDisruptionBudget } from "../../src/api/types";
import { budgetBlocksMoves, selects } from "../../src/plan/budgets";

const pdb = (spec: PodDisruptionBudget["spec"]): PodDisruptionBudget => ({ metadata: { name: "db", namespace: "team-a" }, spec });
const labels = { app: "db", tier: "data" };

describe("budgetBlocksMoves", () => {
  test("maxUnavailable 1 over 3 replicas: refused, with minAvailable 2 to patch in", () => {
    assert.equal(
      budgetBlocksMoves(pdb({ maxUnavailable: 1, selector: { matchLabels: { app: "db" } } }), labels, 3, "statefulset.apps/db"),
      `PodDisruptionBudget db (maxUnavailable 1) covers the pods of statefulset.apps/db: while a claim moves, its pods have no controller (the StatefulSet is deleted with --cascade=orphan and created again after), and the disruption controller allows no eviction under a maxUnavailable or percentage budget for pods without one, so no replica could be stopped; for the move, give it the same bound as an integer minAvailable (kubectl patch pdb db -n team-a --type merge -p '{"spec":{"maxUnavailable":null,"minAvailable":2}}') and put it back after, or pass --force`,
    );
  });
  test("percentages: maxUnavailable 34% of 3 is 1 down (2 up); minAvailable 50% of 3 is 2 up", () => {
    assert.match(budgetBlocksMoves(pdb({ maxUnavailable: "34%", selector: {} }), labels, 3, "statefulset.apps/db") ?? "", /"minAvailable":2\}/);
    assert.match(budgetBlocksMoves(pdb({ minAvailable: "50%", selector: {} }), labels, 3, "statefulset.apps/db") ?? "", /\(minAvailable 50%\).*"minAvailable":2\}/);
  });
  test("an integer minAvailable, a budget of other pods, or one with no selector holds nothing", () => {
    assert.equal(budgetBlocksMoves(pdb({ minAvailable: 2, selector: { matchLabels: { app: "db" } } }), labels, 3, "x"), undefined);
    assert.equal(budgetBlocksMoves(pdb({ maxUnavailable: 1, selector: { matchLabels: { app: "web" } } }), labels, 3, "x"), undefined);
    assert.equal(budgetBlocksMoves(pdb({ maxUnavailable: 1 }), labels, 3, "x"), undefined);
  });
});

describe("selects (policy/v1 label selectors)", () => {
  test("matchLabels and every operator of matchExpressions; an empty selector selects every pod", () => {
    assert.equal(selects({}, labels), true);
    assert.equal(selects({ matchLabels: { app: "db" }, matchExpressions: [{ key: "tier", operator: "In", values: ["data"] }] }, labels), true);
    assert.equal(selects({ matchExpressions: [{ key: "tier", operator: "NotIn", values: ["data"] }] }, labels), false);
    assert.equal(selects({ matchExpressions: [{ key: "zone", operator: "DoesNotExist" }] }, labels), true);
    assert.equal(selects({ matchExpressions: [{ key: "zone", operator: "Exists" }] }, labels), false);
    assert.equal(selects({ matchExpressions: [{ key: "app", operator: "Gt", values: ["1"] }] }, labels), false);
  });
});
