// --restart-pods: some volume drivers finish a resize only when the pod restarts (the claim
// reports FileSystemResizePending). Restarts the pods of such claims one at a time, highest
// ordinal first, through the Eviction API so PodDisruptionBudgets are honoured, and waits for
// each to be re-created by its StatefulSet and Ready before the next. Never more than one pod
// down: before each eviction every other pod of the StatefulSet's ordinals must exist and be Ready
// (waited for, within the timeout). A pod that is gone, terminating, or starting after its claims began to wait (an
// earlier run was stopped right after evicting it) is waited for and its claims looked at again,
// never evicted a second time. No claim is touched; the re-created pod mounts the same claim
// (its uid is checked).
import { StopError } from "../errors";
import { isNotFound } from "../kube/errors";
import { getClaim, listPods, waitPods } from "../kube/read";
import type { PersistentVolumeClaim, Pod, StatefulSet } from "../api/types";
import { evictPod } from "../kube/write";
import { podComingUp, resizeState, restartOrder } from "../plan/resize";
import { controlledBy, isReady, labelSelector, ordinalStart, replicasOf } from "../plan/objects";
import type { Plan } from "../plan/types";
import type { ExistingClaim, ExistingClaimsResult } from "../plan/existing-claims-types";
import { sleep, within } from "./deadline";
import type { ClaimsContext } from "./resize";
import { statefulSetRef } from "../refs";

const evictionRetryMs = 5000;

/** Waits (within the timeout) until `check` holds for the pods of the selector; `timedOut` is the error otherwise. */
async function waitReady(ctx: ClaimsContext, ns: string, selector: string, check: (pods: Map<string, Pod>) => boolean, timedOut: () => Error): Promise<Pod[]> {
  return within(ctx.signal, ctx.timeoutMs, timedOut, async (signal) => [...(await waitPods(ctx.client, ns, selector, check, signal)).values()]);
}

/** One --restart-pods run: the StatefulSet, its pods in restart order, and what was restarted so far. */
interface RestartRun {
  ctx: ClaimsContext;
  plan: Plan;
  ns: string;
  name: string;
  uid: string;
  selector: string;
  /** The claims that wait for their pod's restart (FileSystemResizePending), as planned. */
  pending: ExistingClaim[];
  claimsNow: Map<string, PersistentVolumeClaim>;
  /** The pod names of the StatefulSet's ordinals: none but the one restarted may be down. */
  members: string[];
  pods: string[];
  restarted: ExistingClaimsResult["restarted"];
}

export async function restartPods(plan: Plan, ctx: ClaimsContext, sts: StatefulSet, claimsNow: Map<string, PersistentVolumeClaim>): Promise<ExistingClaimsResult["restarted"]> {
  const { progress } = ctx;
  const name = plan.target.name;
  const pending = waitingForRestart(plan, claimsNow);
  const withoutPod = pending.filter((c) => !c.pod || c.leftover);
  if (withoutPod.length) progress.warn(`claim(s) ${withoutPod.map((c) => c.name).join(", ")} wait for a pod that does not exist; the resize finishes when one mounts them`);
  const pods = [...new Set(restartOrder(pending).map((c) => c.pod!))];
  const restarted: ExistingClaimsResult["restarted"] = [];
  if (pods.length === 0) {
    progress.say("no pod needs a restart");
    return restarted;
  }
  progress.say(`restarting ${pods.length} pod(s) one at a time, highest ordinal first: ${pods.join(", ")}`);
  const members = Array.from({ length: replicasOf(sts) }, (_, i) => `${name}-${ordinalStart(sts) + i}`);
  const run: RestartRun = { ctx, plan, ns: plan.target.namespace, name, uid: sts.metadata.uid!, selector: labelSelector(sts), pending, claimsNow, members, pods, restarted };
  for (const podName of pods) await restartPod(run, podName);
  return restarted;
}

