// `history STS [-o json|yaml]`: the recorded revisions of the claim templates, oldest first, as
// `kubectl rollout history` lists a workload's revisions; the highest is the current one.
import { RefusedError } from "../errors";
import type { ParsedCommand } from "../cli/root";
import { getStatefulSet } from "../kube/read";
import { historyOf } from "../plan/history";
import { apiVersion } from "../plan/types";
import { renderHistory } from "../output/history";
import { print } from "../output/printer";
import { connectWith, type CommandDeps } from "./deps";

export type HistoryOptions = Extract<ParsedCommand, { kind: "history" }>;

export async function runHistory(opts: HistoryOptions, deps: CommandDeps): Promise<void> {
  const client = await connectWith(deps, opts.flags);
  const sts = await getStatefulSet(client, client.namespace, opts.name);
  if (!sts) throw new RefusedError(`statefulsets.apps "${opts.name}" not found in namespace "${client.namespace}"`);
  const revisions = historyOf(sts);
  print(deps.streams.out, opts.output, {
    data: () => ({ apiVersion, kind: "History", namespace: client.namespace, name: opts.name, revisions }),
    text: () => renderHistory(opts.name, revisions),
  });
}
