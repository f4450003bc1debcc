// --migrate-existing: moves each planned claim to a new volume with its data, one at a time,
// highest ordinal first, each phase saved in the journal (src/plan/migration-types.ts, MigrationPhase) so
// that a rerun goes on from there. Every phase is decided again from what exists now, so a
// phase cut short by a kill is done again or found done, never done twice blindly:
//   copy:   the tool's claim of a new volume, filled by a copy pod while the pod still runs;
//   stop:   the final copy's pod started while the replica still runs (it waits to be told to
//           go), then the StatefulSet orphan-deleted (nothing re-creates the pod meanwhile) and
//           the pod evicted (PodDisruptionBudgets honoured), once every other replica is Ready;
//   verify: that copy pod told to go: it copies what changed and compares both sides' manifests;
//   swap:   the old volume set to Retain and labelled, then its claim removed and re-created
//           under its own name on the new volume (the new volume is Retain while it moves);
//   start:  the StatefulSet re-created, the pod back on the new volume and Ready.
// Until swap the old claim is untouched; a failed verification puts the StatefulSet back.
import { StopError } from "../errors";
import { isAlreadyExists, isNotFound, isUnknownOutcome } from "../kube/errors";
import { getClaim, getPod, getStatefulSet, getVolume, waitClaim, waitPod, waitPods, waitStatefulSetGone } from "../kube/read";
import type { Pod, StatefulSet } from "../api/types";
import { createClaim, createStatefulSet, deleteClaim, evictPod, orphanDelete, patchVolume } from "../kube/write";
import { copyPodName, movedClaim, newVolumeClaim, newVolumeClaimName, phaseOrder, retainedAnnotations, retainedLabels, waitingSyncPod } from "../plan/migrate";
import { controlledBy, isReady, labelSelector, ordinalStart, replicasOf, sameClaimTemplates } from "../plan/objects";
import type { Plan } from "../plan/types";
import type { Migration, MigrationClaim, MigrationPhase, MigrationResult } from "../plan/migration-types";
import { statefulSetRef } from "../refs";
import type { ApplyContext } from "./context";
import { bounded, sleep } from "./deadline";
import type { Lease } from "./lease";
import type { Move } from "./move";
import { removeCopyPod, runCopy, startFinalCopyPod } from "./copy-pods";

const retryMs = 2000;

export async function migrateClaims(plan: Plan, ctx: ApplyContext, lease: Lease): Promise<MigrationResult> {
  const migration: Migration = structuredClone(lease.migration ?? plan.migration!);
  const out: MigrationResult = { claims: [] };
  for (const m of migration.claims) {
    const move: Move = {
      plan,
      ctx,
      m,
      ns: plan.target.namespace,
      name: plan.target.name,
      save: () => lease.saveMigration(migration),
      result: { claim: m.claim, ordinal: m.ordinal, oldVolume: m.volume },
    };
    const order = phaseOrder(m);
    for (const next of order.slice(order.indexOf(m.phase) + 1) as Exclude<MigrationPhase, "pending">[]) {
      ctx.signal.throwIfAborted();
      await phases[next](move, migration.copyImage);
      m.phase = next;
      await lease.saveMigration(migration);
    }
    if (m.newVolume) move.result.newVolume = m.newVolume;
    if (m.verified) Object.assign(move.result, { files: m.verified.files, bytes: m.verified.bytes });
    out.claims.push(move.result);
  }
  // Every claim moved: the StatefulSet exists (a rerun after the last start finds it), every pod adopted and Ready.
  const sts = await ensureStatefulSet(plan, ctx);
  const members = Array.from({ length: replicasOf(sts) }, (_, i) => `${plan.target.name}-${ordinalStart(sts) + i}`);
  await bounded(ctx, `waiting for the pods of ${statefulSetRef(plan.target.name)} to be adopted and Ready`, (signal) =>
    waitPods(ctx.client, plan.target.namespace, labelSelector(sts), (pods) => members.every((p) => controlledBy(pods.get(p), sts.metadata.uid!) && isReady(pods.get(p))), signal),
  );
  ctx.progress.say(`verified: ${members.length} pod(s) Ready and controlled by ${statefulSetRef(plan.target.name)} (uid ${sts.metadata.uid}); ${out.claims.length} claim(s) on their new volumes`);
  return out;
}

