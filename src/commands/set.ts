// `set STS CLAIM=SIZE[,CLASS]...`: plan, confirm, journal, orphan-delete, wait, re-create,
// verify adoption. Running it again after any interruption finishes the job.
import { applyPlan } from "../apply/apply";
import { holderFor } from "../apply/holder";
import { Progress } from "../apply/progress";
import { RefusedError, UsageError } from "../errors";
import type { ParsedCommand } from "../cli/root";
import type { IOStreams } from "../cli/streams";
import { canI, createStatefulSet, orphanDelete, type AccessCheck } from "../kube/api";
import type { KubeClient } from "../kube/client";
import { isAlreadyExists } from "../kube/errors";
import { DirectiveError, parseDirectives } from "../plan/directive";
import { buildPlan, PlanError, type Plan, type Step } from "../plan/plan";
import { renderPlan } from "../output/plan";
import { formatData } from "../output/yaml";
import { connectWith, type CommandDeps } from "./deps";
import { dryRunClaimPatches } from "../apply/resize";
import { existingResultLines } from "../output/resize";
import { confirmQuestion, existingAccess, observeExisting, statefulSetVerb } from "./existing";
import { observe } from "./observe";

export type SetOptions = Extract<ParsedCommand, { kind: "set" }>;

export function validateSet(opts: SetOptions): ReturnType<typeof parseDirectives> {
  try {
    return parseDirectives(opts.directives);
  } catch (e) {
    if (e instanceof DirectiveError) throw new UsageError(e.message);
    throw e;
  }
}

/** Every permission the run will use, checked before anything changes. */
export function requiredAccess(plan: Plan): (AccessCheck & { optional?: boolean })[] {
  const ns = plan.target.namespace;
  const name = plan.target.name;
  const checks: (AccessCheck & { optional?: boolean })[] = [];
  const sts = (verb: string, withName = true) => checks.push({ verb, group: "apps", resource: "statefulsets", namespace: ns, ...(withName ? { name } : {}) });
  const secret = (verb: string, withName = true) => checks.push({ verb, group: "", resource: "secrets", namespace: ns, ...(withName ? { name: `appstorage-journal-${name}` } : {}) });
  sts("get");
  if (plan.steps.includes("orphan-delete")) sts("delete");
  if (plan.steps.includes("create")) sts("create", false);
  if (plan.steps.includes("write-journal")) secret(plan.journal ? "update" : "create", !!plan.journal);
  if (plan.steps.includes("remove-journal")) secret("delete");
  if (plan.steps.includes("verify")) {
    checks.push({ verb: "list", group: "", resource: "pods", namespace: ns }, { verb: "watch", group: "", resource: "pods", namespace: ns });
  }
  if (plan.steps.includes("wait-gone")) checks.push({ verb: "watch", group: "apps", resource: "statefulsets", namespace: ns });
  if (plan.steps.includes("record")) checks.push({ verb: "create", group: "events.k8s.io", resource: "events", namespace: ns, optional: true });
  checks.push(...existingAccess(plan));
  return checks;
}

/**
 * Answers of SelfSubjectAccessReview, asked once each. The reviews of an ordinary fresh run are
 * asked while the cluster is being read (they do not depend on what is read), and preflight
 * reuses them; a plan that needs other checks (a resume, existing claims) asks for the rest.
 */
export class AccessAnswers {
  private readonly answers = new Map<string, Promise<boolean>>();

  constructor(readonly client: KubeClient) {}

