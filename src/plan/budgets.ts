// PodDisruptionBudgets and a move of --migrate-existing. While a claim moves, the StatefulSet is
// deleted with --cascade=orphan (so that nothing re-creates the replica on its old claim), and its
// pods have no controller. Kubernetes' disruption controller counts the pods a maxUnavailable or a
// percentage budget expects from their controller's scale: with none, it allows no disruption, and
// the move could never evict a replica. An integer minAvailable needs no controller. Pure.
import type { PodDisruptionBudget } from "../api/types";
import { matchesSelector } from "./selector";

const operators: Record<string, (key: string, values: string) => string> = {
  In: (k, v) => `${k} in (${v})`,
  NotIn: (k, v) => `${k} notin (${v})`,
  Exists: (k) => k,
  DoesNotExist: (k) => `!${k}`,
};

/** Whether a label selector (matchLabels and matchExpressions) selects these labels; an empty selector selects everything (policy/v1). */
export function selects(selector: PodDisruptionBudget["spec"]["selector"], labels: Record<string, string>): boolean {
  if (!selector) return false;
  const expressions = (selector.matchExpressions ?? []).map((r) => operators[r.operator]?.(r.key, (r.values ?? []).join(",")));
  // An operator a selector of pods cannot have (Gt, Lt: node selectors'): it selects nothing.
  if (expressions.some((e) => e === undefined)) return false;
  return matchesSelector(labels, [...Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`), ...expressions].join(","));
}

/**
 * Why a budget over the StatefulSet's pods would block every move's eviction, with what to do; undefined
 * when it does not (an integer minAvailable, or it selects other pods).
 */
export function budgetBlocksMoves(pdb: PodDisruptionBudget, podLabels: Record<string, string>, replicas: number, ref: string): string | undefined {
  if (!selects(pdb.spec.selector, podLabels)) return undefined;
  const { maxUnavailable, minAvailable } = pdb.spec;
  const percent = (v: unknown) => typeof v === "string" && v.endsWith("%");
  if (maxUnavailable === undefined && !percent(minAvailable)) return undefined;
  const name = pdb.metadata.name ?? "";
  const ns = pdb.metadata.namespace ?? "";
  const rule = maxUnavailable !== undefined ? `maxUnavailable ${maxUnavailable}` : `minAvailable ${minAvailable}`;
  const down = maxUnavailable === undefined ? undefined : percent(maxUnavailable) ? Math.floor((replicas * Number.parseInt(String(maxUnavailable), 10)) / 100) : Number(maxUnavailable);
  const up = down !== undefined ? Math.max(replicas - Math.max(down, 1), 0) : Math.ceil((replicas * Number.parseInt(String(minAvailable), 10)) / 100);
  return `PodDisruptionBudget ${name} (${rule}) covers the pods of ${ref}: while a claim moves, its pods have no controller (the StatefulSet is deleted with --cascade=orphan and created again after), and the disruption controller allows no eviction under a maxUnavailable or percentage budget for pods without one, so no replica could be stopped; for the move, give it the same bound as an integer minAvailable (kubectl patch pdb ${name} -n ${ns} --type merge -p '{"spec":{"maxUnavailable":null,"minAvailable":${up}}}') and put it back after, or pass --force`;
}
