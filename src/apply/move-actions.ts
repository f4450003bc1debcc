// The actions of a claim's move (src/plan/move-types.ts, MoveAction), executed: each one write
// (or a record in the journal), its progress line, and what this run must remember of it. An
// answer that leaves the outcome unknown (a 5xx, a reset) or says it is done already (AlreadyExists,
// NotFound on a delete) is not an error: the next observation shows what happened.
import { StopError } from "../errors";
import { isAlreadyExists, isConflict, isForbidden, isNotFound, isUnknownOutcome } from "../kube/errors";
import { createClaim, createPod, createStatefulSet, deleteClaim, deleteCopyPod, evictPod, orphanDelete, patchVolume, signalCopyPod } from "../kube/write";
import { copyPod, copyPodName, movedClaim, newVolumeClaim, newVolumeClaimName, retainedAnnotations, retainedLabels } from "../plan/migrate";
import type { MoveAction, MoveObserved, MoveRun } from "../plan/move-types";
import type { MigrationClaim, MigrationResult } from "../plan/migration-types";
import { statefulSetRef } from "../refs";
import { sleep } from "./deadline";
import type { Plan } from "../plan/types";
import type { ApplyContext } from "./context";
import type { MoveTarget } from "../plan/move-types";

/** One claim's move: the plan, the context, and the claim as the journal keeps it. */
export interface Move {
  plan: Plan;
  ctx: ApplyContext;
  m: MigrationClaim;
  target: MoveTarget;
  /** Saves the journal now (the claim's phase and what it learned). */
  save: () => Promise<void>;
  result: MigrationResult["claims"][number];
  /** This run's clock (seconds): when it evicted the replica, when the final copy began, when the first copy's pod was created. */
  clock: { stoppedAt?: number; finalFrom?: number; copyFrom?: number };
  /** The waits this run has said it waits for (each said once). */
  said: Set<string>;
}

type Of<K extends MoveAction["kind"]> = Extract<MoveAction, { kind: K }>;
type Executors = { [K in Exclude<MoveAction["kind"], "wait" | "stop" | "done">]: (a: Of<K>, o: MoveObserved, x: Move, run: MoveRun) => Promise<void> };

const firstLine = (e: unknown) => (e as Error).message.split("\n")[0] ?? "";
/** Done already, or maybe done: the next observation tells. */
const settled = (e: unknown) => isAlreadyExists(e) || isNotFound(e) || isUnknownOutcome(e);
const describeTarget = (m: MigrationClaim) => `${m.to.storageClass ?? "the default class"} ${m.to.size}`;
const round = (s: number) => Number(s.toFixed(3));
const rate = (bytes: number, seconds: number) => `${(bytes / 1048576 / Math.max(seconds, 0.001)).toFixed(1)} MiB/s`;
const seconds = (x: Move) => x.ctx.progress.elapsedSeconds();
/** How long an eviction a PodDisruptionBudget refuses (429) waits before it is asked again. */
const evictRetryMs = 2000;

export function execute(action: Exclude<MoveAction, { kind: "wait" | "stop" | "done" }>, o: MoveObserved, x: Move, run: MoveRun): Promise<void> {
  return (executors[action.kind] as (a: MoveAction, o: MoveObserved, x: Move, run: MoveRun) => Promise<void>)(action, o, x, run);
}

