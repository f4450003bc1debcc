// The benchmarks (npm run bench, scripts/bench/bench.mjs) in their smoke mode: 3 StatefulSets, one
// repetition. What is checked is that every section ran and reported numbers; timings are
// not asserted here (they are ratios for the README, measured by a full run).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { kubeconfig, root } from "../shared/harness";

const finite = (x: unknown, what: string) => assert.ok(typeof x === "number" && Number.isFinite(x), `${what} is a number (${String(x)})`);

test("the bench runs in its small mode and reports all nine sections", { timeout: 600_000 }, (t) => {
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
  // set -l against the same StatefulSets changed by the kubectl recipe, 4 at a time (issue 40).
  for (const field of ["pluginMs", "kubectlMs", "ratio", "target"]) finite(results.setMany.recipe[field], `setMany.recipe.${field}`);
  assert.equal(typeof results.setMany.recipe.met, "boolean");
  assert.equal(results.setMany.recipe.parallel, 4);
  finite(results.setMany.parallelOne.pluginMs, "setMany.parallelOne.pluginMs");
  assert.equal(results.showAll.claims, 18);
  finite(results.showAll.memory.pluginMiB, "showAll.memory.pluginMiB");

  // The scale rows, small: 60 StatefulSets in 3 namespaces, created directly (issue 26).
  const scale = results.scale;
  assert.deepEqual([scale.statefulSets, scale.pods, scale.claims, scale.namespaces], [60, 180, 180, 3]);
  // Other tests' objects may be in the cluster too; the scale row's own are counted in its namespaces.
  assert.ok(scale.cluster.statefulSets >= 60 && scale.cluster.pods >= 180 && scale.cluster.claims >= 180, JSON.stringify(scale.cluster));
  for (const field of ["pluginMs", "kubectlMs", "ratio"]) finite(scale.show[field], `scale.show.${field}`);
  finite(scale.show.memory.pluginMiB, "scale.show.memory.pluginMiB");
  assert.equal(scale.diff.paged, true, "diff -l -A made no list without a limit");
  assert.equal(scale.diff.requestsConstant, true, "diff -l -A over 60 made the requests of diff -l -A over one");
  assert.equal(scale.set.statefulSets, 3);
  assert.deepEqual(scale.set.requests.unpaged, [], "set -l -A made no list without a limit");
  assert.equal(scale.set.listsConstant, true, "set -l -A over 3 read the cluster-wide lists of over one");
  // Every object of the scale row compared after the rows: only what set -l -A changes changed.
  assert.deepEqual(
    { objects: scale.unchanged.objects, changed: scale.unchanged.changed, met: scale.unchanged.met },
    { objects: 60 + 60 + 180 + 180, changed: 0, met: true },
    scale.unchanged.first.join("\n"),
  );

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
    "set -l over 3 sts (vs the kubectl recipe over them, 4 at a time)",
    "  same, 3 sts (vs one set",
    "show -A, 6 sts",
    "show -A, 60 sts / 180 pods / 180 claims (3 ns)",
    "diff -l -A over all 60",
    "API requests, diff -l -A",
    "set -l -A over 3 sts",
    "API requests, set -l -A",
    "objects changed beyond what set -l -A changes (of 480)",
  ])
    assert.ok(r.stdout.includes(row), row);
});
