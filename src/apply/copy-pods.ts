// The copy pods of --migrate-existing: the preflight's dry run, the pods that measure a shrink's data,
// and each move's copies (created, waited for, told to go, removed). Apart from the phases of a claim's
// move (./migrate.ts), which decide when each copy runs and what the claim, volume and replica go through.
import { RefusedError, StopError } from "../errors";
import type { KubeClient } from "../kube/client";
import { isAlreadyExists, isNotFound, isUnknownOutcome } from "../kube/errors";
import { getPod, waitPod } from "../kube/read";
import type { Pod } from "../api/types";
import { annotateCopyPod, createPod, deleteCopyPod } from "../kube/write";
import { copyPod, copyPodDone, type CopyMode, type CopyReport, copyPodName, parseCopyReport, startAnnotation, waitingSyncPod } from "../plan/migrate";
import { isReady } from "../plan/objects";
import type { Plan } from "../plan/types";
import { bounded, withDeadline, within } from "./deadline";
import type { Progress } from "./progress";
import { bytesOf as quantityBytes } from "../plan/quantity";
import type { Move } from "./move";

/** How long a copy pod told to go may take to start its final copy (its downward API volume updated, its probe seen) before a new one replaces it. */
const signalSeconds = 20;

/**
 * A server dry run of the first copy pod still to run: admission (Pod Security, policies) refuses
 * now, before anything changes. The copy pods run as root, to keep every file's owner.
 */
export async function dryRunCopyPod(client: KubeClient, plan: Plan): Promise<void> {
  const m = plan.migration?.claims.find((c) => c.phase === "pending" || c.phase === "copied" || c.phase === "stopped");
  if (!m) return;
  const ns = plan.target.namespace;
  // Under a generated name: a copy pod of an interrupted run may exist under the real one (admission is what is asked).
  const body = copyPod(m, ns, plan.target.name, "copy", plan.migration!.copyImage);
  const { name: _name, ...metadata } = body.metadata;
  try {
    await createPod(client, ns, { ...body, metadata: { ...metadata, generateName: `${body.metadata.name}-` } }, "server");
  } catch (e) {
    const message = (e as Error).message.split("\n")[0] ?? "";
    if (/PodSecurity|pod security/i.test(message)) {
      throw new RefusedError(
        `the copy pods of --migrate-existing run as root (to keep every file's owner), and namespace ${ns} refuses them: ${message}; nothing was changed: allow them while the claims move, for example with kubectl label namespace ${ns} pod-security.kubernetes.io/enforce=baseline --overwrite`,
      );
    }
    throw new RefusedError(`the server refused a copy pod of --migrate-existing (dry run): ${message}; nothing was changed`);
  }
}
/**
 * Before a shrink (kubelet's stats may be a minute old, or not the claim's data): a pod per claim measures it (du),
 * and a claim whose data does not fit the new size refuses the run, before anything changes. The
 * pods are the tool's own and are removed.
 */
export async function measureShrinks(client: KubeClient, plan: Plan, wait: { timeoutMs: number; signal: AbortSignal; progress: Progress }): Promise<void> {
  const ns = plan.target.namespace;
  for (const m of plan.migration?.claims.filter((c) => c.measure && c.phase === "pending") ?? []) {
    const body = copyPod(m, ns, plan.target.name, "measure", plan.migration!.copyImage);
    const podName = body.metadata.name!;
    wait.progress.say(`claim ${m.claim}: measuring its data with pod ${podName}, before anything changes`);
    let created: Pod | undefined;
    try {
      created = await createPod(client, ns, body);
    } catch (e) {
      if (!isAlreadyExists(e)) throw new RefusedError(`could not measure the data of claim ${m.claim}: ${(e as Error).message.split("\n")[0]}; nothing was changed`);
    }
    const timedOut = () =>
      new RefusedError(
        `timed out after ${wait.timeoutMs / 1000}s measuring the data of claim ${m.claim} (pod ${podName} did not finish: kubectl describe pod ${podName} -n ${ns}); nothing was changed`,
      );
    let done: Pod | undefined;
    try {
      done = await within(wait.signal, wait.timeoutMs, timedOut, (signal) => waitPod(client, ns, podName, (p) => copyPodDone(p), signal));
    } finally {
      const gone = done ?? created ?? (await getPod(client, ns, podName));
      if (gone?.metadata.uid) await deleteCopyPod(client, ns, podName, gone.metadata.uid);
    }
    const bytes = parseCopyReport(done!)?.bytes;
    if (done?.status?.phase !== "Succeeded" || bytes === undefined) throw new RefusedError(`could not measure the data of claim ${m.claim} (pod ${podName} failed); nothing was changed`);
    const limit = Number(quantityBytes(m.to.size) ?? 0n);
    if (bytes > limit)
      throw new RefusedError(`claim ${m.claim} holds ${bytes} bytes (measured), more than the new size ${m.to.size} (${limit} bytes): choose a size of at least ${bytes} bytes; nothing was changed`);
    wait.progress.say(`claim ${m.claim}: its data takes ${bytes} bytes, which fits ${m.to.size}`);
  }
}

/**
 * Runs one copy pod to its end and returns its report; the pod is removed afterwards. A first
 * copy's pod found from an earlier run is waited for; a final copy's only while it still waits to
 * be told to go (started before its replica stopped), and then told: one that was told before, or
 * ended, may have copied before the replica last ran, and is replaced. Any other is removed.
 */
