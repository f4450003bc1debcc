// One claim's move as a state machine: nextMoveAction(observed) -> the next action, from what was
// read of the claim, its pods, volumes and copy pod, the journal's phase and this run's memory.
// Pure; src/apply/move.ts executes the action, records it, reads again and asks again.
//
// The phases (the journal's, ./migration-types.ts) and the goal that leads to each:
//   copied:   the tool's claim of a new volume, filled by a copy pod (while the replica runs);
//   stopped:  the final copy's pod started while the replica runs (it waits to be told), every
//             other replica Ready, the StatefulSet orphan-deleted, the replica evicted and gone;
//   verified: that pod told to go (deleted: kubelet sends it SIGTERM at once, its go): it copies what
//             changed, compares both sides' manifests and exits, which kubelet reports at once;
//   swapped:  the old volume Retain and labelled, the new one held (Retain), the tool's claim and
//             the old claim removed, the claim re-created on the new volume, the StatefulSet
//             re-created while the claim binds;
//   done:     the StatefulSet there (re-created if a rerun finds it gone), the replica Ready on the new volume.
// A ReadWriteOncePod claim is stopped before its first copy (phaseOrder). While the replica must
// be down and its claim is still the original, a replica that runs again (its StatefulSet
// re-created by someone) sends the move back to stopping it: the final copy is made again.
import type { KubeNode, Pod, PersistentVolumeClaim } from "../api/types";
import { statefulSetRef } from "../refs";
import { copyPodDone, copyPodName, labelValue, migrationLabels, newVolumeClaimName, parseCopyReport, phaseOrder, startAnnotation, toleratedTaints } from "./migrate";
import { copyImageNeeds, type MigrationClaim, type MigrationPhase } from "./migration-types";
import type { MoveAction, MoveFailure, MoveObserved, MoveRun, MoveStepView, MoveView } from "./move-types";
import { controlledBy, isReady, ordinalStart, replicasOf, sameClaimTemplates } from "./objects";

/** How long a copy pod may stay Unschedulable before the run stops (a claim of an Immediate class binds meanwhile, resources may free up). */
export const unschedulableSeconds = 20;

/**
 * How long a running copy may move no byte before the run stops it: its pod not Ready (progressProbe,
 * ./migrate.ts: no read or write by any of its processes over a probe period of 10 s) for this long,
 * as this run sees it. A copy that keeps moving bytes is not cut by --timeout, however long it
 * takes. Two minutes: far more than a healthy copy is ever quiet (between two files, the
 * verification's sorts and the sync of what it wrote are all reads and writes; the longest quiet
 * time is a sync waiting on a slow disk), and short enough that a copy that hangs (a volume that
 * stopped answering, a node whose kubelet died: its pods go not Ready some 40 s later) gives the
 * replica back within about three minutes.
 */
export const stallSeconds = 120;

const deleting = (o: { metadata: { deletionTimestamp?: string } } | undefined) => !!o?.metadata.deletionTimestamp;
/** A copy pod whose container ended (a deleted pod's may end before its phase says so). */
const ended = (p: Pod) => copyPodDone(p) || (p.status?.containerStatuses ?? []).some((c) => c.state?.terminated !== undefined);
const modeOf = (p: Pod) => p.metadata.annotations?.["appstorage.kubectl.io/copy"];
export const imageOf = (p: Pod) => ((p.spec?.["containers"] as { image?: string }[] | undefined) ?? [])[0]?.image;
const wait = (on: Extract<MoveAction, { kind: "wait" }>["on"], what: string, progress = false): MoveAction => ({ kind: "wait", on, for: what, ...(progress ? { progress } : {}) });
const remove = (p: Pod, warn?: string): MoveAction => ({ kind: "remove-copy-pod", uid: p.metadata.uid!, ...(warn ? { warn } : {}) });

/** The phase a move goes to next. */
function goalOf(m: MigrationClaim): MigrationPhase {
  const order = phaseOrder(m);
  return order[Math.min(order.indexOf(m.phase) + 1, order.length - 1)]!;
}

/** Phases in which the replica must stay down (it was stopped for them), and the phase to go back to when it runs again. */
function mustBeDown(m: MigrationClaim): boolean {
  return m.offline ? m.phase === "stopped" || m.phase === "copied" || m.phase === "verified" : m.phase === "stopped" || m.phase === "verified";
}
const backPhase = (m: MigrationClaim): MigrationPhase => (m.offline ? "pending" : "copied");

