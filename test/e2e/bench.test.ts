// The benchmarks (npm run bench, scripts/bench/bench.mjs) in their smoke mode: 3 StatefulSets, one
// repetition. What is checked is that every section ran and reported numbers; timings are
// not asserted here (they are ratios for the README, measured by a full run).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { kubeconfig, root } from "./harness";

const finite = (x: unknown, what: string) => assert.ok(typeof x === "number" && Number.isFinite(x), `${what} is a number (${String(x)})`);

test("the bench runs in its small mode and reports all eight sections", { timeout: 600_000 }, (t) => {
  kubeconfig(); // the control plane is up (the bench would bring it up, and stop it again)
  const dir = mkdtempSync(join(tmpdir(), "appstorage-bench-test-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, "results.json");
  const r = spawnSync(process.execPath, [join(root, "scripts", "bench", "bench.mjs")], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, BENCH_SMALL: "1", BENCH_OUT: out, BENCH_NO_BUILD: "1" },
  });
  assert.equal(r.status, 0, r.stderr);
  const results = JSON.parse(readFileSync(out, "utf8"));

  for (const section of ["set", "show", "startup"]) {
    for (const field of ["pluginMs", "kubectlMs", "ratio", "target"]) finite(results[section][field], `${section}.${field}`);
    assert.equal(typeof results[section].met, "boolean", `${section}.met`);
  }
  finite(results.set.kubectlUntilAdoptedMs, "set.kubectlUntilAdoptedMs");
  assert.equal(results.show.claims, 9);

  const [few, many] = results.requests.replicas;
  for (const command of ["set", "show"]) {
    for (const replicas of [few, many]) finite(results.requests[command][replicas].count, `requests.${command}.${replicas}.count`);
  }
  assert.ok(results.requests.show[few].count > 0 && results.requests.set[few].count > 0, "requests were logged");
  assert.equal(typeof results.requests.met, "boolean");

  finite(results.memory.pluginMiB, "memory.pluginMiB");
  finite(results.memory.kubectlMiB, "memory.kubectlMiB");
  assert.ok(results.memory.pluginMiB > 0);

  // diff -l, set -l and show -A over many StatefulSets (issue 12's rows).
  for (const section of ["diffSelector", "setMany", "showAll"]) {
    for (const field of ["pluginMs", "kubectlMs", "ratio", "target"]) finite(results[section][field], `${section}.${field}`);
    assert.equal(typeof results[section].met, "boolean", `${section}.met`);
  }
  finite(results.diffSelector.requests.one, "diffSelector.requests.one");
  assert.equal(results.diffSelector.requests.all, results.diffSelector.requests.one, "diff -l reads in a constant number of requests");
  assert.equal(results.setMany.statefulSets, 3);
  assert.equal(results.showAll.claims, 18);
  finite(results.showAll.memory.pluginMiB, "showAll.memory.pluginMiB");

  for (const k of ["nproc", "memoryGiB"]) finite(results.machine[k], `machine.${k}`);
  assert.match(r.stdout, /^benchmark\s+plugin\s+kubectl\s+ratio\s+target/m, "a table on stdout");
  for (const row of [
    "set, 3 replicas",
    "show -n NS",
    "--help start-up",
    "API requests, set",
    "API requests, show",
    "peak memory, show -A",
    "diff -l over 3 sts",
    "API requests, diff -l",
    "set -l over 3 sts",
    "show -A, 6 sts",
  ])
    assert.ok(r.stdout.includes(row), row);
});
