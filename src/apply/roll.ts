// roll-pods and restore-strategy: after set -f re-created the StatefulSet with claim templates
// added or removed (and updateStrategy OnDelete, src/plan/roll.ts says why), every pod restarts
// once from the new pod template, one at a time in the planned order, through the Eviction API
// (PodDisruptionBudgets are respected). Before each eviction every other pod of the StatefulSet's
// ordinals must be Ready (never more than one down); each evicted pod must come back Ready, from
// the new revision, with its new claims and the uids of its other claims unchanged, or the run
// stops with the journal saved. What is done is read from the cluster, not remembered: a pod
// already from the new revision restarted earlier (a rerun after a kill goes on from there). Then
// the original updateStrategy is put back exactly.
import { StopError } from "../errors";
import { getClaim, listPods, waitList, waitPods } from "../kube/read";
import { statefulSetsPath } from "../kube/paths";
import { replaceUpdateStrategy, restoreFieldManagers } from "../kube/write";
import type { Pod, StatefulSet } from "../api/types";
import { controlledBy, isReady, labelSelector, ordinalStart, podRevision, replicasOf } from "../plan/objects";
import type { ApplyResult, Plan } from "../plan/types";
import { statefulSetRef } from "../refs";
import type { ApplyContext } from "./context";
import { within } from "./deadline";
import { evictHonouringBudgets } from "./restart";

type Rolled = NonNullable<ApplyResult["rolled"]>[number];

