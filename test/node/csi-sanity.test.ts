// The node's CSI driver against csi-sanity, the kubernetes-csi conformance suite for CSI drivers:
// real volumes (sparse files, mkfs, loop devices, mounts), built and run by lab/node/csi.sh.
// Afterwards nothing of it may be left on the machine: no mount and no loop device.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

// The driver's three shapes (lab/node/csi.sh sanity's flags): the one node's (no zones, no
// attach), one process with a zone, attach and stage, and the zones' split into a controller part and
// a node part on two sockets; each with filesystem volumes and with raw block volumes
// (--csi.testvolumeaccesstype=block). Specs csi-sanity runs for each with csi-test v5.6.0 (the lab's
// pin): all but those of capabilities the driver does not have (GetCapacity, ListVolumes, volume
// modification and health, group snapshots, snapshot topology, and without attach publishing and
// staging); snapshots, restores and clones run. Fewer means specs stopped running, which is no pass.
const block = "--csi.testvolumeaccesstype=block";
const shapes = [
  { name: "one node", flags: [], minSpecsRun: 61 },
  { name: "attach and stage", flags: ["--attach"], minSpecsRun: 74 },
  { name: "controller and node parts", flags: ["--split"], minSpecsRun: 72 },
  { name: "one node, raw block", flags: [block], minSpecsRun: 61 },
  { name: "attach and stage, raw block", flags: ["--attach", block], minSpecsRun: 74 },
  { name: "controller and node parts, raw block", flags: ["--split", block], minSpecsRun: 72 },
];

function mountsUnder(dir: string): string[] {
  return readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .map((line) => (line.split(" ")[1] ?? "").replace(/\\040/g, " "))
    .filter((mountPoint) => mountPoint.startsWith(dir + "/"));
}

function loopsUnder(dir: string): string[] {
  const out = spawnSync("losetup", ["-J", "-l"], { encoding: "utf8" });
  assert.equal(out.status, 0, out.stderr);
  if (out.stdout.trim() === "") return []; // no loop device at all
  const devices = (JSON.parse(out.stdout) as { loopdevices: { name: string; "back-file": string | null }[] }).loopdevices;
  return devices.filter((d) => (d["back-file"] ?? "").startsWith(dir + "/")).map((d) => `${d.name} (${d["back-file"]})`);
}

for (const shape of shapes) {
  test(`csi-sanity passes against appstorage-csi-driver (${shape.name}) and leaves no mount or loop device behind`, { timeout: 40 * 60_000 }, () => {
    // csi.sh sanity makes its temporary folder under TMPDIR: here, a folder of this test's own.
    const tmp = mkdtempSync(join(tmpdir(), "csi-test-"));
    try {
      assert.deepEqual(mountsUnder(tmp), []);
      assert.deepEqual(loopsUnder(tmp), []);
      const run = spawnSync("bash", ["lab/node/csi.sh", "sanity", ...shape.flags], {
        encoding: "utf8",
        env: { ...process.env, TMPDIR: tmp },
        maxBuffer: 64 << 20,
      });
      const output = run.stdout + run.stderr;
      assert.equal(run.status, 0, `csi.sh sanity ${shape.flags.join(" ")} exited ${run.status}:\n${output.slice(-8000)}`);
      // The last summary: csi.sh runs csi-sanity once more after its client's connection race alone.
      const summaries = [...output.matchAll(/Ran (\d+) of (\d+) Specs[\s\S]*?(\d+) Passed \| (\d+) Failed/g)];
      const last = summaries.at(-1);
      assert.ok(last, `no ginkgo summary in:\n${output.slice(-4000)}`);
      assert.ok(Number(last[1]) >= shape.minSpecsRun, `csi-sanity ran ${last[1]} of ${last[2]} specs, expected at least ${shape.minSpecsRun}`);
      assert.equal(last[4], "0", `csi-sanity: ${last[4]} failed`);
      assert.equal(last[3], last[1], "every spec run passed");
      assert.deepEqual(mountsUnder(tmp), [], "mounts left behind");
      assert.deepEqual(loopsUnder(tmp), [], "loop devices left behind");
      assert.deepEqual(readdirSync(tmp), [], "csi.sh sanity left its temporary folder");
    } finally {
      // Never remove a folder through a mount that is left: that would delete inside the volume.
      if (mountsUnder(tmp).length === 0) rmSync(tmp, { recursive: true, force: true });
    }
  });
}
