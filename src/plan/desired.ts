// The StatefulSet to create: the original, byte for byte, except its claim templates.
// Any change to spec.template changes the pod template hash and restarts every pod, so the
// spec is copied whole (unknown fields included) and only the claim templates are edited; the one
// exception is set -f adding or removing templates, whose mounts change with them (./roll.ts).
import type { ClaimTemplate, StatefulSet } from "../api/types";
import type { Directive } from "./directive";
import { historyAnnotation, historyValue, nextHistory } from "./history";
import { templateSize } from "./objects";
import { sameQuantity } from "./quantity";
import { applyEdits } from "./template-metadata";
import { templatesAfter } from "./roll";
import type { TemplateSetRequest } from "./roll-types";

/** Server-set metadata that must not be sent on create. */
const serverMetadata = ["uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"];
/** Finalizers the API server adds during deletion; a new object must not start with them. */
const deletionFinalizers = new Set(["orphan", "foregroundDeletion"]);

export const changeAnnotation = "appstorage.kubectl.io/last-change";

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** The object as a user would write it: no status, no server-set metadata. */
export function stripForCreate(sts: StatefulSet): StatefulSet {
  // What is dropped is left out before the copy: managedFields alone is often half the object.
  const { status: _status, ...rest } = sts;
  const metadata: Record<string, unknown> = { ...sts.metadata };
  for (const key of serverMetadata) delete metadata[key];
  const copy = clone({ ...rest, metadata } as StatefulSet);
  if (copy.metadata.finalizers) {
    copy.metadata.finalizers = copy.metadata.finalizers.filter((f) => !deletionFinalizers.has(f));
    if (copy.metadata.finalizers.length === 0) delete copy.metadata.finalizers;
  }
  copy.apiVersion = "apps/v1";
  copy.kind = "StatefulSet";
  return copy;
}

/** metadata with `key` set to the map, or without it when the map is empty (as a manifest that names none, or when every key was removed). */
function withMap(metadata: ClaimTemplate["metadata"], key: "labels" | "annotations", map: Record<string, string>): ClaimTemplate["metadata"] {
  const { [key]: _old, ...rest } = metadata;
  return Object.keys(map).length ? { ...rest, [key]: { ...map } } : rest;
}

export function applyDirective(t: ClaimTemplate, d: Directive): ClaimTemplate {
  const copy = clone(t);
  if (d.size !== undefined && !sameQuantity(templateSize(t) ?? "", d.size)) {
    copy.spec.resources = { ...(copy.spec.resources ?? {}), requests: { ...(copy.spec.resources?.requests ?? {}), storage: d.size } };
  }
  if (d.storageClass !== undefined) copy.spec.storageClassName = d.storageClass;
  if (d.volumeAttributesClass !== undefined) copy.spec.volumeAttributesClassName = d.volumeAttributesClass;
  if (d.labels !== undefined) copy.metadata = withMap(copy.metadata, "labels", applyEdits(t.metadata.labels, d.labels));
  if (d.annotations !== undefined) copy.metadata = withMap(copy.metadata, "annotations", applyEdits(t.metadata.annotations, d.annotations));
  if (d.accessModes !== undefined) copy.spec.accessModes = [...d.accessModes];
  return copy;
}

export interface ChangeRecord {
  by: string;
  at: string;
  from: string[];
  to: string[];
  /** What the history calls this change: the directives, or "undo to revision N". */
  cause?: string;
}

/**
 * The original, stripped, with the directives applied to its claim templates. Built on `stripped`
 * (by default a fresh stripped copy of the original) without copying it again: the parts that do
 * not change (the pod template and all but the changed claim templates) are shared with it.
 */
export function desiredStatefulSet(
  original: StatefulSet,
  directives: readonly Directive[],
  change?: ChangeRecord,
  stripped: StatefulSet = stripForCreate(original),
  set?: TemplateSetRequest,
): StatefulSet {
  const byClaim = new Map(directives.map((d) => [d.claim, d]));
  const edited = (stripped.spec.volumeClaimTemplates ?? []).map((t) => {
    const d = byClaim.get(t.metadata.name ?? "");
    return d ? applyDirective(t, d) : t;
  });
  // set -f adding or removing templates: the pod template changes with them, to mount them (./roll.ts).
  const templates = set ? templatesAfter(edited, set) : edited;
  const desired: StatefulSet = { ...stripped, spec: { ...stripped.spec, volumeClaimTemplates: templates, ...(set ? { template: set.podTemplate } : {}) } };
  if (change) {
    const { cause, ...last } = change;
    const history = nextHistory(original, templates, { at: change.at, by: change.by, change: cause ?? change.to.join(" ") });
    desired.metadata = { ...stripped.metadata, annotations: { ...(stripped.metadata.annotations ?? {}), [changeAnnotation]: JSON.stringify(last), [historyAnnotation]: historyValue(history) } };
  }
  return desired;
}

/**
 * The object without the annotations a change records (they carry timestamps): what diff
 * compares, so that it shows only real change.
 */
export function withoutChangeRecords(sts: StatefulSet): StatefulSet {
  // Only the annotations are copied: the rest is shared with the plan and only read.
  const { [changeAnnotation]: _change, [historyAnnotation]: _history, ...annotations } = sts.metadata.annotations ?? {};
  const { annotations: _all, ...metadata } = sts.metadata;
  return { ...sts, metadata: Object.keys(annotations).length ? { ...metadata, annotations } : metadata };
}
