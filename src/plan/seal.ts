// Reviewed plans (`diff -o json > plan.json`, then `set --plan plan.json`): a plan carries the
// sha256 of its own content, so a file that was edited after review, or is not a plan of this
// tool, is refused before anything is read from the cluster. Pure.
import { createHash } from "node:crypto";
import type { StatefulSet } from "../api/types";
import { stripForCreate } from "./desired";
import { apiVersion, type Plan, type PlanList } from "./types";
import { statefulSetRef } from "../refs";

/** JSON with keys in a fixed order, so the digest does not depend on how the file was re-serialised. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * The sha256 of the object as a user would write it (no status, no server-set metadata): equal
 * for two reads between which only the controllers' status updates happened, so a delete guarded
 * by the first read's resourceVersion can be retried at the second's without planning anew.
 * `stripped`: the object already stripped (stripForCreate), when the caller has it.
 */
export function contentDigest(sts: StatefulSet, stripped: StatefulSet = stripForCreate(sts)): string {
  return `sha256:${createHash("sha256").update(canonical(stripped)).digest("hex")}`;
}

export function planDigest(plan: Plan): string {
  const { digest: _digest, ...content } = plan;
  return `sha256:${createHash("sha256").update(canonical(content)).digest("hex")}`;
}

export function seal(plan: Plan): Plan {
  return { ...plan, digest: planDigest(plan) };
}

export function sealList(plans: readonly Plan[]): PlanList {
  return { apiVersion, kind: "PlanList", items: plans.map(seal) };
}

export class PlanFileError extends Error {}

/** The plans of a plan file (a Plan or a PlanList), each checked against its digest. */
export function plansOfDocument(doc: unknown, file: string): Plan[] {
  const d = doc as { apiVersion?: unknown; kind?: unknown; items?: unknown } | null;
  const fix = "make a new plan with kubectl appstorage diff ... -o json";
  if (d === null || typeof d !== "object") throw new PlanFileError(`${file} is not a plan of kubectl appstorage (no object in it): ${fix}`);
  if (d.kind !== "Plan" && d.kind !== "PlanList") throw new PlanFileError(`${file} is not a plan of kubectl appstorage (kind ${String(d.kind)}, expected Plan or PlanList): ${fix}`);
  if (d.apiVersion !== apiVersion)
    throw new PlanFileError(`${file} has apiVersion ${String(d.apiVersion)}, which this version of kubectl appstorage does not apply (it applies ${apiVersion}): ${fix}`);
  const plans = d.kind === "Plan" ? [d as Plan] : Array.isArray(d.items) ? (d.items as Plan[]) : [];
  if (plans.length === 0) throw new PlanFileError(`${file} holds no plan: ${fix}`);
  for (const plan of plans) {
    if (plan?.kind !== "Plan" || plan.apiVersion !== apiVersion || !plan.target || !Array.isArray(plan.steps) || !plan.desired) {
      throw new PlanFileError(`${file} holds an item that is not a plan of kubectl appstorage: ${fix}`);
    }
    if (!plan.digest) throw new PlanFileError(`the plan of ${statefulSetRef(plan.target.name)} in ${file} has no digest, so it cannot be shown to be the plan that was reviewed: ${fix}`);
    if (plan.digest !== planDigest(plan)) {
      throw new PlanFileError(`the plan of ${statefulSetRef(plan.target.name)} in ${file} was changed after it was made (its digest no longer matches its content); nothing was changed: ${fix}`);
    }
  }
  return plans;
}
