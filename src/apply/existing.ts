// After the StatefulSet is swapped (or when only existing claims change): follow the claims
// until resized (--wait-resize), then restart the pods whose claims wait for it (--restart-pods).
import type { StatefulSet } from "../kube/types";
import type { Plan } from "../plan/plan";
import { claimSummary, type ExistingResult, type ResizeContext, waitResize } from "./resize";
import { restartPods } from "./restart";

export async function finishExisting(plan: Plan, ctx: ResizeContext, sts: StatefulSet, grown: ExistingResult["claims"]): Promise<ExistingResult> {
  const seen = plan.steps.includes("wait-resize") ? await waitResize(plan, ctx) : undefined;
  const restarted = plan.steps.includes("restart-pods") && seen ? await restartPods(plan, ctx, sts, seen) : [];
  return { claims: claimSummary(plan, grown, seen), restarted };
}