const replicaOf = (o: MoveObserved) => (o.m.pod ? o.pods.find((p) => p.metadata.name === o.m.pod) : undefined);
const original = (o: MoveObserved): PersistentVolumeClaim | undefined => (o.claim?.metadata.uid === o.m.uid ? o.claim : undefined);

/**
 * A failure of this run. While the claim is as it was (the swap has not begun), the move winds back:
 * the StatefulSet comes back if it is gone, the replica on its old volume (Ready again before the
 * run stops, when the move had stopped it), and the journal goes back a phase when the replica had
 * to be down for the one it was in. A move never leaves its replica down.
 */
function failHere(o: MoveObserved, message: string, back: MigrationPhase = backPhase(o.m), keepCopy = false): MoveAction {
  const old = original(o);
  const restore = old !== undefined && !deleting(old);
  const down = mustBeDown(o.m) || o.run.stopped === true;
  return {
    kind: "fail",
    message,
    restore,
    ...(restore && o.m.pod && down ? { replicaDown: true } : {}),
    ...(restore && mustBeDown(o.m) ? { phase: back } : {}),
    ...(keepCopy ? { keepCopy } : {}),
  };
}

/**
 * The swap has begun (or is over): the claim is no longer the original (deleted, or being deleted);
 * the way up is forward, onto the new volume. A move that is done is past it: an interruption the
 * run saw before the swap went on (a delete of the claim whose answer was lost, which the server
 * did) must not fail the move that finished.
 */
export const swapBegun = (o: MoveObserved): boolean => {
  const old = original(o);
  return o.m.phase === "swapped" || o.m.phase === "done" || (o.m.phase === "verified" && (old === undefined || deleting(old)));
};

/** The readiness probe says the copy's bytes move (progressProbe); a told final copy is a deleted pod, so not isReady's question. */
const moving = (p: Pod) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

/** What this run learns of a copy pod each time it sees one: when it first saw it, first saw it run, last saw its bytes move. */
export function noteCopyPod(run: MoveRun, p: Pod | undefined, now: number): void {
  const uid = p?.metadata.uid;
  if (!p || !uid) return;
  if (run.seen[uid] === undefined) run.seen[uid] = now;
  if (p.status?.phase !== "Running") return;
  run.running ??= {};
  if (run.running[uid] === undefined) run.running[uid] = now;
  if (moving(p)) (run.progress ??= {})[uid] = now;
}

/**
 * A running copy that moved no byte for stallSeconds, as this run saw it (from when it saw it run,
 * was told to go, or last saw its bytes move): why the run stops it; undefined while it moves.
 */
function stalled(o: MoveObserved, p: Pod): string | undefined {
  const uid = p.metadata.uid!;
  if (p.status?.phase !== "Running" || ended(p) || moving(p)) return undefined;
  const from = Math.max(o.run.running?.[uid] ?? o.now, o.run.told[uid] ?? Number.NEGATIVE_INFINITY, o.run.progress?.[uid] ?? Number.NEGATIVE_INFINITY);
  const quiet = (o.now - from) / 1000;
  if (quiet < stallSeconds) return undefined;
  return `claim ${o.m.claim}: copy pod ${p.metadata.name} moved no byte for ${Math.round(quiet)}s (a copy may be quiet for ${stallSeconds}s; see kubectl describe pod ${p.metadata.name} -n ${o.target.namespace} and its node); the copy was stopped, and what it copied is kept on claim ${newVolumeClaimName(o.m.claim)} for the next run: run the same command again`;
}

