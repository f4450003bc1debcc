// Runs one test suite with node's test runner: `node scripts/test.mjs unit|e2e|node|zones|specs [--version V] [files...]`
// (docs/testing.md maps the suites).
// Node 20's runner takes no globs, so the files are listed here. For e2e, the local control
// plane is brought up first if it is not running, and stopped again afterwards if this run
// started it (tests also bring it up on their own, so one file can be run alone).
// --version V (a minor such as 1.32, a release, oldest, newest or prerelease) runs the e2e suite on that
// release's own control plane, beside the default one (ports from 17440, state in
// ~/.cache/kubectl-appstorage/cluster-V, unless APPSTORAGE_PORT_BASE/APPSTORAGE_CLUSTER_DIR say
// otherwise), with the reduced fault matrix of test/e2e/reliability.test.ts
// (APPSTORAGE_FAULT_MATRIX=reduced unless set): the full one runs on the default control plane.
// node: test/node on a cluster with a real node (scripts/cluster up --node), beside the e2e suite's
// control plane (ports from 18440, state in ~/.cache/kubectl-appstorage/cluster-node unless
// APPSTORAGE_PORT_BASE/APPSTORAGE_CLUSTER_DIR say otherwise); brought down at the end if this run
// started it. One node per host: another cluster's node must be down first.
// zones: test/zones on three nodes in three zones (scripts/cluster up --nodes 3; ports from 19440, state
// in ~/.cache/kubectl-appstorage/cluster-zones), brought down at the end if this run started it.
// specs: Kubernetes' own e2e specs (test/specs, lab/specs) on the zones suite's cluster; it builds
// e2e.test and its images first (lab/specs/images.sh build, quick when they are built).
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

const argv = process.argv.slice(2);
const at = argv.findIndex((a) => a === "--version" || a.startsWith("--version="));
let version;
if (at >= 0) {
  version = (argv[at].includes("=") ? argv[at].slice("--version=".length) : argv[at + 1]) ?? "";
  argv.splice(at, argv[at].includes("=") ? 1 : 2);
}
const suite = argv[0];
if (!["unit", "e2e", "node", "zones", "specs"].includes(suite) || (version !== undefined && (suite !== "e2e" || !version || version.startsWith("-")))) {
  console.error("usage: node scripts/test.mjs unit|e2e [--version MINOR|RELEASE|oldest|newest|prerelease] [files...] | node|zones|specs [files...]");
  process.exit(2);
}
if (version) {
  process.env.APPSTORAGE_K8S_VERSION = version;
  process.env.APPSTORAGE_PORT_BASE ??= "17440";
  process.env.APPSTORAGE_CLUSTER_DIR ??= join(homedir(), ".cache", "kubectl-appstorage", `cluster-${version}`);
  process.env.APPSTORAGE_FAULT_MATRIX ??= "reduced";
}
if (suite === "node") {
  process.env.APPSTORAGE_PORT_BASE ??= "18440";
  process.env.APPSTORAGE_CLUSTER_DIR ??= join(homedir(), ".cache", "kubectl-appstorage", "cluster-node");
  // test/shared/harness.ts brings the cluster up with --node.
  process.env.APPSTORAGE_NODE = "1";
}
const zoned = suite === "zones" || suite === "specs";
if (zoned) {
  process.env.APPSTORAGE_PORT_BASE ??= "19440";
  process.env.APPSTORAGE_CLUSTER_DIR ??= join(homedir(), ".cache", "kubectl-appstorage", "cluster-zones");
  process.env.APPSTORAGE_NODE = "1";
  process.env.APPSTORAGE_NODES ??= "3";
}
const dir = join("test", suite);
const files =
  argv.length > 1
    ? argv.slice(1)
    : readdirSync(dir)
        .filter((f) => f.endsWith(".test.ts"))
        .sort()
        .map((f) => join(dir, f));
if (files.length === 0) {
  console.error(`no test files in ${dir}`);
  process.exit(1);
}

