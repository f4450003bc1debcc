// What `show` reports: each StatefulSet's claim templates and every claim that belongs to it,
// with where a claim differs from its template. Pure: built from lists read once.
// The JSON/YAML form (kind StorageReport) is a documented, versioned schema (README "show").
import type { PersistentVolumeClaim, Pod, StatefulSet, StorageClass } from "../kube/types";
import { finishCommand } from "../plan/journal";
import { defaultStorageClass, indexObjects, memberClaims, type ObjectIndex, ordinalStart, replicasOf } from "../plan/objects";
import { compareQuantities, parseQuantity, sameQuantity } from "../plan/quantity";
import { apiVersion, type Journal } from "../plan/types";

export interface TemplateView {
  name: string;
  size?: string;
  /** The class named by the template, or the cluster default it resolves to. */
  storageClass?: string;
  defaultClass: boolean;
  accessModes: string[];
  volumeMode?: string;
  volumeAttributesClass?: string;
  /** allowVolumeExpansion of the class; null when the class is unknown. */
  expandable: boolean | null;
}

export interface ClaimView {
  name: string;
  template: string;
  ordinal: number;
  phase?: string;
  request?: string;
  capacity?: string;
  storageClass?: string;
  accessModes: string[];
  volumeAttributesClass?: string;
  /** Conditions that matter to a resize: Resizing, FileSystemResizePending, ModifyingVolume. */
  conditions: string[];
  pod?: string;
  podPhase?: string;
  /** Beyond replicas (or below ordinals.start): left by an earlier scale-down. */
  leftover: boolean;
  /** Where the claim differs from its template, e.g. "template 2Gi, claim 1Gi". */
  differences: string[];
}

export interface PendingChange {
  request: string[];
  step: string;
  startedAt: string;
  by: string;
  leaseExpires: string;
  finishCommand: string;
}

export interface StatefulSetStorage {
  namespace: string;
  name: string;
  uid?: string;
  /** false when only an interrupted change's journal knows it (the object is deleted). */
  exists: boolean;
  replicas: number;
  ordinalsStart: number;
  retentionPolicy: { whenDeleted: string; whenScaled: string };
  templates: TemplateView[];
  claims: ClaimView[];
  pendingChange?: PendingChange;
}

export interface StorageReport {
  apiVersion: typeof apiVersion;
  kind: "StorageReport";
  items: StatefulSetStorage[];
}

export interface StorageInputs {
  statefulSets: StatefulSet[];
  claims: PersistentVolumeClaim[];
  pods: Pod[];
  storageClasses: StorageClass[];
  journals: Journal[];
}

const interestingConditions = new Set(["Resizing", "FileSystemResizePending", "ModifyingVolume", "ControllerResizeError", "NodeResizeError"]);

function templateView(t: NonNullable<StatefulSet["spec"]["volumeClaimTemplates"]>[number], classes: Map<string, StorageClass>, defaultClass: string | undefined): TemplateView {
  // A template with no storageClassName gets the default class at claim creation; "" means none.
  const named = t.spec.storageClassName;
  const resolved = named === undefined ? defaultClass : named || undefined;
  const cls = resolved ? classes.get(resolved) : undefined;
  return {
    name: t.metadata.name ?? "",
    size: t.spec.resources?.requests?.storage,
    storageClass: resolved,
    defaultClass: named === undefined && resolved !== undefined,
    accessModes: t.spec.accessModes ?? [],
    volumeMode: t.spec.volumeMode,
    volumeAttributesClass: t.spec.volumeAttributesClassName,
    expandable: cls ? cls.allowVolumeExpansion === true : null,
  };
}

/**
 * Kubernetes names are ASCII: ordered by code unit, as kubectl orders them. (localeCompare would
 * give the same order for them, but its first call initialises a collator: milliseconds.)
 */
