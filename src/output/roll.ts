// What a plan says of claim templates added or removed (the pods restart once each, in order, and
// the claims a removed template leaves) and of the StatefulSet's owner (Argo CD, Flux, Helm, an
// operator) with the commands that pause and resume it. Renders plan data; no I/O.
import type { ApplyResult, Plan } from "../plan/types";
import type { ClaimMount } from "../plan/roll-types";
import { statefulSetRef } from "../refs";

const mount = (m: ClaimMount) => {
  const extra = [m.subPath ? `subPath ${m.subPath}` : "", m.readOnly ? "read-only" : "", m.device ? "raw block device" : ""].filter(Boolean).join(", ");
  return `${m.init ? "init container" : "container"} ${m.container} at ${m.path}${extra ? ` (${extra})` : ""}`;
};

/** The restarts and the kept claims of a plan that adds or removes templates; "" otherwise. */
export function renderRoll(plan: Plan): string {
  const roll = plan.roll;
  if (!roll) return "";
  const ref = statefulSetRef(plan.target.name);
  const lines: string[] = [];
  for (const a of roll.added)
    lines.push(`claim template ${a.claim} added: ${a.size ?? "<no size>"}${a.storageClass ? `, class ${a.storageClass}` : ""}; the pod template mounts it in ${a.mounts.map(mount).join(", ")}`);
  for (const r of roll.removed) {
    lines.push(`claim template ${r.claim} removed, and its mount${r.mounts.length ? ` (${r.mounts.map(mount).join(", ")})` : ""} from the pod template`);
    if (r.claims.length) {
      lines.push(`  its claims are kept with their data, whatever persistentVolumeClaimRetentionPolicy says; to delete them once you no longer need them:`);
      for (const c of r.claims) lines.push(`    ${c.deleteCommand}`);
    }
  }
  if (roll.order.length) {
    lines.push(`the pod template changes, so every pod of ${ref} restarts once, one at a time, ${roll.orderReason}: ${roll.order.join(", ")}`);
    lines.push(
      `  each is evicted (the Eviction API: PodDisruptionBudgets are respected) and comes back from the new pod template${roll.added.length ? ` with its new claim${roll.added.length > 1 ? "s" : ""}, created by the StatefulSet controller` : ""}; the next waits until it is Ready`,
    );
    lines.push(`  a pod that does not come back Ready stops the run, with the journal saved: the same command continues from there`);
    lines.push(`  meanwhile ${ref} has updateStrategy OnDelete (its own rolling update would restart pods without asking the budgets); then its updateStrategy is put back exactly`);
  } else lines.push(`${ref} has no pods: the next ones start from the new pod template`);
  lines.push("existing claims and their data are untouched");
  return `${lines.join("\n")}\n`;
}

/** Who manages the StatefulSet and how it is paused, in the plan; "" when nobody is known. */
export function renderOwner(plan: Plan): string {
  const owner = plan.owner;
  if (!owner && !plan.ownerPause) return "";
  const lines: string[] = [];
  if (owner) lines.push(`managed by ${owner.manager}: ${owner.object} (${owner.evidence})`);
  const pause = plan.ownerPause;
  if (pause)
    lines.push(
      `  --pause-owner: ${pause.ref.kind} ${pause.ref.namespace}/${pause.ref.name} is paused (${pause.what}) before the first write and put back as it was after the last, or when the run stops`,
    );
  else if (owner?.pauseCommands?.length) {
    lines.push(`  pause it first with: ${owner.pauseCommands.join("\n    or: ")}`);
    lines.push(`  resume it after with: ${owner.resumeCommands!.join("\n    or: ")}`);
  }
  for (const n of owner?.notes ?? []) lines.push(`  ${n}`);
  return `${lines.join("\n")}\n`;
}

/** What set prints on stdout for each pod it restarted, as kubectl names it (a pod restarted by an interrupted run is not). */
export function rolledResultLines(rolled: ApplyResult["rolled"]): string {
  return (rolled ?? [])
    .filter((r) => !r.earlier)
    .map((r) => `pod/${r.pod} restarted\n`)
    .join("");
}