/** One roll: the StatefulSet as created, the revision its pods must come back from, and what is done. */
interface Roll {
  ctx: ApplyContext;
  plan: Plan;
  ns: string;
  name: string;
  uid: string;
  revision: string;
  selector: string;
  members: string[];
  rolled: Rolled[];
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
const sortKeys = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(sortKeys)
    : v && typeof v === "object"
      ? Object.fromEntries(
          Object.entries(v)
            .sort(([a], [b]) => (a < b ? -1 : 1))
            .map(([k, x]) => [k, sortKeys(x)]),
        )
      : v;

/** The revision of the new pod template: the controller's status.updateRevision once it has seen this object (waited for). */
async function newRevision(ctx: ApplyContext, ns: string, name: string, uid: string): Promise<string> {
  const ref = statefulSetRef(name);
  let revision: string | undefined;
  await within(
    ctx.signal,
    ctx.timeoutMs,
    () =>
      new StopError(
        `timed out after ${ctx.timeoutMs / 1000}s waiting for the StatefulSet controller to report the new revision of ${ref}; check that kube-controller-manager runs, then run the same command again`,
      ),
    (signal) =>
      waitList<StatefulSet>(
        ctx.client,
        statefulSetsPath(ns),
        undefined,
        (m) => {
          const s = m.get(name);
          const st = s?.status;
          if (s?.metadata.uid !== uid || !st?.updateRevision || (st.observedGeneration ?? 0) < (s.metadata.generation ?? 0)) return false;
          revision = st.updateRevision;
          return true;
        },
        signal,
        `metadata.name=${name}`,
      ),
  );
  return revision!;
}

export async function rollPods(plan: Plan, ctx: ApplyContext, sts: StatefulSet): Promise<Rolled[]> {
  const roll = plan.roll!;
  const { namespace: ns, name } = plan.target;
  const uid = sts.metadata.uid!;
  const members = Array.from({ length: replicasOf(sts) }, (_, i) => `${name}-${ordinalStart(sts) + i}`);
  const run: Roll = { ctx, plan, ns, name, uid, revision: await newRevision(ctx, ns, name, uid), selector: labelSelector(sts), members, rolled: [] };
  const order = roll.order.filter((p) => members.includes(p));
  ctx.progress.say(`restarting ${order.length} pod(s) of ${statefulSetRef(name)} one at a time (${roll.orderReason.split(":")[0]}) from revision ${run.revision}: ${order.join(", ")}`);
  for (const pod of order) await rollPod(run, pod, order);
  return run.rolled;
}

/** A stop that says which pods are left and which restarted, so the rerun is understood. */
function stopper(run: Roll, podName: string, order: readonly string[]): (why: string) => StopError {
  const left = order.slice(order.indexOf(podName));
  return (why) =>
    new StopError(
      `${why}; stopped with ${left.join(", ")} left to restart${run.rolled.length ? ` (restarted: ${run.rolled.map((r) => r.pod).join(", ")})` : ""}; ${statefulSetRef(run.name)} keeps updateStrategy OnDelete and the journal its progress: fix it, then run the same command again to continue`,
    );
}

const waitFor = (run: Roll, check: (pods: Map<string, Pod>) => boolean, timedOut: () => Error) =>
  within(run.ctx.signal, run.ctx.timeoutMs, timedOut, (signal) => waitPods(run.ctx.client, run.ns, run.selector, check, signal));

async function rollPod(run: Roll, podName: string, order: readonly string[]): Promise<void> {
  const { ctx, ns, uid, revision } = run;
  const stop = stopper(run, podName, order);
  const seconds = `${ctx.timeoutMs / 1000}s`;
  let pod = (await listPods(ctx.client, ns, run.selector)).find((p) => p.metadata.name === podName);
  const fresh = (p: Pod | undefined) => !!p && controlledBy(p, uid) && podRevision(p) === revision && !p.metadata.deletionTimestamp;
  // Gone, being re-created or not Ready yet: an earlier run may have evicted it. Wait, then decide.
  if (!isReady(pod) || !controlledBy(pod, uid)) {
    ctx.progress.say(`pod ${podName} is not Ready (or is being re-created); waiting for it before deciding whether it restarts`);
    const pods = await waitFor(
      run,
      (m) => isReady(m.get(podName)) && controlledBy(m.get(podName), uid),
      () => stop(`pod ${podName} did not become Ready within ${seconds} (check it with kubectl describe pod ${podName} -n ${ns})`),
    );
    pod = pods.get(podName);
  }
  if (fresh(pod)) {
    await checkClaims(run, podName, stop);
    run.rolled.push({ pod: podName, uid: pod!.metadata.uid!, earlier: true });
    ctx.progress.say(`pod ${podName} runs the new pod template already (revision ${revision}); not restarting it`);
    return;
  }
  // Never more than one pod down: every other pod of the ordinals Ready first.
  let down: string[] = [];
  const othersDown = (m: Map<string, Pod>) => (down = run.members.filter((n) => n !== podName && !(isReady(m.get(n)) && controlledBy(m.get(n), uid))));
  const first = new Map((await listPods(ctx.client, ns, run.selector)).map((p) => [p.metadata.name!, p]));
  if (othersDown(first).length) {
    ctx.progress.say(`pod(s) ${down.join(", ")} are not Ready; waiting for them before restarting ${podName}, so that never more than one pod is down`);
    await waitFor(
      run,
      (m) => othersDown(m).length === 0,
      () => stop(`pod(s) ${down.join(", ")} are not Ready, and restarting ${podName} would take a second pod down`),
    );
  }
  const previousUid = pod!.metadata.uid!;
  const back = await within(
    ctx.signal,
    ctx.timeoutMs,
    () => stop(`pod ${podName} did not come back Ready within ${seconds} after its eviction (check it with kubectl describe pod ${podName} -n ${ns})`),
    async (signal) => {
      await evictHonouringBudgets(run, podName, previousUid, stop, signal);
      const pods = await waitPods(ctx.client, ns, run.selector, (m) => m.get(podName)?.metadata.uid !== previousUid && isReady(m.get(podName)), signal);
      return pods.get(podName)!;
    },
  );
  if (!fresh(back)) throw stop(`pod ${podName} came back from revision ${podRevision(back) ?? "(none)"}, not the new pod template's ${revision}`);
  const claims = await checkClaims(run, podName, stop);
  run.rolled.push({ pod: podName, previousUid, uid: back.metadata.uid!, newClaims: claims });
  ctx.progress.say(
    `pod ${podName} is back and Ready from the new pod template (uid ${previousUid} -> ${back.metadata.uid})${claims.length ? `, with claim(s) ${claims.map((c) => c.name).join(", ")}` : ""}`,
  );
}

/** The pod's claims: the added templates' exist and are Bound; every other of its claims kept its uid. */
async function checkClaims(run: Roll, podName: string, stop: (why: string) => StopError): Promise<{ name: string; uid: string }[]> {
  const { ctx, ns, name, plan } = run;
  const ordinal = podName.slice(name.length + 1);
  const added: { name: string; uid: string }[] = [];
  for (const a of plan.roll!.added) {
    const claimName = `${a.claim}-${name}-${ordinal}`;
    const claim = await getClaim(ctx.client, ns, claimName);
    if (!claim) throw stop(`claim ${claimName} of pod ${podName} does not exist, though the pod is Ready (inspect it with kubectl get pvc -n ${ns})`);
    if (claim.status?.phase !== "Bound") throw stop(`claim ${claimName} of pod ${podName} is ${claim.status?.phase ?? "not Bound"}`);
    added.push({ name: claimName, uid: claim.metadata.uid! });
  }
  for (const c of plan.claims.filter((x) => !x.leftover && `${name}-${x.ordinal}` === podName)) {
    const now = await getClaim(ctx.client, ns, c.name);
    if (now?.metadata.uid !== c.uid)
      throw stop(`claim ${c.name} changed while pod ${podName} restarted (uid ${c.uid} -> ${now?.metadata.uid ?? "none"}); inspect it with kubectl get pvc ${c.name} -n ${ns}`);
  }
  return added;
}

/** The original updateStrategy, put back exactly (safe to repeat: nothing is sent when it is already so). */
export async function restoreStrategy(plan: Plan, ctx: ApplyContext, sts: StatefulSet): Promise<void> {
  const wanted = plan.roll!.updateStrategy;
  const ref = statefulSetRef(plan.target.name);
  if (sameJson(sts.spec.updateStrategy, wanted)) {
    ctx.progress.say(`${ref} has its updateStrategy back already`);
    return;
  }
  await replaceUpdateStrategy(ctx.client, plan.target.namespace, plan.target.name, sts.metadata.uid!, wanted);
  ctx.progress.say(`put back the updateStrategy of ${ref}: ${JSON.stringify(wanted)}`);
  // The patch made this tool the manager of updateStrategy: its owners are given back, as after the re-create.
  if (plan.fieldManagers?.length) {
    await restoreFieldManagers(ctx.client, plan.target.namespace, plan.target.name, sts.metadata.uid!, plan.fieldManagers).catch((e) =>
      ctx.progress.warn(
        `could not give the updateStrategy of ${ref} back to its field managers (${(e as Error).message.split("\n")[0]}): a server-side apply may report a conflict on it; apply with --force-conflicts once`,
      ),
    );
  }
}
