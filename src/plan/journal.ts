// The journal of one `set`: saved before anything destructive so that any later run (on
// this machine or another) can finish the job. Stored as JSON in a Secret in the
// StatefulSet's namespace (it holds the pod template, which may name secrets, so it is no
// more readable than the pod template itself) and as a local 0600 file. Format documented in
// the README ("Journal"); bump `apiVersion` on any incompatible change.
import type { StatefulSet } from "../kube/types";
import type { JournalExisting } from "./resize";

export const journalApiVersion = "appstorage.kubectl.io/v1alpha1";
export const journalSecretPrefix = "appstorage-journal-";
export const journalDataKey = "journal.json";
/** A run renews its lease while it works; a journal whose lease expired was left by a dead run. */
export const leaseSeconds = 15;

/** growing: existing claims are being grown (before the StatefulSet is touched). */
export type JournalStep = "planned" | "growing" | "deleting" | "deleted" | "created";

export interface Journal {
  apiVersion: typeof journalApiVersion;
  kind: "Journal";
  namespace: string;
  name: string;
  originalUid: string;
  originalResourceVersion: string;
  /** The directives, canonical, that produced `desired`. */
  request: string[];
  step: JournalStep;
  startedAt: string;
  updatedAt: string;
  /** Who runs it: user, host and process, and until when the lock holds. */
  by: string;
  holder: string;
  leaseExpires: string;
  /** What existed before: used to verify that nothing was replaced. */
  pods: { name: string; uid: string; revision?: string }[];
  claims: { name: string; uid: string }[];
  original: StatefulSet;
  desired: StatefulSet;
  /** With --resize-existing/--vac-existing: the flags and the claims to change (resize.ts). */
  existing?: JournalExisting;
}

export function journalSecretName(statefulSet: string): string {
  return (journalSecretPrefix + statefulSet).slice(0, 253);
}

export function leaseExpired(journal: Journal, now: Date): boolean {
  return Date.parse(journal.leaseExpires) <= now.getTime();
}

export function parseJournal(text: string): Journal {
  const j = JSON.parse(text) as Journal;
  if (j?.apiVersion !== journalApiVersion || j.kind !== "Journal" || !j.desired || !j.originalUid) {
    throw new Error(`unsupported journal (apiVersion ${String(j?.apiVersion)})`);
  }
  return j;
}
