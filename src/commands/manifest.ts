// `set -f FILE` and `diff -f FILE` (`-f -`: standard input): the Complete step's part for a
// rendered manifest. Reads every file, keeps its StatefulSets (the other documents are counted on
// stderr), places each in a namespace as `kubectl apply -f` does, and plans each against the live
// object with the directives that make its claim templates equal to the manifest's.
import { readFileSync } from "node:fs";
import { RefusedError, UsageError } from "../errors";
import type { KubeClient } from "../kube/client";
import type { ExistingClaimsOptions } from "../plan/existing-claims-types";
import { journalIsStale } from "../plan/journal";
import { existingClaimNotes, ManifestError, manifestChange, manifestReads, statefulSetsOf } from "../plan/manifest";
import { claimTemplateNames } from "../plan/objects";
import { buildPlan } from "../plan/plan";
import type { Plan, PlanRequest } from "../plan/types";
import { statefulSetIn } from "../refs";
import type { Readable } from "../streams";
import type { CommandDeps } from "./deps";
import { observeTargets } from "./observe";

async function readStream(input: Readable): Promise<string> {
  let text = "";
  for await (const chunk of input) text += chunk.toString();
  return text;
}

/** Every document of the files, in order (YAML or JSON, one or many documents each). */
export async function readManifests(files: readonly string[], input: Readable): Promise<unknown[]> {
  const { parseAllDocuments } = require("yaml") as typeof import("yaml");
  const documents: unknown[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = file === "-" ? await readStream(input) : readFileSync(file, "utf8");
    } catch (e) {
      throw new UsageError(`cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); pass a manifest file, or - for standard input`);
    }
    for (const doc of parseAllDocuments(text)) {
      if (doc.errors.length) throw new RefusedError(`${file === "-" ? "standard input" : file} is not YAML or JSON (${doc.errors[0]!.message.split("\n")[0]}); nothing was changed`);
      documents.push(doc.toJS());
    }
  }
  return documents;
}

export interface ManifestAsk {
  files: readonly string[];
  force: boolean;
  existing?: ExistingClaimsOptions;
  pauseOwner?: boolean;
}

/** The plans of every StatefulSet in the manifests, all made before anything changes. */
export async function planManifests(client: KubeClient, ask: ManifestAsk, namespaceFlag: string | undefined, deps: CommandDeps): Promise<{ plans: Plan[]; user: string }> {
  let found: ReturnType<typeof statefulSetsOf>;
  try {
    found = statefulSetsOf(await readManifests(ask.files, deps.streams.in));
  } catch (e) {
    throw e instanceof ManifestError ? new RefusedError(`${e.message}; nothing was changed`) : e;
  }
  const skipped = [...found.skipped.entries()].map(([kind, n]) => `${n} ${kind}`);
  if (skipped.length) deps.streams.errOut.write(`skipped ${skipped.join(", ")}: only StatefulSets' claim templates are changed\n`);
  if (!found.statefulSets.length) throw new RefusedError(`the manifest holds no StatefulSet (${ask.files.join(", ")}); nothing was changed`);
  const targets = found.statefulSets.map((wanted) => {
    const name = wanted.metadata.name!;
    const namespace = wanted.metadata.namespace ?? client.namespace;
    // As kubectl apply -f: an explicit -n must agree with the document's namespace.
    if (namespaceFlag !== undefined && wanted.metadata.namespace !== undefined && wanted.metadata.namespace !== namespaceFlag) {
      throw new UsageError(
        `the namespace from the provided object "${wanted.metadata.namespace}" does not match the namespace "${namespaceFlag}". You must pass '--namespace=${wanted.metadata.namespace}' to perform this operation.`,
      );
    }
    return { namespace, name, wanted };
  });
  // The one observation stage of set NAME and set -l, with the same options (--migrate-existing's
  // nodes, cordons and budgets; --resize-existing's quotas), for every StatefulSet of the manifest
  // at once; the classes it reads are those the manifest names.
  const observedAll = await observeTargets(
    client,
    {
      scope: { kind: "names", targets: targets.map(({ namespace, name }) => ({ namespace, name })) },
      directives: found.statefulSets.flatMap(manifestReads),
      ...(ask.existing ? { existing: ask.existing } : {}),
    },
    deps,
  );
  const observedOf = new Map(observedAll.map((t) => [`${t.namespace}/${t.name}`, t.observed]));
  const plans = targets.map(({ namespace, name, wanted }) => {
    const observed = observedOf.get(`${namespace}/${name}`)!;
    const live = observed.statefulSet;
    if (!live && !observed.journal)
      throw new RefusedError(`${statefulSetIn(name, namespace)} of the manifest is not in the cluster: install it with helm install or kubectl apply; nothing was changed`);
    // An interrupted change is judged against the object it started from, so the same command
    // asks for the same change again and finishes it (live may be gone, or already re-created).
    const pending = observed.journal && !journalIsStale(observed.journal, live) ? observed.journal : undefined;
    const base = pending?.original ?? live!;
    const change = manifestChange(base, wanted);
    const request: PlanRequest = {
      namespace,
      name,
      directives: change.directives,
      force: ask.force,
      overwrite: true,
      fromManifest: true,
      ...(ask.existing ? { existing: ask.existing } : {}),
      ...(change.templateSet ? { templateSet: change.templateSet } : {}),
      ...(ask.pauseOwner ? { pauseOwner: true } : {}),
    };
    // The work on existing claims covers every template of the manifest that the cluster has, also one already equal to it.
    if (!change.refusals.length) request.templates = claimTemplateNames(base).filter((n) => !change.templateSet?.removed.includes(n));
    const plan = buildPlan({ ...observed }, request);
    plan.refusals.push(...change.refusals.map((message) => ({ message, forceable: false })));
    if (change.leftAlone.length) plan.warnings.push(`left for helm upgrade or your GitOps tool (the manifest changes them too): ${change.leftAlone.join(", ")}`);
    if (!change.refusals.length) plan.warnings.push(...existingClaimNotes(plan, observed, ask.existing));
    return { plan, user: observed.user };
  });
  return { plans: plans.map((p) => p.plan), user: plans[0]?.user ?? "unknown" };
}
