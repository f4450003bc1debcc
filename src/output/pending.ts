// The lines under a claims table about claims that never bound: why one is Pending, and the
// commands a user can run by hand to have it created again from the template. Shared by the plan
// (set, diff) and show.
import type { PendingReason, RecreateByHand } from "../plan/types";

export interface PendingClaim {
  name: string;
  pendingReason?: PendingReason;
  recreateByHand?: RecreateByHand;
}

function reasonLine(name: string, r: PendingReason, wide: boolean, where: string): string {
  let text = `persistentvolumeclaim/${name}${where} is Pending${r.stuck ? " and stuck" : ", not stuck"}: ${r.message}`;
  const e = r.event;
  if (e) {
    const seen = [e.count !== undefined && e.count > 1 ? `${e.count} times` : "", e.lastTimestamp ? `last at ${e.lastTimestamp}` : ""].filter(Boolean).join(", ");
    text += wide ? `${seen ? ` (${seen})` : ""}: ${e.message}` : " (its message: -o wide)";
  }
  return text;
}

/**
 * For each claim: why it is Pending, and how to have it created again from `template` (the new
 * template in a plan, the template in show). wide: the provisioner's message too. where: e.g.
 * " in namespace NS", when several namespaces are shown.
 */
export function pendingNotes(claims: readonly PendingClaim[], opts: { wide: boolean; template: string; where?: (c: PendingClaim) => string }): string {
  const lines: string[] = [];
  for (const c of claims) {
    const where = opts.where?.(c) ?? "";
    if (c.pendingReason) lines.push(reasonLine(c.name, c.pendingReason, opts.wide, where));
    const redo = c.recreateByHand;
    if (redo) {
      lines.push(
        `persistentvolumeclaim/${c.name}${where} never bound (no volume, so no data) and does not match ${opts.template}; to have it created again from that template, run (${redo.warning}):`,
      );
      lines.push(`  ${redo.command}`);
    }
  }
  return lines.length ? `${lines.join("\n")}\n` : "";
}
