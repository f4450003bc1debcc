// Bundles src/main.ts and every runtime dependency into one CommonJS script,
// dist/kubectl-appstorage, executable with a shebang.
import { build } from "esbuild";
import { chmodSync, mkdirSync, readFileSync } from "node:fs";

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
mkdirSync("dist", { recursive: true });
await build({
  entryPoints: ["src/main.ts"],
  outfile: "dist/kubectl-appstorage",
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  minify: false,
  sourcemap: false,
  legalComments: "none",
  banner: { js: "#!/usr/bin/env node" },
  define: { __VERSION__: JSON.stringify(pkg.version) },
  logLevel: "warning",
});
chmodSync("dist/kubectl-appstorage", 0o755);
