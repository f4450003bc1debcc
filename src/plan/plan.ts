// buildPlan(observed, request) -> Plan: a pure function of what was read from the cluster and
// what the user asked. `diff`, `set --dry-run` and `set` share the plan; only `set` applies it.
// The assembler: a fresh change or the rest of an interrupted one (the journal decides), plus the
// work on existing claims; the steps are put in their one order here, once.
import { formatDirective } from "./directive";
import { planResize } from "./resize";
import { planMigration } from "./migrate";
import { movesLeft } from "./move";
import { freshPlan } from "./fresh";
import { journalIsStale } from "./journal";
import { resumePlan } from "./resume";
import { templateSetWords } from "./roll";
import { classViews, type ClassView } from "./classes";
import { defaultStorageClass } from "./objects";
import { type Observed, type Plan, type PlanRequest, type Step, stepOrder } from "./types";

export { PlanError } from "./fresh";

/**
 * Plans a change of claim templates, or the rest of an interrupted one when the journal says
 * so. Throws PlanError only for what makes a plan impossible (no object to plan for).
 */
export function buildPlan(observed: Observed, request: PlanRequest): Plan {
  const journal = observed.journal;
  const base =
    journal && !journalIsStale(journal, observed.statefulSet)
      ? resumePlan(observed, request, journal, [...request.directives.map(formatDirective), ...(request.templateSet ? templateSetWords(request.templateSet) : [])])
      : freshPlan(observed, request);
  const claimsWork = planResize(base, observed, request);
  const moves = planMigration(base, observed, request);
  // Claims are being moved: the re-create is behind, the moves decide the rest.
  const moving = base.mode === "resume" && base.journal?.step === "migrating";
  const steps = new Set<Step>([...(moving ? [] : base.steps), ...claimsWork.steps, ...moves.steps]);
  const plan: Plan = {
    ...base,
    refusals: [...base.refusals, ...claimsWork.refusals, ...moves.refusals],
    warnings: [
      ...(moving ? [`an earlier run was moving the claims of ${base.target.name} to new volumes and was interrupted; going on from where it stopped`] : base.warnings),
      ...claimsWork.warnings,
      ...moves.warnings,
    ],
    steps: stepOrder.filter((s) => steps.has(s)),
    noChange: base.noChange && claimsWork.steps.length === 0 && moves.steps.length === 0,
    ...(moves.migration ? { migration: moves.migration, moves: moves.migration.claims.map((m) => movesLeft(m, base.target.name)) } : {}),
    ...(observed.journalSecret ? { journalSecret: observed.journalSecret } : {}),
    ...(claimsWork.existing ? { existing: claimsWork.existing } : {}),
    storageClasses: involvedClasses(base, observed),
  };
  // A plan is JSON data: without undefined fields, a plan read back equals the plan built. The
  // objects of a fresh plan are its own copies, made as JSON (stripForCreate), so only the rest is
  // passed through JSON again: they are most of a plan, and -l makes hundreds.
  const own = base.mode === "fresh" ? new Set<string>(["original", "desired"]) : new Set<string>();
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(plan)) {
    if (value !== undefined) out[key] = own.has(key) ? value : JSON.parse(JSON.stringify(value));
  }
  return out as unknown as Plan;
}

/** The classes of the changed templates, before and after, and of their claims: what each can do (show's words). */
function involvedClasses(base: Pick<Plan, "changes" | "claims" | "original" | "desired">, observed: Observed): ClassView[] | undefined {
  const changed = new Set(base.changes.map((c) => c.claim));
  if (!changed.size) return undefined;
  const def = defaultStorageClass(observed.storageClasses);
  const classesOf = (templates: Plan["original"]["spec"]["volumeClaimTemplates"]) => (templates ?? []).filter((t) => changed.has(t.metadata.name ?? "")).map((t) => t.spec.storageClassName ?? def);
  const claims = base.claims.filter((c) => changed.has(c.template));
  const own = new Set(claims.map((c) => c.name));
  const views = classViews(
    [...classesOf(base.original.spec.volumeClaimTemplates), ...classesOf(base.desired.spec.volumeClaimTemplates), ...claims.map((c) => c.storageClass)],
    observed.storageClasses,
    observed.storageClassError === undefined,
    def,
    observed.claims.filter((c) => own.has(c.metadata.name ?? "")),
    observed.persistentVolumes,
  );
  return views.length ? views : undefined;
}
