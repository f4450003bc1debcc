// `show` as tables: claim templates first, then every claim per ordinal, then pending changes.
import type { ClaimView, StatefulSetStorage, StorageReport, TemplateView } from "../report/storage-report";
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
function keptVolumes(report: StorageReport, opts: ShowTableOptions): string {
  let text = "";
  for (const s of report.items) {
    if (!s.keptVolumes?.length) continue;
    text += `\nold volumes of ${statefulSetRef(s.name)}${opts.namespaces ? ` in namespace ${s.namespace}` : ""} kept by --migrate-existing, with their data (delete each once satisfied):\n`;
    text += renderTable(
      ["volume", "claim", "ordinal", "capacity", "class", "phase", "kept since", "delete with"],
      s.keptVolumes.map((v) => [v.name, v.claim, v.ordinal !== undefined ? String(v.ordinal) : "", v.capacity ?? "", v.storageClass ?? "", v.phase ?? "", v.retainedAt ?? "", v.deleteCommand]),
      { noHeaders: opts.noHeaders === true },
    );
  }
  return text;
}

/** The claim's volume: what it is and where it can be used; <none> when it never bound, <unknown> when the volumes could not be read. */
function volumeText(c: StatefulSetStorage["claims"][number]): string {
  if (!c.volumeName) return "<none>";
  return c.volumeSource ? `${c.volumeSource}${c.volumeTopology ? `, ${c.volumeTopology}` : ""}` : "<unknown>";
}

/** How show lays its tables out: -o wide, -A (a NAMESPACE column), --no-headers, --show-labels. */
export interface ShowTableOptions {
  wide: boolean;
  namespaces: boolean;
  noHeaders?: boolean;
  /** --show-labels: each row's labels for a LABELS column, last: a claim template's, a claim's. */
  labels?: {
    template: (s: StatefulSetStorage, t: TemplateView) => Record<string, string> | undefined;
    claim: (s: StatefulSetStorage, c: ClaimView) => Record<string, string> | undefined;
  };
}

/** A column: its header, its cell, and whether only -o wide shows it (kubectl's wide columns keep their names and their place). */
interface Column<R> {
  header: string;
  cell: (row: R) => string;
  wide?: boolean;
}

type TemplateRow = { s: StatefulSetStorage; t: TemplateView };
type ClaimRow = { s: StatefulSetStorage; c: ClaimView };

/** kubectl's LABELS cell: key=value pairs sorted by key, or <none>. */
export function labelsText(labels: Record<string, string> | undefined): string {
  const keys = Object.keys(labels ?? {}).sort();
  return keys.length ? keys.map((k) => `${k}=${labels![k]}`).join(",") : "<none>";
}

const templateColumns: Column<TemplateRow>[] = [
  { header: "statefulset", cell: ({ s }) => (s.exists ? s.name : `${s.name} (deleted)`) },
  { header: "template", cell: ({ t }) => t.name },
  { header: "size", cell: ({ t }) => none(t.size) },
  { header: "class", cell: ({ t }) => (t.storageClass ? `${t.storageClass}${t.defaultClass ? " (default)" : ""}` : "<none>") },
  { header: "expandable", cell: ({ t }) => (t.expandable === null ? "unknown" : String(t.expandable)) },
  { header: "retention (deleted/scaled)", cell: ({ s }) => `${s.retentionPolicy.whenDeleted}/${s.retentionPolicy.whenScaled}`, wide: true },
  // The current revision of the claim templates, as kubectl appstorage history numbers them.
  { header: "revision", cell: ({ s }) => String(s.revision) },
  { header: "access modes", cell: ({ t }) => t.accessModes.join(",") || "<none>", wide: true },
  { header: "volume mode", cell: ({ t }) => none(t.volumeMode), wide: true },
  { header: "attributes class", cell: ({ t }) => none(t.volumeAttributesClass), wide: true },
  { header: "replicas", cell: ({ s }) => String(s.replicas), wide: true },
];

