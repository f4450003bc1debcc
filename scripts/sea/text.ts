// What the single executable prints without loading the plugin: `--help`, `--version` and
// `completion bash|zsh` need the argument parser alone (src/cli/root.ts), not the whole plugin
// (client-node, YAML, diff, tables: several MB of JavaScript). scripts/sea.mjs bundles this file
// as the executable's asset "text.js" and makes its V8 code cache after calling textFor on the
// command lines in warmCommandLines, so the parser's functions are compiled at build time too.
import { parseArgs } from "../../src/cli/root";

/**
 * A command that talks to a cluster, unless it asks for help: not parsed here, since the plugin
 * parses it anyway. Whatever this lets through, the plugin still prints any help text itself, so
 * this only decides which of the two does the parsing.
 */
function clusterCommand(args: readonly string[]): boolean {
  return ["show", "diff", "set"].includes(args[0] ?? "") && !args.some((a) => a === "-h" || a === "--help" || a === "--version");
}

/** The text src/main.ts would print for these arguments, if that is all it would do. */
export function textFor(args: readonly string[]): string | undefined {
  if (clusterCommand(args)) return undefined;
  try {
    const cmd = parseArgs(args);
    return cmd.kind === "text" ? cmd.text : undefined;
  } catch {
    return undefined; // a usage error: the plugin reports it with its exit code
  }
}

/** Command lines the build runs through textFor before it makes the code cache (pure: no output). */
export const warmCommandLines: readonly (readonly string[])[] = [["--help"], ["--version"], ["set", "--help"], ["show", "--help"]];
