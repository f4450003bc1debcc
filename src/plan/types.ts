// The plan's data: what was read, what was asked, and the Plan that `diff`, `set --dry-run` and
// `set` share. Plain JSON-serialisable data and the step order; no logic. Every module that
// needs these types imports them from here (the work on existing claims' from ./existing-claims-types.ts,
// the migration's from ./migration-types.ts), so modules depend on data, not on each other.
import type { PersistentVolume, PersistentVolumeClaim, Pod, PodDisruptionBudget, StatefulSet, StorageClass, Taint } from "../api/types";
import type { ClassView } from "./classes";
import type { Directive } from "./directive";
import type { ExistingClaimsObserved, ExistingClaimsOptions, ExistingClaimsPlan, ExistingClaimsResult, JournalExistingClaims } from "./existing-claims-types";
import type { Migration, MigrationResult } from "./migration-types";
import type { MoveView } from "./move-types";
import type { JournalOwner, ObservedOwner, Owner, OwnerPause } from "./owner-types";
import type { TemplateRoll, TemplateSetRequest } from "./roll-types";

/** The version of this tool's own documents: Plan(List), Journal, Result(List), StorageReport, History. */
export const apiVersion = "appstorage.kubectl.io/v1alpha1";

/**
 * Every step a run can take, in the only order they are ever taken. A plan lists a subset,
 * always in this order; apply executes exactly the listed steps.
 */
export const stepOrder = [
  "write-journal",
  "pause-owner",
  "grow-claims",
  "label-claims",
  "orphan-delete",
  "wait-gone",
  "create",
  "verify",
  "record",
  "roll-pods",
  "restore-strategy",
  "migrate",
  "resume-owner",
  "remove-journal",
  "wait-resize",
  "restart-pods",
] as const;

export type Step = (typeof stepOrder)[number];

/** The steps that re-create the StatefulSet with new claim templates. */
export const recreateSteps: readonly Step[] = ["write-journal", "orphan-delete", "wait-gone", "create", "verify", "record", "remove-journal"];

/** rolling: set -f added or removed templates and the pods are being restarted; rolled: all were, the updateStrategy is being put back. */
export type JournalStep = "planned" | "growing" | "deleting" | "deleted" | "created" | "migrating" | "rolling" | "rolled";

/**
 * The journal of one `set`: saved before anything destructive so that any later run (on this
 * machine or another) can finish the job. Format documented in the README ("Journal").
 */
export interface Journal {
  apiVersion: typeof apiVersion;
  kind: "Journal";
  namespace: string;
  name: string;
  originalUid: string;
  originalResourceVersion: string;
  /** The directives, canonical, that produced `desired`. */
  request: string[];
  /** growing: existing claims are being grown (before the StatefulSet is touched). */
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
  /** The original's metadata.managedFields: restored on the re-created object (fieldManagers on Plan says why). */
  fieldManagers?: FieldManagers;
  /** With --resize-existing/--vac-existing: the flags and the claims to change. */
  existing?: JournalExistingClaims;
  /** With --migrate-existing: every claim to move and how far it got. */
  migration?: Migration;
  /** undo: this journal puts the original back (desired is the original); finished by `undo`. */
  command?: "undo";
  /** set -f added or removed claim templates: the pods restart once each (desired has the new pod template). */
  roll?: TemplateRoll;
  /** --pause-owner: how the owner was paused and is put back; a rerun after a kill resumes it. */
  owner?: JournalOwner;
  /** The run's own flags that the command finishing it repeats (src/plan/finish.ts): its -f files, and the other flags' words. */
  finish?: { filenames?: string[]; flags: string[] };
}

/** The journal's Secret as it was read: the lock is taken against exactly this version. */
/** metadata.managedFields entries, as the server wrote them. */
export type FieldManagers = Record<string, unknown>[];

export interface JournalSecretRef {
  uid: string;
  resourceVersion: string;
}

