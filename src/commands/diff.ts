// `diff STS CLAIM=SIZE[,CLASS]...`: what `set` would change, as kubectl diff shows it.
// Exit codes as kubectl diff: 0 no change, 1 changes, >1 error. Changes nothing.
import { ExitCode } from "../errors";
import type { ParsedCommand } from "../cli/root";
import { diffView } from "../output/diff-view";
import { useColor } from "../streams";
import { completeChange } from "./complete-change";
import type { CommandDeps } from "./deps";

export type DiffOptions = Extract<ParsedCommand, { kind: "diff" }>;

export async function runDiff(opts: DiffOptions, deps: CommandDeps): Promise<void> {
  const { plans, view, noResources } = await completeChange(opts, deps, (many) => diffView(deps.streams, opts.output, many, useColor(deps.streams.out, deps.env)));
  if (noResources) return view.noResources(noResources);
  const refused = plans.filter((p) => p.refusals.some((r) => !r.forceable));
  if (refused.length) throw view.refusal(refused, plans.length);
  view.show(plans);
  // As kubectl diff: 1 when anything would change.
  if (plans.some((p) => !p.noChange)) throw new ExitCode(1);
}