const executors: Executors = {
  "create-new-claim": async (_a, _o, x) => {
    const { m, target, ctx } = x;
    try {
      await createClaim(ctx.client, target.namespace, newVolumeClaim(m, target.namespace, target.name));
      ctx.progress.say(`claim ${m.claim}: created claim ${newVolumeClaimName(m.claim)} for a new volume of ${describeTarget(m)}`);
    } catch (e) {
      if (!settled(e))
        throw new StopError(`could not create claim ${newVolumeClaimName(m.claim)}: ${firstLine(e)}; nothing was changed on claim ${m.claim}: fix the cause, then run the same command again`);
    }
  },
  "create-copy-pod": (a, _o, x, run) => createCopyPod(a, x, run),
  "tell-copy-pod": async (a, o, x, run) => {
    const { m, ctx, target } = x;
    const name = copyPodName(m.claim);
    ctx.progress.say(`claim ${m.claim}: final copy of what changed, then verifying every file on both volumes`);
    x.clock.finalFrom = seconds(x);
    try {
      await signalCopyPod(ctx.client, target.namespace, name, a.uid);
    } catch (e) {
      if (isNotFound(e)) return;
      if (!isUnknownOutcome(e)) throw new StopError(`could not tell copy pod ${name} to make the final copy: ${firstLine(e)}; claim ${m.claim} was not changed: run the same command again`);
    }
    run.told[a.uid] = o.now;
    ctx.progress.say(`claim ${m.claim}: told copy pod ${name} to make the final copy (deleted: SIGTERM is its go)`);
  },
  "remove-copy-pod": async (a, o, x, run) => {
    if (a.warn) x.ctx.progress.warn(a.warn);
    run.ended = undefined;
    await deleteCopyPod(x.ctx.client, x.target.namespace, o.copyPod?.metadata.name ?? copyPodName(x.m.claim), a.uid);
  },
  record: (a, o, x, run) => {
    run.ended = undefined;
    return record(a, o, x);
  },
  "orphan-delete": async (a, _o, x, run) => {
    const { ctx, target, m } = x;
    const ref = statefulSetRef(target.name);
    run.orphaned = true;
    try {
      await orphanDelete(ctx.client, target.namespace, target.name, { uid: a.uid, resourceVersion: a.resourceVersion });
      ctx.progress.say(`deleted ${ref} with propagationPolicy=Orphan (uid ${a.uid}), so nothing re-creates ${m.pod ?? "its pod"} while its claim moves`);
    } catch (e) {
      // A Conflict: the object changed since it was read (its status, say): read again.
      if (!settled(e) && !isConflict(e)) throw new StopError(`could not orphan-delete ${ref} before stopping ${m.pod}: ${firstLine(e)}; run the same command again`);
    }
  },
  evict: async (a, _o, x, run) => {
    const { ctx, target } = x;
    x.clock.stoppedAt ??= seconds(x);
    run.stopped = true;
    try {
      await evictPod(ctx.client, target.namespace, a.pod, a.uid);
      ctx.progress.say(`pod/${a.pod} evicted`);
    } catch (e) {
      if (settled(e)) return;
      if ((e as { code?: number }).code !== 429) throw new StopError(`could not evict ${a.pod}: ${firstLine(e)}; run the same command again`);
      ctx.progress.say(`pod/${a.pod}: the eviction is not allowed now (${firstLine(e)}); trying again`);
      await sleep(evictRetryMs, ctx.signal);
    }
  },
  "retain-old-volume": async (a, _o, x) => {
    const { ctx, m, target } = x;
    const kept = await patchVolume(ctx.client, a.volume, {
      metadata: { labels: retainedLabels(m, target.namespace, target.name, ctx.now()), annotations: retainedAnnotations(m, target.name) },
      spec: { persistentVolumeReclaimPolicy: "Retain" },
    });
    if (kept.spec.persistentVolumeReclaimPolicy !== "Retain") throw new StopError(`volume ${a.volume} did not take reclaim policy Retain; nothing was changed on claim ${m.claim}`);
    ctx.progress.say(`volume ${a.volume} (claim ${m.claim}'s data) set to reclaim policy Retain and labelled: it is kept when its claim goes`);
  },
  "hold-new-volume": async (a, _o, x) => {
    // Saved before the patch: a rerun after a kill right after it still gives the policy back (once: a patch tried again saves nothing new).
    if (x.m.newVolumePolicy !== a.policy) {
      x.m.newVolumePolicy = a.policy;
      await x.save();
    }
    await patchVolume(x.ctx.client, a.volume, { spec: { persistentVolumeReclaimPolicy: "Retain" } });
  },
  "delete-claim": async (a, _o, x) => {
    const { ctx, m, target } = x;
    await deleteClaim(ctx.client, target.namespace, a.name, a.uid);
    if (a.name === m.claim) ctx.progress.say(`claim ${m.claim} (uid ${a.uid}) deleted; its volume ${m.volume} is kept`);
  },
  "bind-new-volume": async (a, _o, x) => {
    const claimRef = { apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: x.target.namespace, name: x.m.claim, uid: null, resourceVersion: null };
    await patchVolume(x.ctx.client, a.volume, { spec: { claimRef } });
  },
  "create-moved-claim": async (a, _o, x) => {
    try {
      await createClaim(x.ctx.client, x.target.namespace, movedClaim(x.m, x.target.namespace, a.volume));
    } catch (e) {
      if (!settled(e)) throw e;
    }
  },
  "restore-new-volume-policy": async (a, _o, x) => {
    await patchVolume(x.ctx.client, a.volume, { spec: { persistentVolumeReclaimPolicy: a.policy } });
  },
  "create-statefulset": async (_a, _o, x) => {
    const { ctx, target, plan } = x;
    const ref = statefulSetRef(target.name);
    try {
      const created = await createStatefulSet(ctx.client, target.namespace, plan.desired);
      ctx.progress.say(`created ${ref} again (uid ${created.metadata.uid})`);
    } catch (e) {
      if (!settled(e)) {
        throw new StopError(`could not re-create ${ref}: ${firstLine(e)}; its pods keep running without a controller and the journal is kept: fix the cause, then run the same command again`);
      }
    }
  },
  fail: async (a, _o, x, run) => {
    if (a.phase) {
      x.m.phase = a.phase;
      await x.save();
    }
    run.refused = undefined;
    const { kind: _kind, phase: _phase, ...failure } = a;
    run.failure = failure;
  },
};

