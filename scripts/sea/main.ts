// The single executable's main script (scripts/build.mjs bundles it; nothing else imports it).
// V8 reads a main script whole before running it, and the whole plugin is several MB of
// JavaScript: as the main script it made `--help` take 57 ms instead of 36 ms here. So this script
// only runs the executable's assets, each compiled with its V8 code cache where the build could
// make one (made by the same runtime; other platforms' builds have none):
//   - "text.js" (scripts/sea/text.ts): the argument parser, which answers `--help`, `--version`
//     and `completion bash|zsh` alone; its cache is made after it parsed a few command lines, so
//     it holds the parser's compiled functions too, not only the bundle's top level;
//   - "plugin.js" (the bundle dist/appstorage.cjs) for every other command line.
// Like src/main.ts it is a process entry, so it may touch process.*.
import { getAsset, getRawAsset } from "node:sea";
import { dirname } from "node:path";
import { Script } from "node:vm";

function cachedData(name: string): Buffer | undefined {
  try {
    return Buffer.from(getRawAsset(`${name}.cache`) as ArrayBuffer);
  } catch {
    return undefined; // built for another platform: no cache (see scripts/release.mjs)
  }
}

// The file names the assets are compiled under (stack traces show them); a code cache is valid only
// for the name it was made with (scripts/sea.mjs assetFilenames).
const filenames = { text: "appstorage-text.cjs", plugin: "appstorage.cjs" };

/** Runs asset NAME.js as Node runs a CommonJS file and returns its exports. */
function runAsset(name: keyof typeof filenames): Record<string, unknown> {
  const cache = cachedData(name);
  const script = new Script(getAsset(`${name}.js`, "utf8"), { filename: filenames[name], ...(cache ? { cachedData: cache } : {}) });
  if (cache && script.cachedDataRejected && process.env["APPSTORAGE_DEBUG"]) {
    process.stderr.write(`debug: the code cache of ${name}.js was rejected; the executable was not built with its own runtime\n`);
  }
  const module = { exports: {} as Record<string, unknown> };
  // The bundles need only Node's built-in modules, which is what require() serves here.
  script.runInThisContext()(module.exports, require, module, process.execPath, dirname(process.execPath));
  return module.exports;
}

const textFor = runAsset("text")["textFor"] as (args: readonly string[]) => string | undefined;
const text = textFor(process.argv.slice(2));
if (text !== undefined) process.stdout.write(text);
else runAsset("plugin"); // it reads process.argv itself
