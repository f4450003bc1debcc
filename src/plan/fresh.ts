// A new change of claim templates: what changes, what each existing claim does, what new
// ordinals get, the safety findings, and the re-create steps. Pure.
import type { PersistentVolumeClaim, Pod, StatefulSet } from "../api/types";
import { desiredStatefulSet, stripForCreate } from "./desired";
import { formatDirective, type Directive } from "./directive";
import { byName, claimTemplateNames, defaultStorageClass, indexObjects, memberClaims, memberPods, type ObjectIndex, ordinalStart, podRevision, replicasOf, templateSize } from "./objects";
import { matchesTemplate, neverBound, pendingReason, recreateByHand } from "./pending";
import { decimalSizeNote, sameQuantity } from "./quantity";
import { applyForce, checkSafety, type Findings, lockFree, lockRefusal } from "./rules";
import { type ClaimEffect, type FieldManagers, type Observed, type OrdinalsPlan, type Plan, type PlanRequest, type Refusal, recreateSteps, type Step, type TemplateChange, apiVersion } from "./types";
import { statefulSetRef } from "../refs";
import { contentDigest } from "./seal";
import { applyEdits, checkEdits } from "./template-metadata";
import { describeOwner, ownerFindings } from "./owner";
import { planRoll, rollWarning, templateSetWords } from "./roll";
import type { TemplateRoll } from "./roll-types";
import type { Owner, OwnerPause } from "./owner-types";

/** Thrown only for what makes a plan impossible (no object to plan for). */
export class PlanError extends Error {}

/**
 * The claims and pods of one namespace filed by name, made once per pair of lists: the plans of
 * `-l` or `-f` over many StatefulSets share their namespace's lists (observeTargets), and filing
 * them again for each plan made planning quadratic in the namespace's size. The lists are never
 * mutated.
 */
const indexes = new WeakMap<readonly PersistentVolumeClaim[], WeakMap<readonly Pod[], ObjectIndex>>();
function planIndex(observed: Pick<Observed, "claims" | "pods">): ObjectIndex {
  const byPods = indexes.get(observed.claims) ?? new WeakMap<readonly Pod[], ObjectIndex>();
  indexes.set(observed.claims, byPods);
  const known = byPods.get(observed.pods);
  if (known) return known;
  // A plan reads one namespace: objects are filed without it.
  const index = indexObjects(observed.claims, observed.pods, () => "");
  byPods.set(observed.pods, index);
  return index;
}

/**
 * Every claim of the StatefulSet, with what happens to it: kept as it is, whatever the template
 * says. A claim that never bound gets why it is Pending (as far as the classes tell) and, when it
 * will not match the new template, the commands that have it created again by hand.
 */
export function describeClaims(sts: StatefulSet, observed: Pick<Observed, "claims" | "pods" | "storageClasses">, changed: ReadonlySet<string>, desired: StatefulSet, namespace: string): ClaimEffect[] {
  const index = planIndex(observed);
  const classes = new Map(observed.storageClasses.map((c) => [c.metadata.name ?? "", c]));
  const defaultClass = defaultStorageClass(observed.storageClasses);
  const templates = new Map((desired.spec.volumeClaimTemplates ?? []).map((t) => [t.metadata.name ?? "", t]));
  const effects = memberClaims(sts, index, "").map(({ claim, template, ordinal, pod, leftover }): ClaimEffect => {
    const reason = pendingReason(claim, { classes, ...(pod ? { pod } : {}) });
    const after = templates.get(template);
    const redo =
      neverBound(claim) && after && !matchesTemplate(claim, after, defaultClass) ? recreateByHand(claim.metadata.name!, namespace, `${sts.metadata.name}-${ordinal}`, pod !== undefined) : undefined;
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
    // Assigned, not spread: a plan of -l makes thousands of these, and in this order.
    if (leftover) effect.note = "left by an earlier scale-down";
    if (claim.spec.volumeName) effect.volumeName = claim.spec.volumeName;
    if (reason) effect.pendingReason = reason;
    if (redo) effect.recreateByHand = redo;
    return effect;
  });
  return effects.sort((a, b) => byName(a.template, b.template) || a.ordinal - b.ordinal);
}

/**
 * Which ordinals get the new templates: the StatefulSet controller creates a missing claim from
 * the template of the moment, for every ordinal below replicas and for every ordinal a scale-up
 * adds, and reuses any claim that exists.
 */
export function planOrdinals(sts: StatefulSet, observed: Pick<Observed, "claims" | "pods">, desired: StatefulSet): OrdinalsPlan {
  const index = planIndex(observed);
  const start = ordinalStart(desired);
  const replicas = replicasOf(desired);
  const end = start + replicas;
  const existing = new Map<string, Set<number>>();
  for (const { template, ordinal } of memberClaims(sts, index, "")) {
    const set = existing.get(template) ?? new Set<number>();
    set.add(ordinal);
    existing.set(template, set);
  }
  const inRange = Array.from({ length: replicas }, (_, i) => start + i);
  return {
    start,
    replicas,
    scaleUpFrom: end,
    templates: claimTemplateNames(desired).map((claim) => {
      const have = existing.get(claim) ?? new Set<number>();
      return {
        claim,
        keep: inRange.filter((o) => have.has(o)),
        create: inRange.filter((o) => !have.has(o)),
        leftover: [...have].filter((o) => o >= end).sort((a, b) => a - b),
      };
    }),
  };
}

