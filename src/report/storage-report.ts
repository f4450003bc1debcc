// What `show` reports: each StatefulSet's claim templates and every claim that belongs to it,
// with where a claim differs from its template. Pure: built from lists read once.
// The JSON/YAML form (kind StorageReport) is a documented, versioned schema (README "show").
import type { KubeEvent, PersistentVolume, PersistentVolumeClaim, Pod, StatefulSet, StorageClass } from "../api/types";
import { historyOf } from "../plan/history";
import { finishCommand } from "../plan/journal";
import { byName, defaultStorageClass, indexObjects, memberClaims, type ObjectIndex, ordinalStart, replicasOf } from "../plan/objects";
import { neverBound, pendingReason, recreateByHand } from "../plan/pending";
import { compareQuantities, parseQuantity, sameQuantity } from "../plan/quantity";
import { labelValue } from "../plan/migrate";
import { type ClassView, classViews, volumeSource, volumeTopology } from "../plan/classes";
import { apiVersion, type Journal, type PendingReason, type RecreateByHand } from "../plan/types";

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
  /**
   * Ordinals below replicas with no claim of this template yet: the StatefulSet creates them from
   * this template (an OrderedReady StatefulSet once the pods before them are Ready). Absent when none.
   */
  ordinalsWithoutClaim?: number[];
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
  /** Conditions that matter to a resize: Resizing, FileSystemResizePending, ModifyingVolume, ControllerResizeError, NodeResizeError. */
  conditions: string[];
  pod?: string;
  podPhase?: string;
  /** Beyond replicas (or below ordinals.start): left by an earlier scale-down. */
  leftover: boolean;
  /** Where the claim differs from its template, e.g. "template 2Gi, claim 1Gi". */
  differences: string[];
  /** The PersistentVolume it is bound to; absent: it never bound (no volume, so no data). */
  volumeName?: string;
  /** What that volume is ("csi DRIVER", local, hostPath, nfs, ...), when the volumes could be listed. */
  volumeSource?: string;
  /** Where that volume can be used, from its node affinity ("node NAME", or KEY=VALUE); absent: anywhere, or unknown. */
  volumeTopology?: string;
  /** Pending and never bound: why, when it can be known (missing class, ProvisioningFailed, WaitForFirstConsumer). */
  pendingReason?: PendingReason;
  /** Never bound and differs from its template: the commands that have it created again by hand (never run by this tool). */
  recreateByHand?: RecreateByHand;
}

export interface PendingChange {
  request: string[];
  step: string;
  startedAt: string;
  by: string;
  leaseExpires: string;
  finishCommand: string;
}

/** An old volume --migrate-existing kept (Retain) when it moved a claim to a new one. */
export interface KeptVolume {
  name: string;
  claim: string;
  ordinal?: number;
  retainedAt?: string;
  capacity?: string;
  storageClass?: string;
  phase?: string;
  /** Deletes the volume and its data (the provisioner does, once the policy is Delete); never run by this tool. */
  deleteCommand: string;
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
  /** The current revision of the claim templates (kubectl appstorage history); 1 before any recorded change. */
  revision: number;
  templates: TemplateView[];
  claims: ClaimView[];
  pendingChange?: PendingChange;
  /** Old volumes of moved claims, kept with their data until the user deletes them. */
  keptVolumes?: KeptVolume[];
}

export interface StorageReport {
  apiVersion: typeof apiVersion;
  kind: "StorageReport";
  items: StatefulSetStorage[];
  /** What each class of the items' templates and claims can do (expansion, binding, volumes tied to a node). */
  storageClasses: ClassView[];
}

export interface StorageInputs {
  statefulSets: StatefulSet[];
  claims: PersistentVolumeClaim[];
  pods: Pod[];
  storageClasses: StorageClass[];
  /** The storage classes could not be read: a claim's class cannot be told missing. */
  storageClassesUnknown?: boolean;
  journals: Journal[];
  /** ProvisioningFailed events of claims (others are ignored); the latest explains a stuck claim. */
  events?: KubeEvent[];
  /** The volumes --migrate-existing kept (labelled with their namespace, StatefulSet and claim). */
  keptVolumes?: PersistentVolume[];
  /** Every PersistentVolume, when they could be listed: what each claim's volume is. */
  volumes?: PersistentVolume[];
}

