// Row 7 of the bench (set -l over 20 StatefulSets against one set) on two control planes of its
// own, one after the other: kube-controller-manager with its default client limits (20 requests a
// second, bursts of 30, per controller) and with --kube-api-qps 500 --kube-api-burst 1000. Each
// run also reads kube-controller-manager's /metrics around the side-by-side runs: the requests its
// controllers sent per StatefulSet and how long they waited on their rate limiter. What it shows:
// how much of set -l's time is the controllers' (the garbage collector's and the StatefulSet
// controller's) client-side limit, which a namespace admin cannot change.
// Usage: npm run bench:set-many (node scripts/bench/set-many-qps.mjs); results in
// dist/bench/set-many-qps.json. Must run alone: the machine's other load is in every figure.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const cache = join(process.env.HOME ?? "/root", ".cache", "kubectl-appstorage");
const lanes = [
  { name: "default limits", flags: "", dir: join(cache, "cluster-bench-kcm-default"), portBase: "22440" },
  { name: "--kube-api-qps 500 --kube-api-burst 1000", flags: "--kube-api-qps 500 --kube-api-burst 1000", dir: join(cache, "cluster-bench-kcm-500"), portBase: "23440" },
];
const log = (m) => process.stderr.write(`bench-set-many: ${m}\n`);

const results = [];
for (const lane of lanes) {
  const env = { ...process.env, APPSTORAGE_CLUSTER_DIR: lane.dir, APPSTORAGE_PORT_BASE: lane.portBase, APPSTORAGE_KCM_FLAGS: lane.flags };
  // The flags are given when the control plane starts: one already up would run without them.
  if (spawnSync("bash", [join(root, "scripts", "cluster"), "status"], { env, stdio: "ignore" }).status === 0) {
    log(`a control plane already runs in ${lane.dir}: bring it down (APPSTORAGE_CLUSTER_DIR=${lane.dir} scripts/cluster down), then run this again`);
    process.exit(1);
  }
  const out = join(root, "dist", "bench", `set-many-${lane.portBase}.json`);
  log(`kube-controller-manager with ${lane.name}`);
  const r = spawnSync(process.execPath, [join(root, "scripts", "bench", "bench.mjs"), "--set-many-only"], { env: { ...env, BENCH_OUT: out }, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) {
    log(`the run with ${lane.name} failed (exit ${r.status})`);
    process.exit(1);
  }
  results.push({ controllerManager: lane.name, ...JSON.parse(readFileSync(out, "utf8")) });
}
mkdirSync(join(root, "dist", "bench"), { recursive: true });
writeFileSync(join(root, "dist", "bench", "set-many-qps.json"), `${JSON.stringify(results, null, 2)}\n`);
const commit = spawnSync("git", ["-C", root, "rev-parse", "--short=12", "HEAD"], { encoding: "utf8" }).stdout.trim();
const dirty = spawnSync("git", ["-C", root, "status", "--porcelain", "--untracked-files=no"], { encoding: "utf8" }).stdout.trim() !== "";
const rows = [["kube-controller-manager", "one set", "set -l over 20", "ratio", "--parallel 1", "its requests per sts", "its rate-limiter wait per run"]];
for (const r of results) {
  const m = r.setMany;
  rows.push([
    r.controllerManager,
    `${Math.round(m.oneSetMs)} ms`,
    `${Math.round(m.pluginMs)} ms`,
    `${m.timesOneSet}x (target <= 3x: ${m.met ? "met" : "MISSED"})`,
    `${Math.round(m.parallelOne.pluginMs)} ms (${m.parallelOne.timesOneSet}x)`,
    `${m.controllerManager?.requestsPerStatefulSet ?? "?"}`,
    `${m.controllerManager?.limiterWaitSecondsPerRun ?? "?"} s`,
  ]);
}
const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => String(row[c]).length)));
console.log(`set -l over 20 StatefulSets, by kube-controller-manager's client limits, at ${commit}${dirty ? " (with uncommitted changes)" : ""}:`);
for (const row of rows)
  console.log(
    row
      .map((cell, c) => String(cell).padEnd(widths[c]))
      .join("  ")
      .trimEnd(),
  );