/** The next action of one claim's move. */
export function nextMoveAction(observed: MoveObserved): MoveAction {
  // A final-copy pod this run told to go is removed by kubelet once it ended: its last state, as this
  // run's watch saw it, carries its report.
  const o = !observed.copyPod && observed.run.ended && goalOf(observed.m) === "verified" ? { ...observed, copyPod: observed.run.ended } : observed;
  if (o.run.failure) return windDown(o, o.run.failure);
  if (o.run.refused) return failHere(o, refusedMessage(o, o.run.refused));
  // Stopped from outside (a wait that timed out, a write that failed): wound back, unless the swap has begun (then only forward leads up).
  if (o.run.interrupted !== undefined && !swapBegun(o)) return failHere(o, o.run.interrupted);
  if (o.m.phase === "done") return { kind: "done" };
  const sts = o.statefulSet;
  const replica = replicaOf(o);
  if (mustBeDown(o.m) && original(o) && ((replica && !deleting(replica)) || (sts && !deleting(sts)))) {
    return { kind: "record", set: { phase: backPhase(o.m) }, warn: `${o.m.pod ?? o.m.claim} runs again (its StatefulSet was re-created meanwhile): stopping it again before the final copy` };
  }
  switch (goalOf(o.m)) {
    case "copied":
      return firstCopy(o);
    case "stopped":
      return stopReplica(o);
    case "verified":
      return finalCopy(o);
    case "swapped":
      return swapClaim(o);
    default:
      return startReplica(o);
  }
}

/** How many times a failure while the replica is down is tried again before the move gives up on the way it was going. */
export const triesWhileDown = 3;

/** A failure outside the machine (a wait that timed out, a request that failed), as runMove saw it. */
export interface Trouble {
  /** The replica is, or may be, down because of this move, or this run orphan-deleted the StatefulSet. */
  mayBeDown: boolean;
  /** The machine is winding down already: this run failed (`failure`), or was interrupted before. */
  windingDown: "failure" | "interrupted" | false;
  /** A wait that ran out of --timeout (the run's own stop), not a request that failed. */
  timedOut: boolean;
  /** The failures this run has seen, this one included, and how long since the first of them. */
  tries: number;
  elapsedMs: number;
  timeoutMs: number;
  /** The swap has begun (swapBegun): the only way up is forward. */
  swapBegun: boolean;
  phase: MigrationPhase;
}

/**
 * What a run does after a failure outside the machine: `end` it there (nothing is down because of
 * it), end it saying where the replica is (`down`: winding down failed too, or forward ran out of
 * --timeout), try again onto the verified new volume (`forward`), hand it to the machine, which
 * brings the replica back on its old volume (`back`: MoveRun.interrupted), or, winding down, try
 * that `again`. A move never leaves its replica down while a way up is left to try.
 */
export function afterTrouble(t: Trouble): "end" | "down" | "forward" | "back" | "again" {
  if (!t.mayBeDown) return "end";
  if (t.windingDown) return t.timedOut || t.tries > triesWhileDown ? "down" : "again";
  if (t.swapBegun) {
    // Forward only: a wait that timed out says where things are (the machine's own words); a
    // request that failed is tried again for up to --timeout.
    if (t.timedOut) return "end";
    return t.elapsedMs > t.timeoutMs ? "down" : "forward";
  }
  // With the copy verified, forward onto the new volume is tried first, a few times; else back onto the old one.
  if (t.phase === "verified" && !t.timedOut && t.tries <= triesWhileDown && t.elapsedMs <= t.timeoutMs) return "forward";
  return "back";
}

/** A copy pod deleted with a long grace period: a final copy told to go (it may still be copying). */
const told = (p: Pod) => deleting(p) && Number(p.metadata["deletionGracePeriodSeconds"] ?? 0) > 30;

/**
 * Once failed: the replica first (the StatefulSet back, when the claim is as it was), then the copy
 * pod removed (a told one too), the tool's claim removed when it holds nothing worth keeping, the
 * replica Ready again when the move had stopped it, then the stop with the failure's message.
 */
function windDown(o: MoveObserved, failure: MoveFailure): MoveAction {
  const ref = statefulSetRef(o.target.name);
  const old = original(o);
  const back = failure.restore && old !== undefined && !deleting(old);
  if (back && !o.statefulSet) return { kind: "create-statefulset" };
  if (back && deleting(o.statefulSet)) return wait("statefulset", `${ref} to be deleted before it is created again`);
  const pod = o.copyPod;
  if (pod) return deleting(pod) && !told(pod) ? wait("copy-pod", `copy pod ${pod.metadata.name} to be removed`) : remove(pod);
  // Before (or back before) its first copy, the tool's claim holds nothing worth keeping unless a copy ran into it: the next run copies anew.
  const copy = o.newClaim;
  if (o.m.phase === "pending" && copy && !failure.keepCopy)
    return deleting(copy) ? wait("new-claim", `claim ${copy.metadata.name} to be removed`) : { kind: "delete-claim", name: copy.metadata.name!, uid: copy.metadata.uid! };
  if (back && failure.replicaDown && o.m.pod) {
    const p = replicaOf(o);
    const up = p !== undefined && !deleting(p) && isReady(p) && mountsClaim(p, o.m.claim) && o.statefulSet !== undefined && controlledBy(p, o.statefulSet.metadata.uid!);
    if (!up) return wait("pods", `${o.m.pod} to be Ready again on its old volume ${o.m.volume} (claim ${o.m.claim} as it was)`);
    return { kind: "stop", message: `${failure.message}; ${o.m.pod} is Ready again on its old volume ${o.m.volume}` };
  }
  return { kind: "stop", message: failure.message };
}

