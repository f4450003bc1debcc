// The journal as data: how it is named, encoded in its Secret, judged (stale, locked) and
// built from a plan, and the command that finishes it. Pure; src/apply writes it, src/kube reads
// it. It is stored as JSON in a Secret in the StatefulSet's namespace (it holds the pod template,
// which may name secrets, so it is no more readable than the pod template itself) and as a local
// 0600 file. Bump `apiVersion` on any incompatible change.
import type { KubeObject, StatefulSet } from "../api/types";
import { sameClaimTemplates } from "./objects";
import { apiVersion, type Journal, type Plan } from "./types";
import type { ExistingClaimsPlan, JournalExistingClaims } from "./existing-claims-types";

export { existingClaimsFlags, finishCommand } from "./finish";

export const journalSecretPrefix = "appstorage-journal-";
export const journalDataKey = "journal.json";
export const journalLabel = { key: "app.kubernetes.io/managed-by", value: "kubectl-appstorage" } as const;
/** A run renews its lease while it works; a journal whose lease expired was left by a dead run. */
export const leaseSeconds = 15;

export function journalSecretName(statefulSet: string): string {
  return (journalSecretPrefix + statefulSet).slice(0, 253);
}

export function leaseExpired(journal: Journal, now: Date): boolean {
  return Date.parse(journal.leaseExpires) <= now.getTime();
}

export function parseJournal(text: string): Journal {
  const j = JSON.parse(text) as Journal;
  if (j?.apiVersion !== apiVersion || j.kind !== "Journal" || !j.desired || !j.originalUid) {
    throw new Error(`unsupported journal (apiVersion ${String(j?.apiVersion)})`);
  }
  return j;
}

/** The journal a Secret holds; undefined when it holds none; throws when it holds something else. */
export function decodeJournalSecret(secret: KubeObject & { data?: Record<string, string> }): Journal | undefined {
  const data = secret.data?.[journalDataKey];
  return data ? parseJournal(Buffer.from(data, "base64").toString("utf8")) : undefined;
}

/** The Secret that holds a journal (resourceVersion set when replacing the one that was read). */
export function journalSecret(journal: Journal, resourceVersion?: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: journalSecretName(journal.name),
      namespace: journal.namespace,
      labels: { [journalLabel.key]: journalLabel.value },
      annotations: { "appstorage.kubectl.io/statefulset": journal.name },
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    type: "appstorage.kubectl.io/journal",
    data: { [journalDataKey]: Buffer.from(JSON.stringify(journal)).toString("base64") },
  };
}

/**
 * The journal decides the work only while its change is half done: the original object is being
 * deleted or gone, or was re-created with the new templates. Otherwise (nothing destructive
 * happened yet, or someone else re-created the object with other templates, so the pods have a
 * controller again) it is stale.
 */
export function journalIsStale(journal: Journal, sts: StatefulSet | undefined): boolean {
  if (!sts) return false;
  // Moving claims: the journal decides until the work is done, unless someone re-created the object with other templates.
  if (journal.migration && journal.step === "migrating") return !sameClaimTemplates(sts.spec.volumeClaimTemplates, journal.desired.spec.volumeClaimTemplates);
  if (sts.metadata.uid === journal.originalUid) return !sts.metadata.deletionTimestamp;
  return !sameClaimTemplates(sts.spec.volumeClaimTemplates, journal.desired.spec.volumeClaimTemplates);
}

export function journalExistingClaims(existing: ExistingClaimsPlan): JournalExistingClaims {
  const relabel = existing.relabel?.filter((c) => c.patch.labels || c.patch.annotations).map((c) => ({ name: c.name, uid: c.uid, patch: c.patch }));
  return {
    ...(relabel?.length ? { relabel } : {}),
    options: existing.options,
    claims: existing.claims
      .filter((c) => c.grow || c.setVolumeAttributesClass)
      .map((c) => ({
        name: c.name,
        uid: c.uid,
        ...(c.grow ? { from: c.grow.from, to: c.grow.to } : {}),
        ...(c.setVolumeAttributesClass ? { volumeAttributesClass: c.setVolumeAttributesClass.to } : {}),
      })),
  };
}

export interface RunIdentity {
  /** Identifies this run's process in the journal's lock. */
  holder: string;
  /** The user the server sees. */
  by: string;
  now: Date;
  /** This run's flags that a command finishing it repeats (./finish.ts); a rerun's replace the journal's. */
  finish?: Journal["finish"];
}

/**
 * The journal this run saves before anything destructive: the plan's own journal taken over
 * (a resume, or a stale journal replaced), or a new one.
 */
export function journalFor(plan: Plan, run: RunIdentity): Journal {
  const now = run.now.toISOString();
  const lease = new Date(run.now.getTime() + leaseSeconds * 1000).toISOString();
  // A resume's moves are the plan's: its journal's, with this run's --copy-image when given.
  if (plan.mode !== "fresh" && plan.journal)
    return {
      ...plan.journal,
      ...(plan.journal.migration && plan.migration ? { migration: plan.migration } : {}),
      ...(run.finish ? { finish: run.finish } : {}),
      holder: run.holder,
      by: run.by,
      leaseExpires: lease,
      updatedAt: now,
    };
  return {
    apiVersion,
    kind: "Journal",
    namespace: plan.target.namespace,
    name: plan.target.name,
    originalUid: plan.target.uid,
    originalResourceVersion: plan.target.resourceVersion,
    request: plan.request,
    step: "planned",
    startedAt: now,
    updatedAt: now,
    by: run.by,
    holder: run.holder,
    leaseExpires: lease,
    pods: plan.pods,
    claims: plan.claims.map((c) => ({ name: c.name, uid: c.uid })),
    original: plan.original,
    desired: plan.desired,
    ...(plan.fieldManagers ? { fieldManagers: plan.fieldManagers } : {}),
    ...(plan.existing ? { existing: journalExistingClaims(plan.existing) } : {}),
    ...(plan.migration ? { migration: plan.migration } : {}),
    ...(plan.roll ? { roll: plan.roll } : {}),
    // Saved before the owner is paused: a run killed right after pausing it still has it resumed by the rerun.
    ...(plan.ownerPause ? { owner: { pause: plan.ownerPause, paused: false } } : {}),
    ...(run.finish ? { finish: run.finish } : {}),
  };
}

/** The note of the Event recorded on the re-created StatefulSet. */
export function changeNote(plan: Plan): string {
  const roll = plan.roll ? [...plan.roll.added.map((a) => `${a.claim} added`), ...plan.roll.removed.map((r) => `${r.claim} removed`)] : [];
  return `claim templates changed by kubectl appstorage: ${[...plan.changes.map((c) => `${c.claim} ${c.before.size ?? ""}->${c.after.size ?? ""}`), ...roll].join(", ")} (previous uid ${plan.target.uid})`;
}

/** Whether the plan finishes an interrupted change (its result says so). */
export const resumes = (plan: Plan): boolean => plan.mode === "resume";

/**
 * The claims whose uids the change must leave as they were: on a resume, the ones its journal
 * recorded before anything was deleted (a fresh plan may carry a stale journal, whose record is
 * not this run's); else the plan's own.
 */
export function claimsToVerify(plan: Plan): { name: string; uid: string }[] {
  return (resumes(plan) ? plan.journal?.claims : undefined) ?? plan.claims.map((c) => ({ name: c.name, uid: c.uid }));
}