if (suite === "specs") {
  const built = spawnSync("bash", ["lab/specs/images.sh", "build"], { stdio: ["ignore", "ignore", "inherit"] });
  if (built.status !== 0) {
    console.error("could not build Kubernetes' e2e specs and their images (lab/specs/images.sh build); specs not run");
    process.exit(1);
  }
}
let startedHere = false;
if (zoned) {
  // One node set per host (kubelet hard-wires host paths): the node suite's own cluster, the one
  // the node lane or the demo left, goes first; any other cluster's node makes up refuse with what to do.
  const nodeSuite = { ...process.env, APPSTORAGE_CLUSTER_DIR: join(homedir(), ".cache", "kubectl-appstorage", "cluster-node"), APPSTORAGE_PORT_BASE: "18440" };
  const owner = spawnSync("cat", [join(homedir(), ".cache", "kubectl-appstorage", "node-host.owner")], { encoding: "utf8" }).stdout.trim();
  if (owner === nodeSuite.APPSTORAGE_CLUSTER_DIR) {
    console.error(`zones: stopping the node suite's cluster (${owner}) first: one node set per host`);
    spawnSync("bash", ["scripts/cluster", "down"], { stdio: ["ignore", "ignore", "inherit"], env: nodeSuite });
  }
  const status = spawnSync("bash", ["scripts/cluster", "status"], { stdio: "ignore" });
  const up = spawnSync("bash", ["scripts/cluster", "up", "--nodes", process.env.APPSTORAGE_NODES], { stdio: ["ignore", "ignore", "inherit"] });
  if (up.status !== 0) {
    console.error(`could not start the cluster with ${process.env.APPSTORAGE_NODES} nodes (scripts/cluster up --nodes ${process.env.APPSTORAGE_NODES}); ${suite} tests not run`);
    process.exit(1);
  }
  startedHere = status.status !== 0;
}
if (suite === "node") {
  const status = spawnSync("bash", ["scripts/cluster", "status"], { stdio: "ignore" });
  const up = spawnSync("bash", ["scripts/cluster", "up", "--node"], { stdio: ["ignore", "ignore", "inherit"] });
  if (up.status !== 0) {
    console.error("could not start the cluster with a node (scripts/cluster up --node); node tests not run");
    process.exit(1);
  }
  startedHere = status.status !== 0;
}
if (suite === "e2e") {
  const status = spawnSync("bash", ["scripts/cluster", "status"], { stdio: "ignore" });
  if (status.status === 0 && version) {
    // Running already: up checks that it runs the version asked for (and says what to do if not).
    const up = spawnSync("bash", ["scripts/cluster", "up"], { stdio: ["ignore", "ignore", "inherit"] });
    if (up.status !== 0) process.exit(1);
  } else if (status.status !== 0) {
    const up = spawnSync("bash", ["scripts/cluster", "up"], { stdio: ["ignore", "ignore", "inherit"] });
    if (up.status !== 0) {
      console.error("could not start the local control plane (scripts/cluster up); e2e tests not run");
      process.exit(1);
    }
    startedHere = true;
  }
}

if (suite !== "unit") {
  const v = spawnSync("bash", ["scripts/cluster", "status"], { encoding: "utf8" }).stdout.match(/^server: (.*)$/m)?.[1];
  console.error(
    `${suite} on Kubernetes ${v ?? "(unknown version)"}${suite === "node" ? ` with a node (${process.env.APPSTORAGE_CLUSTER_DIR})` : zoned ? ` with ${process.env.APPSTORAGE_NODES} nodes in zones (${process.env.APPSTORAGE_CLUSTER_DIR})` : ""}${process.env.APPSTORAGE_FAULT_MATRIX === "reduced" ? ", reduced fault matrix" : ""}`,
  );
}
const args = ["--require", "./test/register.cjs", "--test", "--test-reporter=spec"];
if (suite !== "unit") args.push("--test-concurrency=1");
const run = spawnSync(process.execPath, [...args, ...files], { stdio: "inherit" });
if (startedHere) spawnSync("bash", ["scripts/cluster", "down"], { stdio: "inherit" });
process.exit(run.status ?? 1);
