// The permissions each step of a plan uses, for the SelfSubjectAccessReview preflight that runs
// before anything changes. One table: the preflight asks exactly what the steps will do.
import type { AccessCheck } from "../kube/types";
import { journalSecretName } from "./journal";
import { type Plan, recreateSteps, type Step } from "./types";

export interface StepAccess extends AccessCheck {
  /** A missing optional permission is a warning (the step degrades), never a refusal. */
  optional?: boolean;
}

type Target = Pick<Plan, "target" | "steps"> & { journal?: unknown };

/** The checks of one step, for the StatefulSet `name` in namespace `ns`. */
function stepAccess(step: Step, plan: Target): StepAccess[] {
  const { namespace: ns, name } = plan.target;
  const sts = (verb: string, withName = true): StepAccess => ({ verb, group: "apps", resource: "statefulsets", namespace: ns, ...(withName ? { name } : {}) });
  const secret = (verb: string, withName = true): StepAccess => ({ verb, group: "", resource: "secrets", namespace: ns, ...(withName ? { name: journalSecretName(name) } : {}) });
  const core = (verb: string, resource: string, subresource?: string): StepAccess => ({ verb, group: "", resource, namespace: ns, ...(subresource ? { subresource } : {}) });
  switch (step) {
    case "write-journal":
      // Replacing a journal that exists is an update of that Secret; a new one is a create.
      return [plan.journal ? secret("update") : secret("create", false)];
    case "grow-claims":
      return [core("patch", "persistentvolumeclaims")];
    case "orphan-delete":
      return [sts("delete")];
    case "wait-gone":
      return [sts("watch", false)];
    case "create":
      return [sts("create", false)];
    case "verify":
      return [core("list", "pods"), core("watch", "pods")];
    case "record":
      return [{ verb: "create", group: "events.k8s.io", resource: "events", namespace: ns, optional: true }];
    case "remove-journal":
      return [secret("delete")];
    case "wait-resize":
      return [core("list", "persistentvolumeclaims"), core("watch", "persistentvolumeclaims")];
    case "restart-pods":
      return [core("create", "pods", "eviction"), core("list", "pods"), core("watch", "pods"), core("get", "persistentvolumeclaims")];
  }
}

/** Every permission the plan's steps use, checked before anything changes (get of the object first). */
export function requiredAccess(plan: Target): StepAccess[] {
  const { namespace: ns, name } = plan.target;
  const checks: StepAccess[] = [{ verb: "get", group: "apps", resource: "statefulsets", namespace: ns, name }];
  const seen = new Set<string>([JSON.stringify(checks[0])]);
  for (const step of plan.steps) {
    for (const check of stepAccess(step, plan)) {
      const key = JSON.stringify(check);
      if (!seen.has(key)) checks.push(check);
      seen.add(key);
    }
  }
  return checks;
}

/** The checks of an ordinary fresh run, known from the namespace and name alone (asked while reading). */
export function freshRunAccess(namespace: string, name: string): StepAccess[] {
  return requiredAccess({ target: { namespace, name, uid: "", resourceVersion: "" }, steps: [...recreateSteps] });
}

/** How a check reads in a message: `delete statefulsets.apps "db" in namespace prod`. */
export function describeAccess(m: AccessCheck): string {
  return `${m.verb} ${m.resource}${m.subresource ? `/${m.subresource}` : ""}${m.group ? `.${m.group}` : ""}${m.name ? ` "${m.name}"` : ""} in namespace ${m.namespace}`;
}

/** The kubectl command that asks the same question. */
export function canICommand(m: AccessCheck): string {
  return `kubectl auth can-i ${m.verb} ${m.resource}${m.group ? `.${m.group}` : ""}${m.subresource ? ` --subresource=${m.subresource}` : ""} -n ${m.namespace}`;
}