const phases: Record<Exclude<MigrationPhase, "pending">, (move: Move, image: string) => Promise<void>> = {
  copied: (move, image) => firstCopy(move, image),
  stopped: (move, image) => stopReplica(move, image),
  verified: (move, image) => finalCopy(move, image),
  swapped: (move, image) => swapClaim(move, image),
  done: (move) => startReplica(move),
};

const describeTarget = (m: MigrationClaim) => `${m.to.storageClass ?? "the default class"} ${m.to.size}`;

/** The tool's claim of the new volume, created once (a rerun finds it). */
async function ensureNewClaim(move: Move): Promise<void> {
  const { ctx, m, ns, name } = move;
  const claimName = newVolumeClaimName(m.claim);
  if (await getClaim(ctx.client, ns, claimName)) return;
  try {
    await createClaim(ctx.client, ns, newVolumeClaim(m, ns, name));
    ctx.progress.say(`claim ${m.claim}: created claim ${claimName} for a new volume of ${describeTarget(m)}`);
  } catch (e) {
    if (!isAlreadyExists(e) && !isUnknownOutcome(e)) throw e;
  }
}

async function firstCopy(move: Move, image: string): Promise<void> {
  const { ctx, m } = move;
  await ensureNewClaim(move);
  const started = ctx.progress.elapsedSeconds();
  ctx.progress.say(`claim ${m.claim}: copying to a new volume of ${describeTarget(m)}${m.pod && !m.offline ? ` while ${m.pod} runs` : ""}`);
  const { pod, report } = await runCopy(move, "copy", image);
  if (pod.status?.phase !== "Succeeded" || report?.since === undefined) {
    throw new StopError(`claim ${m.claim}: the copy failed (${report?.error ?? "see the copy pod's events"}); nothing was changed on the claim: fix the cause, then run the same command again`);
  }
  m.copiedSince = report.since;
  const claim = await getClaim(ctx.client, move.ns, newVolumeClaimName(m.claim));
  if (claim?.spec.volumeName) m.newVolume = claim.spec.volumeName;
  const seconds = ctx.progress.elapsedSeconds() - started;
  const inPod = report.seconds ?? seconds;
  ctx.progress.say(
    `claim ${m.claim}: copied ${report.bytes ?? 0} bytes to volume ${m.newVolume ?? "(unknown)"} in ${inPod.toFixed(1)}s (${rate(report.bytes ?? 0, inPod)}; ${seconds.toFixed(1)}s with the copy pod's start)`,
  );
  move.result.copySeconds = round(inPod);
}

const round = (s: number) => Number(s.toFixed(3));
const rate = (bytes: number, seconds: number) => `${(bytes / 1048576 / Math.max(seconds, 0.001)).toFixed(1)} MiB/s`;

/** The StatefulSet's pods but this claim's: every one must be Ready before this one stops. */
function othersReady(sts: StatefulSet | undefined, plan: Plan, except: string | undefined): (pods: Map<string, Pod>) => boolean {
  const base = sts ?? plan.desired;
  const members = Array.from({ length: replicasOf(base) }, (_, i) => `${plan.target.name}-${ordinalStart(base) + i}`).filter((p) => p !== except);
  return (pods) => members.every((p) => isReady(pods.get(p)) && !pods.get(p)?.metadata.deletionTimestamp);
}

async function stopReplica(move: Move, image: string): Promise<void> {
  const { ctx, m, ns, name, plan } = move;
  // The final copy's pod starts while the replica still runs: its start is not part of the downtime.
  const early = m.pod !== undefined && !m.offline;
  if (early) await startFinalCopyPod(move, image);
  try {
    const sts = await getStatefulSet(ctx.client, ns, name);
    ctx.progress.say(`claim ${m.claim}: waiting until every other replica is Ready (never more than one down)`);
    await bounded(ctx, `waiting for the other replicas of ${statefulSetRef(name)} to be Ready before stopping ${m.pod ?? m.claim}`, (signal) =>
      waitPods(ctx.client, ns, labelSelector(plan.desired), othersReady(sts, plan, m.pod), signal),
    );
    // Read again: the object's status changes as pods become Ready, and the delete is guarded by its resourceVersion.
    await statefulSetAway(move, await getStatefulSet(ctx.client, ns, name));
    // Down from the eviction on (its graceful termination included) until Ready again.
    move.stoppedAt = ctx.progress.elapsedSeconds();
    if (m.pod) await evictAndWait(move, m.pod);
  } catch (e) {
    // Stopped here with a message: the waiting copy pod is not left behind (a rerun starts another).
    if (early && e instanceof StopError) {
      const pod = await getPod(ctx.client, ns, copyPodName(m.claim)).catch(() => undefined);
      if (waitingSyncPod(pod)) await removeCopyPod(move, pod!).catch(() => undefined);
    }
    throw e;
  }
}

