// A new change of claim templates: what changes, what each existing claim does, what new
// ordinals get, the safety findings, and the re-create steps. Pure.
import type { StatefulSet } from "../kube/types";
import { desiredStatefulSet, stripForCreate } from "./desired";
import { formatDirective, type Directive } from "./directive";
import { claimTemplateNames, defaultStorageClass, indexObjects, memberClaims, memberPods, ordinalStart, podRevision, replicasOf, templateSize } from "./objects";
import { sameQuantity } from "./quantity";
import { applyForce, checkSafety, lockFree, lockRefusal } from "./rules";
import { type ClaimEffect, type Observed, type Plan, type PlanRequest, recreateSteps, type Step, type TemplateChange, apiVersion } from "./types";

/** Thrown only for what makes a plan impossible (no object to plan for). */
export class PlanError extends Error {}

/** Every claim of the StatefulSet, with what happens to it: kept as it is, whatever the template says. */
export function describeClaims(sts: StatefulSet, observed: Pick<Observed, "claims" | "pods">, changed: ReadonlySet<string>): ClaimEffect[] {
  // A plan reads one namespace: objects are filed without it.
  const index = indexObjects(observed.claims, observed.pods, () => "");
  const effects = memberClaims(sts, index, "").map(({ claim, template, ordinal, pod, leftover }): ClaimEffect => ({
    name: claim.metadata.name!,
    template,
    ordinal,
    uid: claim.metadata.uid ?? "",
    phase: claim.status?.phase,
    request: claim.spec.resources?.requests?.storage,
    capacity: claim.status?.capacity?.storage,
    storageClass: claim.spec.storageClassName,
    pod: pod?.metadata.name,
    effect: changed.has(template) ? "keeps" : "unchanged",
    leftover,
    ...(leftover ? { note: "left by an earlier scale-down" } : {}),
  }));
  return effects.sort((a, b) => a.template.localeCompare(b.template) || a.ordinal - b.ordinal);
}

function describeChange(d: Directive, before: StatefulSet): TemplateChange {
  const t = (before.spec.volumeClaimTemplates ?? []).find((x) => x.metadata.name === d.claim)!;
  const beforeSize = templateSize(t);
  return {
    claim: d.claim,
    before: { size: beforeSize, storageClass: t.spec.storageClassName, volumeAttributesClass: t.spec.volumeAttributesClassName },
    after: { size: d.size ?? beforeSize, storageClass: d.storageClass ?? t.spec.storageClassName, volumeAttributesClass: d.volumeAttributesClass ?? t.spec.volumeAttributesClassName },
  };
}

function isNoop(c: TemplateChange): boolean {
  return (
    sameQuantity(c.before.size ?? "", c.after.size ?? "") &&
    (c.before.storageClass ?? "") === (c.after.storageClass ?? "") &&
    (c.before.volumeAttributesClass ?? "") === (c.after.volumeAttributesClass ?? "")
  );
}

export function freshPlan(observed: Observed, request: PlanRequest): Plan {
  const sts = observed.statefulSet;
  if (!sts) throw new PlanError(`statefulsets.apps "${request.name}" not found in namespace "${request.namespace}"`);
  const journal = observed.journal;
  const requestText = request.directives.map(formatDirective);
  const ref = `statefulset.apps/${request.name}`;

  const changes = request.directives.filter((d) => claimTemplateNames(sts).includes(d.claim)).map((d) => describeChange(d, sts));
  const effective = changes.filter((c) => !isNoop(c));
  const safety = checkSafety(sts, request, observed, changes);
  // A journal here is stale (nothing destructive happened, or someone else re-created the
  // object): it is replaced by this run's, or removed when nothing changes.
  if (journal && !lockFree(observed, journal)) safety.refusals.push(lockRefusal(journal));
  if (journal && sts.metadata.uid !== journal.originalUid) {
    safety.warnings.push(`${ref} was re-created by someone else after an interrupted change (${journal.request.join(" ")}); that change is dropped`);
  }
  const { refusals, warnings } = applyForce(safety, request.force);

  const from = changes.map((c) => formatDirective({ claim: c.claim, size: c.before.size, storageClass: c.before.storageClass, volumeAttributesClass: c.before.volumeAttributesClass }));
  const desired = desiredStatefulSet(sts, request.directives, { by: observed.user, at: observed.now, from, to: requestText, ...(request.cause ? { cause: request.cause } : {}) });
  const noChange = effective.length === 0;
  const defaultClass = defaultStorageClass(observed.storageClasses);
  const steps: Step[] = noChange ? (journal ? ["remove-journal"] : []) : [...recreateSteps];
  return {
    apiVersion,
    kind: "Plan",
    target: { namespace: request.namespace, name: request.name, uid: sts.metadata.uid!, resourceVersion: sts.metadata.resourceVersion! },
    mode: "fresh",
    request: requestText,
    changes,
    claims: describeClaims(sts, observed, new Set(effective.map((c) => c.claim))),
    newOrdinals: {
      from: ordinalStart(sts) + replicasOf(sts),
      templates: (desired.spec.volumeClaimTemplates ?? []).map((t) => ({
        claim: t.metadata.name!,
        size: templateSize(t),
        storageClass: t.spec.storageClassName ?? (defaultClass ? `${defaultClass} (default)` : undefined),
      })),
    },
    warnings,
    refusals,
    steps,
    noChange,
    pods: memberPods(request.name, sts.metadata.uid, observed.pods).map((p) => ({ name: p.metadata.name!, uid: p.metadata.uid!, revision: podRevision(p) })),
    original: stripForCreate(sts),
    desired,
    journal,
  };
}