const claimColumns: Column<ClaimRow>[] = [
  { header: "statefulset", cell: ({ s }) => s.name },
  { header: "claim", cell: ({ c }) => c.name },
  { header: "ordinal", cell: ({ c }) => String(c.ordinal) + (c.leftover ? " (leftover)" : ""), wide: true },
  { header: "phase", cell: ({ c }) => none(c.phase) },
  { header: "request", cell: ({ c }) => none(c.request), wide: true },
  { header: "capacity", cell: ({ c }) => none(c.capacity) },
  { header: "class", cell: ({ c }) => none(c.storageClass) },
  { header: "pod", cell: ({ c }) => c.pod ?? "<none>", wide: true },
  { header: "pod phase", cell: ({ c }) => none(c.podPhase), wide: true },
  { header: "access modes", cell: ({ c }) => c.accessModes.join(",") || "<none>", wide: true },
  { header: "attributes class", cell: ({ c }) => none(c.volumeAttributesClass), wide: true },
  { header: "conditions", cell: ({ c }) => c.conditions.join(",") || "<none>", wide: true },
  { header: "volume", cell: ({ c }) => volumeText(c), wide: true },
  { header: "differs from template", cell: ({ c }) => c.differences.join("; ") || "-" },
];

/** The columns a view shows: -A's NAMESPACE first, the wide ones only with -o wide, --show-labels' LABELS last. */
export function shownColumns<R extends { s: StatefulSetStorage }>(columns: readonly Column<R>[], opts: ShowTableOptions, labels?: (row: R) => Record<string, string> | undefined): Column<R>[] {
  return [
    ...(opts.namespaces ? [{ header: "namespace", cell: (r: R) => r.s.namespace }] : []),
    ...columns.filter((c) => opts.wide || !c.wide),
    ...(labels ? [{ header: "labels", cell: (r: R) => labelsText(labels(r)) }] : []),
  ];
}

function table<R extends { s: StatefulSetStorage }>(columns: Column<R>[], rows: readonly R[], opts: ShowTableOptions): string {
  return renderTable(
    columns.map((c) => c.header),
    rows.map((r) => columns.map((c) => c.cell(r))),
    { noHeaders: opts.noHeaders === true },
  );
}

/** The default view's words for what its columns leave to -o wide: claims left by a scale-down (ORDINAL). */
function leftovers(s: StatefulSetStorage, where: string): string {
  const left = s.claims.filter((c) => c.leftover);
  if (!left.length) return "";
  return `${statefulSetRef(s.name)}${where}: ${left.map((c) => c.name).join(", ")} ${left.length === 1 ? "is a claim" : "are claims"} left by an earlier scale-down, which a scale-up reuses as ${left.length === 1 ? "it is" : "they are"}\n`;
}

export function renderStorageReport(report: StorageReport, opts: ShowTableOptions): string {
  const templates = shownColumns(templateColumns, opts, opts.labels && (({ s, t }) => opts.labels!.template(s, t)));
  const claims = shownColumns(claimColumns, opts, opts.labels && (({ s, c }) => opts.labels!.claim(s, c)));
  const claimRows = report.items.flatMap((s) => s.claims.map((c) => ({ s, c })));
  let text = table(
    templates,
    report.items.flatMap((s) => s.templates.map((t) => ({ s, t }))),
    opts,
  );
  if (claimRows.length) text += `\n${table(claims, claimRows, opts)}`;
  const notes = report.items
    .map((s) => {
      const where = opts.namespaces ? ` in namespace ${s.namespace}` : "";
      return pendingNotes(s.claims, { wide: opts.wide, template: "its template", where: () => where }) + withoutClaims(s, where) + (opts.wide ? "" : leftovers(s, where));
    })
    .join("");
  if (notes) text += `\n${notes}`;
  // What each class can and cannot do, in words (-o wide).
  if (opts.wide && report.storageClasses.length) text += `\n${classLines(report.storageClasses)}`;
  text += keptVolumes(report, opts);
  for (const s of report.items) {
    const p = s.pendingChange;
    if (!p) continue;
    text += `\npending change of ${statefulSetRef(s.name)} in namespace ${s.namespace}: ${p.request.join(" ")} (step ${p.step}, started ${p.startedAt} by ${p.by})`;
    text += `${s.exists ? "" : "; the StatefulSet is deleted and its pods have no controller"}; finish it with: ${p.finishCommand}\n`;
  }
  return text;
}