/**
 * The replica must still be down when its data is copied the last time and when its claim moves:
 * if someone re-created the StatefulSet meanwhile (a GitOps controller, say) and the pod runs
 * again, it is stopped again, and the final copy (and verification) is done again.
 */
async function stillStopped(move: Move, image: string): Promise<boolean> {
  const { ctx, m, ns } = move;
  if (!m.pod) return true;
  const pod = await getPod(ctx.client, ns, m.pod);
  if (!pod || pod.metadata.deletionTimestamp) return true;
  ctx.progress.warn(`${m.pod} runs again (its StatefulSet was re-created meanwhile): stopping it again before the final copy`);
  await stopReplica(move, image);
  return false;
}

/** Orphan-deletes the StatefulSet (only as this change made it), so nothing re-creates the pod meanwhile. */
async function statefulSetAway(move: Move, sts: StatefulSet | undefined): Promise<void> {
  const { ctx, ns, name, plan } = move;
  const ref = statefulSetRef(name);
  if (!sts) return;
  if (sts.metadata.uid !== plan.target.uid && !sameClaimTemplates(sts.spec.volumeClaimTemplates, plan.desired.spec.volumeClaimTemplates)) {
    throw new StopError(`${ref} was re-created by someone else (uid ${sts.metadata.uid}) with other claim templates; the claims not moved yet are untouched: run the command again to plan anew`);
  }
  if (!sts.metadata.deletionTimestamp) {
    try {
      await orphanDelete(ctx.client, ns, name, { uid: sts.metadata.uid!, resourceVersion: sts.metadata.resourceVersion! });
    } catch (e) {
      if (!isNotFound(e) && !isUnknownOutcome(e))
        throw new StopError(`could not orphan-delete ${ref} before stopping ${move.m.pod}: ${(e as Error).message.split("\n")[0]}; run the same command again`);
    }
    ctx.progress.say(`deleted ${ref} with propagationPolicy=Orphan (uid ${sts.metadata.uid}), so nothing re-creates ${move.m.pod} while its claim moves`);
  }
  await bounded(ctx, `waiting for ${ref} to be deleted; check that kube-controller-manager (garbage collector) runs, then run the same command again`, (signal) =>
    waitStatefulSetGone(ctx.client, ns, name, sts.metadata.uid!, signal),
  );
}

/** Evicts the pod (a 429 from a PodDisruptionBudget is retried within --timeout) and waits until it is gone. */
async function evictAndWait(move: Move, podName: string): Promise<void> {
  const { ctx, ns } = move;
  await bounded(ctx, `evicting ${podName} (a PodDisruptionBudget may not allow it now); the StatefulSet is deleted with its pods orphaned: run the same command again`, async (signal) => {
    for (;;) {
      const pod = await getPod(ctx.client, ns, podName);
      if (!pod) return;
      if (pod.metadata.deletionTimestamp) break;
      try {
        await evictPod(ctx.client, ns, podName, pod.metadata.uid!);
        ctx.progress.say(`pod/${podName} evicted`);
        break;
      } catch (e) {
        if (isNotFound(e)) return;
        if ((e as { code?: number }).code !== 429 && !isUnknownOutcome(e)) throw e;
        ctx.progress.say(`pod/${podName}: the eviction is not allowed now (${(e as Error).message.split("\n")[0]}); trying again`);
        await sleep(retryMs, signal);
        signal.throwIfAborted();
      }
    }
    await waitPod(ctx.client, ns, podName, (p) => !p, signal);
  });
}