/** A copy pod this run created (its end is this run's result, not a leftover to replace). */
const mine = (o: MoveObserved, p: Pod) => o.run.created.includes(p.metadata.uid!) || o.run.told[p.metadata.uid!] !== undefined;

/** A copy pod that cannot start, as the run says it: the reason, the image, what to do. */
function cannotStart(o: MoveObserved, p: Pod): string | undefined {
  const seen = o.run.seen[p.metadata.uid!] ?? o.now;
  const trouble = copyPodTrouble(p, (o.now - seen) / 1000);
  if (!trouble) return undefined;
  return `claim ${o.m.claim}: copy pod ${p.metadata.name} cannot start: ${trouble.reason}${trouble.message ? ` (${trouble.message})` : ""}; image ${imageOf(p) ?? o.target.copyImage}: ${troubleAdvice(trouble.reason, o)}; the pod was removed (and the claim of the new volume, before its first copy) and nothing else was changed by this step: then run the same command again`;
}

function troubleAdvice(reason: string, o: MoveObserved): string {
  if (/Image/.test(reason)) return `pass --copy-image with an image the node can pull or already has (${copyImageNeeds})`;
  if (reason === "Unschedulable")
    return `the copy pod must run on ${o.m.node ? `node ${o.m.node}, ` : ""}where the claim's replica runs, and tolerates only the taints that node had when the change was planned (${toleratedTaints(o.m)}): make room there (or lower the namespace's LimitRange defaults), or choose a class whose volumes that node can use`;
  return `the copy pods run as root (not privileged; capabilities CHOWN, DAC_OVERRIDE, FOWNER, FSETID, MKNOD and SETFCAP) with the claim and the new volume mounted: let the namespace's policies allow them (kubectl describe pod ${o.copyPod?.metadata.name ?? copyPodName(o.m.claim)} -n ${o.target.namespace})`;
}

/** kubelet's and the scheduler's reasons a pod will not start by waiting: the run stops rather than wait out --timeout. */
const stuckReasons = new Set(["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError"]);

/**
 * Why a copy pod cannot start, or undefined while it may: its container waiting on an image it
 * cannot pull or a configuration it cannot create, or the scheduler finding no node for it for
 * unschedulableSeconds (`pendingSeconds`: how long the run has seen it).
 */
export function copyPodTrouble(p: Pod, pendingSeconds: number): { reason: string; message: string } | undefined {
  if (copyPodDone(p) || deleting(p)) return undefined;
  for (const c of p.status?.containerStatuses ?? []) {
    const w = c.state?.waiting;
    if (w?.reason && stuckReasons.has(w.reason)) return { reason: w.reason, message: (w.message ?? "").split("\n")[0]!.slice(0, 300) };
  }
  const unscheduled = p.status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False" && c.reason === "Unschedulable");
  if (unscheduled && pendingSeconds >= unschedulableSeconds) return { reason: "Unschedulable", message: (unscheduled.message ?? "").slice(0, 300) };
  return undefined;
}

/** The server refused a copy pod (admission): what it said and what to do. */
function refusedMessage(o: MoveObserved, message: string): string {
  const ns = o.target.namespace;
  const advice = /quota/i.test(message)
    ? `a ResourceQuota of namespace ${ns} has no room for it: raise it (kubectl describe resourcequota -n ${ns}) or free some, then run the same command again`
    : /PodSecurity|pod security/i.test(message)
      ? `the copy pods run as root (to keep every file's owner): allow them while the claims move, for example with kubectl label namespace ${ns} pod-security.kubernetes.io/enforce=baseline --overwrite, then run the same command again`
      : "fix the cause, then run the same command again";
  return `claim ${o.m.claim}: the server refused copy pod ${copyPodName(o.m.claim)}: ${message}; nothing else was changed by this step: ${advice}`;
}

