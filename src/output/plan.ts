// The plan as a person reads it: what changes in the templates, what each existing claim
// does, what new ordinals get, the warnings and the steps.
import type { Target } from "../api/types";
import type { Plan, Step, TemplateChange, TemplateSide } from "../plan/types";
import type { MoveStepView } from "../plan/move-types";
import type { MigrationClaim } from "../plan/migration-types";
import { classLines } from "./classes";
import { claimsKeptSmaller, type KeptSmaller } from "../plan/resize";
import { existingAfter, existingStepText, relabelAfter, renderExisting } from "./resize";
import { ordinalsWord } from "./ordinals";
import { pendingNotes } from "./pending";
import { renderTable } from "./table";
import { renderOwner, renderRoll } from "./roll";
import { statefulSetRef } from "../refs";

const stepText: Record<Step, string> = {
  "write-journal": "save a journal (in a Secret and a local file) so an interrupted run can be finished",
  "pause-owner": "pause the owner (--pause-owner), recorded in the journal",
  "orphan-delete": "delete the StatefulSet with propagationPolicy=Orphan (pods and claims keep running)",
  "wait-gone": "wait until the garbage collector has released the pods and removed the object",
  create: "create the StatefulSet again with the new claim templates",
  verify: "verify that every pod was adopted, unchanged and not restarted",
  record: "record an event and the change annotation",
  "roll-pods": "restart every pod once, one at a time (evict, wait until it is back and Ready with its claims)",
  "restore-strategy": "put the StatefulSet's updateStrategy back as it was",
  "resume-owner": "resume the owner as it was before the pause",
  migrate:
    "move each claim below to a new volume, one at a time, highest ordinal first: copy while its pod runs, orphan-delete the StatefulSet and evict the pod, copy what changed and verify every file, keep the old volume (Retain), re-create the claim on the new volume, re-create the StatefulSet, wait until the pod is Ready",
  "remove-journal": "remove the journal",
  ...existingStepText,
};

const mapText = (m: Record<string, string>) =>
  Object.keys(m).length
    ? Object.keys(m)
        .sort()
        .map((k) => `${k}=${m[k]}`)
        .join(",")
    : "none";

function side(s: TemplateSide): string {
  const parts = [
    s.size ?? "<no size>",
    ...(s.storageClass !== undefined ? [`class ${s.storageClass}`] : []),
    ...(s.volumeAttributesClass !== undefined ? [`vac ${s.volumeAttributesClass}`] : []),
    ...(s.labels !== undefined ? [`labels ${mapText(s.labels)}`] : []),
    ...(s.annotations !== undefined ? [`annotations ${mapText(s.annotations)}`] : []),
    ...(s.accessModes !== undefined ? [`access ${s.accessModes.join(",") || "none"}`] : []),
  ];
  return parts.join(", ");
}

export function describeChange(c: TemplateChange): string {
  return `claim template ${c.claim}: ${side(c.before)} -> ${side(c.after)}`;
}

/** Claims in words, grouped by what they show: `data-db-0, data-db-1 (1Gi, template data 2Gi)`. */
function keptList(claims: readonly KeptSmaller[]): string {
  const groups = new Map<string, string[]>();
  for (const c of claims) {
    const shown = `${c.request}, template ${c.template} ${c.size}`;
    groups.set(shown, [...(groups.get(shown) ?? []), c.name]);
  }
  return [...groups].map(([shown, names]) => `${names.join(", ")} (${shown})`).join(", ");
}

/**
 * The one line that says what set does not do: existing claims keep their size, and the flag
 * that grows them. The same for the plain path and -f (both plans are rendered here).
 */
export function keptSizeLine(plan: Plan): string {
  const kept = claimsKeptSmaller(plan);
  const grow = kept.filter((c) => c.expands);
  const move = kept.filter((c) => !c.expands);
  const parts = [
    ...(grow.length ? [`${keptList(grow)}: add --resize-existing to grow them too`] : []),
    ...(move.length ? [`${keptList(move)}: their class does not expand volumes; add --migrate-existing to move them to new volumes, the data copied`] : []),
  ];
  return parts.length ? `existing claims keep their size: ${parts.join("; ")}\n` : "";
}

