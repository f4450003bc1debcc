// buildPlan(observed, request) -> Plan: a pure function of what was read from the cluster and
// what the user asked. `diff`, `set --dry-run` and `set` share the plan; only `set` applies it.
import type { PersistentVolumeClaim, Pod, StatefulSet, StorageClass } from "../kube/types";
import { desiredStatefulSet, sameClaimTemplates, stripForCreate, templateSize } from "./desired";
import { formatDirective, type Directive } from "./directive";
import { type Journal, leaseExpired } from "./journal";
import { compareQuantities, parseQuantity, sameQuantity } from "./quantity";
import { type ExistingObserved, type ExistingOptions, type ExistingPlan, planExisting } from "./resize";

export const planApiVersion = "appstorage.kubectl.io/v1alpha1";

export interface Observed {
  /** undefined: the StatefulSet does not exist. */
  statefulSet?: StatefulSet;
  claims: PersistentVolumeClaim[];
  pods: Pod[];
  storageClasses: StorageClass[];
  journal?: Journal;
  /** Quotas and volume attributes classes, read only for work on existing claims (resize.ts). */
  existing?: ExistingObserved;
  /** The journal's holder was a process on this machine that no longer exists (killed). */
  holderGone?: boolean;
  /** Who runs this (for the change annotation) and when: inputs, so the plan stays pure. */
  user: string;
  now: string;
}

export interface PlanRequest {
  namespace: string;
  name: string;
  directives: Directive[];
  force: boolean;
  /** --resize-existing, --vac-existing, --wait-resize, --restart-pods (resize.ts). */
  existing?: ExistingOptions;
}

export type Step = "write-journal" | "grow-claims" | "orphan-delete" | "wait-gone" | "create" | "verify" | "record" | "remove-journal" | "wait-resize" | "restart-pods";

export interface TemplateChange {
  claim: string;
  before: { size?: string; storageClass?: string; volumeAttributesClass?: string };
  after: { size?: string; storageClass?: string; volumeAttributesClass?: string };
}

export interface ClaimEffect {
  name: string;
  template: string;
  ordinal: number;
  uid: string;
  phase?: string;
  request?: string;
  capacity?: string;
  storageClass?: string;
  pod?: string;
  /** keeps: stays as it is while its template changes; unchanged: its template does not change. */
  effect: "keeps" | "unchanged";
  leftover: boolean;
  note?: string;
}

export interface Refusal {
  message: string;
  /** --force proceeds past it; data-safety refusals are never forceable. */
  forceable: boolean;
}

export interface Plan {
  apiVersion: typeof planApiVersion;
  kind: "Plan";
  target: { namespace: string; name: string; uid: string; resourceVersion: string };
  /** fresh: a new change; resume: finishing an interrupted run from its journal. */
  mode: "fresh" | "resume";
  request: string[];
  changes: TemplateChange[];
  claims: ClaimEffect[];
  newOrdinals: { from: number; templates: { claim: string; size?: string; storageClass?: string }[] };
  warnings: string[];
  refusals: Refusal[];
  steps: Step[];
  noChange: boolean;
  /** Pods and claims that exist now; apply verifies that none was replaced. */
  pods: { name: string; uid: string; revision?: string }[];
  original: StatefulSet;
  desired: StatefulSet;
  journal?: Journal;
  /** What happens to existing claims, when asked (resize.ts). */
  existing?: ExistingPlan;
}

export class PlanError extends Error {}

const managerHints: [string, (sts: StatefulSet) => boolean][] = [
  ["Helm", (s) => s.metadata.labels?.["app.kubernetes.io/managed-by"] === "Helm" || Object.keys(s.metadata.annotations ?? {}).some((k) => k.startsWith("meta.helm.sh/"))],
  ["Argo CD", (s) => "argocd.argoproj.io/instance" in (s.metadata.labels ?? {}) || Object.keys(s.metadata.annotations ?? {}).some((k) => k.startsWith("argocd.argoproj.io/"))],
  ["Flux", (s) => [...Object.keys(s.metadata.labels ?? {}), ...Object.keys(s.metadata.annotations ?? {})].some((k) => k.startsWith("kustomize.toolkit.fluxcd.io/") || k.startsWith("helm.toolkit.fluxcd.io/"))],
];

function claimTemplateNames(sts: StatefulSet): string[] {
  return (sts.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name ?? "");
}

function ordinalStart(sts: StatefulSet): number {
  return sts.spec.ordinals?.start ?? 0;
}

/** Ordinal of a claim or pod name `<prefix><ordinal>`, or undefined. */
function ordinalOf(name: string, prefix: string): number | undefined {
  if (!name.startsWith(prefix)) return undefined;
  const rest = name.slice(prefix.length);
  return /^(0|[1-9]\d*)$/.test(rest) ? Number(rest) : undefined;
}

