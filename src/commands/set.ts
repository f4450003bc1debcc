// `set STS CLAIM=SIZE[,CLASS]...` (or `-l SELECTOR`, or `--plan FILE`): plan, confirm, journal,
// orphan-delete, wait, re-create, verify adoption. Running it again after any interruption
// finishes the job.
import { changeView } from "../output/change-view";
import { printFlags } from "../output/print-flags";
import { runChange } from "./change";
import { existingClaimsOptions, type SetOptions, validateChangeFlags, validateChangeTargets } from "./change-options";
import { completeChange } from "./complete-change";
import type { CommandDeps } from "./deps";

export type { SetOptions };

/** The Validate step: usage errors only, before anything is read. */
export function validateSet(opts: SetOptions): void {
  validateChangeTargets(opts, "set");
  validateChangeFlags(opts, printFlags.set);
  existingClaimsOptions(opts.existing);
}

export async function runSet(opts: SetOptions, deps: CommandDeps): Promise<void> {
  validateSet(opts);
  const printer = printFlags.set.toPrinter(opts.output);
  const run = await completeChange({ kind: "set", ...opts }, deps, (many) => changeView(deps.streams, printer, many, opts.dryRun, opts.parallel));
  await runChange(run, opts, deps);
}
