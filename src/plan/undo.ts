// `undo`: the claim templates put back as they were one change earlier (or at a revision of the
// history), planned as a change like any other: existing claims keep their size (nothing is ever
// shrunk), and the undo is a new revision. While an interrupted change is pending, undo puts
// back the original object exactly as the journal saved it instead. Pure.
import { formatDirective } from "./directive";
import type { StatefulSet } from "../api/types";
import type { Directive } from "./directive";
import { PlanError } from "./fresh";
import { historyOf, type Revision } from "./history";
import { editsBetween } from "./template-metadata";
import { journalIsStale, finishCommand } from "./journal";
import { templateSize } from "./objects";
import { buildPlan } from "./plan";
import { changesOf, resumePlan } from "./resume";
import type { Journal, Observed, Plan, PlanRequest, Refusal } from "./types";
import { statefulSetRef } from "../refs";

export interface UndoRequest {
  namespace: string;
  name: string;
  /** --to-revision; undefined: the revision before the current one. */
  toRevision?: number;
  force: boolean;
}

function refused(observed: Observed, request: UndoRequest, message: string): Plan {
  // A plan that only refuses: built for the object as it is, with the refusal.
  const plan = buildPlan(observed, { namespace: request.namespace, name: request.name, directives: [], force: request.force });
  const refusal: Refusal = { message, forceable: false };
  return { ...plan, refusals: [refusal, ...plan.refusals], steps: [] };
}

/** The directives that turn the current templates into the revision's, or why they cannot. */
function directivesTo(sts: StatefulSet, target: Revision): Directive[] | string {
  const current = new Map((sts.spec.volumeClaimTemplates ?? []).map((t) => [t.metadata.name ?? "", t]));
  const directives: Directive[] = [];
  const wanted = new Set(target.templates.map((t) => t.metadata.name ?? ""));
  const added = [...current.keys()].filter((n) => !wanted.has(n));
  if (added.length)
    return `revision ${target.revision} has no claim template ${added.join(", ")}, which a later change added with its mounts; undo does not remove templates: remove it with set -f and a manifest without it (its pods restart, its claims are kept)`;
  for (const t of target.templates) {
    const name = t.metadata.name ?? "";
    const now = current.get(name);
    if (!now) return `revision ${target.revision} has claim template "${name}", which ${statefulSetRef(sts.metadata.name ?? "")} no longer has; adding or renaming claim templates is not supported`;
    const d: Directive = { claim: name, size: templateSize(t) };
    const cls = t.spec.storageClassName;
    if (cls !== now.spec.storageClassName) {
      if (cls === undefined)
        return `revision ${target.revision} leaves the storage class of "${name}" to the cluster default, and a class cannot be removed from a claim template by this tool: set the class you want with kubectl appstorage set`;
      d.storageClass = cls;
    }
    const vac = t.spec.volumeAttributesClassName;
    if (vac !== now.spec.volumeAttributesClassName) {
      if (vac === undefined) return `revision ${target.revision} has no volume attributes class for "${name}", and one cannot be removed by this tool`;
      d.volumeAttributesClass = vac;
    }
    // Labels and annotations only where the revision recorded them; access modes are in every revision's spec.
    if (target.labelled) {
      const labels = editsBetween(now.metadata.labels, t.metadata.labels);
      const annotations = editsBetween(now.metadata.annotations, t.metadata.annotations);
      if (Object.keys(labels).length) d.labels = labels;
      if (Object.keys(annotations).length) d.annotations = annotations;
    }
    if (t.spec.accessModes && (t.spec.accessModes ?? []).join() !== (now.spec.accessModes ?? []).join()) d.accessModes = [...t.spec.accessModes];
    directives.push(d);
  }
  return directives;
}

