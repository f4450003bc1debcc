// What a change (`set`, `undo`) prints, chosen once per run from -o, one-or-many and the dry-run
// mode (as kubectl's PrintFlags.ToPrinter and Terraform's views), so the run itself never asks
// which format it writes. A view is two parts: what stdout gets (by -o) and what the run says on
// stderr about one StatefulSet or several (warnings, refusals, the question, the summary).
import { RefusedError, StopError } from "../errors";
import type { DryRun } from "../kube/types";
import { seal, sealList } from "../plan/seal";
import { apiVersion, type ApplyResult, type Plan } from "../plan/types";
import { statefulSetIn, statefulSetRef } from "../refs";
import type { IOStreams, Writable } from "../streams";
import { existingResultLines } from "./existing-claims";
import { confirmQuestion, renderPlan, statefulSetVerb } from "./plan";
import { renderTable } from "./table";
import { toJson, toYaml } from "./yaml";

export type ChangeOutput = "json" | "yaml" | "name";

/** One StatefulSet's outcome in a run: what it became, or why it was not done. */
type Outcome = { plan: Plan; result?: ApplyResult };

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
  /** One plan applied (no result: it had nothing to change). */
  applied(plan: Plan, result?: ApplyResult): void;
  /** The error a failed plan ends the run with (the rest is not started). */
  failed(plans: readonly Plan[], at: number, error: unknown): Error;
  /** Every plan applied (a run that changed nothing prints its plans, as a dry run does). */
  finished(plans: readonly Plan[]): void;
}

const suffixOf: Record<DryRun, string> = { none: "", client: " (dry run)", server: " (server dry run)" };

/** What stdout gets, by -o. */
interface Printer {
  plans(plans: readonly Plan[], text: () => string): void;
  applied(outcome: Outcome, text: string): void;
  /** The run is over; `changed` is false when no plan had anything to change. */
  finished(outcomes: readonly Outcome[], changed: boolean): void;
}

/** kubectl's lines: each StatefulSet as it is done. */
const textPrinter = (out: Writable): Printer => ({
  plans: (_plans, text) => out.write(text()),
  applied: (_outcome, text) => out.write(text),
  finished: () => undefined,
});

/** -o name: the StatefulSets, once the run is over. */
const namePrinter = (out: Writable): Printer => {
  const names = (plans: readonly Plan[]) => plans.map((p) => `${statefulSetRef(p.target.name)}\n`).join("");
  return {
    plans: (plans) => out.write(names(plans)),
    applied: () => undefined,
    finished: (outcomes) => out.write(names(outcomes.map((o) => o.plan))),
  };
};

/** -o json|yaml: the sealed plans of a dry run; the results of a real one, at its end. */
const dataPrinter = (out: Writable, format: "json" | "yaml", many: boolean): Printer => {
  const write = (data: unknown) => out.write(format === "json" ? toJson(data) : toYaml(data));
  const plans = (list: readonly Plan[]) => write(many ? sealList(list) : seal(list[0]!));
  return {
    plans,
    applied: () => undefined,
    finished: (outcomes, changed) => {
      const items = outcomes.flatMap((o) => (o.result ? [o.result] : []));
      if (changed) write(many ? { apiVersion, kind: "ResultList", items } : items[0]);
      else plans(outcomes.map((o) => o.plan));
    },
  };
};

/** What the run says on stderr, for one StatefulSet or several. */
interface Scope {
  warning(plan: Plan, message: string): string;
  refusal(refused: readonly Plan[], total: number): RefusedError;
  question(changing: readonly Plan[]): string;
  what(changing: readonly Plan[]): string;
  failed(plans: readonly Plan[], done: readonly Outcome[], error: unknown): Error;
  finished(plans: readonly Plan[], done: readonly Outcome[], changed: boolean): void;
}

const oneScope: Scope = {
  warning: (_plan, message) => message,
  refusal: (refused) => {
    const all = refused[0]!.refusals;
    return new RefusedError(`${all[0]!.message}${all.length > 1 ? ` (and ${all.length - 1} more refusal(s))` : ""}`);
  },
  question: (changing) => confirmQuestion(changing[0]!),
  what: (changing) => statefulSetRef(changing[0]!.target.name),
  failed: (_plans, _done, error) => error as Error,
  finished: () => undefined,
};

const where = (plan: Plan) => statefulSetIn(plan.target.name, plan.target.namespace);

