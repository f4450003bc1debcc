// What a change (`set`, `undo`) prints, chosen once per run from -o, one-or-many and the dry-run
// mode (as kubectl's PrintFlags.ToPrinter and Terraform's views), so the run itself never asks
// which format it writes. A view is two parts: what stdout gets (by -o) and what the run says on
// stderr about one StatefulSet or several (warnings, refusals, the question, the summary).
import { RefusedError, StopError } from "../errors";
import type { DryRun } from "../api/types";
import { seal, sealList } from "../plan/seal";
import { apiVersion, type ApplyResult, type Plan } from "../plan/types";
import { statefulSetIn, statefulSetRef } from "../refs";
import type { IOStreams, Writable } from "../streams";
import { existingResultLines } from "./resize";
import { rolledResultLines } from "./roll";
import { confirmQuestion, renderPlan, statefulSetVerb } from "./plan";
import { renderTable } from "./table";
import type { Printable, Printer } from "./print-flags";

/** One StatefulSet's outcome in a run: what it became (no result: nothing to change), or why it failed. */
type Outcome = { plan: Plan; seconds: number; result?: ApplyResult; error?: unknown };

export interface ChangeView {
  /** Nothing matched: kubectl's "No resources found" line. */
  noResources(message: string): void;
  /** Every plan's warnings, before anything else. */
  warnings(plans: readonly Plan[]): void;
  /** The error that refuses the run (the plans refused: nothing changes). */
  refusal(refused: readonly Plan[], total: number): RefusedError;
  /** --dry-run=client: the plans, where they would act. */
  planned(plans: readonly Plan[], where: string): void;
  /** --dry-run=server: what the server accepted. */
  checked(plans: readonly Plan[]): void;
  /** The plans to confirm on stderr; returns the question (what, and where). */
  review(changing: readonly Plan[], where: string): string;
  /** What is refused without a terminal to ask on. */
  unconfirmed(changing: readonly Plan[]): RefusedError;
  /** Plan `at` applied in `seconds` (no result: it had nothing to change). */
  applied(plan: Plan, at: number, seconds: number, result?: ApplyResult): void;
  /** Plan `at` failed: the run starts no other, and ends with an error. */
  failed(plan: Plan, at: number, seconds: number, error: unknown): void;
  /**
   * The run is over: what it did (a run that changed nothing prints its plans, as a dry run
   * does), and the error it ends with when a plan failed.
   */
  finished(plans: readonly Plan[]): Error | undefined;
}

const suffixOf: Record<DryRun, string> = { none: "", client: " (dry run)", server: " (server dry run)" };

/** -o name's lines: the StatefulSets, once the run is over. */
const names = (plans: readonly Plan[]) => plans.map((p) => `${statefulSetRef(p.target.name)}\n`).join("");

/** The plans as -o prints them: the sealed plan (or list) as data, the StatefulSets as names, `text` for a person. */
function plansPrintable(plans: readonly Plan[], many: boolean, text: () => string): Printable {
  return { data: () => (many ? sealList(plans) : seal(plans[0]!)), name: () => names(plans), text };
}

/** What the run says on stderr, for one StatefulSet or several. */
interface Scope {
  warning(plan: Plan, message: string): string;
  refusal(refused: readonly Plan[], total: number): RefusedError;
  question(changing: readonly Plan[]): string;
  what(changing: readonly Plan[]): string;
  /** The run's end: what it says, and the error it ends with when a plan failed. */
  finished(plans: readonly Plan[], outcomes: readonly (Outcome | undefined)[], changed: boolean): Error | undefined;
}

const oneScope: Scope = {
  warning: (_plan, message) => message,
  refusal: (refused) => {
    const all = refused[0]!.refusals;
    return new RefusedError(`${all[0]!.message}${all.length > 1 ? ` (and ${all.length - 1} more refusal(s))` : ""}`);
  },
  question: (changing) => confirmQuestion(changing[0]!),
  what: (changing) => statefulSetRef(changing[0]!.target.name),
  finished: (_plans, outcomes) => outcomes.find((o) => o?.error)?.error as Error | undefined,
};

const where = (plan: Plan) => statefulSetIn(plan.target.name, plan.target.namespace);

const firstPart = (error: unknown) => ((error as Error)?.message ?? String(error)).split(";")[0];

/** The table at the end of a run over several StatefulSets (on stderr: stdout keeps kubectl's lines). */
function summary(plans: readonly Plan[], outcomes: readonly (Outcome | undefined)[]): string {
  const result = (o: Outcome | undefined) => (!o ? "not done" : o.error !== undefined ? `failed: ${firstPart(o.error)}` : statefulSetVerb(o.plan));
  return renderTable(
    ["namespace", "statefulset", "result", "time"],
    plans.map((p, i) => [p.target.namespace, p.target.name, result(outcomes[i]), outcomes[i] ? `${outcomes[i]!.seconds.toFixed(1)}s` : ""]),
  );
}

