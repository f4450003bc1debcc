// `history STS [-o json|yaml]`: the recorded revisions of the claim templates, oldest first, as
// `kubectl rollout history` lists a workload's revisions; the highest is the current one.
import { RefusedError } from "../errors";
import type { KubeFlags } from "../kube/client";
import { getStatefulSet } from "../kube/read";
import { historyOf } from "../plan/history";
import { apiVersion } from "../plan/types";
import { renderHistory } from "../output/history";
import { printFlags } from "../output/print-flags";
import { connectWith, type CommandDeps } from "./deps";

export interface HistoryOptions {
  flags: KubeFlags;
  name: string;
  /** -o as given (printFlags.history says which values). */
  output?: string;
}

/** The Validate step: usage errors only, before anything is read. */
export function validateHistory(opts: HistoryOptions): void {
  printFlags.history.validate(opts.output);
}

export async function runHistory(opts: HistoryOptions, deps: CommandDeps): Promise<void> {
  validateHistory(opts);
  const printer = printFlags.history.toPrinter(opts.output);
  const client = await connectWith(deps, opts.flags);
  const sts = await getStatefulSet(client, client.namespace, opts.name);
  if (!sts) throw new RefusedError(`statefulsets.apps "${opts.name}" not found in namespace "${client.namespace}"`);
  const revisions = historyOf(sts);
  printer.print(deps.streams.out, {
    rows: () => revisions,
    data: () => ({ apiVersion, kind: "History", namespace: client.namespace, name: opts.name, revisions }),
    text: () => renderHistory(opts.name, revisions),
  });
}