/** The table at the end of a run over several StatefulSets (on stderr: stdout keeps kubectl's lines). */
function summary(plans: readonly Plan[], done: readonly Outcome[], error?: unknown): string {
  const result = (i: number) => (i < done.length ? statefulSetVerb(done[i]!.plan) : i === done.length && error ? `failed: ${((error as Error)?.message ?? "").split(";")[0]}` : "not done");
  return renderTable(
    ["namespace", "statefulset", "result"],
    plans.map((p, i) => [p.target.namespace, p.target.name, result(i)]),
  );
}

const manyScope = (errOut: Writable): Scope => ({
  warning: (plan, message) => `${where(plan)}: ${message}`,
  refusal: (refused, total) => {
    for (const plan of refused) for (const r of plan.refusals) errOut.write(`refused: ${where(plan)}: ${r.message}\n`);
    return new RefusedError(`${refused.length} of ${total} StatefulSet(s) refused (listed above); nothing was changed: fix them, or narrow the selector`);
  },
  question: (changing) => `Change the claim templates of ${changing.length} StatefulSets (${changing.map((p) => p.target.name).join(", ")}), one at a time? Their pods keep running.`,
  what: (changing) => `${changing.length} StatefulSets`,
  failed: (plans, done, error) => {
    errOut.write(summary(plans, done, error));
    const plan = plans[done.length]!;
    const doneText = done.map((o) => `${statefulSetRef(o.plan.target.name)} ${statefulSetVerb(o.plan)}`);
    const notDone = plans.slice(done.length).map((p) => p.target.name);
    const message = `stopped at ${where(plan)}: ${(error as Error).message}; done: ${doneText.length ? doneText.join(", ") : "none"}; not done: ${notDone.join(", ")}: run the same command again to finish the rest`;
    return done.length || error instanceof StopError ? new StopError(message) : new RefusedError(message);
  },
  finished: (plans, done, changed) => void (changed && errOut.write(summary(plans, done))),
});

/** The view of one change run: chosen here, once. */
export function changeView(streams: Pick<IOStreams, "out" | "errOut">, output: ChangeOutput | undefined, many: boolean, dryRun: DryRun): ChangeView {
  const { out, errOut } = streams;
  const printer = output === "name" ? namePrinter(out) : output ? dataPrinter(out, output, many) : textPrinter(out);
  const scope = many ? manyScope(errOut) : oneScope;
  const suffix = suffixOf[dryRun];
  const ref = (p: Plan) => statefulSetRef(p.target.name);
  const done: Outcome[] = [];
  return {
    noResources: (message) => errOut.write(`${message}\n`),
    warnings: (plans) => {
      for (const plan of plans) for (const w of plan.warnings) errOut.write(`Warning: ${scope.warning(plan, w)}\n`);
    },
    refusal: (refused, total) => scope.refusal(refused, total),
    planned: (plans, whereLine) =>
      printer.plans(plans, () => plans.map((p) => (p.noChange ? `${ref(p)} unchanged${suffix}\n` : `${renderPlan(p)}${whereLine}\n${ref(p)} ${statefulSetVerb(p)}${suffix}\n`)).join("")),
    checked: (plans) => printer.plans(plans, () => plans.map((p) => `${ref(p)} ${p.noChange ? "unchanged" : statefulSetVerb(p)}${suffix}\n`).join("")),
    review: (changing, whereLine) => {
      for (const plan of changing) errOut.write(renderPlan(plan));
      // The last thing before [y/N]: where this acts (context, server, namespace, and as whom).
      return `${scope.question(changing)}\n${whereLine}`;
    },
    unconfirmed: (changing) =>
      new RefusedError(`refusing to re-create ${scope.what(changing)} without confirmation: there is no terminal to ask on; review it with kubectl appstorage diff, then pass --yes`),
    applied: (plan, result) => {
      const outcome: Outcome = result ? { plan, result } : { plan };
      done.push(outcome);
      printer.applied(outcome, result ? `${ref(plan)} ${statefulSetVerb(plan)}\n${existingResultLines(result.existing)}` : `${ref(plan)} unchanged\n`);
    },
    failed: (plans, _at, error) => scope.failed(plans, done, error),
    finished: (plans) => {
      const changed = done.some((o) => o.result);
      printer.finished(done, changed);
      scope.finished(plans, done, changed);
    },
  };
}
