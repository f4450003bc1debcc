// Executes a plan: exactly its steps, in their order, reading nothing but the plan (and the
// cluster's answers to its own steps). Every step is safe to repeat: NotFound on delete is done,
// AlreadyExists with the desired templates on create is done, so recovering from any
// interruption is running `set` again.
import { RefusedError, StopError } from "../errors";
import type { KubeClient } from "../kube/client";
import { isAlreadyExists, isConflict, isNotFound, isUnknownOutcome } from "../kube/errors";
import { getStatefulSet, listClaims, waitPods, waitStatefulSetGone } from "../kube/read";
import type { Pod, StatefulSet } from "../kube/types";
import { createEvent, createStatefulSet, orphanDelete } from "../kube/write";
import { sameClaimTemplates } from "../plan/objects";
import { changeNote, claimsToVerify, journalFor, resumes } from "../plan/journal";
import { controlledBy, labelSelector, podRevision } from "../plan/objects";
import { apiVersion, type ApplyResult, type ExistingClaimsResult, type JournalStep, type Plan, type Step } from "../plan/types";
import { statefulSetRef } from "../refs";
import { type ClaimsContext, claimSummary, growClaims, waitResize } from "./existing-claims";
import { JournalStore } from "./journal-store";
import { Lease } from "./lease";
import { withDeadline } from "./deadline";
import type { Progress } from "./progress";
import { restartPods } from "./restart";

export interface ApplyContext extends ClaimsContext {
  client: KubeClient;
  progress: Progress;
  signal: AbortSignal;
  timeoutMs: number;
  now: () => Date;
  /** Identifies this run in the journal's lock. */
  holder: string;
  /** The user the server sees, recorded in the journal. */
  by: string;
  /** Where the local copy of the journal goes. */
  journalDir: string;
}

/** Bounds a wait by --timeout; the message says what was awaited and what to do. */
const deadline = (parent: AbortSignal, ms: number, what: string) => withDeadline(parent, ms, () => new StopError(`timed out after ${ms / 1000}s ${what}`));

/** What a run learns as its steps go: the result, and what the existing-claims steps did. */
interface RunState {
  result: ApplyResult;
  grown: ExistingClaimsResult["claims"];
  seen?: Awaited<ReturnType<typeof waitResize>>;
  restarted: ExistingClaimsResult["restarted"];
  /** The StatefulSet as this run created it, or as it is now: read once, when a step needs it. */
  current?: StatefulSet;
}

/** The journal's step once a step is done: a rerun starts from there. */
const journalStepAfter: Partial<Record<Step, JournalStep>> = { "orphan-delete": "deleting", "wait-gone": "deleted", create: "created" };

export async function applyPlan(plan: Plan, ctx: ApplyContext): Promise<ApplyResult> {
  const { namespace: ns, name } = plan.target;
  const store = new JournalStore(ctx.client, ns, name, ctx.journalDir, plan.journalSecret);
  const lease = new Lease(store, ctx.now, ctx.holder);
  const state: RunState = { result: startResult(plan), grown: [], restarted: [] };
  const run = stepRunners(plan, ctx, lease, state);
  try {
    for (const step of plan.steps) {
      await run[step]();
      const after = journalStepAfter[step];
      if (after) await lease.save(after);
    }
  } catch (e) {
    await lease.release();
    throw e;
  } finally {
    await lease.stop();
  }
  if (plan.existing) state.result.existing = { claims: claimSummary(plan, state.grown, state.seen), restarted: state.restarted };
  state.result.elapsedSeconds = Number(ctx.progress.elapsedSeconds().toFixed(3));
  return state.result;
}

function startResult(plan: Plan): ApplyResult {
  const { namespace, name, uid } = plan.target;
  return { apiVersion, kind: "Result", namespace, name, previousUid: uid, uid, resumed: resumes(plan), request: plan.request, pods: [], claims: [], elapsedSeconds: 0 };
}