export function renderClaims(plan: Plan): string {
  if (plan.claims.length === 0) return `no existing claims\n${classLines(plan.storageClasses)}`;
  const rows = plan.claims.map((c) => {
    const change = plan.changes.find((x) => x.claim === c.template);
    const moves = plan.migration?.claims.find((m) => m.claim === c.name && m.phase !== "done");
    const after =
      (moves ? `moves to a new volume: ${moves.to.size}${moves.to.storageClass ? ` ${moves.to.storageClass}` : ""}, the data copied` : undefined) ??
      existingAfter(plan, c) ??
      (c.effect === "keeps" && change ? `keeps ${c.request ?? "its size"}${change.after.size && change.after.size !== c.request ? ` (template ${change.after.size})` : ""}` : "unchanged");
    return [
      c.name,
      String(c.ordinal),
      c.phase ?? "",
      c.request ?? "",
      c.capacity ?? "<none>",
      c.storageClass ?? "<default>",
      c.pod ?? "<none>",
      after + (c.leftover ? ", leftover" : "") + relabelAfter(plan, c),
    ];
  });
  return (
    renderTable(["claim", "ordinal", "phase", "request", "capacity", "class", "pod", "after"], rows) +
    keptSizeLine(plan) +
    pendingNotes(plan.claims, { wide: true, template: "its template after this change" }) +
    classLines(plan.storageClasses)
  );
}

export function renderPlan(plan: Plan): string {
  const t = plan.target;
  const lines: string[] = [];
  lines.push(
    `${plan.mode === "resume" ? "Resuming an interrupted change of" : "Plan for"} ${statefulSetRef(t.name)} in namespace ${t.namespace} (uid ${t.uid}, resourceVersion ${t.resourceVersion}):`,
  );
  if (plan.noChange) lines.push("  no change: the claim templates already are as asked");
  for (const c of plan.changes) lines.push(`  ${describeChange(c)}`);
  lines.push("");
  let text = `${lines.join("\n")}\n${renderClaims(plan)}${renderExisting(plan)}${renderMigration(plan)}${renderRoll(plan)}${newOrdinalsLine(plan)}${renderOwner(plan)}`;
  if (plan.steps.length) text += `steps:\n${plan.steps.map((s, i) => `  ${i + 1}. ${stepText[s]}\n`).join("")}`;
  return text;
}

/** What set says it did to the StatefulSet: recreated only when it was. */
export function statefulSetVerb(plan: Plan): "recreated" | "unchanged" {
  // A rerun that only finishes the restarts of a re-create finishes that re-create.
  return plan.steps.some((s) => s === "create" || s === "verify" || s === "roll-pods") ? "recreated" : "unchanged";
}

