// The orphan delete and the re-create, each safe to repeat: NotFound on the delete is done,
// AlreadyExists with the desired claim templates on the create is done; a write whose outcome is
// unknown is read back, never sent again blindly.
import { RefusedError, StopError } from "../errors";
import { isAlreadyExists, isConflict, isNotFound, isUnknownOutcome } from "../kube/errors";
import { getStatefulSet, listClaims, waitPods, waitStatefulSetGone } from "../kube/read";
import type { Pod, StatefulSet } from "../api/types";
import { createEvent, createStatefulSet, orphanDelete, restoreFieldManagers } from "../kube/write";
import { changeNote, claimsToVerify } from "../plan/journal";
import { contentDigest } from "../plan/seal";
import { controlledBy, labelSelector, podRevision, sameClaimTemplates } from "../plan/objects";
import { objectToCreate } from "../plan/roll";
import type { ApplyResult, Plan } from "../plan/types";
import type { ExistingClaimsResult } from "../plan/existing-claims-types";
import { statefulSetRef } from "../refs";
import type { ApplyContext } from "./context";
import { bounded } from "./deadline";
import type { Lease } from "./lease";

export async function waitGone(plan: Plan, ctx: ApplyContext): Promise<void> {
  const { namespace: ns, name, uid } = plan.target;
  const ref = statefulSetRef(name);
  ctx.progress.say(`waiting for the garbage collector to release the pods of ${ref} (uid ${uid})`);
  await bounded(
    ctx,
    `waiting for ${ref} to be deleted; its pods keep running without a controller until it is: check that kube-controller-manager (garbage collector) runs, then run the same command again`,
    (signal) => waitStatefulSetGone(ctx.client, ns, name, uid, signal),
  );
  ctx.progress.say(`${ref} (uid ${uid}) is gone; its pods and claims are still there`);
}

export async function recordEvent(plan: Plan, sts: StatefulSet, ctx: ApplyContext): Promise<void> {
  // The same owners as before the re-create (Plan.fieldManagers says why); safe to repeat.
  if (plan.fieldManagers?.length && sts.metadata.uid !== plan.target.uid) {
    try {
      await restoreFieldManagers(ctx.client, plan.target.namespace, plan.target.name, sts.metadata.uid!, plan.fieldManagers);
    } catch (e) {
      ctx.progress.warn(
        `could not give ${statefulSetRef(plan.target.name)}'s fields back to their managers (${(e as Error).message.split("\n")[0]}): a server-side apply (Helm 4, Argo CD, Flux) may report conflicts on its claim templates; apply with --force-conflicts once`,
      );
    }
  }
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
export async function deleteOriginal(plan: Plan, ctx: ApplyContext, lease: Lease, grown: ExistingClaimsResult["claims"]): Promise<void> {
  const { client, progress } = ctx;
  const { namespace: ns, name, uid, resourceVersion } = plan.target;
  const ref = statefulSetRef(name);
  let at = resourceVersion;
  for (let attempt = 1; ; attempt++) {
    try {
      await orphanDelete(client, ns, name, { uid, resourceVersion: at });
      break;
    } catch (e) {
      if (isNotFound(e)) {
        progress.say(`${ref} was already deleted`);
        return;
      }
      if (isConflict(e)) {
        // The controllers update the status all the time: that alone is no reason to plan anew.
        const now = await getStatefulSet(client, ns, name);
        if (now && attempt < 5 && statusOnlyChange(plan, now)) {
          progress.say(`${ref} changed only in its status since it was read (resourceVersion ${at}, now ${now.metadata.resourceVersion}); deleting it at the new one`);
          at = now.metadata.resourceVersion!;
          continue;
        }
        await lease.remove().catch(() => undefined);
        throw conflictError(plan, grown);
      }
      await unknownDeleteOutcome(e, plan, ctx);
      return;
    }
  }
  progress.say(`deleted ${ref} with propagationPolicy=Orphan (uid ${uid}); its pods and claims keep running`);
}

/** The same object as planned (uid, spec, metadata a user writes), only its status moved on. */
function statusOnlyChange(plan: Plan, now: StatefulSet): boolean {
  const { uid, contentDigest: planned } = plan.target;
  return !!planned && now.metadata.uid === uid && !now.metadata.deletionTimestamp && contentDigest(now) === planned;
}

/** An orphan delete whose answer was lost: read back, never sent again blindly. */
async function unknownDeleteOutcome(e: unknown, plan: Plan, ctx: ApplyContext): Promise<void> {
  const { client, progress } = ctx;
  const { namespace: ns, name, uid } = plan.target;
  const ref = statefulSetRef(name);
  if (!isUnknownOutcome(e)) throw e;
  // The request may or may not have reached the server: look instead of repeating it.
  const now = await getStatefulSet(client, ns, name);
  if (now && now.metadata.uid === uid && !now.metadata.deletionTimestamp) throw e;
  progress.say(`${ref} deletion was accepted (read back after a lost answer)`);
}

export async function createDesired(plan: Plan, ctx: ApplyContext): Promise<StatefulSet> {
  const { client, progress } = ctx;
  const { namespace: ns, name } = plan.target;
  const ref = statefulSetRef(name);
  try {
    const created = await createStatefulSet(client, ns, objectToCreate(plan.desired, plan.roll));
    progress.say(`created ${ref} with the new claim templates${plan.roll ? " and mounts, updateStrategy OnDelete while its pods restart" : ""} (uid ${created.metadata.uid})`);
    return created;
  } catch (e) {
    const couldNot = () =>
      new StopError(
        `could not re-create ${ref}: ${(e as Error).message.split("\n")[0]}; its pods keep running without a controller and the journal is kept: fix the cause, then run the same command again`,
      );
    if (!isAlreadyExists(e) && !isUnknownOutcome(e)) throw couldNot();
    // AlreadyExists, or an unknown outcome: what exists now decides.
    const now = await getStatefulSet(client, ns, name);
    if (!now) throw couldNot();
    if (now.metadata.uid === plan.target.uid) throw new StopError(`${ref} (uid ${plan.target.uid}) still exists; run the same command again to finish`);
    if (!sameClaimTemplates(now.spec.volumeClaimTemplates, plan.desired.spec.volumeClaimTemplates)) {
      throw new StopError(
        `${ref} was re-created by someone else (uid ${now.metadata.uid}) with other claim templates; its pods are controlled again; if a GitOps tool (Argo CD, Flux) applies it, change the claim templates in its source, else run the command again to plan anew`,
      );
    }
    progress.say(`${ref} already exists with the new claim templates (uid ${now.metadata.uid})`);
    return now;
  }
}

/** Every pod that existed is adopted by the new object, with the same uid and revision. */
export async function verifyAdoption(plan: Plan, created: StatefulSet, ctx: ApplyContext): Promise<Pick<ApplyResult, "pods" | "claims">> {
  const { client, progress } = ctx;
  const ns = plan.target.namespace;
  const newUid = created.metadata.uid!;
  const expected = plan.pods;
  progress.say(`waiting for the StatefulSet controller to adopt ${expected.length} pod(s)`);
  const replaced: string[] = [];
  const pods: Map<string, Pod> = await bounded(
    ctx,
    "waiting for the pods to be adopted; check that kube-controller-manager (statefulset controller) runs, then run `kubectl appstorage show` to inspect",
    (signal) =>
      waitPods(
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
        signal,
      ),
  );
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
