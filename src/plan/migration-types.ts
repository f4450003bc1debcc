// --migrate-existing's data: its options, each claim's move and phase as the journal saves it, and what
// it did. Apart from the Plan/Journal core (./types.ts), which holds a Migration as an optional part.
import type { Toleration } from "../api/types";

/** --migrate-existing with --copy-image. (Consent, --yes or the prompt, is the run's, never the plan's.) */
export interface MigrateOptions {
  copyImage: string;
  /** --copy-image was given: an interrupted move goes on with it (a copy pod that could not pull its image stopped it), not with its journal's. */
  copyImageGiven?: boolean;
}

/**
 * Where one claim's move stands, saved in the journal after each phase: a rerun goes on from
 * there. pending -> copied (filled while the pod ran) -> stopped (pod evicted, StatefulSet
 * orphan-deleted) -> verified (final copy, checksums equal) -> swapped (old volume Retain and
 * labelled, the claim re-created on the new volume) -> done (the pod is back and Ready).
 */
export type MigrationPhase = "pending" | "copied" | "stopped" | "verified" | "swapped" | "done";

export interface MigrationClaim {
  claim: string;
  template: string;
  ordinal: number;
  /** The claim as planned: its uid, volume and access modes. */
  uid: string;
  volume: string;
  accessModes: string[];
  /** The pod that mounts it and its node, when it runs. */
  pod?: string;
  node?: string;
  from: { size?: string; storageClass?: string };
  to: { size: string; storageClass?: string };
  /** The taints of that node as planned, tolerated by its copy pods (and nothing else). */
  tolerations?: Toleration[];
  /** A shrink: a pod measures the data once the change is confirmed, before anything changes. */
  measure?: boolean;
  /** The claim's labels, given to it again when it is re-created on the new volume. */
  labels?: Record<string, string>;
  /**
   * The annotations both new claims carry (the tool's claim of the new volume and the claim
   * re-created on it): the claim's own, without those the volume controllers and the scheduler
   * set, under its new template's. A provisioner reads its options there (local-path's
   * `volumeType: local`), as it did when the StatefulSet controller made the claim.
   */
  annotations?: Record<string, string>;
  /** ReadWriteOncePod: no copy while the pod runs; the replica is down for the whole copy. */
  offline: boolean;
  /**
   * The new class binds at once (Immediate): the tool's claim of the new volume names the replica's
   * node (volume.kubernetes.io/selected-node), so that the provisioner makes the volume where that
   * node is (its zone), where the copy pod mounts both volumes.
   */
  provisionOn?: string;
  phase: MigrationPhase;
  /** Seconds since the epoch (the node's clock) when the first copy began: the final copy takes what changed since. */
  copiedSince?: number;
  /** The new volume, once provisioned, and its reclaim policy to restore once its claim is re-created. */
  newVolume?: string;
  newVolumePolicy?: string;
  /** Bytes and files the verification counted, and the manifest digest both sides had. */
  verified?: { files: number; bytes: number; digest: string };
}

export interface Migration {
  copyImage: string;
  /** In the order they move: highest ordinal first. */
  claims: MigrationClaim[];
}

/** What --migrate-existing did, claim by claim. */
export interface MigrationResult {
  claims: {
    claim: string;
    ordinal: number;
    oldVolume: string;
    newVolume?: string;
    /** The re-created claim's uid. */
    uid?: string;
    files?: number;
    bytes?: number;
    copySeconds?: number;
    finalSeconds?: number;
    /** How long its pod was down (evicted until Ready again), when this run stopped it. */
    downSeconds?: number;
  }[];
}

/** What a copy pod reported: the first copy's start and bytes, or the verification's counts and digests. */
export interface CopyReport {
  since?: number;
  /** How long the copy itself took in the pod (and the verification), by the node's clock. */
  seconds?: number;
  verifySeconds?: number;
  /** The first copy's hashing of both sides (while the pod runs), after the copy itself. */
  hashSeconds?: number;
  /** The final copy's large files brought up to date block by block, and how many blocks it wrote. */
  blockFiles?: number;
  blocks?: number;
  bytes?: number;
  files?: number;
  src?: string;
  dst?: string;
  diff?: string;
  error?: string;
}

/** What a --copy-image must have, for the messages that name it (the copy script checks it before it reads anything). */
export const copyImageNeeds =
  "it needs rsync 3.1.3 or later and sh, find, stat, xargs, sha256sum, awk, sort, sed, tr, dd, du, df, cut, wc, grep and diff, which busybox has; with getfattr, xattrs and ACLs are also in the manifests";

/**
 * The default --copy-image, pinned by digest: instrumentisto/rsync-ssh, Alpine Linux with Alpine's
 * rsync package (3.4 in Alpine 3.23) beside busybox's tools, which are every tool the copy script
 * uses. Chosen as a small, single-purpose image that its maintainers rebuild on every Alpine release
 * (its CHANGELOG lists each), for several platforms, from a Dockerfile of a few lines. It has no getfattr: xattrs and ACLs are then compared by rsync's own dry run
 * (src/plan/copy-script.ts).
 *
 * The digest was NOT checked against the registry from the machine this was written on (it has no
 * registry access): it is the digest public code pins for the tag alpine3.23-r3
 * (keatsfonam/kubectl-shrink-pvc, its default image). Check it before a release:
 *   crane digest docker.io/instrumentisto/rsync-ssh:alpine3.23-r3
 */
export const defaultCopyImage = "docker.io/instrumentisto/rsync-ssh:alpine3.23-r3@sha256:6cbad37c2fbdca4ac7ad9d1c1bb8990af9efd4dc76321b349935876cbb1e9e4a";