function describeChange(d: Directive, sts: StatefulSet): TemplateChange {
  const t = (sts.spec.volumeClaimTemplates ?? []).find((x) => x.metadata.name === d.claim)!;
  const beforeSize = templateSize(t);
  // Labels, annotations and access modes only when the change sets them: plans of sizes and classes keep their shape.
  const before: TemplateChange["before"] = { size: beforeSize, storageClass: t.spec.storageClassName, volumeAttributesClass: t.spec.volumeAttributesClassName };
  const after: TemplateChange["after"] = {
    size: d.size ?? beforeSize,
    storageClass: d.storageClass ?? t.spec.storageClassName,
    volumeAttributesClass: d.volumeAttributesClass ?? t.spec.volumeAttributesClassName,
  };
  if (d.labels !== undefined) [before.labels, after.labels] = [t.metadata.labels ?? {}, applyEdits(t.metadata.labels, d.labels)];
  if (d.annotations !== undefined) [before.annotations, after.annotations] = [t.metadata.annotations ?? {}, applyEdits(t.metadata.annotations, d.annotations)];
  if (d.accessModes !== undefined) [before.accessModes, after.accessModes] = [t.spec.accessModes ?? [], d.accessModes];
  return { claim: d.claim, before, after };
}

/** Each decimal size asked for where the template or its claims are written in binary units. */
function sizeNotes(changes: readonly TemplateChange[], claims: readonly PersistentVolumeClaim[], name: string): string[] {
  return changes.flatMap((c) => {
    if (!c.after.size || sameQuantity(c.after.size, c.before.size ?? "")) return [];
    const own = claims.filter((k) => k.metadata.name?.startsWith(`${c.claim}-${name}-`)).map((k) => k.spec.resources?.requests?.["storage"]);
    const note = decimalSizeNote(c.claim, c.after.size, [c.before.size, ...own]);
    return note ? [note] : [];
  });
}

const sameData = (a: unknown, b: unknown) => JSON.stringify(sortedKeys(a)) === JSON.stringify(sortedKeys(b));
const sortedKeys = (v: unknown): unknown => (v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v);

function isNoop(c: TemplateChange): boolean {
  return (
    sameQuantity(c.before.size ?? "", c.after.size ?? "") &&
    (c.before.storageClass ?? "") === (c.after.storageClass ?? "") &&
    (c.before.volumeAttributesClass ?? "") === (c.after.volumeAttributesClass ?? "") &&
    sameData(c.before.labels, c.after.labels) &&
    sameData(c.before.annotations, c.after.annotations) &&
    sameData(c.before.accessModes, c.after.accessModes)
  );
}

/** As kubectl label and annotate: another value needs --overwrite (refused, never forced), a missing key to remove is a warning. */
function metadataFindings(sts: StatefulSet, request: PlanRequest, into: { refusals: Refusal[]; warnings: string[] }): void {
  for (const d of request.directives) {
    for (const kind of ["label", "annotation"] as const) {
      const edits = kind === "label" ? d.labels : d.annotations;
      if (!edits) continue;
      const found = checkEdits(sts, d.claim, kind, edits, request.overwrite === true);
      into.refusals.push(...found.refusals.map((message) => ({ message, forceable: false })));
      into.warnings.push(...found.warnings);
    }
  }
}

/** What is refused and warned about in a fresh change, and who owns the object (and how --pause-owner pauses it). */
function freshFindings(sts: StatefulSet, request: PlanRequest, observed: Observed, changes: readonly TemplateChange[]): Findings & { owner?: Owner; pause?: OwnerPause } {
  const journal = observed.journal;
  const ref = statefulSetRef(request.name);
  const safety = checkSafety(sts, request, observed, changes);
  metadataFindings(sts, request, safety);
  // A journal here is stale (nothing destructive happened, or someone else re-created the
  // object): it is replaced by this run's, or removed when nothing changes.
  if (journal && !lockFree(observed, journal)) safety.refusals.push(lockRefusal(journal));
  if (journal && sts.metadata.uid !== journal.originalUid) {
    safety.warnings.push(`${ref} was re-created by someone else after an interrupted change (${journal.request.join(" ")}); that change is dropped`);
  }
  const owner = describeOwner(sts, observed.owners);
  // A stale journal that paused the owner (a run killed before it changed anything): the owner is
  // paused now, so what was read of it is the pause; the journal's patches put back what it had.
  const inherited = journal?.owner?.pause;
  const ownerWork = inherited
    ? {
        refusals: [],
        warnings: [
          `an earlier run paused ${inherited.ref.kind} ${inherited.ref.namespace}/${inherited.ref.name} (${inherited.what}) and was interrupted before it changed ${ref}; it is put back as it was before that run${request.pauseOwner ? " once this run is done" : ""}`,
        ],
        pause: inherited,
      }
    : ownerFindings(owner, ref, request.pauseOwner);
  safety.refusals.push(...ownerWork.refusals.map((message) => ({ message, forceable: false })));
  if (request.templateSet && request.existing?.migrate)
    safety.refusals.push({
      message: "--migrate-existing does not go with claim templates added or removed: run set -f for the templates first, then set --migrate-existing for the claims",
      forceable: false,
    });
  const { refusals, warnings } = applyForce(safety, request.force);
  warnings.push(...ownerWork.warnings);
  return { refusals, warnings, ...(owner ? { owner } : {}), ...(ownerWork.pause ? { pause: ownerWork.pause } : {}) };
}

