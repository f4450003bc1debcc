// The part every change shares (`set`, `set -l`, `set --plan`, `undo`): warnings and refusals of
// all plans first (one refused: nothing changes), the dry runs, the permission preflight, one
// confirmation, then one StatefulSet at a time, each with its own journal; the first failure
// stops the run and says which are done, and the same command run again finishes the rest.
import { applyPlan, type ApplyContext } from "../apply/apply";
import { holderFor } from "../apply/holder";
import { dryRunClaimPatches, serverDryRun } from "../apply/dry-run";
import { localJournalDir } from "../apply/journal-store";
import { Progress } from "../apply/progress";
import { RefusedError, StopError } from "../errors";
import type { KubeClient } from "../kube/client";
import { canI } from "../kube/read";
import { canICommand, describeAccess, requiredAccess, type StepAccess, withoutText } from "../plan/access";
import { seal, sealList } from "../plan/seal";
import { apiVersion, type ApplyResult, type Plan } from "../plan/types";
import { existingResultLines } from "../output/existing-claims";
import { confirmQuestion, renderPlan, statefulSetVerb, whereLine } from "../output/plan";
import { print, type OutputFormat } from "../output/printer";
import { renderTable } from "../output/table";
import type { IOStreams } from "../streams";
import type { CommandDeps } from "./deps";

/**
 * Answers of SelfSubjectAccessReview, asked once each. The reviews of an ordinary fresh run are
 * asked while the cluster is being read (they do not depend on what is read), and preflight
 * reuses them; a plan that needs other checks (a resume, existing claims) asks for the rest.
 */
export class AccessAnswers {
  private readonly answers = new Map<string, Promise<boolean>>();

  constructor(readonly client: KubeClient) {}

  ask(check: StepAccess): Promise<boolean> {
    const { optional: _optional, ...attributes } = check;
    const key = JSON.stringify(attributes);
    let answer = this.answers.get(key);
    if (!answer) {
      answer = canI(this.client, attributes);
      // Prefetched and never needed: an error there must not become an unhandled rejection.
      answer.catch(() => undefined);
      this.answers.set(key, answer);
    }
    return answer;
  }
}

/** Every permission the plan's steps use, and the server's answer to each claim patch, before any change. */
async function preflight(access: AccessAnswers, plan: Plan, progress: Progress): Promise<void> {
  const checks = requiredAccess(plan);
  const answers = await Promise.all(checks.map((c) => access.ask(c)));
  const missing = checks.filter((_, i) => !answers[i]);
  for (const m of missing.filter((c) => c.optional)) progress.warn(`you may not ${describeAccess(m)}: ${withoutText(m)}`);
  const blocking = missing.filter((c) => !c.optional);
  if (blocking.length) {
    const what = blocking.map(describeAccess).join(", ");
    throw new RefusedError(
      `you may not ${what}, which this change needs; nothing was changed: ask for ${blocking.length > 1 ? "those permissions" : "that permission"} (${blocking.map(canICommand).join("; ")}; kubectl appstorage rbac prints a Role with all of them)`,
    );
  }
  // The server's own answer to each claim patch (admission, quotas, validation), before any change.
  if (plan.steps.includes("grow-claims")) await dryRunClaimPatches(access.client, plan, progress);
}

async function confirm(streams: IOStreams, question: string): Promise<boolean> {
  streams.errOut.write(`${question} [y/N]: `);
  let line = "";
  for await (const chunk of streams.in) {
    line += chunk.toString();
    if (line.includes("\n")) break;
  }
  return /^y(es)?$/i.test(line.trim());
}

export interface ChangeOptions {
  dryRun: "none" | "client" | "server";
  yes: boolean;
  timeoutMs: number;
  output?: OutputFormat;
  /** Several StatefulSets (-l, or a PlanList): per-object lines, all refusals listed, a summary. */
  many: boolean;
  /** The user the server sees, for the journal. */
  user: string;
  /** Asks the fresh-run reviews early (they were prefetched while reading). */
  access?: AccessAnswers;
}

const refOf = (plan: Plan) => `statefulset.apps/${plan.target.name}`;
const where = (plan: Plan) => `${refOf(plan)} in namespace ${plan.target.namespace}`;

function applyContext(client: KubeClient, deps: CommandDeps, progress: Progress, opts: ChangeOptions): ApplyContext {
  return {
    client,
    progress,
    signal: deps.signal ?? new AbortController().signal,
    timeoutMs: opts.timeoutMs,
    now: deps.now,
    holder: holderFor(deps.pid ?? 0),
    by: opts.user,
    journalDir: localJournalDir(deps.env),
  };
}

