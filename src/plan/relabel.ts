// --relabel-existing: the labels and annotations of the existing claims made their template's.
// The StatefulSet controller copies a template's labels and annotations into a claim only when it
// creates it, so a change of the template leaves the claims as they were; this patches them (their
// metadata only: no restart, nothing else of the claim). What the claim carries besides (the
// selector's labels the controller adds, the provisioner's and binder's annotations, the user's
// own) is kept; only the keys the change drops from the template are dropped from the claims.
// Decided from the claims as they are, so a rerun sends only what is still missing. Pure.
import type { ClaimTemplate, PersistentVolumeClaim, StatefulSet } from "../api/types";
import type { ClaimMetadataPatch, ClaimRelabel } from "./existing-claims-types";
import type { MapEdits } from "./template-metadata";
import type { ClaimEffect } from "./types";

/** The edits of one map: the template's keys where the claim differs, the dropped keys where it has them; never a key of `keep`. */
function mapPatch(now: Readonly<Record<string, string>> | undefined, want: Readonly<Record<string, string>> | undefined, dropped: readonly string[], keep: ReadonlySet<string>): MapEdits {
  const edits: MapEdits = {};
  const have = now ?? {};
  for (const key of Object.keys(want ?? {}).sort()) if (!keep.has(key) && have[key] !== want![key]) edits[key] = want![key]!;
  for (const key of [...dropped].sort()) if (!keep.has(key) && key in have) edits[key] = null;
  return edits;
}

const droppedKeys = (before: Record<string, string> | undefined, after: Record<string, string> | undefined) => Object.keys(before ?? {}).filter((k) => !(k in (after ?? {})));

/**
 * What one claim needs to carry its template's labels and annotations (`after`), dropping those
 * the change removed from the template (`before`). The selector's labels are the controller's: a
 * claim keeps them whatever the template says.
 */
export function relabelPatch(claim: Pick<PersistentVolumeClaim, "metadata">, after: ClaimTemplate, before: ClaimTemplate | undefined, selector: Readonly<Record<string, string>>): ClaimMetadataPatch {
  const keep = new Set(Object.keys(selector));
  const labels = mapPatch(claim.metadata.labels, after.metadata.labels, droppedKeys(before?.metadata.labels, after.metadata.labels), keep);
  const annotations = mapPatch(claim.metadata.annotations, after.metadata.annotations, droppedKeys(before?.metadata.annotations, after.metadata.annotations), new Set());
  return { ...(Object.keys(labels).length ? { labels } : {}), ...(Object.keys(annotations).length ? { annotations } : {}) };
}

export const patchIsEmpty = (p: ClaimMetadataPatch): boolean => !p.labels && !p.annotations;

export interface RelabelBase {
  original: StatefulSet;
  desired: StatefulSet;
  claims: readonly ClaimEffect[];
}

/** Every existing claim of the covered templates, with what it needs (an empty patch: already its template's). */
export function planRelabel(base: RelabelBase, claims: readonly PersistentVolumeClaim[], templates: readonly string[]): ClaimRelabel[] {
  const byName = new Map(claims.map((c) => [c.metadata.name ?? "", c]));
  const after = new Map((base.desired.spec.volumeClaimTemplates ?? []).map((t) => [t.metadata.name ?? "", t]));
  const before = new Map((base.original.spec.volumeClaimTemplates ?? []).map((t) => [t.metadata.name ?? "", t]));
  const selector = base.desired.spec.selector?.matchLabels ?? {};
  const covered = new Set(templates);
  return base.claims.flatMap((effect): ClaimRelabel[] => {
    const claim = byName.get(effect.name);
    const template = after.get(effect.template);
    if (!claim || !template || !covered.has(effect.template)) return [];
    return [
      {
        name: effect.name,
        template: effect.template,
        ordinal: effect.ordinal,
        uid: effect.uid,
        ...(claim.metadata.resourceVersion ? { resourceVersion: claim.metadata.resourceVersion } : {}),
        ...(claim.metadata.labels ? { labels: claim.metadata.labels } : {}),
        ...(claim.metadata.annotations ? { annotations: claim.metadata.annotations } : {}),
        patch: relabelPatch(claim, template, before.get(effect.template), selector),
      },
    ];
  });
}

/** What of a planned patch a claim still lacks as it is now (a rerun, or someone else's change meanwhile). */
export function remainingPatch(patch: ClaimMetadataPatch, claim: Pick<PersistentVolumeClaim, "metadata">): ClaimMetadataPatch {
  const left = (edits: MapEdits | undefined, now: Record<string, string> | undefined): MapEdits | undefined => {
    if (!edits) return undefined;
    const out: MapEdits = {};
    for (const [key, value] of Object.entries(edits)) if (value === null ? key in (now ?? {}) : now?.[key] !== value) out[key] = value;
    return Object.keys(out).length ? out : undefined;
  };
  const labels = left(patch.labels, claim.metadata.labels);
  const annotations = left(patch.annotations, claim.metadata.annotations);
  return { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) };
}

/** A patch in words: `labels tier=gold, old-; annotations backup=daily`. */
export function describeMetadataPatch(p: ClaimMetadataPatch): string {
  const words = (edits: MapEdits) =>
    Object.keys(edits)
      .sort()
      .map((k) => (edits[k] === null ? `${k}-` : `${k}=${edits[k]}`))
      .join(", ");
  return [p.labels && `labels ${words(p.labels)}`, p.annotations && `annotations ${words(p.annotations)}`].filter(Boolean).join("; ");
}
