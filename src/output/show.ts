// `show` as tables: claim templates first, then every claim per ordinal, then pending changes.
import type { StatefulSetStorage, StorageReport } from "../report/storage-report";
import { classLines } from "./classes";
import { ordinalsWord } from "./ordinals";
import { pendingNotes } from "./pending";
import { renderTable } from "./table";
import { statefulSetRef } from "../refs";

const none = (v: string | undefined) => (v === undefined || v === "" ? "<none>" : v);

/** Ordinals below replicas that have no claim yet, and the template they get it from (with a later scale-up). */
function withoutClaims(s: StatefulSetStorage, where: string): string {
  const groups = new Map<string, { ordinals: number[]; templates: string[] }>();
  for (const t of s.templates) {
    if (!t.ordinalsWithoutClaim) continue;
    const key = t.ordinalsWithoutClaim.join(",");
    const described = `${t.name} ${t.size ?? "<no size>"}${t.storageClass ? ` (${t.storageClass})` : ""}`;
    const g = groups.get(key);
    if (g) g.templates.push(described);
    else groups.set(key, { ordinals: t.ordinalsWithoutClaim, templates: [described] });
  }
  const later = s.ordinalsStart + s.replicas;
  return [...groups.values()]
    .map((g) => `${statefulSetRef(s.name)}${where}: ${ordinalsWord(g.ordinals)} (no claim yet) and ${later} and up (a later scale-up) get: ${g.templates.join(", ")}\n`)
    .join("");
}

/** The old volumes --migrate-existing kept, per StatefulSet, with the command that deletes each. */
function keptVolumes(report: StorageReport, namespaces: boolean): string {
  let text = "";
  for (const s of report.items) {
    if (!s.keptVolumes?.length) continue;
    text += `\nold volumes of ${statefulSetRef(s.name)}${namespaces ? ` in namespace ${s.namespace}` : ""} kept by --migrate-existing, with their data (delete each once satisfied):\n`;
    text += renderTable(
      ["volume", "claim", "ordinal", "capacity", "class", "status", "kept since", "delete with"],
      s.keptVolumes.map((v) => [v.name, v.claim, v.ordinal !== undefined ? String(v.ordinal) : "", v.capacity ?? "", v.storageClass ?? "", v.phase ?? "", v.retainedAt ?? "", v.deleteCommand]),
    );
  }
  return text;
}

/** The claim's volume: what it is and where it can be used; <none> when it never bound, <unknown> when the volumes could not be read. */
function volumeText(c: StatefulSetStorage["claims"][number]): string {
  if (!c.volumeName) return "<none>";
  return c.volumeSource ? `${c.volumeSource}${c.volumeTopology ? `, ${c.volumeTopology}` : ""}` : "<unknown>";
}

export function renderStorageReport(report: StorageReport, opts: { wide: boolean; namespaces: boolean }): string {
  const nsCol = (ns: string) => (opts.namespaces ? [ns] : []);
  const nsHead = opts.namespaces ? ["namespace"] : [];
  const templateRows = report.items.flatMap((s) =>
    s.templates.map((t) => [
      ...nsCol(s.namespace),
      s.exists ? s.name : `${s.name} (deleted)`,
      t.name,
      none(t.size),
      t.storageClass ? `${t.storageClass}${t.defaultClass ? " (default)" : ""}` : "<none>",
      t.expandable === null ? "unknown" : String(t.expandable),
      `${s.retentionPolicy.whenDeleted}/${s.retentionPolicy.whenScaled}`,
      // The current revision of the claim templates, as kubectl appstorage history numbers them.
      String(s.revision),
      ...(opts.wide ? [t.accessModes.join(",") || "<none>", none(t.volumeMode), none(t.volumeAttributesClass), String(s.replicas)] : []),
    ]),
  );
  const claimRows = report.items.flatMap((s) =>
    s.claims.map((c) => [
      ...nsCol(s.namespace),
      s.name,
      c.name,
      String(c.ordinal) + (c.leftover ? " (leftover)" : ""),
      none(c.phase),
      none(c.request),
      none(c.capacity),
      none(c.storageClass),
      c.pod ? c.pod : "<none>",
      ...(opts.wide ? [none(c.podPhase), c.accessModes.join(",") || "<none>", none(c.volumeAttributesClass), c.conditions.join(",") || "<none>", volumeText(c)] : []),
      c.differences.join("; ") || "-",
    ]),
  );
  let text = renderTable(
    [
      ...nsHead,
      "statefulset",
      "template",
      "size",
      "class",
      "expandable",
      "retention (deleted/scaled)",
      "revision",
      ...(opts.wide ? ["access modes", "volume mode", "attributes class", "replicas"] : []),
    ],
    templateRows,
  );
  if (claimRows.length) {
    text += `\n${renderTable(
      [
        ...nsHead,
        "statefulset",
        "claim",
        "ordinal",
        "phase",
        "request",
        "capacity",
        "class",
        "pod",
        ...(opts.wide ? ["pod phase", "access modes", "attributes class", "conditions", "volume"] : []),
        "differs from template",
      ],
      claimRows,
    )}`;
  }
  const notes = report.items
    .map((s) => {
      const where = opts.namespaces ? ` in namespace ${s.namespace}` : "";
      return pendingNotes(s.claims, { wide: opts.wide, template: "its template", where: () => where }) + withoutClaims(s, where);
    })
    .join("");
  if (notes) text += `\n${notes}`;
  // What each class can and cannot do, in words (-o wide).
  if (opts.wide && report.storageClasses.length) text += `\n${classLines(report.storageClasses)}`;
  text += keptVolumes(report, opts.namespaces);
  for (const s of report.items) {
    const p = s.pendingChange;
    if (!p) continue;
    text += `\npending change of ${statefulSetRef(s.name)} in namespace ${s.namespace}: ${p.request.join(" ")} (step ${p.step}, started ${p.startedAt} by ${p.by})`;
    text += `${s.exists ? "" : "; the StatefulSet is deleted and its pods have no controller"}; finish it with: ${p.finishCommand}\n`;
  }
  return text;
}
