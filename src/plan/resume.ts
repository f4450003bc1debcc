// The rest of an interrupted change, decided from its journal and from what exists now: the
// original still being deleted, gone, or already re-created with the new templates. Pure.
import { sameClaimTemplates } from "./objects";
import { describeClaims, planOrdinals } from "./fresh";
import { ordinalStart, replicasOf, templateSize } from "./objects";
import { lockFree, lockRefusal, pendingChangeRefusal } from "./rules";
import { apiVersion, type Journal, type Observed, type Plan, type PlanRequest, type Refusal, type Step, stepOrder, type TemplateChange } from "./types";
import { statefulSetRef } from "../refs";

/** Maps compared by their keys and values, lists in order. */
const sameData = (a: unknown, b: unknown) => {
  const text = (v: unknown) => JSON.stringify(v && typeof v === "object" && !Array.isArray(v) ? Object.entries(v).sort() : (v ?? null));
  return text(a) === text(b);
};

function sameRequest(a: readonly string[], b: readonly string[]): boolean {
  return JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
}

/** What an interrupted change changes: its original's claim templates against its desired ones. */
export function changesOf(journal: Journal): TemplateChange[] {
  const desired = journal.desired.spec.volumeClaimTemplates ?? [];
  return (journal.original.spec.volumeClaimTemplates ?? []).flatMap((t) => {
    const after = desired.find((u) => u.metadata.name === t.metadata.name);
    if (!after || sameClaimTemplates([t], [after])) return [];
    // Labels, annotations and access modes only where they change, as a fresh plan shows them.
    const maps = (x: typeof t) => ({
      ...(sameData(t.metadata.labels, after.metadata.labels) ? {} : { labels: x.metadata.labels ?? {} }),
      ...(sameData(t.metadata.annotations, after.metadata.annotations) ? {} : { annotations: x.metadata.annotations ?? {} }),
      ...(sameData(t.spec.accessModes, after.spec.accessModes) ? {} : { accessModes: x.spec.accessModes ?? [] }),
    });
    const side = (x: typeof t) => ({ size: templateSize(x), storageClass: x.spec.storageClassName, volumeAttributesClass: x.spec.volumeAttributesClassName, ...maps(x) });
    return [{ claim: t.metadata.name!, before: side(t), after: side(after) }];
  });
}

export function resumePlan(observed: Observed, request: PlanRequest, journal: Journal, requestText: readonly string[]): Plan {
  const sts = observed.statefulSet;
  const ref = statefulSetRef(request.name);
  const refusals: Refusal[] = [];
  const warnings: string[] = [];
  if (!sameRequest(journal.request, requestText)) refusals.push(pendingChangeRefusal(journal));
  if (!lockFree(observed, journal)) refusals.push(lockRefusal(journal));
  // The run takes the journal over (write-journal: its lock, with this run as holder) first.
  // A roll (set -f adding or removing templates) restarts the pods after the re-create; an owner
  // paused by --pause-owner is paused again (it may have been resumed when the run stopped) and
  // resumed at the end, so a rerun after a kill resumes it.
  const roll: Step[] = journal.roll ? ["roll-pods", "restore-strategy"] : [];
  const owner: Step[] = journal.owner ? ["pause-owner", "resume-owner"] : [];
  let steps: Step[];
  if (!sts) {
    steps = ["write-journal", "create", "verify", "record", ...roll, "remove-journal"];
    warnings.push(`${ref} does not exist: an earlier run deleted it (orphaning its pods) and was interrupted; re-creating it now`);
  } else if (sts.metadata.uid === journal.originalUid) {
    // Still the original object, being deleted: wait for the garbage collector, then create.
    steps = ["write-journal", "wait-gone", "create", "verify", "record", ...roll, "remove-journal"];
    warnings.push(`${ref} is still being deleted by an earlier, interrupted run; finishing it`);
  } else if (journal.step === "rolling" || journal.step === "rolled") {
    // Pods were restarted already: their adoption is behind, the restarts go on from the pods' revisions.
    steps = ["write-journal", ...roll, "remove-journal"];
    warnings.push(`an earlier run was restarting the pods of ${ref} and was interrupted; going on from where it stopped (each pod's revision says whether it restarted)`);
  } else {
    steps = ["write-journal", "verify", "record", ...roll, "remove-journal"];
    warnings.push(`${ref} was already re-created with the new claim templates; verifying and cleaning up`);
  }
  const all = new Set([...steps, ...owner]);
  steps = stepOrder.filter((s) => all.has(s));
  if (journal.owner)
    warnings.push(
      `the earlier run paused ${journal.owner.pause.ref.kind} ${journal.owner.pause.ref.namespace}/${journal.owner.pause.ref.name} (${journal.owner.pause.what}); it stays paused until this run is done, then it is put back`,
    );
  // While refusing, the resume warnings ("re-creating it now") would say what does not happen.
  if (refusals.length) warnings.length = 0;
  const desired = journal.desired;
  return {
    apiVersion,
    kind: "Plan",
    target: { namespace: journal.namespace, name: journal.name, uid: journal.originalUid, resourceVersion: journal.originalResourceVersion },
    mode: "resume",
    request: journal.request,
    changes: changesOf(journal),
    claims: describeClaims(journal.original, observed, new Set(changesOf(journal).map((c) => c.claim)), desired, journal.namespace),
    newOrdinals: {
      from: ordinalStart(desired) + replicasOf(desired),
      templates: (desired.spec.volumeClaimTemplates ?? []).map((t) => ({ claim: t.metadata.name!, size: templateSize(t), storageClass: t.spec.storageClassName })),
    },
    ordinals: planOrdinals(journal.original, observed, desired),
    warnings,
    refusals,
    steps,
    noChange: false,
    pods: journal.pods,
    original: journal.original,
    desired,
    ...(journal.fieldManagers ? { fieldManagers: journal.fieldManagers } : {}),
    journal,
    ...(journal.roll ? { roll: journal.roll } : {}),
    ...(journal.owner ? { ownerPause: journal.owner.pause } : {}),
  };
}
