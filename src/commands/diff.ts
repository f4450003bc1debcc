// `diff STS CLAIM=SIZE[,CLASS]...`: what `set` would change, as kubectl diff shows it.
// Exit codes as kubectl diff: 0 no change, 1 changes, >1 error. Changes nothing. As with kubectl
// diff, stdout carries the diff alone (or the plan, with -o json|yaml); what happens to each
// existing claim and to new ordinals goes to stderr, after the warnings.
import { ExitCode, RefusedError } from "../errors";
import type { ParsedCommand } from "../cli/root";
import type { StatefulSet } from "../kube/types";
import { changeAnnotation } from "../plan/desired";
import { buildPlan, PlanError } from "../plan/plan";
import { unifiedDiff } from "../output/diff";
import { renderExisting } from "../output/existing-claims";
import { newOrdinalsLine, renderClaims } from "../output/plan";
import { print } from "../output/printer";
import { useColor } from "../streams";
import { connectWith, type CommandDeps } from "./deps";
import { observe } from "./observe";
import { validateSet } from "./set";

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
  const directives = validateSet(opts);
  const client = await connectWith(deps, opts.flags);
  const observed = await observe(client, { name: opts.name, directives, existing: opts.existing }, deps);
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
  const { out, errOut } = deps.streams;
  const changed = !plan.noChange;
  const id = `apps.v1.StatefulSet.${plan.target.namespace}.${plan.target.name}`;
  print(out, opts.output, {
    data: plan,
    text: () => unifiedDiff(`live/${id}`, `merged/${id}`, comparable(plan.original), comparable(plan.desired), useColor(out, deps.env)),
  });
  for (const w of [...plan.warnings, ...needForce]) errOut.write(`Warning: ${w}\n`);
  if (changed && !opts.output) errOut.write(`${renderClaims(plan)}${renderExisting(plan)}${newOrdinalsLine(plan)}`);
  if (changed) throw new ExitCode(1);
}
