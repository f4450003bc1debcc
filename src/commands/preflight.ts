// Before any change: every permission the plan's steps use (SelfSubjectAccessReview, each asked
// once), and the server's own answer to each claim patch and to a copy pod: reads and server dry
// runs, which persist nothing. (A shrink's data that needs a pod to measure is measured only after
// consent: src/commands/change.ts.)
import { dryRunClaimPatches } from "../apply/dry-run";
import { dryRunCopyPod } from "../apply/copy-pods";
import { dryRunLabelPatches } from "../apply/relabel";
import type { Progress } from "../apply/progress";
import { RefusedError } from "../errors";
import type { KubeClient } from "../kube/client";
import { canI } from "../kube/read";
import { canICommand, describeAccess, requiredAccess, type StepAccess, withoutText } from "../plan/access";
import type { Plan } from "../plan/types";

/**
 * Answers of SelfSubjectAccessReview, asked once each. The reviews of an ordinary fresh run are
 * asked while the cluster is being read (they do not depend on what is read), and preflight
 * reuses them; a plan that needs other checks (a resume, existing claims) asks for the rest.
 */
export class AccessAnswers {
  private readonly answers = new Map<string, Promise<boolean>>();

  constructor(readonly client: KubeClient) {}

  ask(check: StepAccess): Promise<boolean> {
    const { optional: _optional, ...attributes } = check;
    const key = JSON.stringify(attributes);
    let answer = this.answers.get(key);
    if (!answer) {
      answer = canI(this.client, attributes);
      // Prefetched and never needed: an error there must not become an unhandled rejection.
      answer.catch(() => undefined);
      this.answers.set(key, answer);
    }
    return answer;
  }
}

/** Every permission the plan's steps use, and the server's answer to each claim patch, before any change. */
export async function preflight(access: AccessAnswers, plan: Plan, progress: Progress): Promise<void> {
  const checks = requiredAccess(plan);
  const answers = await Promise.all(checks.map((c) => access.ask(c)));
  const missing = checks.filter((_, i) => !answers[i]);
  for (const m of missing.filter((c) => c.optional)) progress.warn(`you may not ${describeAccess(m)}: ${withoutText(m)}`);
  const blocking = missing.filter((c) => !c.optional);
  if (blocking.length) {
    const what = blocking.map(describeAccess).join(", ");
    throw new RefusedError(
      `you may not ${what}, which this change needs; nothing was changed: ask for ${blocking.length > 1 ? "those permissions" : "that permission"} (${blocking.map(canICommand).join("; ")}; kubectl appstorage rbac prints a Role with all of them)`,
    );
  }
  // The server's own answer to each claim patch (admission, quotas, validation), before any change.
  if (plan.steps.includes("grow-claims")) await dryRunClaimPatches(access.client, plan, progress);
  if (plan.steps.includes("label-claims")) await dryRunLabelPatches(access.client, plan, progress);
  // The copy pods run as root: admission (Pod Security) answers now, before any change.
  if (plan.steps.includes("migrate")) await dryRunCopyPod(access.client, plan);
}
