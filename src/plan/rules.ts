// The safety rules of a change of claim templates: what is refused (and whether --force may
// pass it), what is only warned about. Pure checks of what was read and what was asked.
import type { StatefulSet } from "../api/types";
import { finishCommand, journalSecretName, leaseExpired } from "./journal";
import { claimTemplateNames } from "./objects";
import { compareQuantities, parseQuantity } from "./quantity";
import type { Journal, Observed, PlanRequest, Refusal, TemplateChange } from "./types";
import { statefulSetRef } from "../refs";
import { describeOwner } from "./owner";

export interface Findings {
  refusals: Refusal[];
  warnings: string[];
}

/** A re-create resets a rolling update in progress (the new object starts from its own revision). */
export function rolloutInProgress(sts: StatefulSet): string | undefined {
  const s = sts.status ?? {};
  if (s.observedGeneration !== undefined && sts.metadata.generation !== undefined && s.observedGeneration < sts.metadata.generation) {
    return `the StatefulSet controller has not yet seen the latest change (generation ${sts.metadata.generation}, observed ${s.observedGeneration}); retry in a moment`;
  }
  if (s.currentRevision && s.updateRevision && s.currentRevision !== s.updateRevision) {
    return `a rolling update is in progress (revision ${s.currentRevision} -> ${s.updateRevision}); re-creating the StatefulSet would reset it: wait for it to finish`;
  }
  // The controller sets currentRevision to updateRevision only once every pod was updated: with both
  // equal, fewer updated pods than replicas is a pod being re-created (an eviction), not a rollout.
  if (!(s.currentRevision && s.currentRevision === s.updateRevision) && (s.updatedReplicas ?? 0) !== (s.replicas ?? 0)) {
    return `a rolling update is in progress (${s.updatedReplicas ?? 0} of ${s.replicas ?? 0} pods updated); wait for it to finish`;
  }
  return undefined;
}

/** Refusals and warnings about the object and the request of a fresh change. */
export function checkSafety(sts: StatefulSet, request: PlanRequest, observed: Observed, changes: readonly TemplateChange[]): Findings {
  const refusals: Refusal[] = [];
  const warnings: string[] = [];
  const ref = statefulSetRef(request.name);
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
  const unknown = new Set(observed.storageClassesUnknown ?? []);
  for (const d of request.directives) {
    if (d.storageClass === undefined || classNames.has(d.storageClass)) continue;
    if (unknown.has(d.storageClass)) {
      refusals.push({
        message: `storage class "${d.storageClass}" could not be checked: you may not get storageclasses.storage.k8s.io "${d.storageClass}" (cluster scope); a wrong name would leave the claims of new ordinals Pending (an undo repairs that): ask for that permission (kubectl appstorage rbac prints it), or pass --force`,
        forceable: true,
      });
    } else {
      refusals.push({ message: `storage class "${d.storageClass}" not found; list the classes with: kubectl get storageclass`, forceable: false });
    }
  }
  if (observed.storageClassError && !request.directives.some((d) => d.storageClass !== undefined)) {
    warnings.push("you may not list storage classes (cluster scope), so the default class and volume expansion could not be checked");
  }
  if (observed.journalError) {
    warnings.push(`you may not read secret/${journalSecretName(request.name)} (${observed.journalError}), so an interrupted change of ${ref} could not be checked`);
  }
  const rollout = rolloutInProgress(sts);
  if (rollout) refusals.push({ message: `${rollout}, or pass --force`, forceable: true });
  const owner = sts.metadata.ownerReferences?.find((r) => r.controller);
  const described = describeOwner(sts, observed.owners);
  // An operator this tool can pause (owner.ts) is no refusal when --pause-owner pauses it, or when it is paused already.
  const paused = described?.manager === "operator" && ((request.pauseOwner && described.pause) || described.active === false);
  if (owner && !paused) {
    refusals.push({
      message: `${ref} is controlled by ${owner.kind} ${owner.name}, which would fight the change or re-create the old object; change the storage through it, ${described?.pause ? "pass --pause-owner to pause it while this runs, " : ""}or pass --force`,
      forceable: true,
    });
  }
  // Helm, Argo CD and Flux keep their own copy of the object and fight a change made beside them (an operator is said above).
  const manager = described?.manager;
  if (manager && manager !== "operator") {
    // From a manifest (set -f) the templates are the ones the tool will apply: its next upgrade or sync agrees.
    if (request.fromManifest) warnings.push(`${ref} is managed by ${manager}: its claim templates become this manifest's; upgrade or sync with the same manifest next`);
    else warnings.push(`${ref} is managed by ${manager}: update the claim templates there too, or its next sync will fight this change`);
  }
  if (sts.spec.persistentVolumeClaimRetentionPolicy?.whenScaled === "Delete") {
    warnings.push(`${ref} has persistentVolumeClaimRetentionPolicy.whenScaled=Delete: scaling it down deletes the claims of the removed ordinals`);
  }
  for (const c of changes) {
    if (!request.existing?.migrate && c.before.size && c.after.size && compareQuantities(parseQuantity(c.after.size), parseQuantity(c.before.size)) < 0) {
      warnings.push(`claim template "${c.claim}" shrinks from ${c.before.size} to ${c.after.size}: only claims created from now on get the smaller size; existing claims keep theirs`);
    }
  }
  return { refusals, warnings };
}

/** Nobody works on the journal: its lease expired, or its holder was killed on this machine. */
export function lockFree(observed: Observed, journal: Journal): boolean {
  return observed.holderGone === true || leaseExpired(journal, new Date(observed.now));
}

export function lockRefusal(journal: Journal): Refusal {
  return { message: `another kubectl appstorage set is working on ${statefulSetRef(journal.name)} (${journal.by}, lease until ${journal.leaseExpires}); wait for it to finish`, forceable: false };
}

/** A pending change other than the one asked: it must be finished first. */
export function pendingChangeRefusal(journal: Journal): Refusal {
  return {
    message: `an interrupted change of ${statefulSetRef(journal.name)} is pending (${journal.request.join(" ")}, started ${journal.startedAt} by ${journal.by}); finish it first with: ${finishCommand(journal)}`,
    forceable: false,
  };
}

/** --force passes the forceable refusals, each turned into a warning that says so. */
export function applyForce(findings: Findings, force: boolean): Findings {
  if (!force) return findings;
  return {
    refusals: findings.refusals.filter((r) => !r.forceable),
    warnings: [...findings.warnings, ...findings.refusals.filter((r) => r.forceable).map((r) => `forced past: ${r.message}`)],
  };
}