/** Why a run over several StatefulSets stopped: the first failure, what is done, and what a rerun finishes. */
function stopped(plans: readonly Plan[], outcomes: readonly (Outcome | undefined)[]): Error {
  const failed = plans.flatMap((_, i) => (outcomes[i]?.error !== undefined ? [outcomes[i]!] : []));
  const first = failed[0]!;
  const done = plans.flatMap((p, i) => (outcomes[i] && outcomes[i]!.error === undefined ? [`${statefulSetRef(p.target.name)} ${statefulSetVerb(p)}`] : []));
  const notDone = plans.flatMap((p, i) => (!outcomes[i] || outcomes[i]!.error !== undefined ? [p.target.name] : []));
  const others =
    failed.length > 1
      ? ` (and ${failed.length - 1} more failed: ${failed
          .slice(1)
          .map((o) => o.plan.target.name)
          .join(", ")})`
      : "";
  const message = `stopped at ${where(first.plan)}: ${(first.error as Error).message}${others}; done: ${done.length ? done.join(", ") : "none"}; not done: ${notDone.join(", ")}: run the same command again to finish the rest`;
  // Something changed (a plan done, or a failure after a change): a stop; else nothing was changed.
  return done.length || failed.some((o) => o.error instanceof StopError) ? new StopError(message) : new RefusedError(message);
}

const manyScope = (errOut: Writable, parallel: number): Scope => ({
  warning: (plan, message) => `${where(plan)}: ${message}`,
  refusal: (refused, total) => {
    for (const plan of refused) for (const r of plan.refusals) errOut.write(`refused: ${where(plan)}: ${r.message}\n`);
    return new RefusedError(`${refused.length} of ${total} StatefulSet(s) refused (listed above); nothing was changed: fix them, or narrow the selector`);
  },
  question: (changing) =>
    `Change the claim templates of ${changing.length} StatefulSets (${changing.map((p) => p.target.name).join(", ")}), ${parallel > 1 && changing.length > 1 ? `up to ${Math.min(parallel, changing.length)} at a time` : "one at a time"}? Their pods keep running.`,
  what: (changing) => `${changing.length} StatefulSets`,
  finished: (plans, outcomes, changed) => {
    const failed = outcomes.some((o) => o?.error !== undefined);
    if (changed || failed) errOut.write(summary(plans, outcomes));
    return failed ? stopped(plans, outcomes) : undefined;
  },
});

/**
 * The view of one change run: chosen here, once. A person (no -o) reads each StatefulSet's line as
 * it is done; -o json|yaml|name prints the whole run at its end (the results, or the plans of a run
 * that changed nothing).
 */
export function changeView(streams: Pick<IOStreams, "out" | "errOut">, printer: Printer, many: boolean, dryRun: DryRun, parallel = 1): ChangeView {
  const { out, errOut } = streams;
  const scope = many ? manyScope(errOut, parallel) : oneScope;
  const suffix = suffixOf[dryRun];
  const ref = (p: Plan) => statefulSetRef(p.target.name);
  /** By plan: undefined until the plan is done or failed (a plan never started stays so). */
  const outcomes: (Outcome | undefined)[] = [];
  return {
    noResources: (message) => errOut.write(`${message}\n`),
    warnings: (plans) => {
      for (const plan of plans) for (const w of plan.warnings) errOut.write(`Warning: ${scope.warning(plan, w)}\n`);
    },
    refusal: (refused, total) => scope.refusal(refused, total),
    planned: (plans, whereLine) =>
      printer.print(
        out,
        plansPrintable(plans, many, () => plans.map((p) => (p.noChange ? `${ref(p)} unchanged${suffix}\n` : `${renderPlan(p)}${whereLine}\n${ref(p)} ${statefulSetVerb(p)}${suffix}\n`)).join("")),
      ),
    checked: (plans) =>
      printer.print(
        out,
        plansPrintable(plans, many, () => plans.map((p) => `${ref(p)} ${p.noChange ? "unchanged" : statefulSetVerb(p)}${suffix}\n`).join("")),
      ),
    review: (changing, whereLine) => {
      for (const plan of changing) errOut.write(renderPlan(plan));
      // The last thing before [y/N]: where this acts (context, server, namespace, and as whom).
      return `${scope.question(changing)}\n${whereLine}`;
    },
    unconfirmed: (changing) =>
      new RefusedError(`refusing to re-create ${scope.what(changing)} without confirmation: there is no terminal to ask on; review it with kubectl appstorage diff, then pass --yes`),
    applied: (plan, at, seconds, result) => {
      const outcome: Outcome = result ? { plan, seconds, result } : { plan, seconds };
      outcomes[at] = outcome;
      if (printer.human) out.write(result ? `${ref(plan)} ${statefulSetVerb(plan)}\n${existingResultLines(result.existing)}${rolledResultLines(result.rolled)}` : `${ref(plan)} unchanged\n`);
    },
    failed: (plan, at, seconds, error) => {
      outcomes[at] = { plan, seconds, error };
    },
    finished: (plans) => {
      const all = plans.map((_, i) => outcomes[i]);
      const changed = all.some((o) => o?.result);
      const error = scope.finished(plans, all, changed);
      if (error || printer.human) return error;
      const done = (all as Outcome[]).map((o) => o.plan);
      const items = (all as Outcome[]).flatMap((o) => (o.result ? [o.result] : []));
      const results: Printable = { data: () => (many ? { apiVersion, kind: "ResultList", items } : items[0]), name: () => names(done), text: () => "" };
      printer.print(out, changed ? results : plansPrintable(done, many, () => ""));
      return undefined;
    },
  };
}
