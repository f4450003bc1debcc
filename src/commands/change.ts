// The run every change shares (`set`, `set -l`, `set --plan`, `undo`), as one straight sequence:
// refuse (one plan refused: nothing changes), client dry run, preflight, server dry run, confirm,
// then apply up to --parallel StatefulSets at a time, each with its own journal. A failure lets
// those under way finish and starts no other; the same command run again finishes the rest. What
// is printed is the view's business, chosen once.
import { applyPlan, type ApplyContext } from "../apply/apply";
import { holderFor } from "../lock-holder";
import { measureShrinks, proveCopyImage } from "../apply/copy-pods";
import { serverDryRun } from "../apply/dry-run";
import { localJournalDir } from "../apply/journal-store";
import { Progress } from "../apply/progress";
import { RefusedError } from "../errors";
import type { Plan } from "../plan/types";
import type { ChangeView } from "../output/change-view";
import { statefulSetRef } from "../refs";
import type { IOStreams } from "../streams";
import type { ChangeFlags } from "./change-options";
import type { CompletedChange } from "./complete-change";
import type { CommandDeps } from "./deps";
import { preflight } from "./preflight";

async function confirm(streams: IOStreams, question: string): Promise<boolean> {
  streams.errOut.write(`${question} [y/N]: `);
  let line = "";
  for await (const chunk of streams.in) {
    line += chunk.toString();
    if (line.includes("\n")) break;
  }
  return /^y(es)?$/i.test(line.trim());
}

function applyContext(run: CompletedChange<ChangeView>, flags: ChangeFlags, deps: CommandDeps, progress: Progress): ApplyContext {
  return {
    client: run.client,
    progress,
    signal: deps.signal ?? new AbortController().signal,
    timeoutMs: flags.timeoutMs,
    now: deps.now,
    holder: holderFor(deps.pid ?? 0),
    by: run.user,
    journalDir: localJournalDir(deps.env),
    finish: run.finish,
  };
}

/** Asks on the terminal, after the plans; without one, --yes is the only way on. */
async function confirmChange(run: CompletedChange<ChangeView>, changing: readonly Plan[], streams: IOStreams): Promise<void> {
  if (!streams.in.isTTY) throw run.view.unconfirmed(changing);
  const question = run.view.review(changing, run.where);
  if (!(await confirm(streams, question))) throw new RefusedError("cancelled; nothing was changed");
}

/**
 * The plans, up to --parallel at once (each StatefulSet is independent: its own journal, its own
 * verification). After a failure the ones under way finish and no other starts; a plan with
 * nothing to change only removes its stale journal.
 */
async function applyEach(run: CompletedChange<ChangeView>, flags: ChangeFlags, deps: CommandDeps, progress: Progress): Promise<void> {
  const { plans, view } = run;
  let next = 0;
  let failed = false;
  const applyOne = async (plan: Plan, at: number) => {
    const ctx = applyContext(run, flags, deps, run.many ? progress.for(`${plan.target.namespace}/${plan.target.name}: `) : progress);
    const started = progress.elapsedSeconds();
    const seconds = () => progress.elapsedSeconds() - started;
    try {
      const result = plan.noChange && !plan.steps.length ? undefined : await applyPlan(plan, ctx);
      view.applied(plan, at, seconds(), plan.noChange ? undefined : result);
    } catch (e) {
      failed = true;
      view.failed(plan, at, seconds(), e);
    }
  };
  const signal = deps.signal;
  const worker = async () => {
    while (!failed && next < plans.length) {
      const at = next++;
      // Ctrl-C between two plans: the next one is not started, and the run says so.
      if (signal?.aborted) {
        failed = true;
        view.failed(plans[at]!, at, 0, new RefusedError(`interrupted before ${statefulSetRef(plans[at]!.target.name)} was started`));
        return;
      }
      await applyOne(plans[at]!, at);
    }
  };
  await Promise.all(Array.from({ length: Math.min(flags.parallel, plans.length) }, worker));
  const error = view.finished(plans);
  if (error) throw error;
}

/**
 * --pause-owner over several StatefulSets of one owner (an Application applies many): side by side,
 * one run would resume it while another still works. One at a time, each pauses and resumes it in turn.
 */
function refuseSharedPause(plans: readonly Plan[], parallel: number): void {
  if (parallel < 2) return;
  const seen = new Map<string, number>();
  for (const p of plans) {
    const ref = p.ownerPause?.ref;
    if (ref && p.steps.includes("pause-owner")) seen.set(`${ref.kind} ${ref.namespace}/${ref.name}`, (seen.get(`${ref.kind} ${ref.namespace}/${ref.name}`) ?? 0) + 1);
  }
  const shared = [...seen].filter(([, n]) => n > 1).map(([owner]) => owner);
  if (shared.length)
    throw new RefusedError(
      `--pause-owner: ${shared.join(", ")} manages several of these StatefulSets, and with --parallel one run would resume it while another still works; nothing was changed: run with --parallel 1`,
    );
}

/** The plans, refused as a whole if any one is refused; else dry-run, confirmed, and applied up to --parallel at a time. */
export async function runChange(run: CompletedChange<ChangeView>, flags: ChangeFlags, deps: CommandDeps): Promise<void> {
  const { plans, view } = run;
  if (run.noResources) return view.noResources(run.noResources);
  view.warnings(plans);
  const refused = plans.filter((p) => p.refusals.length);
  if (refused.length) throw view.refusal(refused, plans.length);
  refuseSharedPause(plans, flags.parallel);
  if (flags.dryRun === "client") return view.planned(plans, run.where);
  const progress = new Progress(deps.streams.errOut);
  const changing = plans.filter((p) => !p.noChange);
  // Every plan's reviews at once: a -l run over many StatefulSets waits for one round, not one per object.
  await Promise.all(changing.map((plan) => preflight(run.access, plan, progress)));
  if (flags.dryRun === "server") {
    for (const plan of changing) await serverDryRun(run.client, plan, progress);
    return view.checked(plans);
  }
  // Nothing to change needs no confirmation: at most a stale journal is removed.
  if (changing.length && !flags.yes) await confirmChange(run, changing, deps.streams);
  // Nothing is created before consent: every claim that shrinks has its data measured by a pod of
  // the tool's own now, the first step after it (the pod is removed; a claim whose data does not
  // fit refuses the run, and nothing else has changed); then a short pod on each node the copy
  // pods will run on proves that the copy image starts there, before the journal is written.
  const wait = { timeoutMs: flags.timeoutMs, signal: deps.signal ?? new AbortController().signal, progress };
  for (const plan of changing) {
    if (!plan.steps.includes("migrate")) continue;
    await measureShrinks(run.client, plan, wait);
    await proveCopyImage(run.client, plan, wait);
  }
  await applyEach(run, flags, deps, progress);
}
