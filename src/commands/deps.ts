// What every command is handed: streams, environment, clock, and how to reach a cluster.
import type { IOStreams } from "../cli/streams";
import { connect, type KubeClient, type KubeFlags } from "../kube/client";

export interface CommandDeps {
  streams: IOStreams;
  env: Record<string, string | undefined>;
  now: () => Date;
  connect?: (flags: KubeFlags) => Promise<KubeClient>;
  signal?: AbortSignal;
}

export function connectWith(deps: CommandDeps, flags: KubeFlags): Promise<KubeClient> {
  return (deps.connect ?? connect)(flags);
}
