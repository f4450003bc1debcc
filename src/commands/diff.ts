// `diff STS CLAIM=SIZE[,CLASS]...`: what `set` would change, as kubectl diff shows it.
// Exit codes as kubectl diff: 0 no change, 1 changes, >1 error. Changes nothing.
import { ExitCode } from "../errors";
import { diffView } from "../output/diff-view";
import { printFlags } from "../output/print-flags";
import { useColor } from "../streams";
import { type DiffOptions, existingClaimsOptions, validateChangeTargets } from "./change-options";
import { completeChange } from "./complete-change";
import type { CommandDeps } from "./deps";

export type { DiffOptions };

/** The Validate step: usage errors only, before anything is read. */
export function validateDiff(opts: DiffOptions): void {
  validateChangeTargets(opts, "diff");
  printFlags.diff.validate(opts.output);
  existingClaimsOptions(opts.existing);
}

export async function runDiff(opts: DiffOptions, deps: CommandDeps): Promise<void> {
  validateDiff(opts);
  const printer = printFlags.diff.toPrinter(opts.output);
  const { plans, view, noResources } = await completeChange({ kind: "diff", ...opts }, deps, (many) => diffView(deps.streams, printer, many, useColor(deps.streams.out, deps.env)));
  if (noResources) return view.noResources(noResources);
  const refused = plans.filter((p) => p.refusals.some((r) => !r.forceable));
  if (refused.length) throw view.refusal(refused, plans.length);
  view.show(plans);
  // As kubectl diff: 1 when anything would change.
  if (plans.some((p) => !p.noChange)) throw new ExitCode(1);
}