async function finalCopy(move: Move, image: string): Promise<void> {
  const { ctx, m } = move;
  await stillStopped(move, image);
  ctx.progress.say(`claim ${m.claim}: final copy of what changed, then verifying every file on both volumes`);
  const started = ctx.progress.elapsedSeconds();
  const { pod, report } = await runCopy(move, "sync", image);
  if (pod.status?.phase !== "Succeeded" || !report?.src || report.src !== report.dst) {
    const why = report?.error ?? (report?.diff ? `the volumes differ: ${report.diff}` : "see the copy pod's events");
    // The replica comes back on its old claim: a rerun must stop it again before another final copy.
    m.phase = m.offline ? "pending" : "copied";
    await move.save();
    await ensureStatefulSet(move.plan, ctx);
    throw new StopError(`claim ${m.claim}: verification failed (${why}); the claim and its volume ${m.volume} were not changed and ${statefulSetRef(move.name)} is back: run the same command again`);
  }
  m.verified = { files: report.files ?? 0, bytes: report.bytes ?? 0, digest: report.src };
  move.result.finalSeconds = round(ctx.progress.elapsedSeconds() - started);
  const blocks = report.blockFiles ? `, ${report.blocks} block(s) rewritten in ${report.blockFiles} large file(s)` : "";
  const timing = report.seconds !== undefined ? `; final copy ${report.seconds.toFixed(1)}s${blocks}, verification ${(report.verifySeconds ?? 0).toFixed(1)}s` : "";
  ctx.progress.say(`claim ${m.claim}: verified ${m.verified.files} files, ${m.verified.bytes} bytes equal on both volumes (manifest sha256 ${m.verified.digest.slice(0, 12)}${timing})`);
}

/** The old volume is kept (Retain, labelled) before its claim goes; the claim comes back on the new volume. */
async function swapClaim(move: Move, image: string): Promise<void> {
  const { ctx, m, ns, name } = move;
  const { client, progress } = ctx;
  // Verified while the replica was down; if it ran again since, its data may have changed: copy and verify again.
  if (!(await stillStopped(move, image))) await finalCopy(move, image);
  const temp = await getClaim(client, ns, newVolumeClaimName(m.claim));
  if (temp?.spec.volumeName) m.newVolume = temp.spec.volumeName;
  if (!m.newVolume)
    throw new StopError(`claim ${m.claim}: the new volume is not known (claim ${newVolumeClaimName(m.claim)} is gone or unbound); nothing was changed on the claim: run the same command again`);
  const old = await getClaim(client, ns, m.claim);
  if (old && old.metadata.uid === m.uid) {
    const kept = await patchVolume(client, m.volume, {
      metadata: { labels: retainedLabels(m, ns, name, ctx.now()), annotations: retainedAnnotations(m, name) },
      spec: { persistentVolumeReclaimPolicy: "Retain" },
    });
    if (kept.spec.persistentVolumeReclaimPolicy !== "Retain") throw new StopError(`volume ${m.volume} did not take reclaim policy Retain; nothing was changed on claim ${m.claim}`);
    progress.say(`volume ${m.volume} (claim ${m.claim}'s data) set to reclaim policy Retain and labelled: it is kept when its claim goes`);
  }
  await holdNewVolume(move, m.newVolume);
  if (temp) {
    await deleteClaim(client, ns, temp.metadata.name!, temp.metadata.uid!);
    await bounded(ctx, `waiting for claim ${temp.metadata.name} to be removed`, (signal) => waitClaim(client, ns, temp.metadata.name!, (c) => !c || c.metadata.uid !== temp.metadata.uid, signal));
  }
  if (old && old.metadata.uid === m.uid) {
    await deleteClaim(client, ns, m.claim, m.uid);
    await bounded(ctx, `waiting for claim ${m.claim} to be removed (a pod still using it keeps it: kubectl get pods -n ${ns})`, (signal) =>
      waitClaim(client, ns, m.claim, (c) => !c || c.metadata.uid !== m.uid, signal),
    );
    progress.say(`claim ${m.claim} (uid ${m.uid}) removed; its volume ${m.volume} is kept`);
  } else if (old && old.spec.volumeName !== m.newVolume) {
    throw new StopError(
      `claim ${m.claim} was created again by someone else (uid ${old.metadata.uid}, volume ${old.spec.volumeName ?? "none"}); the data is on volume ${m.newVolume}, the old data on ${m.volume} (Retain): inspect them`,
    );
  }
  await rebind(move, m.newVolume);
}

/** The new volume stays Retain while its claim changes, and then takes its own policy back (rebind). */
async function holdNewVolume(move: Move, volume: string): Promise<void> {
  const { ctx, m } = move;
  const pv = await getVolume(ctx.client, volume);
  if (!pv) throw new StopError(`volume ${volume} (the copy of claim ${m.claim}) is gone; the old claim and volume ${m.volume} are kept: run the command again to plan anew`);
  if (pv.spec.persistentVolumeReclaimPolicy === "Retain") return;
  // Saved before the patch: a rerun after a kill right after it still gives the policy back.
  m.newVolumePolicy = pv.spec.persistentVolumeReclaimPolicy ?? "Delete";
  await move.save();
  await patchVolume(ctx.client, volume, { spec: { persistentVolumeReclaimPolicy: "Retain" } });
}

