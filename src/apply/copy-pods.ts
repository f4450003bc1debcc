// The copy pods of --migrate-existing before a move: the preflight's dry run of a copy pod and of the
// tool's claim of a new volume, and the pods that measure a shrink's data once the change is
// confirmed. A move's own copy pods are actions of the move (./move-actions.ts).
import { RefusedError } from "../errors";
import type { KubeClient } from "../kube/client";
import { isAlreadyExists } from "../kube/errors";
import { getPod, waitPod } from "../kube/read";
import type { Pod } from "../api/types";
import { createClaim, createPod, deleteCopyPod } from "../kube/write";
import { copyPod, copyPodDone, newVolumeClaim, parseCopyReport, probePod, probeRefusal, probeTargets } from "../plan/migrate";
import { copyPodTrouble, imageOf } from "../plan/move";
import type { Plan } from "../plan/types";
import { within } from "./deadline";
import type { Progress } from "./progress";
import { bytesOf as quantityBytes } from "../plan/quantity";

const firstLine = (e: unknown) => (e as Error).message.split("\n")[0] ?? "";

/** What to do about an admission refusal of the tool's pods or claims. */
function admissionAdvice(ns: string, message: string): string {
  if (/quota/i.test(message)) return `a ResourceQuota of namespace ${ns} has no room for it: raise it (kubectl describe resourcequota -n ${ns}) or free some`;
  if (/PodSecurity|pod security/i.test(message)) {
    return `the copy pods of --migrate-existing run as root (to keep every file's owner): allow them while the claims move, for example with kubectl label namespace ${ns} pod-security.kubernetes.io/enforce=baseline --overwrite`;
  }
  return "fix the cause";
}

/**
 * A server dry run of the first copy pod still to run and of the tool's claim of its new volume:
 * admission (Pod Security, ResourceQuota, policies) refuses now, before anything changes. The
 * copy pods run as root, to keep every file's owner.
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
    const message = firstLine(e);
    if (/PodSecurity|pod security/i.test(message)) {
      throw new RefusedError(
        `the copy pods of --migrate-existing run as root (to keep every file's owner), and namespace ${ns} refuses them: ${message}; nothing was changed: allow them while the claims move, for example with kubectl label namespace ${ns} pod-security.kubernetes.io/enforce=baseline --overwrite`,
      );
    }
    throw new RefusedError(`the server refused a copy pod of --migrate-existing (dry run): ${message}; nothing was changed: ${admissionAdvice(ns, message)}`);
  }
  if (m.phase !== "pending") return;
  const claim = newVolumeClaim(m, ns, plan.target.name);
  const { name: _claimName, ...claimMetadata } = claim.metadata;
  try {
    await createClaim(client, ns, { ...claim, metadata: { ...claimMetadata, generateName: `${claim.metadata.name}-` } }, "server");
  } catch (e) {
    const message = firstLine(e);
    throw new RefusedError(`the server refused the claim of a new volume for claim ${m.claim} (dry run): ${message}; nothing was changed: ${admissionAdvice(ns, message)}`);
  }
}

/** A copy pod's wait looks again this often (how long it has been Unschedulable). */
const tickMs = 2000;
class Tick extends Error {}

/**
 * Waits until the pod ended or cannot start (copyPodTrouble), looking again every tickMs; the
 * pod as last seen, and how it cannot start.
 */
async function endOrTrouble(client: KubeClient, ns: string, name: string, signal: AbortSignal, clock: () => number): Promise<{ pod?: Pod; trouble?: { reason: string; message: string } }> {
  const from = clock();
  for (;;) {
    let seen: Pod | undefined;
    const decided = (p: Pod | undefined) => {
      seen = p;
      return !p || copyPodDone(p) || copyPodTrouble(p, clock() - from) !== undefined;
    };
    try {
      await within(
        signal,
        tickMs,
        () => new Tick(),
        (s) => waitPod(client, ns, name, decided, s),
      );
    } catch (e) {
      if (!(e instanceof Tick)) throw e;
      if (!decided(await getPod(client, ns, name))) continue;
    }
    const pod = seen as Pod | undefined;
    return { ...(pod ? { pod } : {}), ...(pod && !copyPodDone(pod) ? { trouble: copyPodTrouble(pod, clock() - from) } : {}) };
  }
}

/** How a pod of the tool's that runs to its end before anything changes ended: the pod as last seen, and how it could not start. */
type ShortPodEnd = Awaited<ReturnType<typeof endOrTrouble>>;

/**
 * Runs one of the tool's short pods before anything changes (a shrink's measure, a copy image's
 * proof): created, awaited until it ended or cannot start (bounded by --timeout), and removed,
 * whatever happened. `refuse`: the refusal of a pod that cannot even be created.
 */
async function shortPod(
  client: KubeClient,
  ns: string,
  body: Pod,
  wait: { timeoutMs: number; signal: AbortSignal; progress: Progress },
  timedOut: (name: string) => RefusedError,
  refuse: (message: string) => RefusedError,
): Promise<ShortPodEnd & { name: string }> {
  let created: Pod | undefined;
  try {
    created = await createPod(client, ns, body);
  } catch (e) {
    if (!isAlreadyExists(e)) throw refuse(firstLine(e));
  }
  const name = created?.metadata.name ?? body.metadata.name!;
  let end: ShortPodEnd | undefined;
  try {
    end = await within(
      wait.signal,
      wait.timeoutMs,
      () => timedOut(name),
      (signal) => endOrTrouble(client, ns, name, signal, () => wait.progress.elapsedSeconds()),
    );
  } finally {
    const gone = end?.pod ?? created ?? (await getPod(client, ns, name));
    if (gone?.metadata.uid) await deleteCopyPod(client, ns, name, gone.metadata.uid);
  }
  return { ...end, name };
}

