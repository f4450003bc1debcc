// `set STS CLAIM=SIZE[,CLASS]...` (or `-l SELECTOR`, or `--plan FILE`): plan, confirm, journal,
// orphan-delete, wait, re-create, verify adoption. Running it again after any interruption
// finishes the job.
import { readFileSync } from "node:fs";
import { RefusedError, UsageError } from "../errors";
import type { ParsedCommand } from "../cli/root";
import type { KubeClient } from "../kube/client";
import { listJournals, listStatefulSets, whoAmI } from "../kube/read";
import type { StatefulSet } from "../kube/types";
import { freshRunAccess } from "../plan/access";
import { DirectiveError, parseDirectives } from "../plan/directive";
import { journalSecretName } from "../plan/journal";
import { buildPlan, PlanError } from "../plan/plan";
import { PlanFileError, plansOfDocument } from "../plan/seal";
import type { Plan, PlanRequest } from "../plan/types";
import { AccessAnswers, runChange } from "./change";
import { connectWith, type CommandDeps } from "./deps";
import { observe, observeMany } from "./observe";

export type SetOptions = Extract<ParsedCommand, { kind: "set" }>;

export function validateSet(opts: Pick<SetOptions, "directives">): ReturnType<typeof parseDirectives> {
  try {
    return parseDirectives(opts.directives);
  } catch (e) {
    if (e instanceof DirectiveError) throw new UsageError(e.message);
    throw e;
  }
}

export function planOrRefuse(observed: Parameters<typeof buildPlan>[0], request: PlanRequest): Plan {
  try {
    return buildPlan(observed, request);
  } catch (e) {
    if (e instanceof PlanError) throw new RefusedError(e.message);
    throw e;
  }
}

/** The plans of `set` and `diff`: one StatefulSet by name, or every one the selector matches. */
export async function plansFor(
  client: KubeClient,
  opts: Pick<SetOptions, "name" | "selector" | "allNamespaces" | "existing" | "directives"> & { force: boolean },
  deps: CommandDeps,
): Promise<{ plans: Plan[]; user: string }> {
  const directives = validateSet(opts);
  if (opts.selector !== undefined) {
    const targets = await observeMany(client, { selector: opts.selector, allNamespaces: opts.allNamespaces, directives, existing: opts.existing }, deps);
    return {
      plans: targets.map((t) => planOrRefuse(t.observed, { namespace: t.namespace, name: t.name, directives, force: opts.force, existing: opts.existing })),
      user: targets[0]?.observed.user ?? "unknown",
    };
  }
  const observed = await observe(client, { name: opts.name!, directives, existing: opts.existing }, deps);
  return { plans: [planOrRefuse(observed, { namespace: client.namespace, name: opts.name!, directives, force: opts.force, existing: opts.existing })], user: observed.user };
}

function readPlanFile(file: string): Plan[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new UsageError(`cannot read the plan file ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); pass the file written by kubectl appstorage diff ... -o json`);
  }
  let doc: unknown;
  try {
    // YAML is a superset of JSON: a plan saved with -o json or -o yaml reads the same.
    const { parse } = require("yaml") as typeof import("yaml");
    doc = parse(text);
  } catch (e) {
    throw new RefusedError(`${file} is not JSON or YAML (${(e as Error).message.split("\n")[0]}); make a new plan with kubectl appstorage diff ... -o json`);
  }
  try {
    return plansOfDocument(doc, file);
  } catch (e) {
    if (e instanceof PlanFileError) throw new RefusedError(e.message);
    throw e;
  }
}

/**
 * A reviewed plan is applied only to the very objects it was made for: the StatefulSet at the
 * planned uid and resourceVersion, the journal as it was (or still absent). Else it is stale.
 */
async function refuseStale(client: KubeClient, plans: readonly Plan[]): Promise<void> {
  // Two lists per namespace (its StatefulSets, its journals), whatever the number of plans.
  const namespaces = [...new Set(plans.map((p) => p.target.namespace))];
  const now = new Map<string, { statefulSets: Map<string, StatefulSet>; journals: Map<string, string> }>();
  await Promise.all(
    namespaces.map(async (ns) => {
      const journals = new Map<string, string>();
      const [sets, found] = await Promise.all([
        listStatefulSets(client, ns),
        // A journal that cannot be read still exists, at its version: the plan did not expect it.
        listJournals(client, ns, (secret) => journals.set(secret.metadata.name ?? "", secret.metadata.resourceVersion ?? "")),
      ]);
      for (const { journal, secret } of found) journals.set(journalSecretName(journal.name), secret.resourceVersion);
      now.set(ns, { statefulSets: new Map(sets.map((x) => [x.metadata.name!, x])), journals });
    }),
  );
  const stale: string[] = [];
  for (const plan of plans) {
    const { namespace: ns, name, uid, resourceVersion } = plan.target;
    const ref = `statefulset.apps/${name} in namespace ${ns}`;
    const sts = now.get(ns)!.statefulSets.get(name);
    const journalNow = now.get(ns)!.journals.get(journalSecretName(name));
    if (journalNow !== plan.journalSecret?.resourceVersion) {
      stale.push(`${ref}: its journal ${journalNow ? `is at resourceVersion ${journalNow}` : "is gone"}${plan.journalSecret ? ` (planned: ${plan.journalSecret.resourceVersion})` : " (planned: none)"}`);
      continue;
    }
    if (plan.mode === "fresh") {
      if (!sts) stale.push(`${ref}: it no longer exists`);
      else if (sts.metadata.uid !== uid || sts.metadata.resourceVersion !== resourceVersion) {
        stale.push(`${ref}: it is at uid ${sts.metadata.uid}, resourceVersion ${sts.metadata.resourceVersion} (planned: ${uid}, ${resourceVersion})`);
      }
      continue;
    }
    // A resume: the object must still be where the interrupted run left it.
    const expected = plan.steps.includes("wait-gone") ? "being deleted" : plan.steps.includes("create") ? "gone" : "re-created";
    const actual = !sts ? "gone" : sts.metadata.uid === uid ? "being deleted" : "re-created";
    if (expected !== actual) stale.push(`${ref}: it is ${actual} (planned: ${expected})`);
  }
  if (stale.length) throw new RefusedError(`the plan is stale, the cluster moved on since it was made: ${stale.sort().join("; ")}; nothing was changed: make a new plan with kubectl appstorage diff ... -o json`);
}

export async function runSet(opts: SetOptions, deps: CommandDeps): Promise<void> {
  const fromFile = opts.planFile !== undefined ? readPlanFile(opts.planFile) : undefined;
  if (!fromFile) validateSet(opts);
  const client = await connectWith(deps, opts.flags);
  const access = new AccessAnswers(client);
  let plans: Plan[];
  let user: string;
  if (fromFile) {
    await refuseStale(client, fromFile);
    plans = fromFile;
    user = await whoAmI(client);
  } else {
    if (opts.dryRun !== "client" && opts.name !== undefined) for (const check of freshRunAccess(client.namespace, opts.name)) void access.ask(check);
    ({ plans, user } = await plansFor(client, opts, deps));
    if (plans.length === 0) {
      deps.streams.errOut.write(opts.allNamespaces ? "No resources found\n" : `No resources found in ${client.namespace} namespace.\n`);
      return;
    }
  }
  await runChange(client, plans, { dryRun: opts.dryRun, yes: opts.yes, timeoutMs: opts.timeoutMs, output: opts.output, many: opts.selector !== undefined || plans.length > 1, user, access }, deps);
}