function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function differences(t: TemplateView, c: PersistentVolumeClaim): string[] {
  const out: string[] = [];
  const request = c.spec.resources?.requests?.storage;
  // Equal strings are equal quantities: most claims are, and parsing them all costs milliseconds.
  if (t.size && request && t.size !== request && !sameQuantity(t.size, request)) {
    let direction = "";
    try {
      direction = compareQuantities(parseQuantity(request), parseQuantity(t.size)) < 0 ? " (smaller)" : " (larger)";
    } catch {
      // unparsable: no direction
    }
    out.push(`template ${t.size}, claim ${request}${direction}`);
  }
  const capacity = c.status?.capacity?.storage;
  if (request && capacity && request !== capacity && !sameQuantity(request, capacity) && c.status?.phase === "Bound") out.push(`requested ${request}, capacity ${capacity}`);
  if (t.storageClass && c.spec.storageClassName !== undefined && c.spec.storageClassName !== t.storageClass) {
    out.push(`template class ${t.storageClass}, claim class ${c.spec.storageClassName || "<none>"}`);
  }
  const vac = c.spec.volumeAttributesClassName;
  if ((t.volumeAttributesClass ?? "") !== (vac ?? "")) out.push(`template attributes class ${t.volumeAttributesClass ?? "<none>"}, claim ${vac ?? "<none>"}`);
  return out;
}

function describe(sts: StatefulSet, exists: boolean, index: ObjectIndex, classes: Map<string, StorageClass>, defaultClass: string | undefined): StatefulSetStorage {
  const ns = sts.metadata.namespace ?? "";
  const name = sts.metadata.name ?? "";
  const start = ordinalStart(sts);
  const replicas = replicasOf(sts);
  const templates = (sts.spec.volumeClaimTemplates ?? []).map((t) => templateView(t, classes, defaultClass));
  const byTemplate = new Map(templates.map((t) => [t.name, t]));
  const claims: ClaimView[] = [];
  for (const { claim: c, template, ordinal, pod, leftover } of memberClaims(sts, index, ns)) {
    const t = byTemplate.get(template)!;
    claims.push({
      name: c.metadata.name!,
      template: t.name,
      ordinal,
      phase: c.status?.phase,
      request: c.spec.resources?.requests?.storage,
      capacity: c.status?.capacity?.storage,
      storageClass: c.spec.storageClassName,
      accessModes: c.spec.accessModes ?? [],
      volumeAttributesClass: c.spec.volumeAttributesClassName,
      conditions: (c.status?.conditions ?? []).filter((x) => interestingConditions.has(x.type) && x.status === "True").map((x) => x.type),
      pod: pod?.metadata.name,
      podPhase: pod?.status?.phase,
      leftover,
      differences: differences(t, c),
    });
  }
  claims.sort((a, b) => a.ordinal - b.ordinal || byName(a.template, b.template));
  return {
    namespace: ns,
    name,
    ...(exists && sts.metadata.uid ? { uid: sts.metadata.uid } : {}),
    exists,
    replicas,
    ordinalsStart: start,
    retentionPolicy: {
      whenDeleted: sts.spec.persistentVolumeClaimRetentionPolicy?.whenDeleted ?? "Retain",
      whenScaled: sts.spec.persistentVolumeClaimRetentionPolicy?.whenScaled ?? "Retain",
    },
    templates,
    claims,
  };
}

function pending(j: Journal): PendingChange {
  return {
    request: j.request,
    step: j.step,
    startedAt: j.startedAt,
    by: j.by,
    leaseExpires: j.leaseExpires,
    finishCommand: finishCommand(j),
  };
}

export function buildStorageReport(inputs: StorageInputs): StorageReport {
  const classes = new Map(inputs.storageClasses.map((c) => [c.metadata.name!, c]));
  const defaultClass = defaultStorageClass(inputs.storageClasses);
  const journals = new Map(inputs.journals.map((j) => [`${j.namespace}/${j.name}`, j]));
  const index = indexObjects(inputs.claims, inputs.pods);
  const items = inputs.statefulSets.map((s) => {
    const view = describe(s, true, index, classes, defaultClass);
    const j = journals.get(`${view.namespace}/${view.name}`);
    journals.delete(`${view.namespace}/${view.name}`);
    return j ? { ...view, pendingChange: pending(j) } : view;
  });
  // A journal without its StatefulSet: an interrupted run deleted it and its pods have no controller.
  for (const j of journals.values()) items.push({ ...describe(j.original, false, index, classes, defaultClass), pendingChange: pending(j) });
  items.sort((a, b) => byName(a.namespace, b.namespace) || byName(a.name, b.name));
  return JSON.parse(JSON.stringify({ apiVersion, kind: "StorageReport", items })) as StorageReport;
}
