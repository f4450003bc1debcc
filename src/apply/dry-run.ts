// --dry-run=server: the server's own answer to the plan's orphan delete and re-create (the claim
// patches' is in ./resize.ts, the copy pod's in ./copy-pods.ts), with nothing persisted.
import { RefusedError } from "../errors";
import type { KubeClient } from "../kube/client";
import { isAlreadyExists, isNotFound } from "../kube/errors";
import { createStatefulSet, evictPod, orphanDelete } from "../kube/write";
import type { Plan } from "../plan/types";
import { dryRunClaimPatches } from "./resize";
import type { Progress } from "./progress";
import { statefulSetRef } from "../refs";
import { objectToCreate } from "../plan/roll";

/** What the dry run checked of a roll: the claim templates and the mounts of the pod template. */
function rollWords(plan: Plan): string {
  const roll = plan.roll;
  if (!roll) return "";
  const claims = (plan.desired.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name).join(", ");
  const added = roll.added.map((a) => `${a.claim} at ${a.mounts.map((m) => `${m.container}:${m.path}`).join(", ")}`);
  return ` (claim templates ${claims}${added.length ? `; the pod template mounts ${added.join("; ")}` : ""}${roll.removed.length ? `; no longer mounts ${roll.removed.map((r) => r.claim).join(", ")}` : ""}); then its ${roll.order.length} pod(s) would restart one at a time`;
}

export { dryRunClaimPatches };

/** The orphan delete and the re-create, as the server would take them (validation, admission). */
export async function serverDryRun(client: KubeClient, plan: Plan, progress: Progress): Promise<void> {
  const { namespace: ns, name, uid, resourceVersion } = plan.target;
  if (plan.steps.includes("orphan-delete")) {
    await orphanDelete(client, ns, name, { uid, resourceVersion }, "server");
    progress.say(`server dry run: the orphan delete of ${statefulSetRef(name)} would be accepted`);
  }
  if (plan.steps.includes("create")) {
    try {
      await createStatefulSet(client, ns, objectToCreate(plan.desired, plan.roll), "server");
    } catch (e) {
      // Admission and validation run before the existence check: AlreadyExists means they passed.
      if (!isAlreadyExists(e)) throw new RefusedError(`the server would refuse the re-created ${statefulSetRef(name)}: ${(e as Error).message}`);
    }
    progress.say(`server dry run: the re-created ${statefulSetRef(name)} passes validation and admission${rollWords(plan)}`);
  }
  if (plan.steps.includes("roll-pods")) await dryRunEvictions(client, plan, progress);
}

/** Each restart's eviction as the server would take it now: a PodDisruptionBudget that allows none is said before any change. */
async function dryRunEvictions(client: KubeClient, plan: Plan, progress: Progress): Promise<void> {
  const { namespace: ns } = plan.target;
  const uids = new Map(plan.pods.map((p) => [p.name, p.uid]));
  for (const pod of plan.roll!.order) {
    const uid = uids.get(pod);
    if (!uid) continue;
    try {
      await evictPod(client, ns, pod, uid, "server");
    } catch (e) {
      if (isNotFound(e)) continue;
      const why = (e as Error).message.split("\n")[0];
      if ((e as { code?: number }).code === 429) progress.warn(`a PodDisruptionBudget allows no eviction of pod ${pod} now (${why}): its restart will wait for the budget, up to --timeout`);
      else progress.warn(`the eviction of pod ${pod} would be refused now: ${why}`);
    }
  }
  progress.say(`server dry run: the evictions of ${plan.roll!.order.join(", ")} were asked (PodDisruptionBudgets, admission)`);
}
