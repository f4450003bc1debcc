// Executes a plan: exactly its steps, in their order, reading nothing but the plan (and the
// cluster's answers to its own steps), under the journal's lease. Every step is safe to repeat
// (src/apply/recreate.ts), so recovering from any interruption is running `set` again.
import { StopError } from "../errors";
import { getStatefulSet } from "../kube/read";
import type { StatefulSet } from "../api/types";
import { journalFor, resumes } from "../plan/journal";
import { apiVersion, type ApplyResult, type JournalStep, type Plan, type Step } from "../plan/types";
import type { ExistingClaimsResult } from "../plan/existing-claims-types";
import { statefulSetRef } from "../refs";
import type { ApplyContext } from "./context";
import { claimSummary, growClaims, waitResize } from "./resize";
import { JournalStore } from "./journal-store";
import { Lease } from "./lease";
import { createDesired, deleteOriginal, recordEvent, verifyAdoption, waitGone } from "./recreate";
import { migrateClaims } from "./migrate";
import { restartPods } from "./restart";
import { labelClaims } from "./relabel";
import { pauseOwner, resumeOwner, resumeOwnerAfterStop } from "./owner";
import { restoreStrategy, rollPods } from "./roll";

export type { ApplyContext } from "./context";

/** What a run learns as its steps go: the result, and what the resize steps did. */
interface RunState {
  result: ApplyResult;
  grown: ExistingClaimsResult["claims"];
  seen?: Awaited<ReturnType<typeof waitResize>>;
  restarted: ExistingClaimsResult["restarted"];
  relabeled?: ExistingClaimsResult["relabeled"];
  /** The StatefulSet as this run created it, or as it is now: read once, when a step needs it. */
  current?: StatefulSet;
  /** --pause-owner: this run paused the owner and has not resumed it yet. */
  ownerPaused?: boolean;
}

/** The journal's step once a step is done: a rerun starts from there. */
const journalStepAfter: Partial<Record<Step, JournalStep>> = { "orphan-delete": "deleting", "wait-gone": "deleted", create: "created", "roll-pods": "rolled" };

export async function applyPlan(plan: Plan, ctx: ApplyContext): Promise<ApplyResult> {
  const { namespace: ns, name } = plan.target;
  const store = new JournalStore(ctx.client, ns, name, ctx.journalDir, plan.journalSecret);
  const lease = new Lease(store, ctx.now, ctx.holder);
  const state: RunState = { result: startResult(plan), grown: [], restarted: [] };
  // A paused owner never outlives the run: on any stop it is resumed before the lease is released.
  const pause = plan.ownerPause;
  const onStop = pause ? () => (state.ownerPaused ? resumeOwnerAfterStop(pause, ctx, lease) : Promise.resolve()) : undefined;
  await lease.run(plan.steps, stepRunners(plan, ctx, lease, state), journalStepAfter, ctx.signal, onStop);
  if (plan.existing) {
    state.result.existing = { claims: claimSummary(plan, state.grown, state.seen), restarted: state.restarted, ...(state.relabeled ? { relabeled: state.relabeled } : {}) };
  }
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
      const journal = journalFor(plan, { holder: ctx.holder, by: ctx.by, now: ctx.now(), ...(ctx.finish ? { finish: ctx.finish } : {}) });
      await lease.acquire(journal);
      progress.say(`saved the journal in secret/${lease.store.secretName} and ${lease.store.localPath}`);
    },
    // Existing claims grow before the StatefulSet is touched: a refusal leaves it as it was.
    "grow-claims": async () => {
      if (lease.step === "planned") await lease.save("growing");
      state.grown = await growClaims(plan, ctx);
    },
    // Labels and annotations of existing claims, also before the StatefulSet is touched.
    "label-claims": async () => {
      state.relabeled = await labelClaims(plan, ctx);
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
    "pause-owner": async () => {
      state.ownerPaused = true;
      await pauseOwner(plan.ownerPause!, ctx, lease);
    },
    "roll-pods": async () => {
      if (lease.step !== "rolling") await lease.save("rolling");
      state.result.rolled = await rollPods(plan, ctx, await statefulSet());
    },
    "restore-strategy": async () => {
      await restoreStrategy(plan, ctx, await statefulSet());
      state.current = undefined;
    },
    "resume-owner": async () => {
      await resumeOwner(plan.ownerPause!, ctx, lease);
      state.ownerPaused = false;
    },
    migrate: async () => {
      state.result.migration = await migrateClaims(plan, ctx, lease);
      state.current = undefined;
      state.result.uid = (await statefulSet()).metadata.uid!;
    },
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
