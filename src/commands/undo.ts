// `undo STS [--to-revision=N]`: the claim templates put back as they were one change earlier, as
// a change like any other (plan, confirm, journal, re-create, verify); existing claims keep their
// size. While an interrupted change is pending, the original object is put back from its journal.
import type { ParsedCommand } from "../cli/root";
import { changeView } from "../output/change-view";
import { runChange } from "./change";
import { completeChange } from "./complete-change";
import type { CommandDeps } from "./deps";

export type UndoOptions = Extract<ParsedCommand, { kind: "undo" }>;

export async function runUndo(opts: UndoOptions, deps: CommandDeps): Promise<void> {
  const run = await completeChange(opts, deps, (many) => changeView(deps.streams, opts.output, many, opts.dryRun, opts.parallel));
  await runChange(run, opts, deps);
}
