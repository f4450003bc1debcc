// Executes a plan, reading nothing but the plan (and the cluster's answers to its own steps).
// Every step is safe to repeat: NotFound on delete is done, AlreadyExists with the desired
// templates on create is done, so recovering from any interruption is running `set` again.
import { RefusedError } from "../errors";
import { createEvent, createStatefulSet, getStatefulSet, listClaims, orphanDelete, waitPods, waitStatefulSetGone } from "../kube/api";
import type { KubeClient } from "../kube/client";
import { isAlreadyExists, isConflict, isNotFound, isUnknownOutcome } from "../kube/errors";
import type { Pod, StatefulSet } from "../kube/types";
import { sameClaimTemplates } from "../plan/desired";
import { type Journal, journalApiVersion, type JournalStep, leaseSeconds } from "../plan/journal";
import type { Plan, Step } from "../plan/plan";
import { journalRecord } from "../plan/resize";
import { finishExisting } from "./existing";
import type { JournalStore } from "./journal-store";
import { type ExistingResult, growClaims } from "./resize";
import { withDeadline } from "./deadline";
import type { Progress } from "./progress";

export interface ApplyContext {
  client: KubeClient;
  store: JournalStore;
  progress: Progress;
  signal: AbortSignal;
  timeoutMs: number;
  now: () => Date;
  /** Identifies this run in the journal's lock. */
  holder: string;
  by: string;
}

export interface ApplyResult {
  apiVersion: typeof journalApiVersion;
  kind: "Result";
  namespace: string;
  name: string;
  previousUid: string;
  uid: string;
  resumed: boolean;
  request: string[];
  pods: { name: string; uid: string; adopted: boolean; revision?: string }[];
  claims: { name: string; uid: string }[];
  /** Existing claims patched, followed and pods restarted (--resize-existing and friends). */
  existing?: ExistingResult;
  elapsedSeconds: number;
}

export class VerifyError extends Error {}

