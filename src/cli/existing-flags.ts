// The flags for existing claims, shared by set and diff: --resize-existing, --vac-existing,
// --wait-resize, --restart-pods. Parsed into one plain value (or nothing when none is given).
import type { Argv } from "yargs";
import type { ExistingClaimsOptions as ExistingOptions } from "../plan/types";
import { UsageError } from "../errors";

export function existingClaimOptions<T>(y: Argv<T>): Argv<T> {
  return y
    .option("resize-existing", {
      type: "boolean",
      describe: "Also grow every existing claim of the named templates that is smaller than the new size (and set its vac=), before the StatefulSet is swapped; never shrinks",
      group: "Existing claims:",
    })
    .option("vac-existing", { type: "boolean", describe: "Also set the volume attributes class (vac=NAME) of existing claims, without growing them", group: "Existing claims:" })
    .option("wait-resize", {
      type: "boolean",
      describe: "Afterwards, follow each claim until its capacity reaches its request or it reports FileSystemResizePending (bounded by --timeout)",
      group: "Existing claims:",
    })
    .option("restart-pods", {
      type: "boolean",
      describe: "Then restart the pods of FileSystemResizePending claims through the Eviction API, one at a time, highest ordinal first (implies --wait-resize)",
      group: "Existing claims:",
    }) as Argv<T>;
}

/** The options, or undefined when no flag was given (the plan then leaves existing claims alone). */
export function existingClaimFlags(argv: Record<string, unknown>): ExistingOptions | undefined {
  const resize = argv["resize-existing"] === true;
  const vac = argv["vac-existing"] === true;
  const restartPods = argv["restart-pods"] === true;
  const waitResize = argv["wait-resize"] === true || restartPods;
  if (!resize && !vac && !waitResize) return undefined;
  if (!resize && !vac) throw new UsageError(`--${restartPods ? "restart-pods" : "wait-resize"} works on the claims that --resize-existing or --vac-existing change; add one of them`);
  return { resize, vac, waitResize, restartPods };
}