/** The planned claims that still wait for a restart: the same claim (uid), FileSystemResizePending. */
function waitingForRestart(plan: Plan, claimsNow: Map<string, PersistentVolumeClaim>): ExistingClaim[] {
  return (plan.existing?.claims ?? []).filter((c) => {
    const now = claimsNow.get(c.name);
    return now?.metadata.uid === c.uid && resizeState(now) === "filesystem-resize-pending";
  });
}

/** A stop that says which pods are left and which were restarted, so the rerun is understood. */
function stopBefore(run: RestartRun, podName: string): (why: string) => StopError {
  const remaining = run.pods.slice(run.pods.indexOf(podName) + 1);
  return (why) =>
    new StopError(
      `${why}; stopped before restarting ${remaining.length ? remaining.join(", ") : "any other pod"}${run.restarted.length ? ` (restarted: ${run.restarted.map((r) => r.pod).join(", ")})` : ""}: fix it, then run the same command again to continue`,
    );
}

async function restartPod(run: RestartRun, podName: string): Promise<void> {
  const { ctx, ns, name } = run;
  const stop = stopBefore(run, podName);
  const pod = await readyToRestart(run, podName, stop);
  if (!(await stillWaitsForRestart(run, podName))) {
    ctx.progress.say(`claim(s) of pod ${podName} no longer wait for a restart; not restarting it`);
    return;
  }
  // The claims of an ordinal, all templates: their uids must survive the restart.
  const before = new Map(run.plan.claims.filter((c) => !c.leftover && `${name}-${c.ordinal}` === podName).map((c) => [c.name, c.uid]));
  const previousUid = pod.metadata.uid!;
  const back = await evictAndWaitBack(run, podName, previousUid, stop);
  for (const [claim, claimUid] of before) {
    const now = await getClaim(ctx.client, ns, claim);
    if (now?.metadata.uid !== claimUid)
      throw stop(`claim ${claim} changed while pod ${podName} restarted (uid ${claimUid} -> ${now?.metadata.uid ?? "none"}); inspect it with kubectl get pvc ${claim} -n ${ns}`);
  }
  run.restarted.push({ pod: podName, previousUid, uid: back.metadata.uid! });
  ctx.progress.say(`pod ${podName} is back and Ready (uid ${previousUid} -> ${back.metadata.uid}); claim(s) ${[...before.keys()].join(", ")} unchanged`);
}

/**
 * The pod, Ready and controlled by the StatefulSet, with every other pod of its ordinals Ready:
 * waited for (within the timeout) where it or another pod is still coming up.
 */
async function readyToRestart(run: RestartRun, podName: string, stop: (why: string) => StopError): Promise<Pod> {
  const { ctx, ns, name, uid, selector } = run;
  let all = await listPods(ctx.client, ns, selector);
  let pod = all.find((p) => p.metadata.name === podName);
  const controller = pod?.metadata.ownerReferences?.find((r) => r.controller);
  if (controller && controller.uid !== uid) throw stop(`pod ${podName} is not controlled by ${statefulSetRef(name)} (uid ${uid})`);
  // Restarted already (an earlier run was stopped right after evicting it) or being re-created:
  // its start finishes the resize. Wait for it, then decide again from its claims.
  if (
    !controlledBy(pod, uid) ||
    podComingUp(
      pod,
      run.pending.filter((c) => c.pod === podName).map((c) => run.claimsNow.get(c.name)!),
    )
  ) {
    ctx.progress.say(`pod ${podName} is being re-created or starting; waiting for it to be Ready before deciding whether it needs a restart`);
    all = await waitReady(
      ctx,
      ns,
      selector,
      (m) => isReady(m.get(podName)) && controlledBy(m.get(podName), uid),
      () => stop(`pod ${podName} did not become Ready within ${ctx.timeoutMs / 1000}s (check it with kubectl describe pod ${podName} -n ${ns})`),
    );
    pod = all.find((p) => p.metadata.name === podName)!;
  }
  // Never more than one pod down: wait for the others (a pod restarted just before, still
  // starting). A pod of the StatefulSet's ordinals that does not exist (evicted, not yet
  // re-created) is down too.
  const down = (list: Iterable<Pod>) => {
    const byName = new Map([...list].map((p) => [p.metadata.name!, p]));
    return run.members.filter((n) => n !== podName && !(isReady(byName.get(n)) && controlledBy(byName.get(n), uid)));
  };
  let lastDown = down(all);
  if (lastDown.length) {
    ctx.progress.say(`pod(s) ${lastDown.join(", ")} of ${statefulSetRef(name)} are not Ready; waiting for them before restarting ${podName}, so that never more than one pod is down`);
    all = await waitReady(
      ctx,
      ns,
      selector,
      (m) => (lastDown = down(m.values())).length === 0,
      () => stop(`pod(s) ${lastDown.join(", ")} of ${statefulSetRef(name)} are not Ready, and restarting ${podName} would take a second pod down`),
    );
    pod = all.find((p) => p.metadata.name === podName);
    if (!isReady(pod) || !controlledBy(pod, uid)) throw stop(`pod ${podName} is not Ready any more`);
  }
  return pod!;
}

