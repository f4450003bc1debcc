// What every command is handed: streams, environment, clock, and how to reach a cluster.
import { appendFileSync } from "node:fs";
import type { IOStreams } from "../streams";
import { connect, type KubeClient, type KubeFlags } from "../kube/client";

export interface CommandDeps {
  streams: IOStreams;
  env: Record<string, string | undefined>;
  platform: NodeJS.Platform;
  /** The processor architecture, as Node names it (x64, arm64): version's platform. */
  arch?: string;
  now: () => Date;
  connect?: (flags: KubeFlags) => Promise<KubeClient>;
  signal?: AbortSignal;
  /** This process's id (for the journal's lock holder) and whether a journal's holder is certainly dead (src/lock-holder.ts). */
  pid?: number;
  holderDead?: (holder: string) => boolean;
}

/** `quiet`: no line on stderr when a request is tried again (completion writes into the user's shell line). */
export function connectWith(deps: CommandDeps, flags: KubeFlags, defaults: { requestTimeoutMs?: number; quiet?: boolean } = {}): Promise<KubeClient> {
  if (deps.connect) return deps.connect(flags);
  // APPSTORAGE_REQUEST_LOG=FILE appends one line per API request: how benchmarks count them.
  const log = deps.env["APPSTORAGE_REQUEST_LOG"];
  return connect(flags, {
    env: deps.env,
    platform: deps.platform,
    ...(defaults.requestTimeoutMs !== undefined ? { defaultRequestTimeoutMs: defaults.requestTimeoutMs } : {}),
    log: (line) => deps.streams.errOut.write(`${line}\n`),
    ...(defaults.quiet ? {} : { notice: (line: string) => deps.streams.errOut.write(`${line}\n`) }),
    ...(log ? { onRequest: (line: string) => appendFileSync(log, `${line}\n`) } : {}),
  });
}
