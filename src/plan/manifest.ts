// `set -f FILE` and `diff -f FILE`: a rendered manifest (helm template, kustomize build, a GitOps
// repository) says what the claim templates should be. This turns one StatefulSet of it and the
// live object into directives that make the live templates equal to the manifest's, the templates
// it adds or removes with their mounts (./roll.ts), the refusals (a renamed template, a mount that
// moves or that nothing defines), and what the manifest changes beyond the claim
// templates, which this tool leaves for the next helm upgrade or sync. Pure.
import type { ClaimTemplate, KubeObject, StatefulSet } from "../api/types";
import type { Directive } from "./directive";
import type { ExistingClaimsOptions } from "./existing-claims-types";
import { defaultStorageClass, templateSize } from "./objects";
import { canonical, sameQuantity, tryParseQuantity } from "./quantity";
import { patchIsEmpty, relabelPatch } from "./relabel";
import type { ClaimEffect, Observed, Plan } from "./types";
import { editsBetween } from "./template-metadata";
import { templateSetChange } from "./roll";
import type { TemplateSetRequest } from "./roll-types";

export class ManifestError extends Error {}

/** The StatefulSets of the documents (a List's items included), and how many documents were something else. */
export function statefulSetsOf(documents: readonly unknown[]): { statefulSets: StatefulSet[]; skipped: Map<string, number> } {
  const statefulSets: StatefulSet[] = [];
  const skipped = new Map<string, number>();
  const visit = (doc: unknown) => {
    if (doc === null || doc === undefined) return;
    const o = doc as KubeObject & { items?: unknown[] };
    if (typeof o !== "object" || Array.isArray(o)) throw new ManifestError("a document is not a Kubernetes object (a map with apiVersion and kind)");
    if (typeof o.kind === "string" && o.kind.endsWith("List") && Array.isArray(o.items)) return o.items.forEach(visit);
    if (o.kind === "StatefulSet" && typeof o.apiVersion === "string" && o.apiVersion.startsWith("apps/")) {
      if (!o.metadata?.name) throw new ManifestError("a StatefulSet in the manifest has no metadata.name");
      statefulSets.push(o as unknown as StatefulSet);
      return;
    }
    const kind = typeof o.kind === "string" ? o.kind : "(no kind)";
    skipped.set(kind, (skipped.get(kind) ?? 0) + 1);
  };
  documents.forEach(visit);
  return { statefulSets, skipped };
}

const names = (sts: StatefulSet) => (sts.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name ?? "");

/**
 * What reading the cluster for a manifest's StatefulSet needs to know before the live object is
 * read: the storage classes and volume attributes classes its claim templates name, as directives
 * (the plan's own directives come from comparing it with the live object: manifestChange).
 */
export function manifestReads(wanted: StatefulSet): Directive[] {
  return (wanted.spec.volumeClaimTemplates ?? []).map((t) => ({
    claim: t.metadata.name ?? "",
    ...(t.spec.storageClassName !== undefined ? { storageClass: t.spec.storageClassName } : {}),
    ...(t.spec.volumeAttributesClassName !== undefined ? { volumeAttributesClass: t.spec.volumeAttributesClassName } : {}),
  }));
}

export interface ManifestChange {
  directives: Directive[];
  refusals: string[];
  /** What the manifest changes beyond the claim templates: left for helm upgrade or the GitOps tool. */
  leftAlone: string[];
  /** Claim templates added or removed, with the pod template that mounts them. */
  templateSet?: TemplateSetRequest;
}

/** The directive that makes `live` equal to `wanted` (only what differs), or undefined when they are equal. */
function directiveFor(live: ClaimTemplate, wanted: ClaimTemplate): Directive | undefined {
  const d: Directive = { claim: live.metadata.name ?? "" };
  const size = templateSize(wanted);
  if (size !== undefined && !sameQuantity(size, templateSize(live) ?? "")) d.size = canonical(size);
  if ((wanted.spec.storageClassName ?? "") !== (live.spec.storageClassName ?? "") && wanted.spec.storageClassName !== undefined) d.storageClass = wanted.spec.storageClassName;
  if ((wanted.spec.volumeAttributesClassName ?? "") !== (live.spec.volumeAttributesClassName ?? "") && wanted.spec.volumeAttributesClassName !== undefined)
    d.volumeAttributesClass = wanted.spec.volumeAttributesClassName;
  // As keys set and removed: the same words a user types (--template-label), and a label the manifest drops is removed.
  const labels = editsBetween(live.metadata.labels, wanted.metadata.labels);
  if (Object.keys(labels).length) d.labels = labels;
  const annotations = editsBetween(live.metadata.annotations, wanted.metadata.annotations);
  if (Object.keys(annotations).length) d.annotations = annotations;
  const modes = wanted.spec.accessModes;
  if (modes !== undefined && JSON.stringify(modes) !== JSON.stringify(live.spec.accessModes ?? [])) d.accessModes = [...modes];
  return Object.keys(d).length > 1 ? d : undefined;
}

/** Whether some field the manifest sets has another value live (fields only the live object has, the server's defaults, do not count). */
export function differs(wanted: unknown, live: unknown): boolean {
  if (wanted === null || typeof wanted !== "object") {
    // 1024Mi is 1Gi, 500m is 0.5: the server keeps a quantity as written, a manifest may write it another way.
    if (typeof wanted === "string" && typeof live === "string" && tryParseQuantity(wanted) && tryParseQuantity(live)) return !sameQuantity(wanted, live);
    return String(wanted) !== String(live);
  }
  if (live === null || typeof live !== "object") return true;
  if (Array.isArray(wanted)) return !Array.isArray(live) || wanted.length !== live.length || wanted.some((w, i) => differs(w, live[i]));
  return Object.entries(wanted).some(([k, v]) => v !== null && differs(v, (live as Record<string, unknown>)[k]));
}

