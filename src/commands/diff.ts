// `diff STS CLAIM=SIZE[,CLASS]...`: what `set` would change, as kubectl diff shows it.
// Exit codes as kubectl diff: 0 no change, 1 changes, >1 error. Changes nothing. As with kubectl
// diff, stdout carries the diff alone (or the plan, with -o json|yaml); what happens to each
// existing claim and to new ordinals goes to stderr, after the warnings.
import { ExitCode, RefusedError } from "../errors";
import type { ParsedCommand } from "../cli/root";
import type { StatefulSet } from "../kube/types";
import { changeAnnotation } from "../plan/desired";
import { historyAnnotation, historyOf } from "../plan/history";
import { seal, sealList } from "../plan/seal";
import { unifiedDiff } from "../output/diff";
import { renderExisting } from "../output/existing-claims";
import { newOrdinalsLine, renderClaims } from "../output/plan";
import { print } from "../output/printer";
import { useColor } from "../streams";
import { connectWith, type CommandDeps } from "./deps";
import { plansFor, validateSet } from "./set";

export type DiffOptions = Extract<ParsedCommand, { kind: "diff" }>;

/** The change and history annotations carry timestamps: leave them out so the diff shows only real change. */
function comparable(sts: StatefulSet): StatefulSet {
  // Only the annotations are copied: the rest is shared with the plan and only read.
  const { [changeAnnotation]: _change, [historyAnnotation]: _history, ...annotations } = sts.metadata.annotations ?? {};
  const { annotations: _all, ...metadata } = sts.metadata;
  return { ...sts, metadata: Object.keys(annotations).length ? { ...metadata, annotations } : metadata };
}

export async function runDiff(opts: DiffOptions, deps: CommandDeps): Promise<void> {
  validateSet(opts);
  const client = await connectWith(deps, opts.flags);
  const { plans } = await plansFor(client, { ...opts, force: false }, deps);
  const { out, errOut } = deps.streams;
  const many = opts.selector !== undefined;
  if (plans.length === 0) {
    errOut.write(opts.allNamespaces ? "No resources found\n" : `No resources found in ${client.namespace} namespace.\n`);
    return;
  }
  const refused = plans.filter((p) => p.refusals.some((r) => !r.forceable));
  if (refused.length && !many) throw new RefusedError(refused[0]!.refusals.find((r) => !r.forceable)!.message);
  if (refused.length) {
    for (const plan of refused) for (const r of plan.refusals.filter((x) => !x.forceable)) errOut.write(`refused: statefulset.apps/${plan.target.name} in namespace ${plan.target.namespace}: ${r.message}\n`);
    throw new RefusedError(`${refused.length} of ${plans.length} StatefulSet(s) refused (listed above)`);
  }
  print(out, opts.output, {
    data: () => (many ? sealList(plans) : seal(plans[0]!)),
    text: () =>
      plans
        .map((plan) => {
          const id = `apps.v1.StatefulSet.${plan.target.namespace}.${plan.target.name}`;
          return unifiedDiff(`live/${id}`, `merged/${id}`, comparable(plan.original), comparable(plan.desired), useColor(out, deps.env));
        })
        .join(""),
  });
  for (const plan of plans) {
    const prefix = many ? `statefulset.apps/${plan.target.name} in namespace ${plan.target.namespace}: ` : "";
    const needForce = plan.refusals.filter((r) => r.forceable).map((r) => `set will refuse without --force: ${r.message}`);
    for (const w of [...plan.warnings, ...needForce]) errOut.write(`Warning: ${prefix}${w}\n`);
    if (!plan.noChange && !opts.output) {
      const revision = historyOf(plan.desired).at(-1)!.revision;
      const history = plan.mode === "fresh" ? `the change becomes revision ${revision} of the claim templates (kubectl appstorage history ${plan.target.name})\n` : "";
      errOut.write(`${many ? `${prefix.slice(0, -2)}:\n` : ""}${renderClaims(plan)}${renderExisting(plan)}${newOrdinalsLine(plan)}${history}`);
    }
  }
  // As kubectl diff: 1 when anything would change.
  if (plans.some((p) => !p.noChange)) throw new ExitCode(1);
}