/** The taints a claim's copy pods tolerate (its node's own), as kubectl describe node prints them; "<none>" for none. */
const tolerated = (ts: MigrationClaim["tolerations"]) => (ts?.length ? ts.map((t) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect ?? ""}`).join(",") : "<none>");

/** --migrate-existing: each claim that moves, in the order it moves, and how far an interrupted run got. */
export function renderMigration(plan: Plan): string {
  const m = plan.migration;
  if (!m) return "";
  const side = (s: { size?: string; storageClass?: string }) => `${s.size ?? "?"} ${s.storageClass ?? "<default>"}`;
  const rows = m.claims.map((c) => [c.claim, String(c.ordinal), c.pod ?? "<none>", c.node ?? "", side(c.from), side(c.to), tolerated(c.tolerations), c.volume, c.phase]);
  const offline = m.claims.filter((c) => c.offline).map((c) => c.claim);
  const measured = m.claims.filter((c) => c.measure && c.phase === "pending").map((c) => c.claim);
  const left = (plan.moves ?? []).filter((v) => v.left.length).map((v) => `  ${v.claim} (${v.phase}): ${v.left.map(moveStepText).join(", ")}\n`);
  return `claims moved to new volumes with their data (one at a time, in this order; copy image ${m.copyImage}):\n${renderTable(
    ["claim", "ordinal", "pod", "node", "from", "to", "copy pods tolerate", "old volume (kept, Retain)", "phase"],
    rows,
  )}${left.length ? `the actions each move has left, in order (waits left out; the new volume's Retain is held and given back only when its class deletes volumes):\n${left.join("")}` : ""}${offline.length ? `ReadWriteOncePod: ${offline.join(", ")} cannot be copied while the pod runs; the replica is down for the whole copy\n` : ""}${
    measured.length ? `smaller: a pod measures the data of ${measured.join(", ")} (du) once the change is confirmed, before anything changes\n` : ""
  }`;
}

/** One action a move has left, in words. */
export function moveStepText(s: MoveStepView): string {
  const o = s.object ?? "";
  switch (s.kind) {
    case "create-new-claim":
      return `create claim ${o}`;
    case "create-copy-pod":
      return s.mode === "copy" ? `first copy by pod ${o}` : s.start === "wait" ? `start pod ${o} to wait for the final copy` : `final copy and verification by pod ${o}`;
    case "tell-copy-pod":
      return `tell pod ${o} to make the final copy and verify (delete it: SIGTERM is its go)`;
    case "remove-copy-pod":
      return `remove pod ${o}`;
    case "record":
      return `record ${s.phase}`;
    case "orphan-delete":
      return `orphan-delete statefulset.apps/${o}`;
    case "evict":
      return `evict ${o}`;
    case "retain-old-volume":
      return `set volume ${o} to Retain`;
    case "hold-new-volume":
      return "hold the new volume (Retain)";
    case "delete-claim":
      return `delete claim ${o}`;
    case "bind-new-volume":
      return "bind the new volume to the claim's name";
    case "create-moved-claim":
      return `create claim ${o} on the new volume`;
    case "restore-new-volume-policy":
      return "give the new volume its reclaim policy back";
    case "create-statefulset":
      return `create statefulset.apps/${o}`;
  }
}

/** The confirmation question for this plan. */
export function confirmQuestion(plan: Plan): string {
  const ref = statefulSetRef(plan.target.name);
  if (plan.migration) {
    const n = plan.migration.claims.filter((c) => c.phase !== "done").length;
    return `${statefulSetVerb(plan) === "unchanged" ? "" : `Re-create ${ref} with these claim templates, then m`}${statefulSetVerb(plan) === "unchanged" ? "M" : ""}ove ${n} claim(s) to new volumes, stopping one replica at a time?`;
  }
  const grown = plan.existing?.claims.filter((c) => c.grow || c.setVolumeAttributesClass).map((c) => c.name) ?? [];
  const labelled = plan.existing?.relabel?.filter((c) => c.patch.labels || c.patch.annotations).map((c) => c.name) ?? [];
  const claims = new Set([...grown, ...labelled]).size;
  const restart = plan.steps.includes("restart-pods") ? " and restart the pods that need it, one at a time" : "";
  if (plan.roll && plan.steps.includes("roll-pods")) return `Re-create ${ref} with these claim templates and mounts, then restart its ${plan.roll.order.length} pod(s) one at a time?`;
  if (statefulSetVerb(plan) === "unchanged") return `Change ${claims} existing claim(s)${restart}? ${ref} is not re-created.`;
  const first = [grown.length ? `growing ${grown.length}` : "", labelled.length ? `labelling ${labelled.length}` : ""].filter(Boolean).join(" and ");
  return `Re-create ${ref} with these claim templates${first ? `, ${first} existing claim(s) first` : ""}${restart}? Its pods keep running.`;
}

/**
 * Which ordinals get the new templates (no claim yet below replicas, and a later scale-up) and
 * which keep an existing claim. Templates with the same ordinals share their lines; when they
 * differ, each template's lines name it.
 */
export function newOrdinalsLine(plan: Plan): string {
  const describe = (claim: string) => {
    const x = plan.newOrdinals.templates.find((t) => t.claim === claim);
    return `${claim} ${x?.size ?? ""}${x?.storageClass ? ` (${x.storageClass})` : ""}`;
  };
  const o = plan.ordinals;
  if (o.templates.length === 0) return `ordinals ${o.scaleUpFrom} and up (a later scale-up) get: no claims\n`;
  const groups = new Map<string, { claims: string[]; keep: number[]; create: number[]; leftover: number[] }>();
  for (const t of o.templates) {
    const key = JSON.stringify([t.keep, t.create, t.leftover]);
    const g = groups.get(key);
    if (g) g.claims.push(t.claim);
    else groups.set(key, { claims: [t.claim], keep: t.keep, create: t.create, leftover: t.leftover });
  }
  const lines: string[] = [];
  for (const g of groups.values()) {
    const which = groups.size > 1 ? ` (${g.claims.join(", ")})` : "";
    const later = `${o.scaleUpFrom} and up (a later scale-up)`;
    const created = g.create.length ? `${ordinalsWord(g.create)} (no claim yet) and ${later}` : `ordinals ${later}`;
    lines.push(`${created} get: ${g.claims.map(describe).join(", ")}`);
    if (g.keep.length) lines.push(`${ordinalsWord(g.keep)} ${g.keep.length === 1 ? "keeps its existing claim" : "keep their existing claims"}${which}`);
    if (g.leftover.length) lines.push(`${ordinalsWord(g.leftover)} ${g.leftover.length === 1 ? "has a claim" : "have claims"} left by an earlier scale-down, which a scale-up reuses as it is${which}`);
  }
  return `${lines.join("\n")}\n`;
}

/** Where a change acts, as the last words before the confirmation and under a printed plan. */
export function whereLine(target: Target, namespaces: readonly string[]): string {
  const context = target.context ? `context "${target.context}"` : "in-cluster configuration";
  const ns = [...new Set(namespaces)];
  const user = target.impersonate ? `, as ${target.impersonate}` : target.user ? `, user "${target.user}"` : "";
  return `${context} (server ${target.server}), namespace${ns.length > 1 ? "s" : ""} ${ns.join(", ")}${user}`;
}