/**
 * The copy image starts on every node a copy pod of the plan will run on, proved before anything
 * changes (after consent, before the journal is written): a short pod per node (probePod: the copy
 * pod as it would be made, mounting no claim, running `exit 0`). One that cannot start (an image
 * the node cannot pull, no room on the node, a runtime that refuses it) refuses the run with one
 * line: nothing was changed. The pods are the tool's own and are removed.
 */
export async function proveCopyImage(client: KubeClient, plan: Plan, wait: { timeoutMs: number; signal: AbortSignal; progress: Progress }): Promise<void> {
  const migration = plan.migration;
  if (!migration) return;
  const ns = plan.target.namespace;
  const targets = probeTargets(migration);
  if (!targets.length) return;
  const image = migration.copyImage;
  const nodes = targets.flatMap((m) => (m.node ? [m.node] : []));
  wait.progress.say(`proving that the copy image ${image} starts${nodes.length ? ` on node${nodes.length > 1 ? "s" : ""} ${nodes.join(", ")}` : ""}, before anything changes`);
  await Promise.all(
    targets.map(async (m) => {
      const where = m.node ? `on node ${m.node}` : `where claim ${m.claim}'s copy pods would run`;
      const end = await shortPod(
        client,
        ns,
        probePod(m, ns, plan.target.name, image),
        wait,
        (name) => new RefusedError(`the copy image ${image} did not start ${where} within ${wait.timeoutMs / 1000}s (pod ${name}: kubectl describe pod ${name} -n ${ns}); nothing was changed`),
        (message) => new RefusedError(`could not start a pod of the copy image ${image} ${where}: ${message}; nothing was changed: ${admissionAdvice(ns, message)}`),
      );
      if (end.trouble) throw new RefusedError(probeRefusal(image, m, ns, end.name, { trouble: end.trouble }));
      if (end.pod?.status?.phase !== "Succeeded") {
        const why = end.pod?.status?.message ?? end.pod?.status?.reason ?? end.pod?.status?.containerStatuses?.[0]?.state?.terminated?.reason ?? "it failed";
        throw new RefusedError(probeRefusal(image, m, ns, end.name, { failed: why }));
      }
    }),
  );
  wait.progress.say(`the copy image ${image} starts${nodes.length ? ` on ${nodes.join(", ")}` : ""}`);
}

/**
 * Before a shrink (nothing read before consent says how much data a claim holds): a pod per claim
 * measures it (du), and a claim whose data does not fit the new size refuses the run, before
 * anything else changes. A pod that cannot start (an image the node cannot pull, no node for it)
 * refuses the run at once. The pods are the tool's own and are removed.
 */
export async function measureShrinks(client: KubeClient, plan: Plan, wait: { timeoutMs: number; signal: AbortSignal; progress: Progress }): Promise<void> {
  const ns = plan.target.namespace;
  for (const m of plan.migration?.claims.filter((c) => c.measure && c.phase === "pending") ?? []) {
    const body = copyPod(m, ns, plan.target.name, "measure", plan.migration!.copyImage);
    const podName = body.metadata.name!;
    wait.progress.say(`claim ${m.claim}: measuring its data with pod ${podName}, before anything changes`);
    const end = await shortPod(
      client,
      ns,
      body,
      wait,
      () =>
        new RefusedError(
          `timed out after ${wait.timeoutMs / 1000}s measuring the data of claim ${m.claim} (pod ${podName} did not finish: kubectl describe pod ${podName} -n ${ns}); nothing was changed`,
        ),
      (message) => new RefusedError(`could not measure the data of claim ${m.claim}: ${message}; nothing was changed: ${admissionAdvice(ns, message)}`),
    );
    if (end.trouble) {
      const image = (end.pod && imageOf(end.pod)) ?? plan.migration!.copyImage;
      throw new RefusedError(
        `pod ${podName}, which measures the data of claim ${m.claim}, cannot start: ${end.trouble.reason}${end.trouble.message ? ` (${end.trouble.message})` : ""}; image ${image}; the pod was removed and nothing was changed: ${/Image/.test(end.trouble.reason) ? "pass --copy-image with an image the node can pull or already has" : "make room for it on the claim's node"}, then run the same command again`,
      );
    }
    const bytes = end.pod ? parseCopyReport(end.pod)?.bytes : undefined;
    if (end.pod?.status?.phase !== "Succeeded" || bytes === undefined) throw new RefusedError(`could not measure the data of claim ${m.claim} (pod ${podName} failed); nothing was changed`);
    const limit = Number(quantityBytes(m.to.size) ?? 0n);
    if (bytes > limit)
      throw new RefusedError(`claim ${m.claim} holds ${bytes} bytes (measured), more than the new size ${m.to.size} (${limit} bytes): choose a size of at least ${bytes} bytes; nothing was changed`);
    wait.progress.say(`claim ${m.claim}: its data takes ${bytes} bytes, which fits ${m.to.size}`);
  }
}