function labelSelector(sts: StatefulSet): string {
  return Object.entries(sts.spec.selector.matchLabels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
}

/** Bounds a wait by --timeout; the message says what was awaited and what to do. */
const deadline = (parent: AbortSignal, ms: number, what: string) => withDeadline(parent, ms, () => new RefusedError(`timed out after ${ms / 1000}s ${what}`));

export async function applyPlan(plan: Plan, ctx: ApplyContext): Promise<ApplyResult> {
  const { client, store, progress } = ctx;
  const ns = plan.target.namespace;
  const name = plan.target.name;
  const ref = `statefulset.apps/${name}`;
  const has = (s: Step) => plan.steps.includes(s);
  let journal: Journal | undefined = plan.journal;
  let renewal: NodeJS.Timeout | undefined;
  let saving: Promise<void> = Promise.resolve();
  /** Only a run that holds the lock may write the journal again, even to release it. */
  let acquired = false;

  const lease = () => new Date(ctx.now().getTime() + leaseSeconds * 1000).toISOString();
  const save = (step: JournalStep) => {
    if (!journal || !acquired) return Promise.resolve();
    journal = { ...journal, step, updatedAt: ctx.now().toISOString(), holder: ctx.holder, leaseExpires: lease() };
    const j = journal;
    saving = saving.then(() => store.save(j));
    return saving;
  };

  try {
    if (has("write-journal") || (plan.mode === "resume" && journal)) {
      const now = ctx.now().toISOString();
      journal =
        plan.mode === "resume" && journal
          ? { ...journal, holder: ctx.holder, by: ctx.by, leaseExpires: lease(), updatedAt: now }
          : {
              apiVersion: journalApiVersion,
              kind: "Journal",
              namespace: ns,
              name,
              originalUid: plan.target.uid,
              originalResourceVersion: plan.target.resourceVersion,
              request: plan.request,
              step: "planned",
              startedAt: now,
              updatedAt: now,
              by: ctx.by,
              holder: ctx.holder,
              leaseExpires: lease(),
              pods: plan.pods,
              claims: plan.claims.map((c) => ({ name: c.name, uid: c.uid })),
              original: plan.original,
              desired: plan.desired,
              ...(plan.existing ? { existing: journalRecord(plan.existing) } : {}),
            };
      await store.acquire(journal);
      acquired = true;
      progress.say(`saved the journal in secret/${store.secretName} and ${store.localPath}`);
      // Renew the lock while waiting, so a second run knows this one is alive.
      renewal = setInterval(() => void save(journal!.step).catch(() => undefined), (leaseSeconds * 1000) / 3);
      renewal.unref();
    }

    // Existing claims grow before the StatefulSet is touched: a refusal leaves it as it was.
    let grown: ExistingResult["claims"] = [];
    if (has("grow-claims")) {
      if (plan.mode === "fresh") await save("growing");
      grown = await growClaims(plan, ctx);
    }

    if (has("orphan-delete")) {
      await deleteOriginal(plan, ctx);
      await save("deleting");
    }

    if (has("wait-gone")) {
      progress.say(`waiting for the garbage collector to release the pods of ${ref} (uid ${plan.target.uid})`);
      const d = deadline(ctx.signal, ctx.timeoutMs, `waiting for ${ref} to be deleted; its pods keep running without a controller until it is: check that kube-controller-manager (garbage collector) runs, then run the same command again`);
      try {
        await waitStatefulSetGone(client, ns, name, plan.target.uid, d.signal);
      } finally {
        d.done();
      }
      progress.say(`${ref} (uid ${plan.target.uid}) is gone; its pods and claims are still there`);
      await save("deleted");
    }

    let created: StatefulSet | undefined;
    if (has("create")) {
      created = await createDesired(plan, ctx);
      await save("created");
    }

    created ??= await getStatefulSet(client, ns, name);
    if (!created) throw new RefusedError(`${ref} does not exist; run the same command again to re-create it from the journal`);

    const result: ApplyResult = {
      apiVersion: journalApiVersion,
      kind: "Result",
      namespace: ns,
      name,
      previousUid: plan.target.uid,
      uid: created.metadata.uid!,
      resumed: plan.mode === "resume",
      request: plan.request,
      pods: [],
      claims: [],
      elapsedSeconds: 0,
    };

    if (has("verify")) {
      const verified = await verifyAdoption(plan, created, ctx);
      result.pods = verified.pods;
      result.claims = verified.claims;
    }

    if (has("record")) {
      const note = `claim templates changed by kubectl appstorage: ${plan.changes.map((c) => `${c.claim} ${c.before.size ?? ""}->${c.after.size ?? ""}`).join(", ")} (previous uid ${plan.target.uid})`;
      try {
        await createEvent(client, ns, created, "ClaimTemplatesChanged", note, ctx.now().toISOString());
      } catch (e) {
        progress.warn(`could not record an event on ${ref}: ${(e as Error).message}`);
      }
    }

    if (renewal) clearInterval(renewal);
    renewal = undefined;
    await saving.catch(() => undefined);
    if (has("remove-journal")) {
      await store.remove();
      progress.say("removed the journal");
    }
    if (plan.existing) result.existing = await finishExisting(plan, ctx, created, grown);
    result.elapsedSeconds = Number(progress.elapsedSeconds().toFixed(3));
    journal = undefined;
    return result;
  } catch (e) {
    // A run that fails on its own (not killed) releases its lock at once, keeping the journal,
    // so the rerun that finishes the job need not wait for the lease to expire.
    if (renewal) clearInterval(renewal);
    renewal = undefined;
    await saving.catch(() => undefined);
    if (journal && acquired) {
      const released: Journal = { ...journal, leaseExpires: ctx.now().toISOString(), updatedAt: ctx.now().toISOString() };
      await store.save(released).catch(() => undefined);
    }
    throw e;
  } finally {
    if (renewal) clearInterval(renewal);
  }
}

/** Orphan-deletes exactly the planned object; a write with an unknown outcome is read back. */
async function deleteOriginal(plan: Plan, ctx: ApplyContext): Promise<void> {
  const { client, progress } = ctx;
  const { namespace: ns, name, uid, resourceVersion } = plan.target;
  const ref = `statefulset.apps/${name}`;
  try {
    await orphanDelete(client, ns, name, { uid, resourceVersion });
  } catch (e) {
    if (isNotFound(e)) {
      progress.say(`${ref} was already deleted`);
      return;
    }
    if (isConflict(e)) {
      await ctx.store.remove().catch(() => undefined);
      throw new RefusedError(`${ref} changed since it was read (uid ${uid}, resourceVersion ${resourceVersion}); nothing was changed: run the command again to plan against its current state`);
    }
    if (isUnknownOutcome(e)) {
      // The request may or may not have reached the server: look instead of repeating it.
      const current = await getStatefulSet(client, ns, name);
      if (current && current.metadata.uid === uid && !current.metadata.deletionTimestamp) throw e;
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
      new RefusedError(
        `could not re-create ${ref}: ${(e as Error).message.split("\n")[0]}; its pods keep running without a controller and the journal is kept: fix the cause, then run the same command again`,
      );
    if (!isAlreadyExists(e) && !isUnknownOutcome(e)) throw couldNot();
    // AlreadyExists, or an unknown outcome: what exists now decides.
    const current = await getStatefulSet(client, ns, name);
    if (!current) throw couldNot();
    if (current.metadata.uid === plan.target.uid) throw new RefusedError(`${ref} (uid ${plan.target.uid}) still exists; run the same command again to finish`);
    if (!sameClaimTemplates(current.spec.volumeClaimTemplates, plan.desired.spec.volumeClaimTemplates)) {
      throw new RefusedError(`${ref} was re-created by someone else (uid ${current.metadata.uid}) with other claim templates; its pods are controlled again; run the command again to plan anew`);
    }
    progress.say(`${ref} already exists with the new claim templates (uid ${current.metadata.uid})`);
    return current;
  }
}

/** Every pod that existed is adopted by the new object, with the same uid and revision. */
async function verifyAdoption(plan: Plan, created: StatefulSet, ctx: ApplyContext): Promise<{ pods: ApplyResult["pods"]; claims: ApplyResult["claims"] }> {
  const { client, progress } = ctx;
  const ns = plan.target.namespace;
  const newUid = created.metadata.uid!;
  const expected = plan.pods;
  progress.say(`waiting for the StatefulSet controller to adopt ${expected.length} pod(s)`);
  const replaced: string[] = [];
  const adopted = (p: Pod | undefined) => p?.metadata.ownerReferences?.some((r) => r.controller && r.uid === newUid) === true;
  const d = deadline(ctx.signal, ctx.timeoutMs, "waiting for the pods to be adopted; check that kube-controller-manager (statefulset controller) runs, then run `kubectl appstorage show` to inspect");
  let pods: Map<string, Pod>;
  try {
    pods = await waitPods(
      client,
      ns,
      labelSelector(plan.desired),
      (current) => {
        replaced.length = 0;
        for (const e of expected) {
          const p = current.get(e.name);
          if (p && p.metadata.uid !== e.uid) replaced.push(e.name);
        }
        return replaced.length > 0 || expected.every((e) => adopted(current.get(e.name)));
      },
      d.signal,
    );
  } finally {
    d.done();
  }
  if (replaced.length) throw new VerifyError(`pod(s) ${replaced.join(", ")} were replaced while re-creating; inspect them with kubectl get pods`);
  const changedRevision = expected.filter((e) => e.revision && pods.get(e.name)?.metadata.labels?.["controller-revision-hash"] !== e.revision);
  if (changedRevision.length) progress.warn(`pod(s) ${changedRevision.map((e) => e.name).join(", ")} changed revision`);
  const claims = await listClaims(client, ns);
  const claimUid = new Map(claims.map((c) => [c.metadata.name, c.metadata.uid]));
  // On a resume, the claims to check are the ones recorded before anything was deleted.
  const before = plan.journal?.claims ?? plan.claims.map((c) => ({ name: c.name, uid: c.uid }));
  const lost = before.filter((c) => claimUid.get(c.name) !== c.uid);
  if (lost.length) throw new VerifyError(`claim(s) ${lost.map((c) => c.name).join(", ")} changed or disappeared; inspect them with kubectl get pvc`);
  progress.say(`verified: ${expected.length} pod(s) adopted by uid ${newUid} unchanged (same uid and revision), ${before.length} claim(s) unchanged`);
  return {
    pods: expected.map((e) => ({ name: e.name, uid: e.uid, adopted: true, revision: e.revision })),
    claims: before,
  };
}
