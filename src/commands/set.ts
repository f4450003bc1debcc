// `set STS CLAIM=SIZE[,CLASS]...`: plan, confirm, journal, orphan-delete, wait, re-create,
// verify adoption. Running it again after any interruption finishes the job.
import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import { applyPlan } from "../apply/apply";
import { dryRunClaimPatches, serverDryRun } from "../apply/dry-run";
import { localJournalDir } from "../apply/journal-store";
import { Progress } from "../apply/progress";
import { RefusedError, UsageError } from "../errors";
import type { ParsedCommand } from "../cli/root";
import type { KubeClient } from "../kube/client";
import { canI } from "../kube/read";
import { canICommand, describeAccess, freshRunAccess, requiredAccess, type StepAccess, withoutText } from "../plan/access";
import { DirectiveError, parseDirectives } from "../plan/directive";
import { buildPlan, PlanError } from "../plan/plan";
import type { Plan } from "../plan/types";
import { existingResultLines } from "../output/existing-claims";
import { confirmQuestion, renderPlan, statefulSetVerb } from "../output/plan";
import { print } from "../output/printer";
import type { IOStreams } from "../streams";
import { connectWith, type CommandDeps } from "./deps";
import { observe } from "./observe";

export type SetOptions = Extract<ParsedCommand, { kind: "set" }>;

export function validateSet(opts: Pick<SetOptions, "directives">): ReturnType<typeof parseDirectives> {
  try {
    return parseDirectives(opts.directives);
  } catch (e) {
    if (e instanceof DirectiveError) throw new UsageError(e.message);
    throw e;
  }
}

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

export async function runSet(opts: SetOptions, deps: CommandDeps): Promise<void> {
  const directives = validateSet(opts);
  const { streams } = deps;
  const progress = new Progress(streams.errOut);
  const client = await connectWith(deps, opts.flags);
  const access = new AccessAnswers(client);
  if (opts.dryRun !== "client") for (const check of freshRunAccess(client.namespace, opts.name)) void access.ask(check);
  const observed = await observe(client, { name: opts.name, directives, existing: opts.existing }, deps);
  let plan: Plan;
  try {
    plan = buildPlan(observed, { namespace: client.namespace, name: opts.name, directives, force: opts.force, existing: opts.existing });
  } catch (e) {
    if (e instanceof PlanError) throw new RefusedError(e.message);
    throw e;
  }
  for (const w of plan.warnings) progress.warn(w);
  if (plan.refusals.length) throw new RefusedError(`${plan.refusals[0]!.message}${plan.refusals.length > 1 ? ` (and ${plan.refusals.length - 1} more refusal(s))` : ""}`);

  const suffix = opts.dryRun === "client" ? " (dry run)" : opts.dryRun === "server" ? " (server dry run)" : "";
  const ref = `statefulset.apps/${opts.name}`;
  const name = () => `${ref}\n`;
  if (plan.noChange) {
    // A stale journal is all there is to do: removed by a real run only.
    if (plan.steps.length && opts.dryRun === "none") await applyPlan(plan, applyContext(client, deps, progress, opts, observed.user));
    print(streams.out, opts.output, { data: plan, name, text: () => `${ref} unchanged${suffix}\n` });
    return;
  }
  if (opts.dryRun === "client") {
    print(streams.out, opts.output, { data: plan, name, text: () => `${renderPlan(plan)}${ref} ${statefulSetVerb(plan)}${suffix}\n` });
    return;
  }
  await preflight(access, plan, progress);
  if (opts.dryRun === "server") {
    await serverDryRun(client, plan, progress);
    print(streams.out, opts.output, { data: plan, name, text: () => `${ref} ${statefulSetVerb(plan)}${suffix}\n` });
    return;
  }
  if (!opts.yes) {
    if (!streams.in.isTTY) throw new RefusedError(`refusing to re-create ${ref} without confirmation: there is no terminal to ask on; review it with kubectl appstorage diff, then pass --yes`);
    streams.errOut.write(renderPlan(plan));
    if (!(await confirm(streams, confirmQuestion(plan)))) throw new RefusedError("cancelled; nothing was changed");
  }
  const result = await applyPlan(plan, applyContext(client, deps, progress, opts, observed.user));
  print(streams.out, opts.output, { data: result, name, text: () => `${ref} ${statefulSetVerb(plan)}\n${existingResultLines(result.existing)}` });
}

function applyContext(client: KubeClient, deps: CommandDeps, progress: Progress, opts: SetOptions, by: string) {
  return {
    client,
    progress,
    signal: deps.signal ?? new AbortController().signal,
    timeoutMs: opts.timeoutMs,
    now: deps.now,
    holder: `${hostname()}/${deps.pid ?? 0}/${randomUUID().slice(0, 8)}`,
    by,
    journalDir: localJournalDir(deps.env),
  };
}
