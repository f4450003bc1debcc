// Errors a command can end with; main.ts alone turns them into exit codes.

/** Bad command line: wrong arguments, unknown flags, invalid values. */
export class UsageError extends Error {}

/** The request cannot be done safely or at all; nothing was changed. */
export class RefusedError extends Error {}

/** A command finished but wants a specific exit code (diff: 1 = differences found). */
export class ExitCode extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}
