// One claim's move, run: observe what there is of it, ask the plan's state machine for the next
// action (nextMoveAction, src/plan/move.ts), execute it (./move-actions.ts), and again, until it
// is done or stops. Nothing here decides what comes next: a wait watches the objects it names
// until the machine decides something else, and every action is recorded in the journal by the
// machine's own "record" actions, so a rerun after a kill at any point goes on from there.
import { StopError } from "../errors";
import { getClaim, getNode, getPod, getStatefulSet, getVolume, listPods, waitClaim, waitPodSeeingLast, waitPods, waitStatefulSetGone } from "../kube/read";
import type { KubeNode, Pod } from "../api/types";
import { copyPodName, newVolumeClaimName, phaseOrder } from "../plan/migrate";
import { afterTrouble, nextMoveAction, nodeNote, noteCopyPod, swapBegun } from "../plan/move";
import type { MoveAction, MoveObserved, MoveRun } from "../plan/move-types";
import { labelSelector } from "../plan/objects";
import type { Plan } from "../plan/types";
import type { MigrationClaim } from "../plan/migration-types";
import type { ApplyContext } from "./context";
import { bounded, sleep, within } from "./deadline";
import { execute, type Move } from "./move-actions";
import { JournalTakenError } from "./journal-store";

export type { Move } from "./move-actions";

export function moveOf(plan: Plan, ctx: ApplyContext, m: MigrationClaim, copyImage: string, save: () => Promise<void>): Move {
  const { namespace, name, uid } = plan.target;
  return {
    plan,
    ctx,
    m,
    target: { namespace, name, uid, desired: plan.desired, copyImage },
    save,
    result: { claim: m.claim, ordinal: m.ordinal, oldVolume: m.volume },
    clock: {},
    said: new Set(),
  };
}

const nowMs = (x: Move) => x.ctx.progress.elapsedSeconds() * 1000;

/** Reads what the machine decides from: the StatefulSet, its pods, the claim, the tool's claim and copy pod, both volumes. */
export async function observe(x: Move, run: MoveRun): Promise<MoveObserved> {
  const { client } = x.ctx;
  const { m, target } = x;
  const ns = target.namespace;
  const [statefulSet, pods, claim, newClaim, copyPod, oldVolume] = await Promise.all([
    getStatefulSet(client, ns, target.name),
    listPods(client, ns, labelSelector(target.desired)),
    getClaim(client, ns, m.claim),
    getClaim(client, ns, newVolumeClaimName(m.claim)),
    getPod(client, ns, copyPodName(m.claim)),
    getVolume(client, m.volume),
  ]);
  const newVolumeName = m.newVolume ?? newClaim?.spec.volumeName;
  const newVolume = newVolumeName ? await getVolume(client, newVolumeName) : undefined;
  // Before the replica stops: whether its node was cordoned meanwhile (it could not start there again).
  const order = phaseOrder(m);
  const node = order[order.indexOf(m.phase) + 1] === "stopped" ? (pods.find((p) => p.metadata.name === m.pod)?.spec as { nodeName?: string } | undefined)?.nodeName : undefined;
  const cordoned = node && (await getNode(client, node).catch(() => undefined))?.spec?.unschedulable === true ? { replicaNodeCordoned: node } : {};
  const now = nowMs(x);
  noteCopyPod(run, copyPod, now);
  return { target, m, statefulSet, pods, claim, newClaim, copyPod, oldVolume, newVolume, ...cordoned, run, now };
}

/** The replica is, or may be, down because of this move: this run evicted it, or the journal's phase is one it is stopped for. */
function replicaMayBeDown(x: Move): boolean {
  const order = phaseOrder(x.m);
  const at = order.indexOf(x.m.phase);
  return x.m.pod !== undefined && (x.clock.stoppedAt !== undefined || (at >= order.indexOf("stopped") && x.m.phase !== "done"));
}

/**
 * Runs one claim's move until the machine says done; its stop is a StopError with the machine's
 * message. Once the replica may be down, a failure outside the machine (a wait that timed out, a
 * write or read that failed) does not end the run there: it is handed to the machine
 * (MoveRun.interrupted), which brings the replica back on its old volume while the claim is as
 * it was; once the swap has begun, the way up is forward onto the verified new volume, tried again
 * for up to --timeout. A failure while winding down is tried again a few times, then ends the run
 * saying where the replica is. Ctrl-C with the replica down winds down the same way first (a
 * second Ctrl-C ends the process at once); otherwise it ends the run at once.
 */