/** What each step does; the journal's step is saved after it (journalStepAfter). */
function stepRunners(plan: Plan, ctx: ApplyContext, lease: Lease, state: RunState): Record<Step, () => Promise<void>> {
  const { client, progress } = ctx;
  const { namespace: ns, name } = plan.target;
  const ref = statefulSetRef(name);
  const statefulSet = async (): Promise<StatefulSet> => {
    state.current ??= await getStatefulSet(client, ns, name);
    if (!state.current) throw new StopError(`${ref} does not exist; run the same command again to re-create it from the journal`);
    state.result.uid = state.current.metadata.uid!;
    return state.current;
  };
  return {
    "write-journal": async () => {
      await lease.acquire(journalFor(plan, { holder: ctx.holder, by: ctx.by, now: ctx.now() }));
      progress.say(`saved the journal in secret/${lease.store.secretName} and ${lease.store.localPath}`);
    },
    // Existing claims grow before the StatefulSet is touched: a refusal leaves it as it was.
    "grow-claims": async () => {
      if (lease.step === "planned") await lease.save("growing");
      state.grown = await growClaims(plan, ctx);
    },
    "orphan-delete": () => deleteOriginal(plan, ctx, lease, state.grown),
    "wait-gone": () => waitGone(plan, ctx),
    create: async () => {
      state.current = await createDesired(plan, ctx);
      state.result.uid = state.current.metadata.uid!;
    },
    verify: async () => {
      const verified = await verifyAdoption(plan, await statefulSet(), ctx);
      state.result.pods = verified.pods;
      state.result.claims = verified.claims;
    },
    record: async () => recordEvent(plan, await statefulSet(), ctx),
    "remove-journal": async () => {
      await lease.remove();
      progress.say("removed the journal");
    },
    "wait-resize": async () => {
      state.seen = await waitResize(plan, ctx);
    },
    "restart-pods": async () => {
      if (state.seen) state.restarted = await restartPods(plan, ctx, await statefulSet(), state.seen);
    },
  };
}

async function waitGone(plan: Plan, ctx: ApplyContext): Promise<void> {
  const { namespace: ns, name, uid } = plan.target;
  const ref = statefulSetRef(name);
  ctx.progress.say(`waiting for the garbage collector to release the pods of ${ref} (uid ${uid})`);
  const d = deadline(ctx.signal, ctx.timeoutMs, `waiting for ${ref} to be deleted; its pods keep running without a controller until it is: check that kube-controller-manager (garbage collector) runs, then run the same command again`);
  try {
    await waitStatefulSetGone(ctx.client, ns, name, uid, d.signal);
  } finally {
    d.done();
  }
  ctx.progress.say(`${ref} (uid ${uid}) is gone; its pods and claims are still there`);
}

async function recordEvent(plan: Plan, sts: StatefulSet, ctx: ApplyContext): Promise<void> {
  try {
    await createEvent(ctx.client, plan.target.namespace, sts, "ClaimTemplatesChanged", changeNote(plan), ctx.now().toISOString());
  } catch (e) {
    ctx.progress.warn(`could not record an event on ${statefulSetRef(plan.target.name)}: ${(e as Error).message}`);
  }
}

/**
 * The StatefulSet changed since it was planned, so it is left alone. Claims this run grew before
 * it keep their new size (a claim never shrinks): say so, since the run did change something.
 */
function conflictError(plan: Plan, grown: ExistingClaimsResult["claims"]): Error {
  const { name, uid, resourceVersion } = plan.target;
  const changed = `${statefulSetRef(name)} changed since it was read (uid ${uid}, resourceVersion ${resourceVersion})`;
  const patched = grown.filter((c) => c.patched);
  if (!patched.length) return new RefusedError(`${changed}; nothing was changed: run the command again to plan against its current state`);
  const claims = patched.map((c) => `${c.name}${c.request ? ` (now ${c.request})` : ""}`).join(", ");
  return new StopError(`${changed}, so it was not re-created; claim(s) ${claims} were grown first and keep their new size: run the command again to plan against its current state`);
}

/** Orphan-deletes exactly the planned object; a write with an unknown outcome is read back. */
async function deleteOriginal(plan: Plan, ctx: ApplyContext, lease: Lease, grown: ExistingClaimsResult["claims"]): Promise<void> {
  const { client, progress } = ctx;
  const { namespace: ns, name, uid, resourceVersion } = plan.target;
  const ref = statefulSetRef(name);
  try {
    await orphanDelete(client, ns, name, { uid, resourceVersion });
  } catch (e) {
    if (isNotFound(e)) {
      progress.say(`${ref} was already deleted`);
      return;
    }
    if (isConflict(e)) {
      await lease.remove().catch(() => undefined);
      throw conflictError(plan, grown);
    }
    if (isUnknownOutcome(e)) {
      // The request may or may not have reached the server: look instead of repeating it.
      const now = await getStatefulSet(client, ns, name);
      if (now && now.metadata.uid === uid && !now.metadata.deletionTimestamp) throw e;
      progress.say(`${ref} deletion was accepted (read back after a lost answer)`);
      return;
    }
    throw e;
  }
  progress.say(`deleted ${ref} with propagationPolicy=Orphan (uid ${uid}); its pods and claims keep running`);
}

