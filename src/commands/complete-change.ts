// The Complete step of the change commands (`set`, `diff`, `undo`), as kubectl's Options.Complete:
// from the parsed command line and the dependencies to what a run needs: the client, the plans
// (one StatefulSet by name, every one a selector matches, a reviewed plan file, or an undo),
// where they act, and the view chosen once for the run. Bad input is refused here, before
// the cluster is read; a plan that cannot be made is a refusal, translated here once.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { RefusedError, UsageError } from "../errors";
import type { KubeClient } from "../kube/client";
import { listStatefulSets, whoAmI } from "../kube/read";
import { listJournals } from "./journals";
import type { StatefulSet } from "../api/types";
import { freshRunAccess } from "../plan/access";
import { type Directive, DirectiveError, parseChangeWords } from "../plan/directive";
import { journalSecretName } from "../plan/journal";
import { buildPlan, PlanError } from "../plan/plan";
import { PlanFileError, plansOfDocument } from "../plan/seal";
import type { Journal, Plan } from "../plan/types";
import { runFinish } from "../plan/finish";
import type { ExistingClaimsOptions } from "../plan/existing-claims-types";
import { buildUndoPlan } from "../plan/undo";
import { whereLine } from "../output/plan";
import { statefulSetIn } from "../refs";
import { connectWith, type CommandDeps } from "./deps";
import { type ManifestAsk, planManifests } from "./manifest";
import { observeTargets } from "./observe";
import { type DiffOptions, existingClaimsOptions, type SetOptions, type UndoOptions } from "./change-options";
import { AccessAnswers } from "./preflight";

/** The options of a change command, validated (its validate step ran). */
export type ChangeCommand = ({ kind: "set" } & SetOptions) | ({ kind: "diff" } & DiffOptions) | ({ kind: "undo" } & UndoOptions);

/** What each StatefulSet's plan is asked for (a PlanRequest but for where: the namespace and name). */
type Ask = { directives: Directive[]; force: boolean; overwrite?: boolean; existing?: ExistingClaimsOptions; pauseOwner?: boolean };

/** What the command line asks for, checked: no cluster was read to make it. */
type ChangeRequest =
  | { kind: "file"; plans: Plan[] }
  | { kind: "manifest"; ask: ManifestAsk; namespaceFlag?: string }
  | { kind: "undo"; name: string; force: boolean; toRevision?: number }
  | { kind: "undoSelected"; selector: string; allNamespaces: boolean; force: boolean }
  | { kind: "name"; name: string; ask: Ask; prefetchAccess: boolean }
  | { kind: "selector"; selector: string; allNamespaces: boolean; ask: Ask };

export interface CompletedChange<V> {
  client: KubeClient;
  plans: Plan[];
  /** `where: context ... (server ...), namespace ..., user ...`: the last words before a confirmation. */
  where: string;
  view: V;
  /** Several StatefulSets (-l, or a plan list): per-object lines, all refusals listed, a summary. */
  many: boolean;
  /** The user the server sees, for the journal. */
  user: string;
  /** Permission reviews, some asked while the cluster was read. */
  access: AccessAnswers;
  /** Set when nothing matched: kubectl's "No resources found" line. */
  noResources?: string;
  /** The flags of this run that a command finishing it repeats (src/plan/finish.ts), for its journal. */
  finish: NonNullable<Journal["finish"]>;
}

/** This run's flags that a command finishing it repeats: -f files and the files of the connection flags as absolute paths (the line may be run elsewhere). */
function finishOf(opts: ChangeCommand): NonNullable<Journal["finish"]> {
  const f = opts.flags;
  const abs = (p: string | undefined) => (p === undefined || p === "" ? p : resolve(p));
  const filenames = opts.kind !== "undo" ? opts.filenames?.map((x) => (x === "-" ? x : resolve(x))) : undefined;
  return runFinish({
    ...(filenames ? { filenames } : {}),
    ...("timeoutMs" in opts ? { timeoutMs: opts.timeoutMs } : {}),
    connection: { ...f, kubeconfig: abs(f.kubeconfig), certificateAuthority: abs(f.certificateAuthority), clientCertificate: abs(f.clientCertificate), clientKey: abs(f.clientKey) },
  });
}

