// How a command can end other than successfully. Every layer throws these; main.ts alone turns
// them into a message and an exit code (kubectl's: 1 for an error; diff: 1 = differences, >1 error).

/** Bad command line: wrong arguments, unknown flags, invalid values. Nothing was read or changed. */
export class UsageError extends Error {
  /**
   * @param text what stderr shows instead of "error: MESSAGE", when that is not enough: cobra's
   * unknown command and kubectl's unknown flag, with "Did you mean this?" and where the usage is
   */
  constructor(
    message: string,
    readonly text?: string,
  ) {
    super(message);
  }
}

/** The request cannot be done safely, or at all: a refusal. Nothing was changed. */
export class RefusedError extends Error {}

/**
 * The run stopped after it had changed something (a claim grown, the StatefulSet deleted, a pod
 * restarted). The journal keeps the rest of the work: the message says what to run to finish.
 */
export class StopError extends Error {}

/** A command finished but wants a specific exit code (diff: 1 = differences found). */
export class ExitCode extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/**
 * kubectl's exit codes: 0 success, 1 for a usage error, a refusal or a stop alike; `diff` (as
 * kubectl diff) exits 1 for "differences found", so any error of diff is 2.
 */
export function exitCodeFor(err: unknown, command: string | undefined): number {
  if (err instanceof ExitCode) return err.code;
  return command === "diff" ? 2 : 1;
}
