// The flags for existing claims, shared by set and diff: --resize-existing, --vac-existing,
// --wait-resize, --restart-pods (declared in src/cli/flags.ts). Parsed into one plain value
// (or nothing when none is given).
import type { ExistingClaimsOptions as ExistingOptions } from "../plan/types";
import { UsageError } from "../errors";
import { lastValue } from "./flags";

/** The options, or undefined when no flag was given (the plan then leaves existing claims alone). */
export function existingClaimFlags(argv: Record<string, unknown>): ExistingOptions | undefined {
  const on = (name: string) => lastValue(argv[name]) === true;
  const resize = on("resize-existing");
  const vac = on("vac-existing");
  const restartPods = on("restart-pods");
  const waitResize = on("wait-resize") || restartPods;
  if (!resize && !vac && !waitResize) return undefined;
  if (!resize && !vac) throw new UsageError(`--${restartPods ? "restart-pods" : "wait-resize"} works on the claims that --resize-existing or --vac-existing change; add one of them`);
  return { resize, vac, waitResize, restartPods };
}