/** The first copy, into the tool's claim of a new volume, while the replica runs (offline: once it is stopped). */
function firstCopy(o: MoveObserved): MoveAction {
  const { m } = o;
  const claimName = newVolumeClaimName(m.claim);
  if (!o.newClaim) return { kind: "create-new-claim" };
  if (deleting(o.newClaim)) return wait("new-claim", `claim ${claimName} to be removed`);
  const pod = o.copyPod;
  // A class that binds at once makes the volume before any pod mounts it: the copy pod comes once
  // it is bound (a pod with an unbound claim of such a class is one the scheduler turns away).
  if (!pod && m.provisionOn && o.newClaim.status?.phase !== "Bound")
    return wait(
      "new-claim",
      `claim ${claimName} to bind (class ${m.to.storageClass ?? ""} makes its volume where node ${m.provisionOn} is, before any pod mounts it); see kubectl describe pvc ${claimName} -n ${o.target.namespace}`,
    );
  if (!pod) return { kind: "create-copy-pod", mode: "copy", start: "go" };
  if (deleting(pod)) return wait("copy-pod", `copy pod ${pod.metadata.name} to be removed`);
  if (modeOf(pod) !== "copy" || imageOf(pod) !== o.target.copyImage) return remove(pod);
  if (pod.status?.phase === "Succeeded") {
    const report = parseCopyReport(pod);
    if (report?.since !== undefined) {
      const volume = o.newClaim.spec.volumeName;
      return { kind: "record", set: { phase: "copied", copiedSince: report.since, ...(volume ? { newVolume: volume } : {}) }, report };
    }
  }
  if (copyPodDone(pod)) {
    if (!mine(o, pod)) return remove(pod);
    const report = parseCopyReport(pod);
    const why = report?.error ?? pod.status?.message ?? pod.status?.reason ?? `see kubectl describe pod ${pod.metadata.name} -n ${o.target.namespace}`;
    return failHere(o, `claim ${m.claim}: the copy failed (${why}); nothing was changed on the claim: fix the cause, then run the same command again`);
  }
  const stuck = cannotStart(o, pod);
  if (stuck) return failHere(o, stuck);
  const stall = stalled(o, pod);
  if (stall) return failHere(o, stall, backPhase(m), true);
  return wait(
    "copy-pod",
    `copy pod ${pod.metadata.name} (the first copy); see kubectl describe pod ${pod.metadata.name} -n ${o.target.namespace}, then run the same command again`,
    pod.status?.phase === "Running",
  );
}

/** Every replica but this claim's Ready (never two down). */
function othersReady(o: MoveObserved): boolean {
  const base = o.statefulSet ?? o.target.desired;
  const members = Array.from({ length: replicasOf(base) }, (_, i) => `${o.target.name}-${ordinalStart(base) + i}`).filter((p) => p !== o.m.pod);
  const pods = new Map(o.pods.map((p) => [p.metadata.name!, p]));
  return members.every((p) => isReady(pods.get(p)));
}

/** A final-copy pod that waits to be told (created with "wait", not told, not ended). */
export const waitingSyncPod = (p: Pod | undefined): boolean => !!p && modeOf(p) === "sync" && p.metadata.annotations?.[startAnnotation] === "wait" && !copyPodDone(p) && !deleting(p);