export interface Observed {
  /** undefined: the StatefulSet does not exist. */
  statefulSet?: StatefulSet;
  claims: PersistentVolumeClaim[];
  /** Their metadata only (listPodMetadata): a plan looks at nothing else of a pod. */
  pods: Pod[];
  storageClasses: StorageClass[];
  /**
   * Why storage classes could not be listed (forbidden at cluster scope); undefined when they
   * were. Then `storageClasses` holds only the classes the directives name that could be read
   * one by one, and `storageClassesUnknown` the named ones that could not be read at all.
   */
  storageClassError?: string;
  storageClassesUnknown?: string[];
  journal?: Journal;
  /** Why the journal could not be read (forbidden): an interrupted change may be pending. */
  journalError?: string;
  journalSecret?: JournalSecretRef;
  /** With --migrate-existing: the PersistentVolumes bound to claims of the namespace (undefined: they could not be listed). */
  persistentVolumes?: PersistentVolume[];
  /** With --migrate-existing: the node each running pod of the StatefulSet is on, by pod name. */
  podNodes?: Record<string, string>;
  /** With --migrate-existing: those nodes that are cordoned (spec.unschedulable), as far as they could be read (a namespace admin may not). */
  cordonedNodes?: string[];
  /** With --migrate-existing: the taints of those nodes, by node name, for those that could be read (the copy pods tolerate exactly these). */
  nodeTaints?: Record<string, Taint[]>;
  /** With --migrate-existing: the namespace's PodDisruptionBudgets (undefined: they could not be listed). */
  disruptionBudgets?: PodDisruptionBudget[];
  /** Quotas and volume attributes classes, read only for work on existing claims. */
  existing?: ExistingClaimsObserved;
  /** The journal's holder was a process on this machine that no longer exists (killed). */
  holderGone?: boolean;
  /** The objects of Argo CD or Flux the StatefulSet's labels and annotations name (src/commands/observe-owner.ts), as read. */
  owners?: ObservedOwner[];
  /** Who runs this (for the change annotation) and when: inputs, so the plan stays pure. */
  user: string;
  now: string;
}

export interface PlanRequest {
  namespace: string;
  name: string;
  directives: Directive[];
  force: boolean;
  existing?: ExistingClaimsOptions;
  /** --overwrite: a --template-label or --template-annotation may change a key that has another value (as kubectl label). */
  overwrite?: boolean;
  /**
   * The claim templates whose existing claims the work on them covers (--resize-existing,
   * --relabel-existing); default: those the directives name. set -f: every template of the manifest.
   */
  templates?: string[];
  /** The directives make the templates a manifest's (set -f): what Helm, Argo CD or Flux will apply next. */
  fromManifest?: boolean;
  /** What the history calls this change, when not its directives (an undo). */
  cause?: string;
  /** set -f: claim templates added or removed, and the pod template that mounts them. */
  templateSet?: TemplateSetRequest;
  /** --pause-owner: pause Argo CD or Flux before the first write, resume it after the last (or on any stop). */
  pauseOwner?: boolean;
}

export interface TemplateSide {
  size?: string;
  storageClass?: string;
  volumeAttributesClass?: string;
  /** Only when the change sets them (--template-label, --template-annotation, set -f): the template's labels, annotations and access modes. */
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  accessModes?: string[];
}

export interface TemplateChange {
  claim: string;
  before: TemplateSide;
  after: TemplateSide;
}

/**
 * Why a Pending claim has no volume, when what was read can tell. StorageClassNotFound and
 * ProvisioningFailed are stuck until someone acts; WaitForFirstConsumer is waiting as designed.
 */
export interface PendingReason {
  reason: "StorageClassNotFound" | "ProvisioningFailed" | "WaitForFirstConsumer";
  /** false: waiting as designed (WaitForFirstConsumer: until a pod using the claim is scheduled). */
  stuck: boolean;
  /** Why, in one line. */
  message: string;
  /** ProvisioningFailed: the latest such event on the claim, as its provisioner wrote it. */
  event?: { message: string; count?: number; lastTimestamp?: string; source?: string };
}

/**
 * What a user can run by hand to have a claim that never bound (no volume, so no data) created
 * again from its template. This tool never runs it: it deletes claims only as --migrate-existing
 * moves them, and pods only its own copy pods (others it evicts).
 */
export interface RecreateByHand {
  /** One shell line: the claim's delete, then (when the pod exists) its pod's. */
  command: string;
  /** What the command does beyond the claim: the pod restarts. */
  warning: string;
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
  /** The PersistentVolume it is bound to; absent: it never bound (no volume, so no data). */
  volumeName?: string;
  /** Pending: why, when the storage classes tell (the plan reads no events). */
  pendingReason?: PendingReason;
  /** Never bound and it will not match the new template: how to have it re-created by hand. */
  recreateByHand?: RecreateByHand;
}

/**
 * Which ordinals get the new claim templates and which keep an existing claim, per template.
 * The StatefulSet controller creates a missing claim from the template of the moment, for every
 * ordinal it runs (below replicas) and for every ordinal a later scale-up adds; it reuses any
 * claim that exists, whatever its template.
 */
