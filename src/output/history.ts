// `history` as a table, in the layout of `kubectl rollout history`.
import type { Revision } from "../plan/history";
import { renderTable } from "./table";
import { statefulSetRef } from "../refs";

function templates(r: Revision): string {
  return r.templates
    .map(
      (t) =>
        `${t.metadata.name} ${t.spec.resources?.requests?.["storage"] ?? "<no size>"}${t.spec.storageClassName ? ` (${t.spec.storageClassName})` : ""}${t.spec.volumeAttributesClassName ? ` vac ${t.spec.volumeAttributesClassName}` : ""}`,
    )
    .join(", ");
}

export function renderHistory(name: string, revisions: readonly Revision[]): string {
  const rows = revisions.map((r) => [String(r.revision), r.at ?? "<unknown>", r.by ?? "<unknown>", r.change ?? "<none>", templates(r)]);
  return `${statefulSetRef(name)}\n${renderTable(["revision", "changed", "by", "change", "claim templates"], rows)}`;
}