async function createCopyPod(a: Of<"create-copy-pod">, x: Move, run: MoveRun): Promise<void> {
  const { ctx, m, target } = x;
  const name = copyPodName(m.claim);
  if (a.mode === "copy") {
    x.clock.copyFrom = seconds(x);
    ctx.progress.say(`claim ${m.claim}: copying to a new volume of ${describeTarget(m)}${m.pod && !m.offline ? ` while ${m.pod} runs` : ""}`);
  } else if (a.start === "go") {
    x.clock.finalFrom = seconds(x);
    ctx.progress.say(`claim ${m.claim}: final copy of what changed, then verifying every file on both volumes`);
  }
  try {
    const created = await createPod(ctx.client, target.namespace, copyPod(m, target.namespace, target.name, a.mode, target.copyImage, a.start));
    run.created.push(created.metadata.uid!);
  } catch (e) {
    if (settled(e)) return;
    // Admission (a ResourceQuota, Pod Security, a policy): the machine says what to do and stops.
    if (isForbidden(e) || (e as { code?: number }).code === 422) {
      run.refused = firstLine(e);
      return;
    }
    throw new StopError(`could not create copy pod ${name}: ${firstLine(e)}; nothing was changed on claim ${m.claim}: fix the cause, then run the same command again`);
  }
  if (a.mode === "sync" && a.start === "wait") ctx.progress.say(`claim ${m.claim}: started copy pod ${name} for the final copy while ${m.pod} runs; it waits until ${m.pod} is stopped`);
}

/** A phase reached: saved in the journal, said, and counted in the result. */
async function record(a: Of<"record">, o: MoveObserved, x: Move): Promise<void> {
  const { ctx, m } = x;
  if (a.warn) ctx.progress.warn(a.warn);
  Object.assign(m, a.set);
  await x.save();
  const report = a.report;
  if (a.set.phase === "copied" && report) {
    const took = x.clock.copyFrom !== undefined ? seconds(x) - x.clock.copyFrom : undefined;
    const inPod = report.seconds ?? took ?? 0;
    ctx.progress.say(
      `claim ${m.claim}: copied ${report.bytes ?? 0} bytes to volume ${m.newVolume ?? "(unknown)"} in ${inPod.toFixed(1)}s (${rate(report.bytes ?? 0, inPod)}${report.hashSeconds !== undefined ? `; hashing both sides ${report.hashSeconds.toFixed(1)}s` : ""}${took !== undefined ? `; ${took.toFixed(1)}s with the copy pod's start` : ""})`,
    );
    x.result.copySeconds = round(inPod);
  } else if (a.set.phase === "verified" && report && m.verified) {
    if (x.clock.finalFrom !== undefined) x.result.finalSeconds = round(seconds(x) - x.clock.finalFrom);
    const blocks = report.blockFiles ? `, ${report.blocks} block(s) rewritten in ${report.blockFiles} large file(s)` : "";
    const timing = report.seconds !== undefined ? `; final copy ${report.seconds.toFixed(1)}s${blocks}, verification ${(report.verifySeconds ?? 0).toFixed(1)}s` : "";
    ctx.progress.say(`claim ${m.claim}: verified ${m.verified.files} files, ${m.verified.bytes} bytes equal on both volumes (manifest sha256 ${m.verified.digest.slice(0, 12)}${timing})`);
  } else if (a.set.phase === "swapped") {
    x.result.newVolume = m.newVolume;
    if (o.claim?.metadata.uid) x.result.uid = o.claim.metadata.uid;
    ctx.progress.say(`claim ${m.claim} re-created on volume ${m.newVolume} (uid ${o.claim?.metadata.uid}), ${describeTarget(m)}`);
  } else if (a.set.phase === "done") {
    if (x.clock.stoppedAt !== undefined) x.result.downSeconds = round(seconds(x) - x.clock.stoppedAt);
    if (m.pod)
      ctx.progress.say(`${m.pod} is Ready on claim ${m.claim} (new volume ${m.newVolume ?? ""})${x.result.downSeconds !== undefined ? `; it was down ${x.result.downSeconds.toFixed(1)}s` : ""}`);
  }
}
