// What every step of a run is handed: the client, progress, the clock, Ctrl-C and --timeout, and
// who this run is (for the journal's lock). A types module, so the steps depend on data.
import type { KubeClient } from "../kube/client";
import type { ClaimsContext } from "./resize";
import type { Progress } from "./progress";
import type { Journal } from "../plan/types";

export interface ApplyContext extends ClaimsContext {
  client: KubeClient;
  progress: Progress;
  signal: AbortSignal;
  timeoutMs: number;
  now: () => Date;
  /** Identifies this run in the journal's lock. */
  holder: string;
  /** The user the server sees, recorded in the journal. */
  by: string;
  /** Where the local copy of the journal goes. */
  journalDir: string;
  /** This run's flags that a command finishing it repeats, saved in the journal (src/plan/finish.ts). */
  finish?: Journal["finish"];
}
