// The suites of `npm test` after the unit tests, in lanes that run side by side, each on control
// planes of its own (scripts/test.mjs gives every suite its own ports and state):
//   e2e:    the e2e suite on the newest control plane, then (once the build lane has it) the suite
//           again on the oldest (reduced fault matrix);
//   build:  `scripts/setup oldest`, the oldest control plane;
//   windows: `scripts/setup windows`, the packaging test's Windows check (wine in a chroot, kubectl.exe);
//   node:   `scripts/setup node`, then the node suite on a cluster with a real node, then the zones
//           suite on three nodes in three zones (one node set per host: it stops the node suite's first),
//           then, once the specs lane has built them, Kubernetes' own e2e specs (their subset) on the
//           zones' cluster;
//   specs:  lab/specs/images.sh build, e2e.test and the images it runs.
// On a machine with warm caches the setup steps build nothing; on a new one the oldest control plane
// and the node are built while the e2e suite runs, instead of before it (see the README's "Tests").
// Every line a lane prints is prefixed with its name; each lane runs to its end even if another
// fails, a suite that fails does not stop the next one of its lane, and the exit code is 1 when any
// step failed. A summary of every step, with its time, is printed last, after the failing tests of
// each failed step (its test runner's "failing tests" report, or its last lines), so that the end of
// the output, all a CI log may keep, says what failed.
//   node scripts/test-all.mjs [e2e|node]   the e2e lane (with its builds) or the node lane (with the specs lane)
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** Each step: its name, its command, and the step of another lane it must wait for (which must have passed). */
const lanes = {
  e2e: [
    ["e2e on the newest", "node", ["scripts/test.mjs", "e2e"]],
    ["e2e on the oldest", "node", ["scripts/test.mjs", "e2e", "--version", "oldest"], "setup oldest"],
  ],
  // The oldest's build runs niced: the suites beside it wait on timers and answers, it only on CPU.
  // The node's is not: its lane is the longest on a new machine (niced, the CSI sidecars took 30
  // minutes and more beside the e2e suite in the cold runs at 4e4854a and 1297fab).
  build: [["setup oldest", "nice", ["-n", "10", "bash", "scripts/setup", "oldest"]]],
  // Niced as well; the packaging test of the e2e lane waits for it (the builds hold a lock) if it
  // gets there first, which on a new machine it does not: the chroot and kubectl.exe take minutes.
  windows: [["setup windows", "nice", ["-n", "10", "bash", "scripts/setup", "windows"]]],
  // Kubernetes' own e2e specs (e2e.test and agnhost from the pinned module, the images they run),
  // for the specs suite (test/specs), once setup node installed busybox-static.
  // Niced, and long done on a new machine before the node suite ends.
  specs: [["build e2e specs", "nice", ["-n", "10", "bash", "lab/specs/images.sh", "build"], "setup node"]],
  node: [
    ["setup node", "bash", ["scripts/setup", "node"]],
    ["node suite", "node", ["scripts/test.mjs", "node"]],
    ["zones suite", "node", ["scripts/test.mjs", "zones"]],
    ["specs suite", "node", ["scripts/test.mjs", "specs"], "build e2e specs"],
  ],
};

const only = process.argv[2];
if (only !== undefined && only !== "e2e" && only !== "node") {
  console.error("usage: node scripts/test-all.mjs [e2e|node]");
  process.exit(2);
}
const chosen = only === undefined ? Object.keys(lanes) : only === "e2e" ? ["e2e", "build", "windows"] : ["node", "specs"];

/** How much of a failed step is printed again at the end. */
const recapLines = 80;
const tailLines = 40;

/**
 * Runs one step with its output prefixed; resolves to its exit code and what to print again if it
 * failed: from node's test runner's "failing tests" line on (its own recap, without stack
 * frames, at most recapLines lines), else the step's last tailLines lines.
 */
function step(lane, cmd, args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    const tail = [];
    let failing;
    const keep = (line) => {
      if (/^\u2716 failing tests:/.test(line)) failing = [];
      if (failing) {
        // Stack frames are left out: the assertion's message and the test's name say what failed.
        if (failing.length < recapLines && !/^\s+at /.test(line)) failing.push(line);
      } else {
        tail.push(line);
        if (tail.length > tailLines) tail.shift();
      }
    };
    for (const [from, to] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ]) {
      createInterface({ input: from }).on("line", (line) => {
        to.write(`[${lane}] ${line}\n`);
        keep(line);
      });
    }
    // "close" comes after both streams ended, so every line was kept by then.
    child.on("error", (err) => {
      process.stderr.write(`[${lane}] ${cmd}: ${err.message}\n`);
      resolve({ code: 127, recap: [] });
    });
    child.on("close", (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), recap: failing ?? tail, ran: failing !== undefined }));
  });
}

const results = [];
/** Each step's exit code, once it ended. */
const finished = new Map();
const ended = (what) => {
  if (!finished.has(what)) {
    let resolve;
    finished.set(what, { promise: new Promise((r) => (resolve = r)), resolve });
  }
  return finished.get(what);
};
async function runLane(lane) {
  for (const [what, cmd, args, after] of lanes[lane]) {
    if (after && (await ended(after).promise) !== 0) {
      results.push({ lane, what, code: `not run (${after} failed)`, seconds: 0 });
      continue;
    }
    const start = Date.now();
    const { code, recap, ran } = await step(lane, cmd, args);
    ended(what).resolve(code);
    results.push({ lane, what, code, recap, ran, seconds: Math.round((Date.now() - start) / 1000) });
    // A failed setup leaves nothing to test in its lane: the rest is reported as not run.
    if (code !== 0 && what.startsWith("setup")) {
      for (const [rest] of lanes[lane].slice(lanes[lane].findIndex(([w]) => w === what) + 1)) {
        ended(rest).resolve("not run");
        results.push({ lane, what: rest, code: "not run", seconds: 0 });
      }
      break;
    }
  }
}

const start = Date.now();
await Promise.all(chosen.map(runLane));
const failed = results.filter((r) => r.code !== 0);
for (const r of failed.filter((f) => f.recap?.length)) {
  process.stderr.write(`\ntest-all: ${r.lane} lane, step "${r.what}" failed (exit ${r.code}); ${r.ran ? "its failing tests again" : `its last ${r.recap.length} lines again`}:\n`);
  for (const line of r.recap) process.stderr.write(`[${r.lane}] ${line}\n`);
}
process.stderr.write("\ntest-all: steps (lane, step, exit code, time)\n");
for (const r of results) process.stderr.write(`  ${r.lane.padEnd(7)} ${r.what.padEnd(18)} ${String(r.code).padStart(7)} ${r.seconds}s\n`);
process.stderr.write(`test-all: ${failed.length ? `${failed.length} step(s) failed` : "all passed"} in ${Math.round((Date.now() - start) / 1000)}s\n`);
process.exit(failed.length ? 1 : 0);
