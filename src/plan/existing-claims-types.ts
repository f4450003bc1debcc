// The work on existing claims (--resize-existing, --vac-existing, --wait-resize, --restart-pods): its
// options, what it reads, plans, journals and did. Apart from the Plan/Journal core (./types.ts), which
// holds them only as optional parts; the migration's types are in ./migration-types.ts.
import type { ResourceQuota } from "../api/types";
import type { MigrateOptions } from "./migration-types";
import type { MapEdits } from "./template-metadata";

/** --resize-existing, --vac-existing, --wait-resize, --restart-pods (and --migrate-existing): the work on existing claims. */
export interface ExistingClaimsOptions {
  /** --resize-existing: grow smaller claims, and set the attributes class a directive names. */
  resize: boolean;
  /** --vac-existing: set the attributes class a directive names on existing claims, no growth. */
  vac: boolean;
  /** --wait-resize: follow each claim until resized or FileSystemResizePending. */
  waitResize: boolean;
  /** --restart-pods: evict, one at a time, the pods of FileSystemResizePending claims. */
  restartPods: boolean;
  /** --migrate-existing: move every existing claim of the named templates to a new volume, with its data. */
  migrate?: MigrateOptions;
  /** --relabel-existing: make the labels and annotations of existing claims their template's (a metadata patch, no restart). */
  relabel?: boolean;
}

/** What only the work on existing claims needs to read: quotas and volume attributes classes. */
export interface ExistingClaimsObserved {
  /** undefined: they could not be read (quotaError says why); the server still enforces them. */
  resourceQuotas?: ResourceQuota[];
  quotaError?: string;
  /** Names of the VolumeAttributesClasses; undefined: not served (or not readable, see below). */
  volumeAttributesClasses?: string[];
  /** Why they could not be read (forbidden): the names are then left to the server. */
  volumeAttributesClassError?: string;
}

/** What the journal keeps of the work on existing claims, so a rerun knows it was under way. */
export interface JournalExistingClaims {
  options: ExistingClaimsOptions;
  claims: { name: string; uid: string; from?: string; to?: string; volumeAttributesClass?: string }[];
  /** --relabel-existing: the claims whose labels or annotations change, and how. */
  relabel?: { name: string; uid: string; patch: ClaimMetadataPatch }[];
}

/** The keys of a claim's metadata.labels and metadata.annotations set or removed (null): a merge patch. */
export interface ClaimMetadataPatch {
  labels?: MapEdits;
  annotations?: MapEdits;
}

/** --relabel-existing: one existing claim of a covered template, and what it needs to carry its template's labels and annotations. */
export interface ClaimRelabel {
  name: string;
  template: string;
  ordinal: number;
  uid: string;
  resourceVersion?: string;
  /** Its labels and annotations as they are now. */
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** What this run patches; empty when they already are the template's. */
  patch: ClaimMetadataPatch;
}

/** Where a claim's resize stands, from its status (conditions and allocatedResourceStatuses). */
export type ResizeState = "none" | "requested" | "resizing" | "filesystem-resize-pending" | "infeasible";

export interface ExistingClaim {
  name: string;
  template: string;
  ordinal: number;
  uid: string;
  resourceVersion?: string;
  pod?: string;
  leftover: boolean;
  phase?: string;
  request?: string;
  capacity?: string;
  storageClass?: string;
  volumeAttributesClass?: string;
  state: ResizeState;
  /** The patch of spec.resources.requests.storage this run sends. */
  grow?: { from: string; to: string };
  /** The patch of spec.volumeAttributesClassName this run sends. */
  setVolumeAttributesClass?: { from?: string; to: string };
  /** --wait-resize follows it: its request exceeds its capacity, or its attributes class is not applied yet. */
  follow: boolean;
  /** The attributes class to wait for, when one is being applied. */
  awaitVolumeAttributesClass?: string;
}

export interface QuotaCheck {
  quota: string;
  resource: string;
  hard: string;
  used: string;
  needed: string;
  left: string;
  fits: boolean;
}

export interface ExistingClaimsPlan {
  options: ExistingClaimsOptions;
  /** Every claim of the templates the directives name, with what happens to it. */
  claims: ExistingClaim[];
  /** Sum of what growing adds to requests.storage, as a quantity. */
  growth: string;
  quotas: QuotaCheck[];
  /** --relabel-existing: every existing claim of the covered templates, with its patch. */
  relabel?: ClaimRelabel[];
}

/** What `set` did, printed with -o json|yaml. */
export interface ExistingClaimsResult {
  claims: { name: string; uid: string; request?: string; capacity?: string; volumeAttributesClass?: string; state?: string; patched: boolean }[];
  /** --relabel-existing: the claims whose labels or annotations were patched by this run. */
  relabeled?: { name: string; uid: string; labels: boolean }[];
  restarted: { pod: string; previousUid: string; uid: string }[];
}
