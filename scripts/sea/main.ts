// The single executable's main script (scripts/build.mjs bundles it; nothing else imports it).
// V8 reads a main script whole before running it, and the whole plugin is several MB of
// JavaScript (client-node's KubeConfig for exec plugins, YAML, diff, tables): as the main script it
// made `--help` take 57 ms instead of 36 ms here, and it grows with every dependency. So this
// script only parses the arguments, which is all `--help`, `--version` and `completion bash|zsh`
// need, and hands every other command line to the whole plugin (the bundle dist/appstorage.cjs),
// which the executable carries as the asset "plugin.js", compiled with the V8 code cache
// "plugin.cache" where the build could make one.
// Like src/main.ts it is a process entry, so it may touch process.*.
import { getAsset, getRawAsset } from "node:sea";
import { dirname } from "node:path";
import { Script } from "node:vm";
import { parseArgs } from "../../src/cli/root";

/** The text src/main.ts would print for these arguments, if that is all it would do. */
function textOnly(args: readonly string[]): string | undefined {
  try {
    const cmd = parseArgs(args);
    return cmd.kind === "text" ? cmd.text : undefined;
  } catch {
    return undefined; // a usage error: the plugin reports it with its exit code
  }
}

function cachedData(): Buffer | undefined {
  try {
    return Buffer.from(getRawAsset("plugin.cache") as ArrayBuffer);
  } catch {
    return undefined; // built for another platform: no cache (see scripts/release.mjs)
  }
}

/** Runs the bundle as Node would run a CommonJS file; it reads process.argv itself. */
function runPlugin(): void {
  const cache = cachedData();
  // Filename and source must be those the cache was made with (scripts/sea.mjs).
  const script = new Script(getAsset("plugin.js", "utf8"), { filename: "appstorage.cjs", ...(cache ? { cachedData: cache } : {}) });
  if (cache && script.cachedDataRejected && process.env["APPSTORAGE_DEBUG"]) {
    process.stderr.write("debug: the plugin's code cache was rejected; the executable was not built with its own runtime\n");
  }
  const module = { exports: {} };
  // The bundle needs only Node's built-in modules, which is what require() serves here.
  script.runInThisContext()(module.exports, require, module, process.execPath, dirname(process.execPath));
}

/**
 * A command that talks to a cluster, unless it asks for help: not parsed here, since the plugin
 * parses it anyway (about 20 ms each time). Whatever this lets through, the plugin still prints
 * any help text itself, so this only decides which of the two does the parsing.
 */
function clusterCommand(args: readonly string[]): boolean {
  return ["show", "diff", "set"].includes(args[0] ?? "") && !args.some((a) => a === "-h" || a === "--help" || a === "--version");
}

const args = process.argv.slice(2);
const text = clusterCommand(args) ? undefined : textOnly(args);
if (text !== undefined) process.stdout.write(text);
else runPlugin();
