// The plan as a person reads it: what changes in the templates, what each existing claim
// does, what new ordinals get, the warnings and the steps.
import type { Plan, Step, TemplateChange } from "../plan/plan";
import { existingAfter, existingStepText, renderExisting } from "./resize";
import { renderTable } from "./table";

const stepText: Record<Step, string> = {
  "write-journal": "save a journal (in a Secret and a local file) so an interrupted run can be finished",
  "orphan-delete": "delete the StatefulSet with propagationPolicy=Orphan (pods and claims keep running)",
  "wait-gone": "wait until the garbage collector has released the pods and removed the object",
  create: "create the StatefulSet again with the new claim templates",
  verify: "verify that every pod was adopted, unchanged and not restarted",
  record: "record an event and the change annotation",
  "remove-journal": "remove the journal",
  ...existingStepText,
};

function side(s: { size?: string; storageClass?: string; volumeAttributesClass?: string }): string {
  return `${s.size ?? "<no size>"}${s.storageClass !== undefined ? `, class ${s.storageClass}` : ""}${s.volumeAttributesClass !== undefined ? `, vac ${s.volumeAttributesClass}` : ""}`;
}

export function describeChange(c: TemplateChange): string {
  return `claim template ${c.claim}: ${side(c.before)} -> ${side(c.after)}`;
}

export function renderClaims(plan: Plan): string {
  if (plan.claims.length === 0) return "no existing claims\n";
  const rows = plan.claims.map((c) => {
    const change = plan.changes.find((x) => x.claim === c.template);
    const after =
      existingAfter(plan, c) ??
      (c.effect === "keeps" && change
        ? `keeps ${c.request ?? "its size"}${change.after.size && change.after.size !== c.request ? ` (template ${change.after.size})` : ""}`
        : "unchanged");
    return [c.name, String(c.ordinal), c.phase ?? "", c.request ?? "", c.capacity ?? "<none>", c.storageClass ?? "<default>", c.pod ?? "<none>", after + (c.leftover ? ", leftover" : "")];
  });
  return renderTable(["claim", "ordinal", "phase", "request", "capacity", "class", "pod", "after"], rows);
}

export function renderPlan(plan: Plan): string {
  const t = plan.target;
  const lines: string[] = [];
  lines.push(`${plan.mode === "resume" ? "Resuming an interrupted change of" : "Plan for"} statefulset.apps/${t.name} in namespace ${t.namespace} (uid ${t.uid}, resourceVersion ${t.resourceVersion}):`);
  if (plan.noChange) lines.push("  no change: the claim templates already are as asked");
  for (const c of plan.changes) lines.push(`  ${describeChange(c)}`);
  lines.push("");
  let text = `${lines.join("\n")}\n${renderClaims(plan)}${renderExisting(plan)}`;
  const future = plan.newOrdinals.templates.map((x) => `${x.claim} ${x.size ?? ""}${x.storageClass ? ` (${x.storageClass})` : ""}`).join(", ");
  text += `new ordinals (${plan.newOrdinals.from} and up) get: ${future || "no claims"}\n`;
  if (plan.steps.length) text += `steps:\n${plan.steps.map((s, i) => `  ${i + 1}. ${stepText[s]}\n`).join("")}`;
  return text;
}