export async function runMove(x: Move): Promise<void> {
  const run: MoveRun = { created: [], told: {}, seen: {} };
  // An action other than a wait that the machine keeps choosing (an eviction a PodDisruptionBudget refuses) is bounded by --timeout too.
  let last = { key: "", since: 0 };
  let seen: MoveObserved | undefined;
  let trouble: { since: number; tries: number } | undefined;
  let ctrlC = false;
  for (;;) {
    x.ctx.signal.throwIfAborted();
    try {
      const o = await observe(x, run);
      seen = o;
      const action = nextMoveAction(o);
      if (action.kind === "done") return;
      if (action.kind === "stop") throw new Finished(action.message);
      if (action.kind === "wait") {
        await waitFor(action, o, x, run);
        continue;
      }
      const key = JSON.stringify(action);
      if (key !== last.key) last = { key, since: o.now };
      else if (o.now - last.since > x.ctx.timeoutMs)
        throw new StopError(`timed out after ${x.ctx.timeoutMs / 1000}s: ${action.kind} of claim ${x.m.claim} did not take effect; run the same command again`);
      await execute(action, o, x, run);
    } catch (e) {
      if (e instanceof Finished) {
        // After Ctrl-C the run's own error says only that it was interrupted: where the replica is goes to stderr here.
        if (ctrlC) x.ctx.progress.warn(e.message);
        throw new StopError(e.message);
      }
      // Another run took the journal over: it works on the move now; this run writes nothing more.
      if (e instanceof JournalTakenError) throw e;
      const mayBeDown = replicaMayBeDown(x) || run.orphaned === true;
      // Nothing is down and the StatefulSet was not deleted by this run: the run ends here, as before any change.
      if (!mayBeDown) throw e;
      if (x.ctx.signal.aborted) {
        // Ctrl-C with the replica down: it is brought back first (a second Ctrl-C ends the process at once, leaving it down).
        if (ctrlC) throw e;
        ctrlC = true;
        x.ctx = { ...x.ctx, signal: new AbortController().signal };
        if (run.failure === undefined) run.interrupted ??= "interrupted (Ctrl-C)";
        x.ctx.progress.warn(`interrupted (Ctrl-C): bringing ${x.m.pod} back up before stopping (Ctrl-C again stops at once and leaves it down)`);
        continue;
      }
      const message = (e as Error).message.split("\n")[0] ?? String(e);
      trouble ??= { since: nowMs(x), tries: 0 };
      trouble.tries += 1;
      const next = afterTrouble({
        mayBeDown,
        windingDown: run.failure !== undefined ? "failure" : run.interrupted !== undefined ? "interrupted" : false,
        timedOut: e instanceof StopError,
        tries: trouble.tries,
        elapsedMs: nowMs(x) - trouble.since,
        timeoutMs: x.ctx.timeoutMs,
        swapBegun: seen !== undefined && swapBegun(seen),
        phase: x.m.phase,
      });
      if (next === "end") throw e;
      if (next === "down") throw new StopError(downMessage(x, run, message));
      if (next === "back") run.interrupted = message;
      x.ctx.progress.warn(
        `claim ${x.m.claim}: ${message}; ${next === "forward" ? "trying again, onto the new volume" : next === "again" && run.failure ? "trying again" : `bringing ${x.m.pod} back up`}`,
      );
      await sleep(2000, x.ctx.signal);
    }
  }
}

/** The machine's stop, carried through runMove's catch unchanged. */
class Finished extends Error {}

/** Where a move that could not bring its replica back leaves it: the failure, then what is down and what to run. */
function downMessage(x: Move, run: MoveRun, last: string): string {
  const first = run.failure?.message ?? run.interrupted;
  return `${first !== undefined ? `${first}; then, bringing ${x.m.pod} back up: ` : ""}${last}; ${x.m.pod} may be down (kubectl get pod ${x.m.pod} -n ${x.target.namespace}); claim ${x.m.claim} is in phase ${x.m.phase} of its move, its old volume ${x.m.volume} is kept: fix the cause, then run the same command again to finish the move`;
}

/** A copy pod's wait looks again this often: whether it has been Unschedulable long enough, or told to go and not started. */
const tickMs = 2000;
class Tick extends Error {}

/**
 * Waits, bounded by --timeout, until the machine decides something other than this wait: the
 * object it names is watched, and each change is put into what was observed and asked again.
 */
