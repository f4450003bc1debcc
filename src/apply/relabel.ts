// Executes the label-claims step of a plan (--relabel-existing): a merge patch of each existing
// claim's labels and annotations, before the StatefulSet is touched. Each claim is decided again
// from what it is now (only what it still lacks is sent), so the step is safe to repeat; the
// patch names the claim's uid, so a claim replaced meanwhile is never touched.
import { RefusedError, StopError } from "../errors";
import { isConflict, isNotFound, isUnknownOutcome } from "../kube/errors";
import { getClaim } from "../kube/read";
import { patchClaimMetadata } from "../kube/write";
import type { PersistentVolumeClaim } from "../api/types";
import type { ClaimRelabel, ExistingClaimsResult } from "../plan/existing-claims-types";
import { describeMetadataPatch, patchIsEmpty, remainingPatch } from "../plan/relabel";
import type { Plan } from "../plan/types";
import { statefulSetRef } from "../refs";
import type { ClaimsContext } from "./resize";
import type { Progress } from "./progress";
import type { KubeClient } from "../kube/client";

type Relabeled = NonNullable<ExistingClaimsResult["relabeled"]>;

const firstLine = (e: unknown) => (e as Error).message.split("\n")[0];

function targets(plan: Plan): ClaimRelabel[] {
  return (plan.existing?.relabel ?? []).filter((c) => !patchIsEmpty(c.patch));
}

/** The server's answer to each claim's patch (admission, validation of keys and values), before any change. */
export async function dryRunLabelPatches(client: KubeClient, plan: Plan, progress: Progress): Promise<void> {
  const claims = targets(plan);
  for (const c of claims) {
    try {
      await patchClaimMetadata(client, plan.target.namespace, c.name, { uid: c.uid, ...c.patch }, "server");
    } catch (e) {
      throw new RefusedError(`the server would refuse to change the labels or annotations of claim ${c.name}: ${firstLine(e)}; nothing was changed`);
    }
  }
  if (claims.length) progress.say(`server dry run: the server accepts the labels and annotations of ${claims.length} existing claim(s)`);
}

function stopped(plan: Plan, done: Relabeled, why: string): RefusedError | StopError {
  const sts = plan.steps.includes("orphan-delete") ? `; ${statefulSetRef(plan.target.name)} is unchanged` : "";
  const names = done.map((d) => d.name);
  return new (names.length ? StopError : RefusedError)(
    `${why}; ${names.length ? `labelled so far: ${names.join(", ")}` : "no claim was changed"}${sts}: fix the cause, then run the same command again to continue`,
  );
}

/** One claim: read again after a conflict or a lost answer, and patched with what it still lacks. */
async function labelClaim(plan: Plan, c: ClaimRelabel, ctx: ClaimsContext, done: Relabeled): Promise<void> {
  const ns = plan.target.namespace;
  // Until it is read back, the claim is as the plan saw it. A merge patch of keys needs no
  // resourceVersion (what others change meanwhile is kept); the uid keeps it to this very claim.
  let current: Pick<PersistentVolumeClaim, "metadata"> = {
    metadata: { name: c.name, uid: c.uid, ...(c.labels ? { labels: c.labels } : {}), ...(c.annotations ? { annotations: c.annotations } : {}) },
  };
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) {
      const read = await getClaim(ctx.client, ns, c.name);
      if (!read) throw stopped(plan, done, `claim ${c.name} no longer exists`);
      if (read.metadata.uid !== c.uid) throw stopped(plan, done, `claim ${c.name} was replaced (uid ${c.uid} -> ${read.metadata.uid})`);
      current = read;
    }
    const patch = remainingPatch(c.patch, current);
    if (patchIsEmpty(patch)) {
      ctx.progress.say(`claim ${c.name} already carries its template's labels and annotations`);
      return;
    }
    try {
      await patchClaimMetadata(ctx.client, ns, c.name, { uid: c.uid, ...patch });
      ctx.progress.say(`patched claim ${c.name}: ${describeMetadataPatch(patch)}`);
      done.push({ name: c.name, uid: c.uid, labels: patch.labels !== undefined });
      return;
    } catch (e) {
      // Replaced (the uid no longer matches), or the answer was lost: read it again and decide again.
      if ((isConflict(e) || isUnknownOutcome(e)) && attempt < 5) continue;
      if (isNotFound(e)) throw stopped(plan, done, `claim ${c.name} no longer exists`);
      throw stopped(plan, done, `could not change the labels of claim ${c.name}: ${firstLine(e)}`);
    }
  }
}

/** Patches every claim that still lacks its template's labels and annotations; stops at the first failure, naming what was done. */
export async function labelClaims(plan: Plan, ctx: ClaimsContext): Promise<Relabeled> {
  const done: Relabeled = [];
  for (const c of targets(plan)) await labelClaim(plan, c, ctx, done);
  return done;
}