/** The plan layer's errors as the command line reports them: translated here, once. */
function commandError(e: unknown): unknown {
  if (e instanceof DirectiveError) return new UsageError(e.message);
  if (e instanceof PlanFileError || e instanceof PlanError) return new RefusedError(e.message);
  return e;
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
  return plansOfDocument(doc, file);
}

function requestOf(opts: ChangeCommand): ChangeRequest {
  if (opts.kind === "undo" && opts.selector !== undefined) return { kind: "undoSelected", selector: opts.selector, allNamespaces: opts.allNamespaces, force: opts.force };
  if (opts.kind === "undo") return { kind: "undo", name: opts.name!, force: opts.force, ...(opts.toRevision !== undefined ? { toRevision: opts.toRevision } : {}) };
  if (opts.kind === "set" && opts.planFile !== undefined) return { kind: "file", plans: readPlanFile(opts.planFile) };
  // diff shows what set --force would refuse; only set is forced.
  const existing = existingClaimsOptions(opts.existing);
  if (opts.filenames?.length) {
    const ask: ManifestAsk = {
      files: opts.filenames,
      force: opts.kind === "set" && opts.force,
      ...(existing ? { existing } : {}),
      ...(opts.kind === "set" && opts.pauseOwner ? { pauseOwner: true } : {}),
    };
    return { kind: "manifest", ask, ...(opts.flags.namespace !== undefined ? { namespaceFlag: opts.flags.namespace } : {}) };
  }
  const directives = parseChangeWords({
    directives: opts.directives,
    ...(opts.templateLabels ? { labels: opts.templateLabels } : {}),
    ...(opts.templateAnnotations ? { annotations: opts.templateAnnotations } : {}),
  });
  const ask: Ask = {
    directives,
    force: opts.kind === "set" && opts.force,
    ...(opts.overwrite ? { overwrite: true } : {}),
    ...(existing ? { existing } : {}),
    ...(opts.kind === "set" && opts.pauseOwner ? { pauseOwner: true } : {}),
  };
  if (opts.selector !== undefined) return { kind: "selector", selector: opts.selector, allNamespaces: opts.allNamespaces, ask };
  return { kind: "name", name: opts.name!, ask, prefetchAccess: opts.kind === "set" && opts.dryRun !== "client" };
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
  const stale = plans.flatMap((plan) => {
    const { statefulSets, journals } = now.get(plan.target.namespace)!;
    const why = staleness(plan, statefulSets.get(plan.target.name), journals.get(journalSecretName(plan.target.name)));
    return why ? [`${statefulSetIn(plan.target.name, plan.target.namespace)}: ${why}`] : [];
  });
  if (stale.length)
    throw new RefusedError(`the plan is stale, the cluster moved on since it was made: ${stale.sort().join("; ")}; nothing was changed: make a new plan with kubectl appstorage diff ... -o json`);
}

/** Why one plan no longer fits what the cluster holds now, or undefined when it still does. */
function staleness(plan: Plan, sts: StatefulSet | undefined, journalNow: string | undefined): string | undefined {
  const { uid, resourceVersion } = plan.target;
  if (journalNow !== plan.journalSecret?.resourceVersion) {
    return `its journal ${journalNow ? `is at resourceVersion ${journalNow}` : "is gone"}${plan.journalSecret ? ` (planned: ${plan.journalSecret.resourceVersion})` : " (planned: none)"}`;
  }
  if (plan.mode === "fresh") {
    if (!sts) return "it no longer exists";
    if (sts.metadata.uid !== uid || sts.metadata.resourceVersion !== resourceVersion) {
      return `it is at uid ${sts.metadata.uid}, resourceVersion ${sts.metadata.resourceVersion} (planned: ${uid}, ${resourceVersion})`;
    }
    return undefined;
  }
  // A resume: the object must still be where the interrupted run left it.
  const expected = plan.steps.includes("wait-gone") ? "being deleted" : plan.steps.includes("create") ? "gone" : "re-created";
  const actual = !sts ? "gone" : sts.metadata.uid === uid ? "being deleted" : "re-created";
  return expected === actual ? undefined : `it is ${actual} (planned: ${expected})`;
}

type Planned = { plans: Plan[]; user: string };
type Planner<R extends ChangeRequest> = (client: KubeClient, request: R, access: AccessAnswers, deps: CommandDeps) => Promise<Planned>;
type Of<K extends ChangeRequest["kind"]> = Extract<ChangeRequest, { kind: K }>;