/** The original put back from the journal of an interrupted change. */
function restoreFromJournal(observed: Observed, request: UndoRequest, journal: Journal): Plan {
  const sts = observed.statefulSet;
  const ref = statefulSetRef(request.name);
  if (request.toRevision !== undefined) {
    return refused(observed, request, `an interrupted change of ${ref} is pending (${journal.request.join(" ")}); undo without --to-revision puts back the object as it was before it`);
  }
  if (journal.migration) {
    return refused(
      observed,
      request,
      `an interrupted --migrate-existing of ${ref} is moving its claims to new volumes; undo does not move claims back: finish it with: ${finishCommand(journal)}, then move them back the same way with set --migrate-existing (the old volumes are kept: kubectl appstorage show ${request.name} -n ${request.namespace})`,
    );
  }
  // The journal now re-creates the original: a rerun of undo (or of set) finishes that.
  // The original's pod template is its pods' until a roll began: putting it back needs no restart (a roll that began makes the journal stale below).
  const { roll: _roll, ...rest } = journal;
  const restoring: Journal = journal.command === "undo" ? journal : { ...rest, desired: journal.original, request: ["undo"], command: "undo" };
  if (journalIsStale(restoring, sts)) {
    return refused(
      observed,
      request,
      `the interrupted change already re-created ${ref} with the new claim templates (uid ${sts?.metadata.uid}); finish it with: ${finishCommand(journal)}, then run kubectl appstorage undo ${request.name} -n ${request.namespace}`,
    );
  }
  const plan = resumePlan({ ...observed, journal: restoring }, { namespace: request.namespace, name: request.name, directives: [], force: request.force }, restoring, ["undo"]);
  // What is undone: the interrupted change, backwards.
  const changes = (journal.command === "undo" ? [] : changesOf(journal)).map((c) => ({
    claim: c.claim,
    before: c.after,
    after: c.before,
  }));
  const warnings = plan.refusals.length ? plan.warnings : [`putting back ${ref} exactly as the interrupted change (${journal.request.join(" ")}) saved it before deleting it`, ...plan.warnings];
  // The journal is taken over at the version it was read (as buildPlan does for set).
  return JSON.parse(JSON.stringify({ ...plan, changes, warnings, ...(observed.journalSecret ? { journalSecret: observed.journalSecret } : {}) })) as Plan;
}

/** The plan of `undo`: to the revision before the current one, or to --to-revision. */
export function buildUndoPlan(observed: Observed, request: UndoRequest): Plan {
  const journal = observed.journal;
  const sts = observed.statefulSet;
  if (journal && !journalIsStale(journal, sts)) return restoreFromJournal(observed, request, journal);
  if (!sts) throw new PlanError(`statefulsets.apps "${request.name}" not found in namespace "${request.namespace}"`);
  const ref = statefulSetRef(request.name);
  const revisions = historyOf(sts);
  const current = revisions[revisions.length - 1]!;
  if (revisions.length < 2) return refused(observed, request, `${ref} has no recorded change of its claim templates to undo (see kubectl appstorage history ${request.name} -n ${request.namespace})`);
  const wanted = request.toRevision ?? revisions[revisions.length - 2]!.revision;
  const target = revisions.find((r) => r.revision === wanted);
  if (!target) {
    return refused(
      observed,
      request,
      `revision ${wanted} of ${ref} not found: its history has revisions ${revisions.map((r) => r.revision).join(", ")} (kubectl appstorage history ${request.name} -n ${request.namespace})`,
    );
  }
  if (target.revision === current.revision) return refused(observed, request, `revision ${wanted} is the current one of ${ref}; nothing to undo`);
  const directives = directivesTo(sts, target);
  if (typeof directives === "string") return refused(observed, request, directives);
  // A move of claims is not undone by putting templates back: the claims stay on their new volumes.
  const moved = revisions.filter((r) => r.revision > target.revision && r.change?.includes("--migrate-existing"));
  if (moved.length) {
    return refused(
      observed,
      request,
      `revision ${moved.map((r) => r.revision).join(", ")} of ${ref} moved its claims to new volumes (${moved[0]!.change}); undo would put back only the templates: move the claims back the same way, with kubectl appstorage set ${request.name} ${directives.map(formatDirective).join(" ")} --migrate-existing -n ${request.namespace} (the old volumes are kept: kubectl appstorage show ${request.name} -n ${request.namespace})`,
    );
  }
  const planRequest: PlanRequest = { namespace: request.namespace, name: request.name, directives, force: request.force, overwrite: true, cause: `undo to revision ${target.revision}` };
  return buildPlan(observed, planRequest);
}