/** The replica stopped: the final copy's pod waiting beside it, the others Ready, the StatefulSet orphan-deleted, the replica evicted and gone. */
function stopReplica(o: MoveObserved): MoveAction {
  const { m } = o;
  const ref = statefulSetRef(o.target.name);
  const replica = replicaOf(o);
  const running = replica !== undefined && !deleting(replica);
  const pod = o.copyPod;
  if (pod) {
    if (deleting(pod)) return wait("copy-pod", `copy pod ${pod.metadata.name} to be removed`);
    if (m.offline || !waitingSyncPod(pod) || imageOf(pod) !== o.target.copyImage) {
      if (ended(pod) && modeOf(pod) === "sync" && mine(o, pod)) {
        return failHere(
          o,
          `claim ${m.claim}: copy pod ${pod.metadata.name} ended (${parseCopyReport(pod)?.error ?? "see its events"}) before the final copy; nothing was changed on the claim: run the same command again`,
        );
      }
      return remove(pod);
    }
    const stuck = cannotStart(o, pod);
    if (stuck) return failHere(o, stuck);
    if (running && pod.status?.phase !== "Running")
      return wait("copy-pod", `copy pod ${pod.metadata.name} to run (it waits to make the final copy); see kubectl describe pod ${pod.metadata.name} -n ${o.target.namespace}`);
  } else if (running && !m.offline) {
    return { kind: "create-copy-pod", mode: "sync", start: "wait" };
  }
  if (!othersReady(o)) return wait("pods", `the other replicas of ${ref} to be Ready before stopping ${m.pod ?? m.claim} (never more than one down)`);
  if (o.replicaNodeCordoned && running)
    return failHere(
      o,
      `node ${o.replicaNodeCordoned}, where ${m.pod} runs, was cordoned during the move: stopped before ${m.pod} stops (it could not start on that node again); ${m.pod} runs on its old volume and claim ${m.claim} is as it was: uncordon the node (kubectl uncordon ${o.replicaNodeCordoned}), then run the same command again`,
    );
  const sts = o.statefulSet;
  if (sts && !deleting(sts)) {
    if (sts.metadata.uid !== o.target.uid && !sameClaimTemplates(sts.spec.volumeClaimTemplates, o.target.desired.spec.volumeClaimTemplates)) {
      return failHere(o, `${ref} was re-created by someone else (uid ${sts.metadata.uid}) with other claim templates; the claims not moved yet are untouched: run the command again to plan anew`);
    }
    return { kind: "orphan-delete", uid: sts.metadata.uid!, resourceVersion: sts.metadata.resourceVersion! };
  }
  if (sts) return wait("statefulset", `${ref} to be deleted; check that kube-controller-manager (garbage collector) runs, then run the same command again`);
  if (running) return { kind: "evict", pod: m.pod!, uid: replica.metadata.uid! };
  if (replica) return wait("pods", `${m.pod} to stop (evicted)`);
  return { kind: "record", set: { phase: "stopped" } };
}

/**
 * The final copy and verification: the pod that waited is told to go (deleted: kubelet sends it
 * SIGTERM at once, and reports its end at once), or a new one goes at once.
 */
function finalCopy(o: MoveObserved): MoveAction {
  const { m } = o;
  const pod = o.copyPod;
  if (!pod) return { kind: "create-copy-pod", mode: "sync", start: "go" };
  const gone = () => wait("copy-pod", `copy pod ${pod.metadata.name} to be removed`);
  if (modeOf(pod) !== "sync" || imageOf(pod) !== o.target.copyImage) return deleting(pod) ? gone() : remove(pod);
  const stuck = cannotStart(o, pod);
  if (stuck) return failHere(o, stuck);
  // Waiting, it has read nothing yet: told now, whoever started it.
  if (waitingSyncPod(pod)) return { kind: "tell-copy-pod", uid: pod.metadata.uid! };
  // Told or ended in an earlier run: it may have copied before the replica last ran.
  if (!mine(o, pod)) return deleting(pod) ? gone() : remove(pod);
  if (ended(pod)) {
    const report = parseCopyReport(pod);
    if (report?.src && report.src === report.dst && (report.files !== undefined || pod.status?.phase === "Succeeded")) {
      return { kind: "record", set: { phase: "verified", verified: { files: report.files ?? 0, bytes: report.bytes ?? 0, digest: report.src } }, report };
    }
    const why = report?.error ?? (report?.diff ? `the volumes differ: ${report.diff}` : "see the copy pod's events");
    // The new volume cannot be trusted: the next run copies it anew from the start, not only what changed.
    return failHere(
      o,
      `claim ${m.claim}: verification failed (${why}); the claim and its volume ${m.volume} were not changed and ${statefulSetRef(o.target.name)} is back; the copy on claim ${newVolumeClaimName(m.claim)} is removed: run the same command again to copy it anew`,
      "pending",
    );
  }
  const stall = stalled(o, pod);
  if (stall) return failHere(o, stall, backPhase(m), true);
  return wait(
    "copy-pod",
    `copy pod ${pod.metadata.name} (the final copy and verification); see kubectl describe pod ${pod.metadata.name} -n ${o.target.namespace}, then run the same command again`,
    pod.status?.phase === "Running",
  );
}