export async function runCopy(move: Move, mode: CopyMode, image: string): Promise<{ pod: Pod; report: CopyReport | undefined }> {
  const { ctx, m, ns } = move;
  const podName = copyPodName(m.claim);
  let pod = await getPod(ctx.client, ns, podName);
  if (pod && (pod.metadata.annotations?.["appstorage.kubectl.io/copy"] !== mode || pod.status?.phase === "Failed" || (mode === "sync" && !waitingSyncPod(pod)))) {
    await removeCopyPod(move, pod);
    pod = undefined;
  }
  if (pod && mode === "sync" && !(await toldToGo(move, pod))) {
    await removeCopyPod(move, pod);
    pod = undefined;
  }
  if (!pod) await createCopyPod(move, mode, image, "go");
  const done = await bounded(ctx, `waiting for copy pod ${podName} (${mode}); see kubectl describe pod ${podName} -n ${ns}, then run the same command again`, (signal) =>
    waitPod(ctx.client, ns, podName, (p) => copyPodDone(p), signal),
  );
  const report = parseCopyReport(done!);
  await removeCopyPod(move, done!);
  return { pod: done!, report };
}

async function createCopyPod(move: Move, mode: CopyMode, image: string, start: "wait" | "go"): Promise<void> {
  const { ctx, m, ns, name } = move;
  try {
    await createPod(ctx.client, ns, copyPod(m, ns, name, mode, image, start));
  } catch (e) {
    if (!isAlreadyExists(e) && !isUnknownOutcome(e))
      throw new StopError(
        `could not create copy pod ${copyPodName(m.claim)}: ${(e as Error).message.split("\n")[0]}; nothing was changed on claim ${m.claim}: fix the cause, then run the same command again`,
      );
  }
}

/**
 * Tells a final copy's pod that waits to go (its start annotation, which its script reads through
 * the downward API), and waits until it started (Ready: its probe reads the mark its script makes)
 * or ended. False when it did not within signalSeconds: then it is replaced by one told at creation.
 */
async function toldToGo(move: Move, pod: Pod): Promise<boolean> {
  const { ctx, m, ns } = move;
  const podName = pod.metadata.name!;
  try {
    await annotateCopyPod(ctx.client, ns, podName, pod.metadata.uid!, { [startAnnotation]: "go" });
  } catch (e) {
    if (isNotFound(e)) return false;
    if (!isUnknownOutcome(e))
      throw new StopError(`could not tell copy pod ${podName} to make the final copy: ${(e as Error).message.split("\n")[0]}; claim ${m.claim} was not changed: run the same command again`);
  }
  ctx.progress.say(`claim ${m.claim}: told copy pod ${podName} to make the final copy`);
  const d = withDeadline(ctx.signal, signalSeconds * 1000, () => new Error("not started"));
  try {
    const seen = await waitPod(ctx.client, ns, podName, (p) => !p || p.metadata.uid !== pod.metadata.uid || copyPodDone(p) || isReady(p), d.signal);
    if (seen && seen.metadata.uid === pod.metadata.uid) return true;
  } catch (e) {
    // Ctrl-C stops the run; only this wait's own deadline means the pod did not start.
    ctx.signal.throwIfAborted();
    if (!d.signal.aborted) throw e;
    ctx.progress.warn(
      `copy pod ${podName} did not start the final copy within ${signalSeconds}s of being told to (its downward API volume was not updated): replacing it with one that starts at once`,
    );
  } finally {
    d.done();
  }
  return false;
}

export async function removeCopyPod(move: Move, pod: Pod): Promise<void> {
  const { ctx, ns } = move;
  await deleteCopyPod(ctx.client, ns, pod.metadata.name!, pod.metadata.uid!);
  await bounded(ctx, `waiting for copy pod ${pod.metadata.name} to be removed`, (signal) => waitPod(ctx.client, ns, pod.metadata.name!, (p) => !p || p.metadata.uid !== pod.metadata.uid, signal));
}

/**
 * The final copy's pod, started (or found) while the replica runs: it mounts both volumes and
 * waits until it is told to go. One found that was told before, or ended, is replaced.
 */
export async function startFinalCopyPod(move: Move, image: string): Promise<void> {
  const { ctx, m, ns } = move;
  const podName = copyPodName(m.claim);
  let pod = await getPod(ctx.client, ns, podName);
  if (pod && !waitingSyncPod(pod)) {
    await removeCopyPod(move, pod);
    pod = undefined;
  }
  if (!pod) {
    await createCopyPod(move, "sync", image, "wait");
    ctx.progress.say(`claim ${m.claim}: started copy pod ${podName} for the final copy while ${m.pod} runs; it waits until ${m.pod} is stopped`);
  }
  const running = await bounded(
    ctx,
    `waiting for copy pod ${podName} to run (it waits to make the final copy); see kubectl describe pod ${podName} -n ${ns}, then run the same command again`,
    (signal) => waitPod(ctx.client, ns, podName, (p) => !p || copyPodDone(p) || p.status?.phase === "Running", signal),
  );
  if (running?.status?.phase !== "Running") {
    if (running) await removeCopyPod(move, running);
    throw new StopError(
      `claim ${m.claim}: copy pod ${podName} ${running ? `ended (${parseCopyReport(running)?.error ?? "see its events"})` : "was removed"} before the final copy; nothing was changed on the claim and ${m.pod} still runs: run the same command again`,
    );
  }
}