/** The paths of the object the manifest changes, besides the claim templates and status. */
function leftAlone(live: StatefulSet, wanted: StatefulSet): string[] {
  const out: string[] = [];
  for (const key of ["labels", "annotations"] as const) if (wanted.metadata[key] && differs(wanted.metadata[key], live.metadata[key])) out.push(`metadata.${key}`);
  for (const [key, value] of Object.entries(wanted.spec ?? {})) {
    if (key === "volumeClaimTemplates" || value === null || value === undefined) continue;
    if (differs(value, (live.spec as Record<string, unknown>)[key])) out.push(key === "template" ? "spec.template (the pod template: the next upgrade rolls every pod)" : `spec.${key}`);
  }
  return out;
}

/** What `set -f` does to one live StatefulSet: the directives, what it refuses, what it leaves for helm or the GitOps tool. */
export function manifestChange(live: StatefulSet, wanted: StatefulSet): ManifestChange {
  const have = names(live);
  const want = names(wanted);
  const added = want.filter((n) => !have.includes(n));
  const removed = have.filter((n) => !want.includes(n));
  const refusals: string[] = [];
  let templateSet: TemplateSetRequest | undefined;
  if (added.length && removed.length) {
    refusals.push(
      `the manifest names claim template(s) ${added.join(", ")} where the cluster has ${removed.join(", ")}: a renamed template gives every pod new, empty volumes (the data stays on the old claims, and would have to be moved); keep the template's name (set -f changes its size, class, labels and annotations, and --migrate-existing moves the data to new volumes)`,
    );
  } else if (added.length || removed.length) {
    // Added or removed with the mounts that go with them: the one change whose pod template changes (./roll.ts).
    const set = templateSetChange(live, wanted, added, removed);
    refusals.push(...set.refusals);
    templateSet = set.request;
  }
  const byName = new Map((wanted.spec.volumeClaimTemplates ?? []).map((t) => [t.metadata.name ?? "", t]));
  const directives = refusals.length
    ? []
    : (live.spec.volumeClaimTemplates ?? []).flatMap((t) => {
        const w = byName.get(t.metadata.name ?? "");
        const d = w ? directiveFor(t, w) : undefined;
        return d ? [d] : [];
      });
  // With templates added or removed, the pod template is compared after the mounts this change makes.
  const after = templateSet ? { ...live, spec: { ...live.spec, template: templateSet.podTemplate } } : live;
  return { directives, refusals, leftAlone: leftAlone(after, wanted), ...(templateSet ? { templateSet } : {}) };
}

/** Claims in words: `data-db-0, data-db-1 (1Gi)`, grouped by what they show. */
function claimList(claims: readonly ClaimEffect[], what: (c: ClaimEffect) => string): string {
  const groups = new Map<string, string[]>();
  for (const c of claims) groups.set(what(c), [...(groups.get(what(c)) ?? []), c.name]);
  return [...groups].map(([shown, names]) => `${names.join(", ")} (${shown})`).join(", ");
}

/**
 * What the manifest asks of the existing claims that this change does not do without a flag, each
 * with the flag that does it: a template's class (--migrate-existing), its labels and annotations
 * (--relabel-existing). A claim keeps all of these otherwise: the StatefulSet controller reads its
 * template only to create it. Its size is said by the plan itself, as for every change
 * (src/output/plan.ts keptSizeLine).
 */
export function existingClaimNotes(plan: Pick<Plan, "claims" | "original" | "desired">, observed: Pick<Observed, "claims" | "storageClasses">, options: ExistingClaimsOptions | undefined): string[] {
  const defaultClass = defaultStorageClass(observed.storageClasses);
  const before = new Map((plan.original.spec.volumeClaimTemplates ?? []).map((t) => [t.metadata.name ?? "", t]));
  const raw = new Map(observed.claims.map((c) => [c.metadata.name ?? "", c]));
  const notes: string[] = [];
  for (const t of plan.desired.spec.volumeClaimTemplates ?? []) {
    const name = t.metadata.name ?? "";
    const claims = plan.claims.filter((c) => c.template === name);
    const cls = t.spec.storageClassName ?? defaultClass;
    if (!options?.migrate && cls) {
      const other = claims.filter((c) => c.storageClass !== undefined && c.storageClass !== cls);
      if (other.length)
        notes.push(
          `existing claim(s) ${claimList(other, (c) => `class ${c.storageClass}`)} keep their storage class (a claim's class never changes); template ${name} now names ${cls}: add --migrate-existing to move them, the data copied`,
        );
    }
    if (!options?.relabel) {
      const selector = plan.desired.spec.selector?.matchLabels ?? {};
      const differ = claims.filter((c) => {
        const claim = raw.get(c.name);
        return claim !== undefined && !patchIsEmpty(relabelPatch(claim, t, before.get(name), selector));
      });
      if (differ.length)
        notes.push(`existing claim(s) ${differ.map((c) => c.name).join(", ")} keep their labels and annotations; template ${name}'s differ: add --relabel-existing to patch them (no restart)`);
    }
  }
  return notes;
}