async function waitFor(action: Extract<MoveAction, { kind: "wait" }>, o: MoveObserved, x: Move, run: MoveRun): Promise<void> {
  const same = (seen: MoveObserved) => JSON.stringify(nextMoveAction(seen)) === JSON.stringify(action);
  const said = action.for.split(";")[0]!;
  if (!x.said.has(said)) {
    x.said.add(said);
    x.ctx.progress.say(`claim ${x.m.claim}: waiting for ${said}`);
  }
  try {
    await waitBounded(action, o, x, run, same);
  } catch (e) {
    // Pods that wait on a node whose kubelet stopped answering: the line names the node and what to do.
    if (!(e instanceof StopError) || x.ctx.signal.aborted || (action.on !== "copy-pod" && action.on !== "pods")) throw e;
    const node = nodeOfWait(action, o, x.m);
    if (!node) throw e;
    throw new StopError(`${e.message}${nodeNote(x.m.claim, node, await readNode(x, node), phaseOrder(x.m).indexOf(x.m.phase) >= phaseOrder(x.m).indexOf("swapped"))}`);
  }
}

/** The node whose pods a wait is about: the copy pod's, else the replica's, else the one planned. */
function nodeOfWait(action: Extract<MoveAction, { kind: "wait" }>, o: MoveObserved, m: MigrationClaim): string | undefined {
  const nodeOf = (p: Pod | undefined) => (p?.spec as { nodeName?: string } | undefined)?.nodeName;
  const replica = m.pod ? o.pods.find((p) => p.metadata.name === m.pod) : undefined;
  return (action.on === "copy-pod" ? nodeOf(o.copyPod) : undefined) ?? nodeOf(replica) ?? m.node;
}

/** The node as the stop's line tells it; "unreadable" when it may not be read (a namespace admin). */
async function readNode(x: Move, node: string): Promise<KubeNode | undefined | "unreadable"> {
  try {
    return await getNode(x.ctx.client, node);
  } catch {
    return "unreadable";
  }
}

async function waitBounded(action: Extract<MoveAction, { kind: "wait" }>, o: MoveObserved, x: Move, run: MoveRun, same: (seen: MoveObserved) => boolean): Promise<void> {
  // A copy that runs is bounded by its progress (the machine stops one that moves no byte: stallSeconds), not by --timeout.
  const bound = <T>(what: string, wait: (signal: AbortSignal) => Promise<T>) => (action.progress ? wait(x.ctx.signal) : bounded(x.ctx, what, wait));
  await bound(`waiting for ${action.for}`, async (signal) => {
    if (action.on !== "copy-pod") return void (await watchOn(action.on, o, x, run, same, signal));
    for (;;) {
      try {
        return void (await within(
          signal,
          tickMs,
          () => new Tick(),
          (s) => watchOn(action.on, o, x, run, same, s),
        ));
      } catch (e) {
        if (!(e instanceof Tick)) throw e;
      }
      if (!same(await observe(x, run))) return;
    }
  });
}

/** Watches what `on` names until `same` no longer holds with it put into `o`. */
async function watchOn(on: Extract<MoveAction, { kind: "wait" }>["on"], o: MoveObserved, x: Move, run: MoveRun, same: (o: MoveObserved) => boolean, signal: AbortSignal): Promise<void> {
  const { client } = x.ctx;
  const ns = x.target.namespace;
  const seen = (patch: Partial<MoveObserved>) => !same({ ...o, ...patch, now: nowMs(x) });
  switch (on) {
    case "copy-pod": {
      // A final-copy pod this run told to go is removed by kubelet once it ended: its last state is kept (its report).
      const last = (p: Pod) => {
        if (run.told[p.metadata.uid!] !== undefined) run.ended = p;
      };
      await waitPodSeeingLast(client, ns, copyPodName(x.m.claim), (p) => (noteCopyPod(run, p, nowMs(x)), seen({ copyPod: p, run })), last, signal);
      return;
    }
    case "pods":
      await waitPods(client, ns, labelSelector(x.target.desired), (pods) => seen({ pods: [...pods.values()] }), signal);
      return;
    case "statefulset":
      // The machine waits on a StatefulSet only for it to go (an orphan delete the garbage collector finishes).
      if (o.statefulSet) await waitStatefulSetGone(client, ns, x.target.name, o.statefulSet.metadata.uid!, signal);
      return;
    case "claim":
      await waitClaim(client, ns, x.m.claim, (c) => seen({ claim: c }), signal);
      return;
    case "new-claim":
      await waitClaim(client, ns, newVolumeClaimName(x.m.claim), (c) => seen({ newClaim: c }), signal);
      return;
  }
}
