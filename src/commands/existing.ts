// The command-level parts of the work on existing claims: what to read for it, which
// permissions it needs, and the words set prints for it.
import type { AccessCheck } from "../kube/api";
import { listResourceQuotas, listVolumeAttributesClassNames } from "../kube/claims";
import type { KubeClient } from "../kube/client";
import { isForbidden } from "../kube/errors";
import type { Directive } from "../plan/directive";
import type { Plan } from "../plan/plan";
import type { ExistingObserved, ExistingOptions } from "../plan/resize";

/**
 * Reads quotas (when claims may grow) and volume attributes classes (when a directive names
 * one), in parallel; nothing at all otherwise, so a plain `set` makes no extra request.
 */
export async function observeExisting(client: KubeClient, options: ExistingOptions | undefined, directives: readonly Directive[]): Promise<ExistingObserved | undefined> {
  const quotas = options?.resize === true;
  const vacs = directives.some((d) => d.volumeAttributesClass !== undefined);
  if (!quotas && !vacs) return undefined;
  const out: ExistingObserved = {};
  await Promise.all([
    quotas
      ? listResourceQuotas(client, client.namespace).then(
          (q) => (out.resourceQuotas = q),
          (e) => {
            if (!isForbidden(e)) throw e;
            out.quotaError = (e as Error).message.split("\n")[0];
          },
        )
      : undefined,
    vacs
      ? listVolumeAttributesClassNames(client).then(
          (names) => {
            if (names) out.volumeAttributesClasses = names;
          },
          (e) => {
            if (!isForbidden(e)) throw e;
            out.volumeAttributesClassError = (e as Error).message.split("\n")[0];
          },
        )
      : undefined,
  ]);
  return out;
}

/** Permissions the existing-claims steps use, for the SelfSubjectAccessReview preflight. */
export function existingAccess(plan: Plan): AccessCheck[] {
  const ns = plan.target.namespace;
  const checks: AccessCheck[] = [];
  const pvc = (verb: string) => checks.push({ verb, group: "", resource: "persistentvolumeclaims", namespace: ns });
  if (plan.steps.includes("grow-claims")) pvc("patch");
  if (plan.steps.includes("wait-resize")) {
    pvc("list");
    pvc("watch");
  }
  if (plan.steps.includes("restart-pods")) {
    checks.push({ verb: "create", group: "", resource: "pods", subresource: "eviction", namespace: ns });
    checks.push({ verb: "list", group: "", resource: "pods", namespace: ns }, { verb: "watch", group: "", resource: "pods", namespace: ns });
    pvc("get");
  }
  return checks;
}

/** What set says it did to the StatefulSet: recreated only when it was. */
export function statefulSetVerb(plan: Plan): "recreated" | "unchanged" {
  return plan.steps.some((s) => s === "create" || s === "verify") ? "recreated" : "unchanged";
}

/** The confirmation question for this plan. */
export function confirmQuestion(plan: Plan): string {
  const ref = `statefulset.apps/${plan.target.name}`;
  const claims = plan.existing?.claims.filter((c) => c.grow || c.setVolumeAttributesClass).length ?? 0;
  const restart = plan.steps.includes("restart-pods") ? " and restart the pods that need it, one at a time" : "";
  if (statefulSetVerb(plan) === "unchanged") return `Change ${claims} existing claim(s)${restart}? ${ref} is not re-created.`;
  return `Re-create ${ref} with these claim templates${claims ? `, growing ${claims} existing claim(s) first` : ""}${restart}? Its pods keep running.`;
}