/** A reviewed plan file: applied as it is, if the cluster has not moved on. */
const planFile: Planner<Of<"file">> = async (client, request) => {
  await refuseStale(client, request.plans);
  return { plans: request.plans, user: await whoAmI(client) };
};

// Every planner reads the cluster through the one observation stage (observeTargets): a StatefulSet
// by name, by selector or from a manifest is read with the same reads for the same options.
const planUndo: Planner<Of<"undo">> = async (client, { name, force, toRevision }, _access, deps) => {
  const [t] = await observeTargets(client, { scope: { kind: "names", targets: [{ namespace: client.namespace, name }] }, directives: [] }, deps);
  return { plans: [buildUndoPlan(t!.observed, { namespace: client.namespace, name, force, ...(toRevision !== undefined ? { toRevision } : {}) })], user: t!.observed.user };
};

/** undo -l: each StatefulSet the selector matches goes back one change (and each interrupted one is put back). */
const planUndoSelected: Planner<Of<"undoSelected">> = async (client, { selector, allNamespaces, force }, _access, deps) => {
  const targets = await observeTargets(client, { scope: { kind: "selector", selector, allNamespaces }, directives: [] }, deps);
  return { plans: targets.map((t) => buildUndoPlan(t.observed, { namespace: t.namespace, name: t.name, force })), user: targets[0]?.observed.user ?? "unknown" };
};

const planByName: Planner<Of<"name">> = async (client, { name, ask, prefetchAccess }, access, deps) => {
  // The reviews of a fresh run do not depend on what is read: ask them meanwhile.
  if (prefetchAccess) for (const check of freshRunAccess(client.namespace, name)) void access.ask(check);
  const [t] = await observeTargets(client, { scope: { kind: "names", targets: [{ namespace: client.namespace, name }] }, ...observeAsk(ask) }, deps);
  return { plans: [buildPlan(t!.observed, { namespace: client.namespace, name, ...ask })], user: t!.observed.user };
};

const planBySelector: Planner<Of<"selector">> = async (client, { selector, allNamespaces, ask }, _access, deps) => {
  const targets = await observeTargets(client, { scope: { kind: "selector", selector, allNamespaces }, ...observeAsk(ask) }, deps);
  return { plans: targets.map((t) => buildPlan(t.observed, { namespace: t.namespace, name: t.name, ...ask })), user: targets[0]?.observed.user ?? "unknown" };
};

/** What the observation stage is asked besides the scope: the directives and the work on existing claims. */
const observeAsk = (ask: Pick<Ask, "directives" | "existing">) => ({ directives: ask.directives, ...(ask.existing ? { existing: ask.existing } : {}) });

/** set -f, diff -f: every StatefulSet of the manifests, planned against the live object. */
const planManifest: Planner<Of<"manifest">> = (client, { ask, namespaceFlag }, _access, deps) => planManifests(client, ask, namespaceFlag, deps);

/** One planner per kind of request: what it reads and how it plans. */
const planners: { [K in ChangeRequest["kind"]]: Planner<Of<K>> } = {
  file: planFile,
  manifest: planManifest,
  undo: planUndo,
  undoSelected: planUndoSelected,
  name: planByName,
  selector: planBySelector,
};

/** The Complete step: `viewFor` chooses the run's one view, once it is known whether the run is over several StatefulSets. */
export async function completeChange<V>(opts: ChangeCommand, deps: CommandDeps, viewFor: (many: boolean) => V): Promise<CompletedChange<V>> {
  try {
    const request = requestOf(opts);
    const client = await connectWith(deps, opts.flags);
    const access = new AccessAnswers(client);
    const planner = planners[request.kind] as Planner<ChangeRequest>;
    const { plans, user } = await planner(client, request, access, deps);
    const many = request.kind === "selector" || request.kind === "undoSelected" || plans.length > 1;
    const nothing = plans.length === 0 && request.kind !== "file";
    return {
      client,
      plans,
      user,
      access,
      many,
      where: `where: ${whereLine(
        client.target,
        plans.map((p) => p.target.namespace),
      )}`,
      view: viewFor(many),
      finish: finishOf(opts),
      ...(nothing
        ? { noResources: (request.kind === "selector" || request.kind === "undoSelected") && request.allNamespaces ? "No resources found" : `No resources found in ${client.namespace} namespace.` }
        : {}),
    };
  } catch (e) {
    throw commandError(e);
  }
}
