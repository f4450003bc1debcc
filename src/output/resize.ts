// How the plan shows the work on existing claims: the per-claim "after" column, the growth
// against each quota, the restart order, and the lines `set` prints when it is done.
import { restartOrder } from "../plan/resize";
import { describeMetadataPatch, patchIsEmpty } from "../plan/relabel";
import type { ClaimEffect, Plan } from "../plan/types";
import type { ExistingClaim, ExistingClaimsResult, ResizeState } from "../plan/existing-claims-types";

export const existingStepText = {
  "grow-claims": "grow the existing claims (patch spec.resources.requests.storage / volumeAttributesClassName) before the StatefulSet is touched",
  "label-claims": "make the labels and annotations of the existing claims their template's (patch metadata only, no restart) before the StatefulSet is touched",
  "wait-resize": "follow each claim until its capacity reaches its request, or it waits for a pod restart (FileSystemResizePending)",
  "restart-pods": "restart the pods of FileSystemResizePending claims through the Eviction API, one at a time, highest ordinal first",
} as const;

const stateText: Record<ResizeState, string> = {
  none: "",
  requested: "waiting for the resizer",
  resizing: "resizing",
  "filesystem-resize-pending": "FileSystemResizePending",
  infeasible: "resize infeasible",
};

function after(plan: Plan, c: ExistingClaim): string {
  const options = plan.existing!.options;
  const parts: string[] = [];
  if (c.grow) parts.push(`grows ${c.grow.from} -> ${c.grow.to}`);
  if (c.setVolumeAttributesClass) parts.push(`attributes class ${c.setVolumeAttributesClass.from ?? "<none>"} -> ${c.setVolumeAttributesClass.to}`);
  if (parts.length === 0) parts.push(options.resize ? `already ${c.request ?? "<no size>"}` : `keeps ${c.volumeAttributesClass ?? "no attributes class"}`);
  if (c.state !== "none") parts.push(stateText[c.state]);
  if (options.restartPods && c.state === "filesystem-resize-pending") parts.push(c.pod && !c.leftover ? `restart pod ${c.pod}` : "no pod to restart");
  return parts.join(", ");
}

/** The "after" column for a claim the resize work covers, or undefined. */
export function existingAfter(plan: Plan, claim: ClaimEffect): string | undefined {
  const c = plan.existing?.claims.find((x) => x.name === claim.name);
  return c ? after(plan, c) : undefined;
}

/** What --relabel-existing does to a claim, for the end of its "after" column ("" when it does not cover it). */
export function relabelAfter(plan: Plan, claim: ClaimEffect): string {
  const r = plan.existing?.relabel?.find((x) => x.name === claim.name);
  if (!r) return "";
  return patchIsEmpty(r.patch) ? "; labels and annotations already its template's" : `; gets ${describeMetadataPatch(r.patch)}`;
}

/** Lines under the claims table: the total growth, each quota, the restart order. */
export function renderExisting(plan: Plan): string {
  const e = plan.existing;
  if (!e) return "";
  const lines: string[] = [];
  if (!plan.steps.includes("create") && !plan.steps.includes("verify")) lines.push("the StatefulSet is not re-created: its claim templates already are as asked");
  const growing = e.claims.filter((c) => c.grow);
  if (growing.length) lines.push(`existing claims: ${growing.length} grow, adding ${e.growth} to requests.storage`);
  for (const q of e.quotas) lines.push(`resourcequota/${q.quota}: ${q.resource} used ${q.used} of ${q.hard}, growth needs ${q.needed} (${q.left} left): ${q.fits ? "fits" : "does not fit"}`);
  const vac = e.claims.filter((c) => c.setVolumeAttributesClass);
  if (vac.length) lines.push(`existing claims: ${vac.length} get another volume attributes class`);
  const relabel = (e.relabel ?? []).filter((c) => !patchIsEmpty(c.patch));
  if (e.options.relabel) lines.push(`existing claims: ${relabel.length} of ${e.relabel?.length ?? 0} get their template's labels and annotations (a patch of their metadata, no restart)`);
  if (e.options.restartPods) {
    const pending = restartOrder(e.claims.filter((c) => c.state === "filesystem-resize-pending")).map((c) => c.pod);
    lines.push(`pods restarted one at a time, highest ordinal first, once their claim reports FileSystemResizePending${pending.length ? ` (now: ${[...new Set(pending)].join(", ")})` : ""}`);
  }
  return lines.length ? `${lines.join("\n")}\n` : "";
}

/** kubectl-style lines for what changed: `persistentvolumeclaim/X patched`, `pod/Y evicted`. */
export function existingResultLines(result: ExistingClaimsResult | undefined): string {
  if (!result) return "";
  const patched = new Set(result.claims.filter((c) => c.patched).map((c) => c.name));
  const lines = [
    ...[...patched].map((name) => `persistentvolumeclaim/${name} patched`),
    // As kubectl label and kubectl annotate say it; a claim also grown was said patched already.
    ...(result.relabeled ?? []).filter((r) => !patched.has(r.name)).map((r) => `persistentvolumeclaim/${r.name} ${r.labels ? "labeled" : "annotated"}`),
    ...result.restarted.map((r) => `pod/${r.pod} evicted`),
  ];
  return lines.length ? `${lines.join("\n")}\n` : "";
}
