// `undo STS [--to-revision=N]`: the claim templates put back as they were one change earlier, as
// a change like any other (plan, confirm, journal, re-create, verify); existing claims keep their
// size. While an interrupted change is pending, the original object is put back from its journal.
import { changeView } from "../output/change-view";
import { printFlags } from "../output/print-flags";
import { runChange } from "./change";
import { type UndoOptions, validateChangeFlags, validateUndoTargets } from "./change-options";
import { completeChange } from "./complete-change";
import type { CommandDeps } from "./deps";

export type { UndoOptions };

/** The Validate step: usage errors only, before anything is read. */
export function validateUndo(opts: UndoOptions): void {
  validateUndoTargets(opts);
  validateChangeFlags(opts, printFlags.undo);
}

export async function runUndo(opts: UndoOptions, deps: CommandDeps): Promise<void> {
  validateUndo(opts);
  const printer = printFlags.undo.toPrinter(opts.output);
  const run = await completeChange({ kind: "undo", ...opts }, deps, (many) => changeView(deps.streams, printer, many, opts.dryRun, opts.parallel));
  await runChange(run, opts, deps);
}
