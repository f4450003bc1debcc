// What `diff` prints, chosen once per run from -o and one-or-many. As kubectl diff, stdout carries
// the diff alone (or the sealed plans, with -o json|yaml); warnings, and what happens to each
// existing claim and to new ordinals, go to stderr.
import { RefusedError } from "../errors";
import { withoutChangeRecords } from "../plan/desired";
import { historyOf } from "../plan/history";
import { applyEdits } from "../plan/template-metadata";
import { seal, sealList } from "../plan/seal";
import type { Plan } from "../plan/types";
import { statefulSetIn } from "../refs";
import type { IOStreams } from "../streams";
import { unifiedDiff } from "./diff";
import { renderExisting } from "./resize";
import { newOrdinalsLine, renderClaims, renderMigration } from "./plan";
import type { Printer } from "./print-flags";

export interface DiffView {
  noResources(message: string): void;
  /** The error that refuses the run: what set would refuse even with --force. */
  refusal(refused: readonly Plan[], total: number): RefusedError;
  /** The diffs (or the plans) on stdout, then each plan's warnings and effects on stderr. */
  show(plans: readonly Plan[]): void;
}

const unforceable = (plan: Plan) => plan.refusals.filter((r) => !r.forceable);

/** The diff of one plan, as kubectl diff names its LIVE and MERGED sides: the StatefulSet, then each claim --relabel-existing patches. */
function planDiff(plan: Plan, color: boolean): string {
  const id = `apps.v1.StatefulSet.${plan.target.namespace}.${plan.target.name}`;
  return unifiedDiff(`live/${id}`, `merged/${id}`, withoutChangeRecords(plan.original), withoutChangeRecords(plan.desired), color) + claimDiffs(plan, color);
}

/** A claim's labels and annotations before and after --relabel-existing (the plan holds its metadata, not the whole claim). */
function claimDiffs(plan: Plan, color: boolean): string {
  const ns = plan.target.namespace;
  return (plan.existing?.relabel ?? [])
    .filter((c) => c.patch.labels || c.patch.annotations)
    .map((c) => {
      const id = `v1.PersistentVolumeClaim.${ns}.${c.name}`;
      const claim = (labels?: Record<string, string>, annotations?: Record<string, string>) => ({
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: c.name, namespace: ns, ...(labels && Object.keys(labels).length ? { labels } : {}), ...(annotations && Object.keys(annotations).length ? { annotations } : {}) },
      });
      const after = claim(c.patch.labels ? applyEdits(c.labels, c.patch.labels) : c.labels, c.patch.annotations ? applyEdits(c.annotations, c.patch.annotations) : c.annotations);
      return unifiedDiff(`live/${id}`, `merged/${id}`, claim(c.labels, c.annotations), after, color);
    })
    .join("");
}

/** What the plan does besides the object: claims, existing claims, new ordinals, the revision it becomes. */
function effects(plan: Plan): string {
  const revision = historyOf(plan.desired).at(-1)!.revision;
  const history = plan.mode === "fresh" ? `the change becomes revision ${revision} of the claim templates (kubectl appstorage history ${plan.target.name})\n` : "";
  return `${renderClaims(plan)}${renderExisting(plan)}${renderMigration(plan)}${newOrdinalsLine(plan)}${history}`;
}

/** The view of one diff run: a person (no -o) gets the diffs, -o json|yaml the sealed plans. */
export function diffView(streams: Pick<IOStreams, "out" | "errOut">, printer: Printer, many: boolean, color: boolean): DiffView {
  const { out, errOut } = streams;
  const prefix = (plan: Plan) => (many ? `${statefulSetIn(plan.target.name, plan.target.namespace)}: ` : "");
  const stdout = (plans: readonly Plan[]) => printer.print(out, { data: () => (many ? sealList(plans) : seal(plans[0]!)), text: () => plans.map((p) => planDiff(p, color)).join("") });
  return {
    noResources: (message) => errOut.write(`${message}\n`),
    refusal: (refused, total) => {
      if (!many) return new RefusedError(unforceable(refused[0]!)[0]!.message);
      for (const plan of refused) for (const r of unforceable(plan)) errOut.write(`refused: ${prefix(plan)}${r.message}\n`);
      return new RefusedError(`${refused.length} of ${total} StatefulSet(s) refused (listed above)`);
    },
    show: (plans) => {
      stdout(plans);
      for (const plan of plans) {
        const needForce = plan.refusals.filter((r) => r.forceable).map((r) => `set will refuse without --force: ${r.message}`);
        for (const w of [...plan.warnings, ...needForce]) errOut.write(`Warning: ${prefix(plan)}${w}\n`);
        if (!plan.noChange && printer.human) errOut.write(`${many ? `${prefix(plan).slice(0, -2)}:\n` : ""}${effects(plan)}`);
      }
    },
  };
}