/** The old volume as a kept volume: Retain, and labelled with its claim. */
const retained = (o: MoveObserved) => o.oldVolume?.spec.persistentVolumeReclaimPolicy === "Retain" && o.oldVolume.metadata.labels?.[migrationLabels.claim] === labelValue(o.m.claim);

/** The claim moved onto the new volume: the old volume kept, the claims removed, the claim re-created and bound. */
function swapClaim(o: MoveObserved): MoveAction {
  const { m } = o;
  const ns = o.target.namespace;
  // The copy pod goes (a told one goes by itself); its claims wait for it, nothing else does.
  if (o.copyPod && !deleting(o.copyPod)) return remove(o.copyPod);
  const volume = o.newVolume;
  if (!volume) {
    return failHere(
      o,
      `claim ${m.claim}: the new volume ${m.newVolume ?? `(claim ${newVolumeClaimName(m.claim)} is gone or unbound)`} is not there; the old claim and its volume ${m.volume} are kept: run the command again to plan anew`,
    );
  }
  const volumeName = volume.metadata.name!;
  const old = original(o);
  if (old) {
    if (!o.oldVolume) return failHere(o, `claim ${m.claim}: its volume ${m.volume} is gone; nothing was changed on the claim`);
    if (!retained(o)) return { kind: "retain-old-volume", volume: m.volume };
    if (volume.spec.persistentVolumeReclaimPolicy !== "Retain") return { kind: "hold-new-volume", volume: volumeName, policy: volume.spec.persistentVolumeReclaimPolicy ?? "Delete" };
  }
  // Both claims deleted at once, then awaited (each stays while a pod uses it).
  if (o.newClaim && !deleting(o.newClaim)) return { kind: "delete-claim", name: o.newClaim.metadata.name!, uid: o.newClaim.metadata.uid! };
  if (old && !deleting(old)) return { kind: "delete-claim", name: m.claim, uid: m.uid };
  if (o.newClaim) return wait("new-claim", `claim ${o.newClaim.metadata.name} to be removed`);
  if (old) return wait("claim", `claim ${m.claim} to be removed (a pod still using it keeps it: kubectl get pods -n ${ns})`);
  const claim = o.claim;
  if (claim && deleting(claim)) return wait("claim", `claim ${m.claim} to be removed`);
  if (claim && claim.spec.volumeName !== volumeName) {
    return {
      kind: "fail",
      restore: false,
      message: `claim ${m.claim} was created again by someone else (uid ${claim.metadata.uid}, volume ${claim.spec.volumeName ?? "none"}); the data is on volume ${volumeName}, the old data on ${m.volume} (Retain): inspect them`,
    };
  }
  const ref = volume.spec.claimRef;
  if (!ref || ref.name !== m.claim || ref.namespace !== ns || (claim && ref.uid && ref.uid !== claim.metadata.uid)) return { kind: "bind-new-volume", volume: volumeName };
  if (!claim) return { kind: "create-moved-claim", volume: volumeName };
  // The StatefulSet comes back while the claim binds (its pod waits for the binding): the binder's time is not added to the downtime.
  if (!o.statefulSet) return { kind: "create-statefulset" };
  if (claim.status?.phase !== "Bound") return wait("claim", `claim ${m.claim} to bind to volume ${volumeName}`);
  if (m.newVolumePolicy && volume.spec.persistentVolumeReclaimPolicy !== m.newVolumePolicy) return { kind: "restore-new-volume-policy", volume: volumeName, policy: m.newVolumePolicy };
  return { kind: "record", set: { phase: "swapped" } };
}

const mountsClaim = (p: Pod, claim: string) => (p.spec?.volumes ?? []).some((v) => v.persistentVolumeClaim?.claimName === claim);

/** The StatefulSet back and the replica Ready on its new volume. */
function startReplica(o: MoveObserved): MoveAction {
  const { m } = o;
  const sts = o.statefulSet;
  const ref = statefulSetRef(o.target.name);
  if (!sts) return { kind: "create-statefulset" };
  if (deleting(sts)) return wait("statefulset", `${ref} to be deleted before it is created again`);
  if (m.pod) {
    const p = replicaOf(o);
    if (!(p && controlledBy(p, sts.metadata.uid!) && isReady(p) && mountsClaim(p, m.claim))) {
      return wait(
        "pods",
        `${m.pod} to be Ready on the new volume; its old volume ${m.volume} is kept with the data as it was (Retain); to go back, run: kubectl appstorage show ${o.target.name} -n ${o.target.namespace}, and see README "Moving existing claims"`,
      );
    }
  }
  return { kind: "record", set: { phase: "done" } };
}

