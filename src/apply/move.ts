// One claim's move, as its phases (./migrate.ts) and its copy pods (./copy-pods.ts) both take it: a
// module of its own, so that the copy pods depend on this data, not on the phases.
import type { Plan } from "../plan/types";
import type { MigrationClaim, MigrationResult } from "../plan/migration-types";
import type { ApplyContext } from "./context";

/** One claim's move: the plan, the context, and the claim as the journal keeps it. */
export interface Move {
  plan: Plan;
  ctx: ApplyContext;
  m: MigrationClaim;
  ns: string;
  name: string;
  /** Saves the journal now (what a phase learned half-way that a rerun needs). */
  save: () => Promise<void>;
  /** When this run stopped the pod (progress clock), for how long it was down. */
  stoppedAt?: number;
  result: MigrationResult["claims"][number];
}
