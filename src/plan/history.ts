// The history of a StatefulSet's claim templates, kept with the object itself (an annotation),
// so it survives the re-create and goes away with the object. Revision 1 is the templates before
// the first recorded change; every change (an undo too) adds a revision; the last 10 changes
// are kept. Pure.
import type { ClaimTemplate, StatefulSet } from "../api/types";
import { sameClaimTemplates } from "./objects";

export const historyAnnotation = "appstorage.kubectl.io/history";
/** Changes kept: the revisions are the templates before the oldest kept change and after each. */
export const historyLimit = 10;

export interface Revision {
  revision: number;
  /** When this revision's templates were put in place, and by whom (absent for revision 1). */
  at?: string;
  by?: string;
  /** What made it: the directives of a set, or "undo to revision N". */
  change?: string;
  /** Its templates carry their labels and annotations (revisions recorded before they did hold name and spec only). */
  labelled?: true;
  templates: ClaimTemplate[];
}

/** A claim template as the history keeps it: its name, labels, annotations and spec, nothing the server adds. */
function compact(templates: readonly ClaimTemplate[] | undefined): ClaimTemplate[] {
  return (templates ?? []).map((t) => {
    const { labels, annotations } = t.metadata;
    return {
      metadata: { name: t.metadata.name, ...(labels && Object.keys(labels).length ? { labels } : {}), ...(annotations && Object.keys(annotations).length ? { annotations } : {}) },
      spec: t.spec,
    };
  });
}

/** A revision's templates are these: its labels and annotations count only where it recorded them. */
export function sameAsRevision(revision: Revision, templates: readonly ClaimTemplate[]): boolean {
  return sameClaimTemplates(revision.templates, templates, !revision.labelled);
}

/** The recorded revisions, oldest first; [] when none is recorded (or the annotation is unreadable). */
export function recordedHistory(sts: StatefulSet): Revision[] {
  const text = sts.metadata.annotations?.[historyAnnotation];
  if (!text) return [];
  try {
    const parsed = JSON.parse(text) as { revisions?: Revision[] };
    return Array.isArray(parsed.revisions) ? parsed.revisions : [];
  } catch {
    return [];
  }
}

/**
 * The history as a person reads it: the recorded revisions, and the current templates as the
 * newest revision when they are not the last recorded one (the object was re-created by hand).
 */
export function historyOf(sts: StatefulSet): Revision[] {
  const recorded = recordedHistory(sts);
  const current = compact(sts.spec.volumeClaimTemplates);
  const last = recorded[recorded.length - 1];
  if (last && sameAsRevision(last, current)) return recorded;
  // Before any recorded change, revision 1 dates from the object's creation.
  const at = last ? undefined : sts.metadata.creationTimestamp;
  return [...recorded, { revision: (last?.revision ?? 0) + 1, ...(at ? { at } : {}), ...(last ? { change: "changed outside kubectl appstorage" } : {}), labelled: true, templates: current }];
}

/** The history after a change from `before` to `after` templates: one more revision, bounded. */
export function nextHistory(before: StatefulSet, after: readonly ClaimTemplate[], record: { at: string; by: string; change: string }): Revision[] {
  const revisions = historyOf(before);
  const next = [...revisions, { revision: revisions[revisions.length - 1]!.revision + 1, at: record.at, by: record.by, change: record.change, labelled: true as const, templates: compact(after) }];
  return next.slice(-(historyLimit + 1));
}

export function historyValue(revisions: readonly Revision[]): string {
  return JSON.stringify({ revisions });
}
