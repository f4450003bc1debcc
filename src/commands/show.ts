// `show [STS]`: claim templates and every claim per ordinal. Its own issue builds the full
// view; until then it says so instead of pretending.
import { RefusedError } from "../cli/errors";
import type { ParsedCommand } from "../cli/root";
import type { CommandDeps } from "./deps";

export type ShowOptions = Extract<ParsedCommand, { kind: "show" }>;

export async function runShow(_opts: ShowOptions, _deps: CommandDeps): Promise<void> {
  throw new RefusedError("show is not implemented yet");
}