/** Read again: a claim may have finished its resize while the pod was waited for. */
async function stillWaitsForRestart(run: RestartRun, podName: string): Promise<boolean> {
  const stillPending = await Promise.all(
    run.pending
      .filter((c) => c.pod === podName)
      .map(async (c) => {
        const now = await getClaim(run.ctx.client, run.ns, c.name);
        return now && resizeState(now) === "filesystem-resize-pending";
      }),
  );
  return stillPending.some(Boolean);
}

/** Evicts the pod (this uid only) and waits, within the timeout, for its replacement to be Ready. */
async function evictAndWaitBack(run: RestartRun, podName: string, previousUid: string, stop: (why: string) => StopError): Promise<Pod> {
  const { ctx, ns } = run;
  const timedOut = () => stop(`pod ${podName} did not come back Ready within ${ctx.timeoutMs / 1000}s after its eviction (check it with kubectl describe pod ${podName} -n ${ns})`);
  return within(ctx.signal, ctx.timeoutMs, timedOut, async (signal) => {
    await evictHonouringBudgets(run, podName, previousUid, stop, signal);
    const pods = await waitPods(
      ctx.client,
      ns,
      run.selector,
      (m) => {
        const p = m.get(podName);
        return !!p && p.metadata.uid !== previousUid && isReady(p);
      },
      signal,
    );
    return pods.get(podName)!;
  });
}

/**
 * The Eviction API's answer decides: gone (404) or already replaced (409 on the uid) is done; a
 * PodDisruptionBudget that allows no disruption now (429) is asked again until the deadline.
 */
export async function evictHonouringBudgets(
  run: { ctx: ClaimsContext; ns: string; name: string },
  podName: string,
  previousUid: string,
  stop: (why: string) => StopError,
  signal: AbortSignal,
): Promise<void> {
  const { ctx, ns, name } = run;
  let told = false;
  for (;;) {
    try {
      await evictPod(ctx.client, ns, podName, previousUid);
      ctx.progress.say(`evicted pod ${podName} (uid ${previousUid}); waiting for ${statefulSetRef(name)} to re-create it and for it to be Ready`);
      return;
    } catch (e) {
      if (isNotFound(e)) return; // already gone: wait for its replacement
      const code = (e as { code?: number }).code;
      if (code === 409) return; // the uid precondition failed: it was already replaced
      if (code !== 429) throw stop(`could not evict pod ${podName}: ${(e as Error).message.split("\n")[0]}`);
      if (!told) ctx.progress.say(`a PodDisruptionBudget does not allow evicting pod ${podName} now; retrying every ${evictionRetryMs / 1000}s`);
      told = true;
      await sleep(evictionRetryMs, signal);
      if (signal.aborted) throw signal.reason;
    }
  }
}