export function podRevision(pod: Pod): string | undefined {
  return pod.metadata.labels?.["controller-revision-hash"];
}

/** Pods that belong to the StatefulSet: named `<sts>-<ordinal>`, not owned by another controller. */
export function memberPods(name: string, uid: string | undefined, pods: readonly Pod[]): Pod[] {
  return pods.filter((p) => {
    if (ordinalOf(p.metadata.name ?? "", `${name}-`) === undefined) return false;
    const controller = p.metadata.ownerReferences?.find((r) => r.controller);
    return !controller || (controller.kind === "StatefulSet" && (uid === undefined || controller.uid === uid || controller.name === name));
  });
}

function describeClaims(sts: StatefulSet, observed: Observed, changed: Set<string>): ClaimEffect[] {
  const name = sts.metadata.name!;
  const start = ordinalStart(sts);
  const replicas = sts.spec.replicas ?? 1;
  const podsByName = new Map(observed.pods.map((p) => [p.metadata.name, p]));
  const effects: ClaimEffect[] = [];
  for (const template of claimTemplateNames(sts)) {
    for (const claim of observed.claims) {
      const ordinal = ordinalOf(claim.metadata.name ?? "", `${template}-${name}-`);
      if (ordinal === undefined) continue;
      const pod = podsByName.get(`${name}-${ordinal}`);
      const leftover = ordinal < start || ordinal >= start + replicas;
      const effect: ClaimEffect = {
        name: claim.metadata.name!,
        template,
        ordinal,
        uid: claim.metadata.uid ?? "",
        phase: claim.status?.phase,
        request: claim.spec.resources?.requests?.storage,
        capacity: claim.status?.capacity?.storage,
        storageClass: claim.spec.storageClassName,
        pod: pod?.metadata.name,
        effect: changed.has(template) ? "keeps" : "unchanged",
        leftover,
      };
      if (leftover) effect.note = "left by an earlier scale-down";
      effects.push(effect);
    }
  }
  return effects.sort((a, b) => a.template.localeCompare(b.template) || a.ordinal - b.ordinal);
}

function rolloutInProgress(sts: StatefulSet): string | undefined {
  const s = sts.status ?? {};
  if (s.observedGeneration !== undefined && sts.metadata.generation !== undefined && s.observedGeneration < sts.metadata.generation) {
    return `the StatefulSet controller has not yet seen the latest change (generation ${sts.metadata.generation}, observed ${s.observedGeneration}); retry in a moment`;
  }
  if (s.currentRevision && s.updateRevision && s.currentRevision !== s.updateRevision) {
    return `a rolling update is in progress (revision ${s.currentRevision} -> ${s.updateRevision}); re-creating the StatefulSet would reset it: wait for it to finish`;
  }
  if ((s.updatedReplicas ?? 0) !== (s.replicas ?? 0)) {
    return `a rolling update is in progress (${s.updatedReplicas ?? 0} of ${s.replicas ?? 0} pods updated); wait for it to finish`;
  }
  return undefined;
}

function describeChange(d: Directive, before: StatefulSet): TemplateChange {
  const t = (before.spec.volumeClaimTemplates ?? []).find((x) => x.metadata.name === d.claim)!;
  const beforeSize = templateSize(t);
  return {
    claim: d.claim,
    before: { size: beforeSize, storageClass: t.spec.storageClassName, volumeAttributesClass: t.spec.volumeAttributesClassName },
    after: { size: d.size ?? beforeSize, storageClass: d.storageClass ?? t.spec.storageClassName, volumeAttributesClass: d.volumeAttributesClass ?? t.spec.volumeAttributesClassName },
  };
}

function isNoop(c: TemplateChange): boolean {
  return (
    sameQuantity(c.before.size ?? "", c.after.size ?? "") &&
    (c.before.storageClass ?? "") === (c.after.storageClass ?? "") &&
    (c.before.volumeAttributesClass ?? "") === (c.after.volumeAttributesClass ?? "")
  );
}

function defaultStorageClass(classes: readonly StorageClass[]): string | undefined {
  const isDefault = (c: StorageClass) =>
    c.metadata.annotations?.["storageclass.kubernetes.io/is-default-class"] === "true" ||
    c.metadata.annotations?.["storageclass.beta.kubernetes.io/is-default-class"] === "true";
  return classes.find(isDefault)?.metadata.name;
}