  ask(check: AccessCheck & { optional?: boolean }): Promise<boolean> {
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

const freshSteps: Step[] = ["write-journal", "orphan-delete", "wait-gone", "create", "verify", "record", "remove-journal"];

/** The checks of an ordinary fresh run, known from the namespace and name alone. */
export function freshRunAccess(namespace: string, name: string): (AccessCheck & { optional?: boolean })[] {
  return requiredAccess({ target: { namespace, name, uid: "", resourceVersion: "" }, steps: freshSteps } as unknown as Plan);
}

async function preflight(access: AccessAnswers, plan: Plan, progress: Progress): Promise<void> {
  const client = access.client;
  const checks = requiredAccess(plan);
  const answers = await Promise.all(checks.map((c) => access.ask(c)));
  const missing = checks.filter((_, i) => !answers[i]);
  for (const m of missing.filter((c) => c.optional)) progress.warn(`you may not ${m.verb} ${m.resource} in namespace ${m.namespace}: the change will not be recorded as an event`);
  const blocking = missing.filter((c) => !c.optional);
  if (blocking.length) {
    const m = blocking[0]!;
    const what = `${m.verb} ${m.resource}${m.subresource ? `/${m.subresource}` : ""}${m.group ? `.${m.group}` : ""}${m.name ? ` "${m.name}"` : ""} in namespace ${m.namespace}`;
    throw new RefusedError(`you may not ${what}, which this change needs; nothing was changed: ask for that permission (kubectl auth can-i ${m.verb} ${m.resource}${m.group ? `.${m.group}` : ""}${m.subresource ? ` --subresource=${m.subresource}` : ""} -n ${m.namespace})`);
  }
  // The server's own answer to each claim patch (admission, quotas, validation), before any change.
  if (plan.steps.includes("grow-claims")) await dryRunClaimPatches(client, plan, progress);
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

async function serverDryRun(client: KubeClient, plan: Plan, progress: Progress): Promise<void> {
  const { namespace: ns, name, uid, resourceVersion } = plan.target;
  if (plan.steps.includes("orphan-delete")) {
    await orphanDelete(client, ns, name, { uid, resourceVersion }, "server");
    progress.say(`server dry run: the orphan delete of statefulset.apps/${name} would be accepted`);
  }
  if (plan.steps.includes("create")) {
    try {
      await createStatefulSet(client, ns, plan.desired, "server");
    } catch (e) {
      // Admission and validation run before the existence check: AlreadyExists means they passed.
      if (!isAlreadyExists(e)) throw new RefusedError(`the server would refuse the re-created statefulset.apps/${name}: ${(e as Error).message}`);
    }
    progress.say(`server dry run: the re-created statefulset.apps/${name} passes validation and admission`);
  }
}

export async function runSet(opts: SetOptions, deps: CommandDeps): Promise<void> {
  const directives = validateSet(opts);
  const { streams } = deps;
  const progress = new Progress(streams.errOut);
  const client = await connectWith(deps, opts.flags);
  const access = new AccessAnswers(client);
  if (opts.dryRun !== "client") for (const check of freshRunAccess(client.namespace, opts.name)) void access.ask(check);
  const { observed, store } = await observe(client, opts.name, deps);
  const existing = await observeExisting(client, opts.existing, directives);
  if (existing) observed.existing = existing;
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
  if (plan.noChange) {
    if (plan.steps.includes("remove-journal") && opts.dryRun === "none") await store.remove();
    streams.out.write(opts.output && opts.output !== "name" ? formatData(plan, opts.output) : opts.output === "name" ? `${ref}\n` : `${ref} unchanged${suffix}\n`);
    return;
  }
  if (opts.dryRun === "client") {
    streams.out.write(opts.output && opts.output !== "name" ? formatData(plan, opts.output) : opts.output === "name" ? `${ref}\n` : `${renderPlan(plan)}${ref} ${statefulSetVerb(plan)}${suffix}\n`);
    return;
  }
  await preflight(access, plan, progress);
  if (opts.dryRun === "server") {
    await serverDryRun(client, plan, progress);
    streams.out.write(opts.output && opts.output !== "name" ? formatData(plan, opts.output) : `${ref} ${statefulSetVerb(plan)}${suffix}\n`);
    return;
  }
  if (!opts.yes) {
    if (!streams.in.isTTY) throw new RefusedError(`refusing to re-create ${ref} without confirmation: there is no terminal to ask on; review it with kubectl appstorage diff, then pass --yes`);
    streams.errOut.write(renderPlan(plan));
    if (!(await confirm(streams, confirmQuestion(plan)))) throw new RefusedError("cancelled; nothing was changed");
  }
  const result = await applyPlan(plan, {
    client,
    store,
    progress,
    signal: deps.signal ?? new AbortController().signal,
    timeoutMs: opts.timeoutMs,
    now: deps.now,
    holder: holderFor(deps.pid ?? 0),
    by: observed.user,
  });
  if (opts.output === "name") streams.out.write(`${ref}\n`);
  else if (opts.output) streams.out.write(formatData(result, opts.output));
  else streams.out.write(`${ref} ${statefulSetVerb(plan)}\n${existingResultLines(result.existing)}`);
}