export function freshPlan(observed: Observed, request: PlanRequest): Plan {
  const sts = observed.statefulSet;
  if (!sts) throw new PlanError(`statefulsets.apps "${request.name}" not found in namespace "${request.namespace}"`);
  const journal = observed.journal;
  const set = request.templateSet;
  const requestText = [...request.directives.map(formatDirective), ...(set ? templateSetWords(set) : [])];
  const ref = statefulSetRef(request.name);

  const changes = request.directives.filter((d) => claimTemplateNames(sts).includes(d.claim)).map((d) => describeChange(d, sts));
  const effective = changes.filter((c) => !isNoop(c));
  const { refusals, warnings, owner, pause: canPause } = freshFindings(sts, request, observed, changes);
  warnings.push(...sizeNotes(changes, observed.claims, request.name));

  const from = changes.map((c) => formatDirective({ claim: c.claim, ...c.before }));
  // original and desired share what the change leaves alone (desiredStatefulSet): diff writes it once.
  const original = stripForCreate(sts);
  const digest = contentDigest(sts, original);
  const desired = desiredStatefulSet(
    sts,
    request.directives,
    {
      by: observed.user,
      at: observed.now,
      from,
      to: requestText,
      ...(request.cause ? { cause: request.cause } : request.existing?.migrate ? { cause: `${requestText.join(" ")} --migrate-existing` } : {}),
    },
    original,
    set,
  );
  const noChange = effective.length === 0 && !set;
  const defaultClass = defaultStorageClass(observed.storageClasses);
  const claims = describeClaims(sts, observed, new Set(effective.map((c) => c.claim)), desired, request.namespace);
  const roll = set ? planRoll(sts, set, claims, request.namespace, defaultClass) : undefined;
  if (roll) warnings.push(...rollWarnings(roll, sts, ref));
  const pause = noChange ? journal?.owner?.pause : canPause;
  const steps: Step[] = noChange
    ? journal
      ? [...(pause ? (["resume-owner"] as const) : []), "remove-journal"]
      : []
    : [...recreateSteps, ...(roll ? (["roll-pods", "restore-strategy"] as const) : []), ...(pause ? (["pause-owner", "resume-owner"] as const) : [])];
  return {
    apiVersion,
    kind: "Plan",
    target: { namespace: request.namespace, name: request.name, uid: sts.metadata.uid!, resourceVersion: sts.metadata.resourceVersion!, contentDigest: digest },
    mode: "fresh",
    request: requestText,
    changes,
    claims,
    newOrdinals: {
      from: ordinalStart(sts) + replicasOf(sts),
      templates: (desired.spec.volumeClaimTemplates ?? []).map((t) => ({
        claim: t.metadata.name!,
        size: templateSize(t),
        storageClass: t.spec.storageClassName ?? (defaultClass ? `${defaultClass} (default)` : undefined),
      })),
    },
    ordinals: planOrdinals(sts, observed, desired),
    warnings,
    refusals,
    steps,
    noChange,
    pods: memberPods(request.name, sts.metadata.uid, planIndex(observed).podsByPrefix.get(`/${request.name}`) ?? []).map((p) => ({
      name: p.metadata.name!,
      uid: p.metadata.uid!,
      revision: podRevision(p),
    })),
    original,
    desired,
    ...(Array.isArray(sts.metadata.managedFields) && sts.metadata.managedFields.length ? { fieldManagers: sts.metadata.managedFields as FieldManagers } : {}),
    journal,
    ...(roll ? { roll } : {}),
    ...(owner ? { owner } : {}),
    ...(pause ? { ownerPause: pause } : {}),
  };
}

/** What a plan that adds or removes templates says besides the restarts: the claims kept, a partition the restarts pass over. */
function rollWarnings(roll: TemplateRoll, sts: StatefulSet, ref: string): string[] {
  const out = [rollWarning(roll, ref)];
  for (const r of roll.removed)
    if (r.claims.length)
      out.push(
        `claim template ${r.claim} is removed: its claim(s) ${r.claims.map((c) => c.name).join(", ")} are kept with their data, whatever persistentVolumeClaimRetentionPolicy says; delete them by hand once you no longer need them: ${r.claims.map((c) => c.deleteCommand).join("; ")}`,
      );
  const partition = sts.spec.updateStrategy?.rollingUpdate?.partition ?? 0;
  if (partition > 0) out.push(`${ref} has updateStrategy.rollingUpdate.partition ${partition}: the pods below it restart too (each must mount its new claim); the partition is put back after`);
  return out;
}