/** Refusals and warnings about the object and the request; pure checks. */
function checkSafety(sts: StatefulSet, request: PlanRequest, observed: Observed, changes: TemplateChange[]): { refusals: Refusal[]; warnings: string[] } {
  const refusals: Refusal[] = [];
  const warnings: string[] = [];
  const ref = `statefulset.apps/${request.name}`;
  if (sts.metadata.deletionTimestamp) {
    refusals.push({ message: `${ref} is being deleted; wait until it is gone or re-created before changing its storage`, forceable: false });
  }
  const templates = claimTemplateNames(sts);
  for (const d of request.directives) {
    if (!templates.includes(d.claim)) {
      const has = templates.length ? `it has: ${templates.join(", ")}` : "it has no claim templates";
      refusals.push({ message: `claim template "${d.claim}" not found in ${ref} (${has}); adding, removing or renaming claim templates is not supported`, forceable: false });
    }
  }
  const classNames = new Set(observed.storageClasses.map((c) => c.metadata.name));
  for (const d of request.directives) {
    if (d.storageClass !== undefined && !classNames.has(d.storageClass)) {
      refusals.push({ message: `storage class "${d.storageClass}" not found; list the classes with: kubectl get storageclass`, forceable: false });
    }
  }
  const rollout = rolloutInProgress(sts);
  if (rollout) refusals.push({ message: `${rollout}, or pass --force`, forceable: true });
  const owner = sts.metadata.ownerReferences?.find((r) => r.controller);
  if (owner) {
    refusals.push({
      message: `${ref} is controlled by ${owner.kind} ${owner.name}, which would fight the change or re-create the old object; change the storage through it, or pass --force`,
      forceable: true,
    });
  }
  for (const [manager, detect] of managerHints) {
    if (detect(sts)) warnings.push(`${ref} is managed by ${manager}: update the claim templates there too, or its next sync will fight this change`);
  }
  if (sts.spec.persistentVolumeClaimRetentionPolicy?.whenScaled === "Delete") {
    warnings.push(`${ref} has persistentVolumeClaimRetentionPolicy.whenScaled=Delete: scaling it down deletes the claims of the removed ordinals`);
  }
  for (const c of changes) {
    if (c.before.size && c.after.size && compareQuantities(parseQuantity(c.after.size), parseQuantity(c.before.size)) < 0) {
      warnings.push(`claim template "${c.claim}" shrinks from ${c.before.size} to ${c.after.size}: only new ordinals get the smaller size; existing claims keep theirs`);
    }
  }
  return { refusals, warnings };
}

/**
 * Plans a change of claim templates, or the rest of an interrupted one when the journal says
 * so. Throws PlanError only for what makes a plan impossible (no object to plan for).
 */
export function buildPlan(observed: Observed, request: PlanRequest): Plan {
  // A plan is JSON data: without undefined fields, a plan read back equals the plan built.
  return JSON.parse(JSON.stringify(planExisting(planFor(observed, request), observed, request))) as Plan;
}

function planFor(observed: Observed, request: PlanRequest): Plan {
  const journal = observed.journal;
  const sts = observed.statefulSet;
  const requestText = request.directives.map(formatDirective);
  const ref = `statefulset.apps/${request.name}`;

  // The journal decides the work only while its change is half done: the original object is
  // being deleted or gone, or was re-created with the new templates. Otherwise (nothing
  // destructive happened yet, or someone else re-created the object with other templates, so
  // the pods have a controller again) it is stale: planned afresh, and replaced or removed.
  if (journal && !journalIsStale(journal, sts)) return resumePlan(observed, request, journal, requestText);

  if (!sts) throw new PlanError(`statefulsets.apps "${request.name}" not found in namespace "${request.namespace}"`);

  const changes = request.directives.filter((d) => claimTemplateNames(sts).includes(d.claim)).map((d) => describeChange(d, sts));
  const effective = changes.filter((c) => !isNoop(c));
  const changed = new Set(effective.map((c) => c.claim));
  const { refusals, warnings } = checkSafety(sts, request, observed, changes);
  if (journal && !lockFree(observed, journal)) {
    refusals.push({ message: `another kubectl appstorage set is working on ${ref} (${journal.by}, lease until ${journal.leaseExpires}); wait for it to finish`, forceable: false });
  }
  if (journal && sts.metadata.uid !== journal.originalUid) {
    warnings.push(`${ref} was re-created by someone else after an interrupted change (${journal.request.join(" ")}); that change is dropped`);
  }
  const liveRequest = request.force ? refusals.filter((r) => !r.forceable) : refusals;
  if (request.force) for (const r of refusals.filter((x) => x.forceable)) warnings.push(`forced past: ${r.message}`);

  const from = changes.map((c) => formatDirective({ claim: c.claim, size: c.before.size, storageClass: c.before.storageClass, volumeAttributesClass: c.before.volumeAttributesClass }));
  const desired = desiredStatefulSet(sts, request.directives, { by: observed.user, at: observed.now, from, to: requestText });
  const replicas = sts.spec.replicas ?? 1;
  const pods = memberPods(request.name, sts.metadata.uid, observed.pods).map((p) => ({ name: p.metadata.name!, uid: p.metadata.uid!, revision: podRevision(p) }));
  const noChange = effective.length === 0;
  const defaultClass = defaultStorageClass(observed.storageClasses);
  return {
    apiVersion: planApiVersion,
    kind: "Plan",
    target: { namespace: request.namespace, name: request.name, uid: sts.metadata.uid!, resourceVersion: sts.metadata.resourceVersion! },
    mode: "fresh",
    request: requestText,
    changes,
    claims: describeClaims(sts, observed, changed),
    newOrdinals: {
      from: ordinalStart(sts) + replicas,
      templates: (desired.spec.volumeClaimTemplates ?? []).map((t) => ({
        claim: t.metadata.name!,
        size: templateSize(t),
        storageClass: t.spec.storageClassName ?? (defaultClass ? `${defaultClass} (default)` : undefined),
      })),
    },
    warnings,
    refusals: liveRequest,
    steps: noChange ? (journal ? ["remove-journal"] : []) : ["write-journal", "orphan-delete", "wait-gone", "create", "verify", "record", "remove-journal"],
    noChange,
    pods,
    original: stripForCreate(sts),
    desired,
    journal,
  };
}