export interface OrdinalsPlan {
  /** The ordinals the StatefulSet runs: [start, start + replicas). */
  start: number;
  replicas: number;
  /** From this ordinal up (a later scale-up), missing claims get the new templates (= newOrdinals.from). */
  scaleUpFrom: number;
  templates: {
    claim: string;
    /** Below replicas, with a claim: keep it as it is. */
    keep: number[];
    /** Below replicas, no claim yet: created from the new template. */
    create: number[];
    /** From scaleUpFrom up, a claim left by an earlier scale-down: a scale-up reuses it as it is. */
    leftover: number[];
  }[];
}

export interface Refusal {
  message: string;
  /** --force proceeds past it; data-safety refusals are never forceable. */
  forceable: boolean;
}

export interface Plan {
  apiVersion: typeof apiVersion;
  kind: "Plan";
  /** contentDigest: the object as read, without its status (a fresh plan's; a resumed one has none). */
  target: { namespace: string; name: string; uid: string; resourceVersion: string; contentDigest?: string };
  /** fresh: a new change; resume: finishing an interrupted run from its journal. */
  mode: "fresh" | "resume";
  request: string[];
  changes: TemplateChange[];
  claims: ClaimEffect[];
  newOrdinals: { from: number; templates: { claim: string; size?: string; storageClass?: string }[] };
  /** Exactly which ordinals get the new templates and which keep an existing claim. */
  ordinals: OrdinalsPlan;
  warnings: string[];
  refusals: Refusal[];
  steps: Step[];
  noChange: boolean;
  /** Pods and claims that exist now; apply verifies that none was replaced. */
  pods: { name: string; uid: string; revision?: string }[];
  original: StatefulSet;
  desired: StatefulSet;
  /**
   * Who owned which fields of the original (its metadata.managedFields), put back on the re-created
   * object: a create makes its own manager own every field, and Helm 4's or a GitOps tool's next
   * server-side apply would then conflict on the claim templates. The same object, the same owners.
   */
  fieldManagers?: FieldManagers;
  journal?: Journal;
  /** The journal's Secret as read: the journal is replaced only if it is still this version. */
  journalSecret?: JournalSecretRef;
  /** What happens to existing claims, when asked. */
  existing?: ExistingClaimsPlan;
  /** With --migrate-existing: the claims that move to new volumes, highest ordinal first. */
  migration?: Migration;
  /** With --migrate-existing: each claim's phase and the actions its move has left (src/plan/move.ts, movesLeft). */
  moves?: MoveView[];
  /** What the classes of the changed templates (before and after) and of their claims can do; absent without template changes. */
  storageClasses?: ClassView[];
  /** set -f added or removed claim templates: the pod template changes with them and every pod restarts once, in this order. */
  roll?: TemplateRoll;
  /** Who else manages the StatefulSet (Argo CD, Flux, Helm, an operator) and how to pause it. */
  owner?: Owner;
  /** --pause-owner: the pause this run makes before its first write and takes back after its last. */
  ownerPause?: OwnerPause;
  /** sha256 of the plan without this field (src/plan/seal.ts): a plan file edited by hand no longer matches it. */
  digest?: string;
}

/** The plans of one `set -l`, `diff -l` or `undo -l`: one per StatefulSet, applied up to --parallel at a time. */
export interface PlanList {
  apiVersion: typeof apiVersion;
  kind: "PlanList";
  items: Plan[];
}

export interface ResultList {
  apiVersion: typeof apiVersion;
  kind: "ResultList";
  items: ApplyResult[];
}

export interface ApplyResult {
  apiVersion: typeof apiVersion;
  kind: "Result";
  namespace: string;
  name: string;
  previousUid: string;
  uid: string;
  resumed: boolean;
  request: string[];
  pods: { name: string; uid: string; adopted: boolean; revision?: string }[];
  claims: { name: string; uid: string }[];
  /** Existing claims patched, followed and pods restarted (--resize-existing and friends). */
  existing?: ExistingClaimsResult;
  /** --migrate-existing: the claims moved. */
  migration?: MigrationResult;
  /** set -f adding or removing templates: each pod restarted (earlier: by an interrupted run), and the claims it got. */
  rolled?: { pod: string; previousUid?: string; uid: string; earlier?: boolean; newClaims?: { name: string; uid: string }[] }[];
  elapsedSeconds: number;
}
