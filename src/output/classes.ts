// One line per storage class, saying plainly what it can and cannot do: for show -o wide and
// under the plan's claims table.
import type { ClassView } from "../plan/classes";

function classLine(c: ClassView): string {
  const head = `storage class ${c.name}${c.provisioner ? ` (${c.provisioner}${c.default ? ", the default" : ""})` : c.default ? " (the default)" : ""}`;
  if (c.expandable === null) return `${head}: could not be read, so what it can do is unknown`;
  const parts = [
    c.expandable ? "volumes expand (--resize-existing grows claims in place)" : "volumes do not expand (a claim gets bigger only by --migrate-existing: a new volume, the data copied)",
    c.volumeBindingMode === "WaitForFirstConsumer"
      ? "binds a claim once its first pod is scheduled, on that pod's node (WaitForFirstConsumer)"
      : `binds a claim as soon as it is created (${c.volumeBindingMode ?? "Immediate"})`,
    ...(c.boundVolumes ?? []).map((b) => `volumes tied to ${b.where}: ${b.claims.join(", ")}`),
  ];
  return `${head}: ${parts.join("; ")}`;
}

/** The lines of the classes, each ending in a newline ("" for none). */
export function classLines(classes: readonly ClassView[] | undefined): string {
  return (classes ?? []).map((c) => `${classLine(c)}\n`).join("");
}