function keptVolume(pv: PersistentVolume): KeptVolume {
  const l = pv.metadata.labels ?? {};
  const ordinal = l["appstorage.kubectl.io/ordinal"];
  return {
    name: pv.metadata.name ?? "",
    claim: pv.metadata.annotations?.["appstorage.kubectl.io/claim"] ?? l["appstorage.kubectl.io/claim"] ?? "",
    ...(ordinal !== undefined ? { ordinal: Number(ordinal) } : {}),
    ...(l["appstorage.kubectl.io/retained-at"] ? { retainedAt: l["appstorage.kubectl.io/retained-at"] } : {}),
    ...(pv.spec.capacity?.["storage"] ? { capacity: pv.spec.capacity["storage"] } : {}),
    ...(pv.spec.storageClassName ? { storageClass: pv.spec.storageClassName } : {}),
    ...(pv.status?.phase ? { phase: pv.status.phase } : {}),
    deleteCommand: `kubectl patch pv ${pv.metadata.name} -p '{"spec":{"persistentVolumeReclaimPolicy":"Delete"}}'`,
  };
}

/** Claims' ProvisioningFailed events, filed under "namespace/uid" (or "namespace/name" when the event names no uid). */
type EventIndex = Map<string, KubeEvent[]>;

function indexEvents(events: readonly KubeEvent[]): EventIndex {
  const out: EventIndex = new Map();
  for (const e of events) {
    const o = e.involvedObject;
    if (e.reason !== "ProvisioningFailed" || o?.kind !== "PersistentVolumeClaim") continue;
    const key = `${o.namespace ?? e.metadata.namespace ?? ""}/${o.uid ? `uid:${o.uid}` : `name:${o.name ?? ""}`}`;
    const list = out.get(key);
    if (list) list.push(e);
    else out.set(key, [e]);
  }
  return out;
}

function eventsOf(events: EventIndex, ns: string, c: PersistentVolumeClaim): KubeEvent[] {
  return [...(events.get(`${ns}/uid:${c.metadata.uid ?? ""}`) ?? []), ...(events.get(`${ns}/name:${c.metadata.name ?? ""}`) ?? [])];
}

