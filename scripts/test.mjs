// Runs one test suite with node's test runner: `node scripts/test.mjs unit|e2e [files...]`.
// Node 20's runner takes no globs, so the files are listed here. For e2e, the local control
// plane is brought up first if it is not running, and stopped again afterwards if this run
// started it (tests also bring it up on their own, so one file can be run alone).
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";

const suite = process.argv[2];
if (suite !== "unit" && suite !== "e2e") {
  console.error("usage: node scripts/test.mjs unit|e2e [files...]");
  process.exit(2);
}
const dir = join("test", suite);
const files = process.argv.length > 3 ? process.argv.slice(3) : readdirSync(dir).filter((f) => f.endsWith(".test.ts")).sort().map((f) => join(dir, f));
if (files.length === 0) {
  console.error(`no test files in ${dir}`);
  process.exit(1);
}

let startedHere = false;
if (suite === "e2e") {
  const status = spawnSync("bash", ["scripts/cluster", "status"], { stdio: "ignore" });
  if (status.status !== 0) {
    const up = spawnSync("bash", ["scripts/cluster", "up"], { stdio: ["ignore", "ignore", "inherit"] });
    if (up.status !== 0) {
      console.error("could not start the local control plane (scripts/cluster up); e2e tests not run");
      process.exit(1);
    }
    startedHere = true;
  }
}

const args = ["--require", "./test/register.cjs", "--test", "--test-reporter=spec"];
if (suite === "e2e") args.push("--test-concurrency=1");
const run = spawnSync(process.execPath, [...args, ...files], { stdio: "inherit" });
if (startedHere) spawnSync("bash", ["scripts/cluster", "down"], { stdio: "inherit" });
process.exit(run.status ?? 1);