async function rebind(move: Move, volume: string): Promise<void> {
  const { ctx, m, ns } = move;
  const { client, progress } = ctx;
  const pv = await getVolume(client, volume);
  const ref = pv?.spec.claimRef;
  if (!ref || ref.name !== m.claim || ref.namespace !== ns) {
    await patchVolume(client, volume, { spec: { claimRef: { apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: ns, name: m.claim, uid: null, resourceVersion: null } } });
  }
  if (!(await getClaim(client, ns, m.claim))) {
    try {
      await createClaim(client, ns, movedClaim(m, ns, volume));
    } catch (e) {
      if (!isAlreadyExists(e) && !isUnknownOutcome(e)) throw e;
    }
  }
  const bound = await bounded(ctx, `waiting for claim ${m.claim} to bind to volume ${volume}`, (signal) =>
    waitClaim(client, ns, m.claim, (c) => c?.status?.phase === "Bound" && c.spec.volumeName === volume, signal),
  );
  if (m.newVolumePolicy && m.newVolumePolicy !== "Retain") await patchVolume(client, volume, { spec: { persistentVolumeReclaimPolicy: m.newVolumePolicy } });
  move.result.newVolume = volume;
  move.result.uid = bound!.metadata.uid!;
  progress.say(`claim ${m.claim} re-created on volume ${volume} (uid ${bound!.metadata.uid}), ${describeTarget(m)}`);
}

/** The StatefulSet exists with the new templates: created from the plan when it is not. */
async function ensureStatefulSet(plan: Plan, ctx: ApplyContext): Promise<StatefulSet> {
  const { namespace: ns, name } = plan.target;
  const now = await getStatefulSet(ctx.client, ns, name);
  if (now && !now.metadata.deletionTimestamp) return now;
  if (now) await bounded(ctx, `waiting for ${statefulSetRef(name)} to be deleted`, (signal) => waitStatefulSetGone(ctx.client, ns, name, now.metadata.uid!, signal));
  try {
    const created = await createStatefulSet(ctx.client, ns, plan.desired);
    ctx.progress.say(`created ${statefulSetRef(name)} again (uid ${created.metadata.uid})`);
    return created;
  } catch (e) {
    if (!isAlreadyExists(e) && !isUnknownOutcome(e)) {
      throw new StopError(
        `could not re-create ${statefulSetRef(name)}: ${(e as Error).message.split("\n")[0]}; its pods keep running without a controller and the journal is kept: fix the cause, then run the same command again`,
      );
    }
    const again = await getStatefulSet(ctx.client, ns, name);
    if (!again) throw e;
    return again;
  }
}

async function startReplica(move: Move): Promise<void> {
  const { ctx, m, ns, plan } = move;
  const sts = await ensureStatefulSet(plan, ctx);
  if (!m.pod) return;
  const claimUid = move.result.uid ?? (await getClaim(ctx.client, ns, m.claim))?.metadata.uid;
  ctx.progress.say(`waiting for ${m.pod} to come back on the new volume and be Ready`);
  const wayBack = `its old volume ${m.volume} is kept with the data as it was (Retain); to go back, run: kubectl appstorage show ${move.name} -n ${ns}, and see README "Moving existing claims"`;
  await bounded(ctx, `waiting for ${m.pod} to be Ready on the new volume; ${wayBack}`, (signal) =>
    waitPod(ctx.client, ns, m.pod!, (p) => !!p && controlledBy(p, sts.metadata.uid!) && isReady(p) && mountsClaim(p, m.claim), signal),
  );
  if (move.stoppedAt !== undefined) move.result.downSeconds = round(ctx.progress.elapsedSeconds() - move.stoppedAt);
  if (claimUid) move.result.uid = claimUid;
  ctx.progress.say(`${m.pod} is Ready on claim ${m.claim} (new volume ${m.newVolume ?? ""})${move.result.downSeconds !== undefined ? `; it was down ${move.result.downSeconds.toFixed(1)}s` : ""}`);
}

const mountsClaim = (p: Pod, claim: string) => (p.spec?.volumes ?? []).some((v) => v.persistentVolumeClaim?.claimName === claim);
