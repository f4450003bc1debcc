// The suites of `npm test` after the unit tests, in two lanes that run side by side, each on control
// planes of its own (scripts/test.mjs gives every suite its own ports and state):
//   e2e:  the e2e suite on the newest control plane, then `scripts/setup oldest` and the suite again
//         on the oldest (reduced fault matrix);
//   node: `scripts/setup node`, then the node suite on a cluster with a real node.
// On a machine with warm caches the setup steps build nothing; on a new one the oldest control plane
// and the node are built while the e2e suite runs, instead of before it (see the README's "Tests").
// Every line a lane prints is prefixed with its name; each lane runs to its end even if the other
// fails, a suite that fails does not stop the next one of its lane, and the exit code is 1 when any
// step failed. A summary of every step, with its time, is printed last.
//   node scripts/test-all.mjs [e2e|node]   one lane only (both by default)
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const lanes = {
  e2e: [
    ["e2e on the newest", "node", ["scripts/test.mjs", "e2e"]],
    ["setup oldest", "bash", ["scripts/setup", "oldest"]],
    ["e2e on the oldest", "node", ["scripts/test.mjs", "e2e", "--version", "oldest"]],
  ],
  node: [
    ["setup node", "bash", ["scripts/setup", "node"]],
    ["node suite", "node", ["scripts/test.mjs", "node"]],
  ],
};

const only = process.argv[2];
if (only !== undefined && !(only in lanes)) {
  console.error(`usage: node scripts/test-all.mjs [${Object.keys(lanes).join("|")}]`);
  process.exit(2);
}

/** Runs one step with its output prefixed; resolves to its exit code. */
function step(lane, cmd, args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    for (const [from, to] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ]) {
      createInterface({ input: from }).on("line", (line) => to.write(`[${lane}] ${line}\n`));
    }
    child.on("error", (err) => {
      process.stderr.write(`[${lane}] ${cmd}: ${err.message}\n`);
      resolve(127);
    });
    child.on("close", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

const results = [];
async function runLane(lane) {
  for (const [what, cmd, args] of lanes[lane]) {
    const start = Date.now();
    const code = await step(lane, cmd, args);
    results.push({ lane, what, code, seconds: Math.round((Date.now() - start) / 1000) });
    // A failed setup leaves nothing to test in its lane: the rest is reported as not run.
    if (code !== 0 && what.startsWith("setup")) {
      for (const [rest] of lanes[lane].slice(lanes[lane].findIndex(([w]) => w === what) + 1)) results.push({ lane, what: rest, code: "not run", seconds: 0 });
      break;
    }
  }
}

const start = Date.now();
await Promise.all((only ? [only] : Object.keys(lanes)).map(runLane));
const failed = results.filter((r) => r.code !== 0);
process.stderr.write("\ntest-all: steps (lane, step, exit code, time)\n");
for (const r of results) process.stderr.write(`  ${r.lane.padEnd(5)} ${r.what.padEnd(18)} ${String(r.code).padStart(7)} ${r.seconds}s\n`);
process.stderr.write(`test-all: ${failed.length ? `${failed.length} step(s) failed` : "all passed"} in ${Math.round((Date.now() - start) / 1000)}s\n`);
process.exit(failed.length ? 1 : 0);