interface Lookups {
  index: ObjectIndex;
  volumes: Map<string, PersistentVolume>;
  classes: Map<string, StorageClass>;
  classesKnown: boolean;
  defaultClass: string | undefined;
  events: EventIndex;
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

function describe(sts: StatefulSet, exists: boolean, { index, volumes, classes, classesKnown, defaultClass, events }: Lookups): StatefulSetStorage {
  const ns = sts.metadata.namespace ?? "";
  const name = sts.metadata.name ?? "";
  const start = ordinalStart(sts);
  const replicas = replicasOf(sts);
  const templates = (sts.spec.volumeClaimTemplates ?? []).map((t) => templateView(t, classes, defaultClass));
  const byTemplate = new Map(templates.map((t) => [t.name, t]));
  const claims: ClaimView[] = [];
  for (const { claim: c, template, ordinal, pod, leftover } of memberClaims(sts, index, ns)) {
    const t = byTemplate.get(template)!;
    const drift = differences(t, c);
    const reason = neverBound(c) ? pendingReason(c, { ...(classesKnown ? { classes } : {}), events: eventsOf(events, ns, c), ...(pod ? { pod } : {}) }) : undefined;
    // Never bound (no volume, so no data) and unlike its template: only a new claim would match it.
    const redo = neverBound(c) && drift.length ? recreateByHand(c.metadata.name!, ns, `${name}-${ordinal}`, pod !== undefined) : undefined;
    const pv = c.spec.volumeName ? volumes.get(c.spec.volumeName) : undefined;
    const source = pv ? volumeSource(pv) : undefined;
    const topology = pv ? volumeTopology(pv) : undefined;
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
      differences: drift,
      ...(c.spec.volumeName ? { volumeName: c.spec.volumeName } : {}),
      ...(source ? { volumeSource: source } : {}),
      ...(topology ? { volumeTopology: topology } : {}),
      ...(reason ? { pendingReason: reason } : {}),
      ...(redo ? { recreateByHand: redo } : {}),
    });
  }
  claims.sort((a, b) => a.ordinal - b.ordinal || byName(a.template, b.template));
  // Only a StatefulSet that exists creates claims; a journal-only one has none to create now.
  if (exists) {
    for (const t of templates) {
      const have = new Set(claims.filter((c) => c.template === t.name).map((c) => c.ordinal));
      const missing = Array.from({ length: replicas }, (_, i) => start + i).filter((o) => !have.has(o));
      if (missing.length) t.ordinalsWithoutClaim = missing;
    }
  }
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
    revision: historyOf(sts).at(-1)!.revision,
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
  const lookups: Lookups = {
    index: indexObjects(inputs.claims, inputs.pods),
    volumes: new Map((inputs.volumes ?? []).map((v) => [v.metadata.name ?? "", v])),
    classes: new Map(inputs.storageClasses.map((c) => [c.metadata.name!, c])),
    classesKnown: inputs.storageClassesUnknown !== true,
    defaultClass: defaultStorageClass(inputs.storageClasses),
    events: indexEvents(inputs.events ?? []),
  };
  const journals = new Map(inputs.journals.map((j) => [`${j.namespace}/${j.name}`, j]));
  const kept = new Map<string, KeptVolume[]>();
  for (const pv of inputs.keptVolumes ?? []) {
    const key = `${pv.metadata.labels?.["appstorage.kubectl.io/namespace"]}/${pv.metadata.labels?.["appstorage.kubectl.io/statefulset"]}`;
    kept.set(key, [...(kept.get(key) ?? []), keptVolume(pv)]);
  }
  const withKept = (view: StatefulSetStorage): StatefulSetStorage => {
    const k = kept.get(`${view.namespace}/${labelValue(view.name)}`);
    return k ? { ...view, keptVolumes: k.sort((a, b) => (a.ordinal ?? 0) - (b.ordinal ?? 0) || byName(a.name, b.name)) } : view;
  };
  const items = inputs.statefulSets.map((s) => {
    const view = withKept(describe(s, true, lookups));
    const j = journals.get(`${view.namespace}/${view.name}`);
    journals.delete(`${view.namespace}/${view.name}`);
    return j ? { ...view, pendingChange: pending(j) } : view;
  });
  // A journal without its StatefulSet: an interrupted run deleted it and its pods have no controller.
  for (const j of journals.values()) items.push({ ...withKept(describe(j.original, false, lookups)), pendingChange: pending(j) });
  items.sort((a, b) => byName(a.namespace, b.namespace) || byName(a.name, b.name));
  const storageClasses = itemClasses(items, inputs, lookups.defaultClass);
  return JSON.parse(JSON.stringify({ apiVersion, kind: "StorageReport", items, storageClasses })) as StorageReport;
}

/** The classes of the items' templates and claims, sorted; a claim named with its namespace when the items span several. */
function itemClasses(items: readonly StatefulSetStorage[], inputs: StorageInputs, defaultClass: string | undefined): ClassView[] {
  const several = new Set(items.map((i) => i.namespace)).size > 1;
  const shown = new Set(items.flatMap((i) => i.claims.map((c) => `${i.namespace}/${c.name}`)));
  const claims = inputs.claims
    .filter((c) => shown.has(`${c.metadata.namespace ?? ""}/${c.metadata.name ?? ""}`))
    .map((c) => (several ? { ...c, metadata: { ...c.metadata, name: `${c.metadata.namespace}/${c.metadata.name}` } } : c));
  const names = [...new Set(items.flatMap((i) => [...i.templates.map((t) => t.storageClass), ...i.claims.map((c) => c.storageClass)]))].filter((n): n is string => !!n).sort(byName);
  return classViews(names, inputs.storageClasses, inputs.storageClassesUnknown !== true, defaultClass, claims, inputs.volumes);
}
