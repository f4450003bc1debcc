// The node's CSI driver's two expansion modes on real xfs and ext4 volumes (lab/node/csi/
// expand_test.go, run with go test): grown while a pod uses it, or refused in use with
// FAILED_PRECONDITION and grown at the next mount, which is what keeps a claim FileSystemResizePending
// until its pod restarts. csi-sanity knows nothing of the second mode.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

const subtests = ["xfs", "xfs/at-mount", "ext4", "ext4/at-mount"];

function mountsUnder(dir: string): string[] {
  return readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[1] ?? "")
    .filter((mountPoint) => mountPoint.startsWith(dir + "/"));
}

function loopsUnder(dir: string): string[] {
  const out = spawnSync("losetup", ["--list", "--noheadings", "--raw", "--output", "NAME,BACK-FILE"], { encoding: "utf8" });
  assert.equal(out.status, 0, out.stderr);
  return out.stdout.split("\n").filter((line) => (line.split(" ")[1] ?? "").startsWith(dir + "/"));
}

test("the driver grows volumes online, or only at mount in the expand-at-mount mode", { timeout: 20 * 60_000 }, () => {
  // go test's temporary folders (the volumes and their mounts) go under a folder of this test's own.
  const tmp = mkdtempSync(join(tmpdir(), "csi-expand-"));
  try {
    const run = spawnSync("go", ["test", "-count=1", "-v", "-run", "^TestExpansion$", "./..."], {
      cwd: "lab/node/csi",
      encoding: "utf8",
      env: { ...process.env, CGO_ENABLED: "0", TMPDIR: tmp },
      maxBuffer: 64 << 20,
    });
    const output = run.stdout + run.stderr;
    assert.equal(run.status, 0, `go test exited ${run.status}:\n${output.slice(-8000)}`);
    // Every case ran and passed: a skip (not root) is no pass.
    for (const name of subtests) assert.match(output, new RegExp(`--- PASS: TestExpansion/${name.replace("/", "\\/")} `), output);
    assert.doesNotMatch(output, /--- SKIP/);
    assert.deepEqual(mountsUnder(tmp), [], "mounts left behind");
    assert.deepEqual(loopsUnder(tmp), [], "loop devices left behind");
  } finally {
    if (mountsUnder(tmp).length === 0) rmSync(tmp, { recursive: true, force: true });
  }
});
