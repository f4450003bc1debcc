// `undo STS [--to-revision=N]`: the claim templates put back as they were one change earlier, as
// a change like any other (plan, confirm, journal, re-create, verify); existing claims keep their
// size. While an interrupted change is pending, the original object is put back from its journal.
import { RefusedError } from "../errors";
import type { ParsedCommand } from "../cli/root";
import { PlanError } from "../plan/fresh";
import { buildUndoPlan } from "../plan/undo";
import { runChange } from "./change";
import { connectWith, type CommandDeps } from "./deps";
import { observe } from "./observe";

export type UndoOptions = Extract<ParsedCommand, { kind: "undo" }>;

export async function runUndo(opts: UndoOptions, deps: CommandDeps): Promise<void> {
  const client = await connectWith(deps, opts.flags);
  const observed = await observe(client, { name: opts.name, directives: [] }, deps);
  let plan;
  try {
    plan = buildUndoPlan(observed, { namespace: client.namespace, name: opts.name, force: opts.force, ...(opts.toRevision !== undefined ? { toRevision: opts.toRevision } : {}) });
  } catch (e) {
    if (e instanceof PlanError) throw new RefusedError(e.message);
    throw e;
  }
  await runChange(client, [plan], { dryRun: opts.dryRun, yes: opts.yes, timeoutMs: opts.timeoutMs, output: opts.output, many: false, user: observed.user }, deps);
}