/** Nobody works on the journal: its lease expired, or its holder was killed on this machine. */
function lockFree(observed: Observed, journal: Journal): boolean {
  return observed.holderGone === true || leaseExpired(journal, new Date(observed.now));
}

function journalIsStale(journal: Journal, sts: StatefulSet | undefined): boolean {
  if (!sts) return false;
  if (sts.metadata.uid === journal.originalUid) return !sts.metadata.deletionTimestamp;
  return !sameClaimTemplates(sts.spec.volumeClaimTemplates, journal.desired.spec.volumeClaimTemplates);
}

function resumePlan(observed: Observed, request: PlanRequest, journal: Journal, requestText: string[]): Plan {
  const sts = observed.statefulSet;
  const ref = `statefulset.apps/${request.name}`;
  const refusals: Refusal[] = [];
  const warnings: string[] = [];
  const pending = journal.request.join(" ");
  if (!sameRequest(journal.request, requestText)) {
    refusals.push({
      message: `an interrupted change of ${ref} is pending (${pending}, started ${journal.startedAt} by ${journal.by}); finish it first with: kubectl appstorage set ${request.name} ${pending} -n ${request.namespace}`,
      forceable: false,
    });
  }
  if (!lockFree(observed, journal)) {
    refusals.push({ message: `another kubectl appstorage set is working on ${ref} (${journal.by}, lease until ${journal.leaseExpires}); wait for it to finish`, forceable: false });
  }
  let steps: Step[];
  if (!sts) {
    steps = ["create", "verify", "record", "remove-journal"];
    warnings.push(`${ref} does not exist: an earlier run deleted it (orphaning its pods) and was interrupted; re-creating it now`);
  } else if (sts.metadata.uid === journal.originalUid) {
    // Still the original object, being deleted: wait for the garbage collector, then create.
    steps = ["wait-gone", "create", "verify", "record", "remove-journal"];
    warnings.push(`${ref} is still being deleted by an earlier, interrupted run; finishing it`);
  } else {
    steps = ["verify", "record", "remove-journal"];
    warnings.push(`${ref} was already re-created with the new claim templates; verifying and cleaning up`);
  }
  // While refusing, the resume warnings ("re-creating it now") would say what does not happen.
  if (refusals.length) warnings.length = 0;
  const desired = journal.desired;
  return {
    apiVersion: planApiVersion,
    kind: "Plan",
    target: { namespace: journal.namespace, name: journal.name, uid: journal.originalUid, resourceVersion: journal.originalResourceVersion },
    mode: "resume",
    request: journal.request,
    changes: (journal.original.spec.volumeClaimTemplates ?? []).flatMap((t) => {
      const after = (desired.spec.volumeClaimTemplates ?? []).find((u) => u.metadata.name === t.metadata.name);
      if (!after || sameClaimTemplates([t], [after])) return [];
      const side = (x: typeof t) => ({ size: templateSize(x), storageClass: x.spec.storageClassName, volumeAttributesClass: x.spec.volumeAttributesClassName });
      return [{ claim: t.metadata.name!, before: side(t), after: side(after) }];
    }),
    claims: describeClaims(journal.original, observed, new Set(journal.request.map((r) => r.split("=")[0]!))),
    newOrdinals: {
      from: ordinalStart(desired) + (desired.spec.replicas ?? 1),
      templates: (desired.spec.volumeClaimTemplates ?? []).map((t) => ({ claim: t.metadata.name!, size: templateSize(t), storageClass: t.spec.storageClassName })),
    },
    warnings,
    refusals,
    steps,
    noChange: false,
    pods: journal.pods,
    original: journal.original,
    desired,
    journal,
  };
}

function sameRequest(a: readonly string[], b: readonly string[]): boolean {
  return JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
}
