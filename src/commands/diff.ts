// `diff STS CLAIM=SIZE[,CLASS]...`: what `set` would change, as kubectl diff shows it.
// Exit codes as kubectl diff: 0 no change, 1 changes, >1 error. Changes nothing.
import { ExitCode, RefusedError, UsageError } from "../errors";
import type { ParsedCommand } from "../cli/root";
import { useColor } from "../cli/streams";
import { DirectiveError, parseDirectives } from "../plan/directive";
import { changeAnnotation } from "../plan/desired";
import { buildPlan, PlanError } from "../plan/plan";
import { unifiedDiff } from "../output/diff";
import { renderClaims } from "../output/plan";
import { renderExisting } from "../output/resize";
import { formatData } from "../output/yaml";
import type { StatefulSet } from "../kube/types";
import { connectWith, type CommandDeps } from "./deps";
import { observeExisting } from "./existing";
import { observe } from "./observe";

export type DiffOptions = Extract<ParsedCommand, { kind: "diff" }>;

/** The change annotation carries a timestamp: leave it out so the diff shows only real change. */
function comparable(sts: StatefulSet): StatefulSet {
  const copy = JSON.parse(JSON.stringify(sts)) as StatefulSet;
  if (copy.metadata.annotations) {
    delete copy.metadata.annotations[changeAnnotation];
    if (Object.keys(copy.metadata.annotations).length === 0) delete copy.metadata.annotations;
  }
  return copy;
}

export async function runDiff(opts: DiffOptions, deps: CommandDeps): Promise<void> {
  let directives;
  try {
    directives = parseDirectives(opts.directives);
  } catch (e) {
    if (e instanceof DirectiveError) throw new UsageError(e.message);
    throw e;
  }
  const client = await connectWith(deps, opts.flags);
  const { observed } = await observe(client, opts.name, deps);
  const existing = await observeExisting(client, opts.existing, directives);
  if (existing) observed.existing = existing;
  let plan;
  try {
    plan = buildPlan(observed, { namespace: client.namespace, name: opts.name, directives, force: false, existing: opts.existing });
  } catch (e) {
    if (e instanceof PlanError) throw new RefusedError(e.message);
    throw e;
  }
  const refusal = plan.refusals.find((r) => !r.forceable);
  if (refusal) throw new RefusedError(refusal.message);
  const needForce = plan.refusals.filter((r) => r.forceable).map((r) => `set will refuse without --force: ${r.message}`);
  const { out } = deps.streams;
  const changed = !plan.noChange;
  if (opts.output) {
    out.write(formatData(plan, opts.output));
  } else {
    const id = `apps.v1.StatefulSet.${plan.target.namespace}.${plan.target.name}`;
    const before = comparable(plan.original);
    const after = comparable(plan.desired);
    out.write(unifiedDiff(`live/${id}`, `merged/${id}`, before, after, useColor(out, deps.env)));
    if (changed) {
      out.write("\n");
      out.write(renderClaims(plan));
      out.write(renderExisting(plan));
      const future = plan.newOrdinals.templates.map((t) => `${t.claim} ${t.size ?? ""}${t.storageClass ? ` (${t.storageClass})` : ""}`).join(", ");
      out.write(`new ordinals (${plan.newOrdinals.from} and up) get: ${future}\n`);
    }
  }
  for (const w of [...plan.warnings, ...needForce]) deps.streams.errOut.write(`Warning: ${w}\n`);
  if (changed) throw new ExitCode(1);
}
