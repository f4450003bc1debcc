// --dry-run=server: the server's own answer to the plan's orphan delete and re-create (the claim
// patches' is in ./resize.ts, the copy pod's in ./copy-pods.ts), with nothing persisted.
import { RefusedError } from "../errors";
import type { KubeClient } from "../kube/client";
import { isAlreadyExists } from "../kube/errors";
import { createStatefulSet, orphanDelete } from "../kube/write";
import type { Plan } from "../plan/types";
import { dryRunClaimPatches } from "./resize";
import type { Progress } from "./progress";
import { statefulSetRef } from "../refs";

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
      await createStatefulSet(client, ns, plan.desired, "server");
    } catch (e) {
      // Admission and validation run before the existence check: AlreadyExists means they passed.
      if (!isAlreadyExists(e)) throw new RefusedError(`the server would refuse the re-created ${statefulSetRef(name)}: ${(e as Error).message}`);
    }
    progress.say(`server dry run: the re-created ${statefulSetRef(name)} passes validation and admission`);
  }
}