/** The plans, refused as a whole if any one is refused; else dry-run, confirmed and applied one at a time. */
export async function runChange(client: KubeClient, plans: readonly Plan[], opts: ChangeOptions, deps: CommandDeps): Promise<void> {
  const { streams } = deps;
  const progress = new Progress(streams.errOut);
  for (const plan of plans) for (const w of plan.warnings) progress.warn(opts.many ? `${where(plan)}: ${w}` : w);
  const refused = plans.filter((p) => p.refusals.length);
  if (refused.length && !opts.many) {
    const plan = refused[0]!;
    throw new RefusedError(`${plan.refusals[0]!.message}${plan.refusals.length > 1 ? ` (and ${plan.refusals.length - 1} more refusal(s))` : ""}`);
  }
  if (refused.length) {
    for (const plan of refused) for (const r of plan.refusals) streams.errOut.write(`refused: ${where(plan)}: ${r.message}\n`);
    throw new RefusedError(`${refused.length} of ${plans.length} StatefulSet(s) refused (listed above); nothing was changed: fix them, or narrow the selector`);
  }

  const suffix = opts.dryRun === "client" ? " (dry run)" : opts.dryRun === "server" ? " (server dry run)" : "";
  const data = () => (opts.many ? sealList(plans) : seal(plans[0]!));
  const names = () => plans.map((p) => `${refOf(p)}\n`).join("");
  const changing = plans.filter((p) => !p.noChange);
  if (changing.length === 0) {
    // A stale journal is all there is to do: removed by a real run only.
    if (opts.dryRun === "none") for (const plan of plans.filter((p) => p.steps.length)) await applyPlan(plan, applyContext(client, deps, progress, opts));
    print(streams.out, opts.output, { data, name: names, text: () => plans.map((p) => `${refOf(p)} unchanged${suffix}\n`).join("") });
    return;
  }
  const acting = `where: ${whereLine(client.target, plans.map((p) => p.target.namespace))}`;
  if (opts.dryRun === "client") {
    print(streams.out, opts.output, {
      data,
      name: names,
      text: () => plans.map((p) => (p.noChange ? `${refOf(p)} unchanged${suffix}\n` : `${renderPlan(p)}${acting}\n${refOf(p)} ${statefulSetVerb(p)}${suffix}\n`)).join(""),
    });
    return;
  }
  const access = opts.access ?? new AccessAnswers(client);
  // Every plan's reviews at once: a -l run over many StatefulSets waits for one round, not one per object.
  await Promise.all(changing.map((plan) => preflight(access, plan, progress)));
  if (opts.dryRun === "server") {
    for (const plan of changing) await serverDryRun(client, plan, progress);
    print(streams.out, opts.output, { data, name: names, text: () => plans.map((p) => `${refOf(p)} ${p.noChange ? "unchanged" : statefulSetVerb(p)}${suffix}\n`).join("") });
    return;
  }
  if (!opts.yes) {
    const what = opts.many ? `${changing.length} StatefulSets` : refOf(changing[0]!);
    if (!streams.in.isTTY) throw new RefusedError(`refusing to re-create ${what} without confirmation: there is no terminal to ask on; review it with kubectl appstorage diff, then pass --yes`);
    for (const plan of changing) streams.errOut.write(renderPlan(plan));
    // The last thing before [y/N]: where this acts (context, server, namespace, and as whom).
    const question = opts.many ? `Change the claim templates of ${changing.length} StatefulSets (${changing.map((p) => p.target.name).join(", ")}), one at a time? Their pods keep running.` : confirmQuestion(changing[0]!);
    if (!(await confirm(streams, `${question}\n${acting}`))) throw new RefusedError("cancelled; nothing was changed");
  }

  const results: ApplyResult[] = [];
  const done: string[] = [];
  for (const [i, plan] of plans.entries()) {
    try {
      if (plan.noChange) {
        if (plan.steps.length) await applyPlan(plan, applyContext(client, deps, progress, opts));
        done.push(`${refOf(plan)} unchanged`);
        if (opts.many && !opts.output) streams.out.write(`${refOf(plan)} unchanged\n`);
        continue;
      }
      const result = await applyPlan(plan, applyContext(client, deps, progress, opts));
      results.push(result);
      done.push(`${refOf(plan)} ${statefulSetVerb(plan)}`);
      if (opts.many && !opts.output) streams.out.write(`${refOf(plan)} ${statefulSetVerb(plan)}\n${existingResultLines(result.existing)}`);
      if (!opts.many) {
        print(streams.out, opts.output, { data: () => result, name: names, text: () => `${refOf(plan)} ${statefulSetVerb(plan)}\n${existingResultLines(result.existing)}` });
      }
    } catch (e) {
      if (!opts.many) throw e;
      const rest = plans.slice(i + 1).map((p) => p.target.name);
      streams.errOut.write(summary(plans, done, i, e));
      const message = `stopped at ${where(plan)}: ${(e as Error).message}; done: ${done.length ? done.join(", ") : "none"}; not done: ${[plan.target.name, ...rest].join(", ")}: run the same command again to finish the rest`;
      throw done.length || e instanceof StopError ? new StopError(message) : new RefusedError(message);
    }
  }
  if (opts.many) {
    if (opts.output === "json" || opts.output === "yaml") print(streams.out, opts.output, { data: () => ({ apiVersion, kind: "ResultList", items: results }), text: () => "" });
    else if (opts.output === "name") streams.out.write(names());
    streams.errOut.write(summary(plans, done, plans.length));
  }
}

/** The table at the end of a run over several StatefulSets (on stderr: stdout keeps kubectl's lines). */
function summary(plans: readonly Plan[], done: readonly string[], failedAt: number, error?: unknown): string {
  const rows = plans.map((p, i) => [p.target.namespace, p.target.name, i < failedAt ? done[i]!.split(" ").pop()! : i === failedAt ? `failed: ${((error as Error)?.message ?? "").split(";")[0]}` : "not done"]);
  return renderTable(["namespace", "statefulset", "result"], rows);
}