/**
 * The actions a move has left from its phase when nothing goes wrong, in the order a run takes
 * them (the waits left out): what `diff` and a rerun's plan show. test/unit/move.test.ts drives
 * nextMoveAction through the same path and checks it takes exactly these.
 */
export function movesLeft(m: MigrationClaim, statefulSet: string): MoveView {
  const copy = newVolumeClaimName(m.claim);
  const pod = copyPodName(m.claim);
  const early = m.pod !== undefined && !m.offline;
  const byGoal: Record<Exclude<MigrationPhase, "pending">, MoveStepView[]> = {
    copied: [
      { kind: "create-new-claim", object: copy },
      { kind: "create-copy-pod", object: pod, mode: "copy", start: "go" },
      { kind: "record", phase: "copied" },
    ],
    stopped: [
      ...(early ? [{ kind: "create-copy-pod", object: pod, mode: "sync", start: "wait" } as const] : []),
      { kind: "orphan-delete", object: statefulSet },
      ...(m.pod ? [{ kind: "evict", object: m.pod } as const] : []),
      { kind: "record", phase: "stopped" },
    ],
    verified: [early ? { kind: "tell-copy-pod", object: pod } : { kind: "create-copy-pod", object: pod, mode: "sync", start: "go" }, { kind: "record", phase: "verified" }],
    swapped: [
      { kind: "retain-old-volume", object: m.volume },
      { kind: "hold-new-volume" },
      { kind: "delete-claim", object: copy },
      { kind: "delete-claim", object: m.claim },
      { kind: "bind-new-volume" },
      { kind: "create-moved-claim", object: m.claim },
      { kind: "create-statefulset", object: statefulSet },
      { kind: "restore-new-volume-policy" },
      { kind: "record", phase: "swapped" },
    ],
    done: [{ kind: "record", phase: "done" }],
  };
  const order = phaseOrder(m);
  const at = order.indexOf(m.phase);
  // The copy pod a copy leaves (ended) is removed first by the goal after it; a final copy's pod told
  // to go was deleted to tell it, and goes by itself once it ended.
  const left = order.slice(at + 1).flatMap((g, i) => {
    const before = order[at + i]!;
    const steps = byGoal[g as Exclude<MigrationPhase, "pending">];
    return before === "copied" || (before === "verified" && !early) ? [{ kind: "remove-copy-pod", object: pod } as const, ...steps] : steps;
  });
  return { claim: m.claim, phase: m.phase, left };
}

/**
 * What a move that timed out waiting on pods of a node says about that node: not Ready (its kubelet
 * stopped answering, or it went away), or, when the node could not be read (a namespace admin may
 * not read nodes), where to look. Nothing when the node is Ready: the wait's own line says enough.
 * `seen`: the node as read; undefined when it does not exist; "unreadable" when it could not be read.
 */
export function nodeNote(claim: string, node: string, seen: Pick<KubeNode, "status"> | undefined | "unreadable", swapped: boolean): string {
  const kept = swapped ? `claim ${claim} is on its new volume and its old volume is kept` : "the claim and its old volume are as they were";
  const again = `${kept}, and the move goes on from where it stopped: once node ${node} is Ready again (kubectl get node ${node}), run the same command again`;
  if (seen === "unreadable") return `; the pods of claim ${claim}'s move run on node ${node}: if it is not Ready, ${again}`;
  if (seen === undefined) return `; node ${node}, where claim ${claim}'s move runs, no longer exists: ${kept}; run the same command again once its replica runs on another node`;
  const ready = seen.status?.conditions?.find((c) => c.type === "Ready");
  if (ready?.status === "True") return "";
  const since = ready?.lastHeartbeatTime ? `, its kubelet last reported at ${ready.lastHeartbeatTime}` : "";
  return `; node ${node}, where claim ${claim}'s move runs, is not Ready (${ready ? `Ready ${ready.status}${ready.reason ? `, ${ready.reason}` : ""}` : "no Ready condition"}${since}): ${again}`;
}
