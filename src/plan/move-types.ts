// One claim's move as data: what was observed of it (MoveObserved), the closed set of actions
// (MoveAction) that nextMoveAction (./move.ts) chooses from, and what a run remembers of its own
// actions (MoveRun). Types only: src/apply/move.ts observes, asks ./move.ts, executes, records.
import type { PersistentVolume, PersistentVolumeClaim, Pod, StatefulSet } from "../api/types";
import type { CopyReport, MigrationClaim, MigrationPhase } from "./migration-types";

/** The StatefulSet the moves belong to, as planned. */
export interface MoveTarget {
  namespace: string;
  name: string;
  /** The uid of the StatefulSet as planned; a re-created one with the new templates is this change's too. */
  uid: string;
  desired: StatefulSet;
  copyImage: string;
}

/**
 * What this run did that the cluster does not tell: which copy pods it created or told to go (a
 * pod from an earlier run may have copied before the replica last ran, so it is replaced, never
 * trusted), when it first saw each copy pod (how long one has been unable to start), a refusal
 * of its last copy pod, and its failure (once set, the move winds down and stops).
 */
export interface MoveRun {
  /** Copy pods (uids) this run created. */
  created: string[];
  /** Final-copy pods (uid -> ms, this run's clock) this run told to go (by deleting them: SIGTERM is the go). */
  told: Record<string, number>;
  /** Copy pods (uid -> ms) as this run first saw them. */
  seen: Record<string, number>;
  /** The last state this run's watch saw of a final-copy pod it told to go, once kubelet removed it (its report). */
  ended?: Pod;
  /** The server refused this run's copy pod (admission: quota, Pod Security): its message. */
  refused?: string;
  /** Copy pods (uid -> ms) as this run first saw them running, and last saw them Ready (bytes moving: progressProbe). */
  running?: Record<string, number>;
  progress?: Record<string, number>;
  /** This run evicted the replica (it is down because of this run). */
  stopped?: boolean;
  /** This run orphan-deleted the StatefulSet (nothing re-creates a pod until it is back). */
  orphaned?: boolean;
  /** Something outside the machine stopped this run (a wait that timed out, a write that failed): its message; the move brings the replica back. */
  interrupted?: string;
  failure?: MoveFailure;
}

/** Why a run fails, and how it winds down (src/plan/move.ts, windDown). */
export interface MoveFailure {
  message: string;
  /** The claim is as it was: the StatefulSet is re-created if it is gone, and the replica comes back on its old volume. */
  restore: boolean;
  /** The move had stopped the replica: the run waits until it is Ready again before it stops. */
  replicaDown?: boolean;
  /** What the copy put on the new volume is kept for the next run (a copy that stalled), even before its first copy was recorded. */
  keepCopy?: boolean;
}

/** What was read of one claim's move, and this run's memory of it. */
export interface MoveObserved {
  target: MoveTarget;
  /** The claim's move as the journal keeps it. */
  m: MigrationClaim;
  statefulSet?: StatefulSet;
  /** The pods of the StatefulSet's selector (the replica that moves and the others). */
  pods: Pod[];
  /** The claim under its own name: the original (uid m.uid), or the one re-created on the new volume. */
  claim?: PersistentVolumeClaim;
  /** The tool's claim of the new volume (appstorage-new-CLAIM). */
  newClaim?: PersistentVolumeClaim;
  /** The claim's copy pod (appstorage-copy-CLAIM), whatever its mode. */
  copyPod?: Pod;
  oldVolume?: PersistentVolume;
  /** The new volume: the journal's, else the one the tool's claim is bound to. */
  newVolume?: PersistentVolume;
  /** Before the replica stops: its node is cordoned (read when it could be: a namespace admin may not read nodes). */
  replicaNodeCordoned?: string;
  run: MoveRun;
  /** ms, this run's clock. */
  now: number;
}

/** What a wait watches; the wait ends once nextMoveAction decides something else. */
export type WaitOn = "copy-pod" | "pods" | "statefulset" | "claim" | "new-claim";

/** What a record writes into the journal's claim. */
export type MovePatch = Partial<Pick<MigrationClaim, "phase" | "copiedSince" | "newVolume" | "verified">>;

/**
 * Every action of a move. Each is safe to repeat: the next observation shows whether it was done
 * (a create that exists, a delete of what is gone, a patch already there).
 */
export type MoveAction =
  /** The tool's claim of the new volume (new class and size). */
  | { kind: "create-new-claim" }
  /** A copy pod: the first copy ("copy"), or the final copy and verification ("sync"), waiting to be told or going at once. */
  | { kind: "create-copy-pod"; mode: "copy" | "sync"; start: "wait" | "go" }
  /** The waiting final-copy pod's annotation set to go: it copies what changed and verifies. */
  | { kind: "tell-copy-pod"; uid: string }
  | { kind: "remove-copy-pod"; uid: string; warn?: string }
  /** The journal's claim updated (a phase reached, and what it learned); `report` is the copy pod's. */
  | { kind: "record"; set: MovePatch; warn?: string; report?: CopyReport }
  /** The StatefulSet orphan-deleted (exactly this uid and resourceVersion), so nothing re-creates the pod. */
  | { kind: "orphan-delete"; uid: string; resourceVersion: string }
  | { kind: "evict"; pod: string; uid: string }
  /** The old volume set to Retain and labelled: it outlives its claim. */
  | { kind: "retain-old-volume"; volume: string }
  /** The new volume kept (Retain) while its claims change; its own policy saved first, given back later. */
  | { kind: "hold-new-volume"; volume: string; policy: string }
  | { kind: "delete-claim"; name: string; uid: string }
  /** The new volume's claimRef set to the claim's name (no uid): the claim to be re-created binds to it. */
  | { kind: "bind-new-volume"; volume: string }
  | { kind: "create-moved-claim"; volume: string }
  | { kind: "restore-new-volume-policy"; volume: string; policy: string }
  | { kind: "create-statefulset" }
  /** `progress`: a copy that runs: bounded by its progress (stallSeconds), not by --timeout. */
  | { kind: "wait"; on: WaitOn; for: string; progress?: true }
  /** This run failed (said in message): the journal goes back to `phase` when given; the move winds down (MoveFailure). */
  | ({ kind: "fail"; phase?: MigrationPhase } & MoveFailure)
  /** The end of a failed run: nothing more is done. */
  | { kind: "stop"; message: string }
  | { kind: "done" };

export type MoveActionKind = MoveAction["kind"];

/** One action still to come, as a plan shows it: its kind and what it acts on. */
export interface MoveStepView {
  kind: Exclude<MoveActionKind, "wait" | "fail" | "stop" | "done">;
  /** The object it acts on (a claim, a pod, a volume), when it names one. */
  object?: string;
  mode?: "copy" | "sync";
  start?: "wait" | "go";
  phase?: MigrationPhase;
}

/** A claim's move as a plan shows it: its phase and the actions left, in the order a run takes them (waits left out). */
export interface MoveView {
  claim: string;
  phase: MigrationPhase;
  left: MoveStepView[];
}