async function createDesired(plan: Plan, ctx: ApplyContext): Promise<StatefulSet> {
  const { client, progress } = ctx;
  const { namespace: ns, name } = plan.target;
  const ref = `statefulset.apps/${name}`;
  try {
    const created = await createStatefulSet(client, ns, plan.desired);
    progress.say(`created ${ref} with the new claim templates (uid ${created.metadata.uid})`);
    return created;
  } catch (e) {
    const couldNot = () =>
      new StopError(`could not re-create ${ref}: ${(e as Error).message.split("\n")[0]}; its pods keep running without a controller and the journal is kept: fix the cause, then run the same command again`);
    if (!isAlreadyExists(e) && !isUnknownOutcome(e)) throw couldNot();
    // AlreadyExists, or an unknown outcome: what exists now decides.
    const now = await getStatefulSet(client, ns, name);
    if (!now) throw couldNot();
    if (now.metadata.uid === plan.target.uid) throw new StopError(`${ref} (uid ${plan.target.uid}) still exists; run the same command again to finish`);
    if (!sameClaimTemplates(now.spec.volumeClaimTemplates, plan.desired.spec.volumeClaimTemplates)) {
      throw new StopError(`${ref} was re-created by someone else (uid ${now.metadata.uid}) with other claim templates; its pods are controlled again; run the command again to plan anew`);
    }
    progress.say(`${ref} already exists with the new claim templates (uid ${now.metadata.uid})`);
    return now;
  }
}

/** Every pod that existed is adopted by the new object, with the same uid and revision. */
async function verifyAdoption(plan: Plan, created: StatefulSet, ctx: ApplyContext): Promise<Pick<ApplyResult, "pods" | "claims">> {
  const { client, progress } = ctx;
  const ns = plan.target.namespace;
  const newUid = created.metadata.uid!;
  const expected = plan.pods;
  progress.say(`waiting for the StatefulSet controller to adopt ${expected.length} pod(s)`);
  const replaced: string[] = [];
  const d = deadline(ctx.signal, ctx.timeoutMs, "waiting for the pods to be adopted; check that kube-controller-manager (statefulset controller) runs, then run `kubectl appstorage show` to inspect");
  let pods: Map<string, Pod>;
  try {
    pods = await waitPods(
      client,
      ns,
      labelSelector(plan.desired),
      (now) => {
        replaced.length = 0;
        for (const e of expected) {
          const p = now.get(e.name);
          if (p && p.metadata.uid !== e.uid) replaced.push(e.name);
        }
        return replaced.length > 0 || expected.every((e) => controlledBy(now.get(e.name), newUid));
      },
      d.signal,
    );
  } finally {
    d.done();
  }
  if (replaced.length) throw new StopError(`pod(s) ${replaced.join(", ")} were replaced while re-creating; inspect them with kubectl get pods`);
  const changedRevision = expected.filter((e) => e.revision && podRevision(pods.get(e.name)!) !== e.revision);
  if (changedRevision.length) progress.warn(`pod(s) ${changedRevision.map((e) => e.name).join(", ")} changed revision`);
  const claims = await listClaims(client, ns);
  const claimUid = new Map(claims.map((c) => [c.metadata.name, c.metadata.uid]));
  const before = claimsToVerify(plan);
  const lost = before.filter((c) => claimUid.get(c.name) !== c.uid);
  if (lost.length) throw new StopError(`claim(s) ${lost.map((c) => c.name).join(", ")} changed or disappeared; inspect them with kubectl get pvc`);
  progress.say(`verified: ${expected.length} pod(s) adopted by uid ${newUid} unchanged (same uid and revision), ${before.length} claim(s) unchanged`);
  return {
    pods: expected.map((e) => ({ name: e.name, uid: e.uid, adopted: true, revision: e.revision })),
    claims: before,
  };
}
