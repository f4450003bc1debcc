// `set STS CLAIM=SIZE[,CLASS]...` (or `-l SELECTOR`, or `--plan FILE`): plan, confirm, journal,
// orphan-delete, wait, re-create, verify adoption. Running it again after any interruption
// finishes the job.
import type { ParsedCommand } from "../cli/root";
import { changeView } from "../output/change-view";
import { runChange } from "./change";
import { completeChange } from "./complete-change";
import type { CommandDeps } from "./deps";

export type SetOptions = Extract<ParsedCommand, { kind: "set" }>;

export async function runSet(opts: SetOptions, deps: CommandDeps): Promise<void> {
  const run = await completeChange(opts, deps, (many) => changeView(deps.streams, opts.output, many, opts.dryRun, opts.parallel));
  await runChange(run, opts, deps);
}
