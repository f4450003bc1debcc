// Kubernetes' own e2e specs judge the three-zone cluster: `lab/specs/run.sh subset`, e2e.test built
// from the pinned k8s.io/kubernetes module (lab/specs/build.sh) with the images of
// lab/specs/images.sh, against this suite's cluster. The subset: the StatefulSet's basic identity
// (sig-apps), and of the external storage suite for csi.appstorage.local a provisioned volume that
// keeps its data, topology in both binding modes, and online expansion. Checked here from run.sh's
// report: it exits 0, every spec the focus chose ran and passed, none skipped itself (a capability
// the test driver file claims and the driver lacks would), and at least those five ran.
// The full runs (run.sh apps, about 23 minutes; run.sh storage, about 10) are not in CI, whose 90
// minutes the other lanes fill: the README says how to run them.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, test } from "node:test";
import { kubeconfig, root } from "../shared/harness";

const state = process.env["APPSTORAGE_CLUSTER_DIR"] ?? "";

describe("zones: Kubernetes' own e2e specs on the three-node cluster", { timeout: 1_800_000 }, () => {
  test("run.sh subset: StatefulSet identity, and the storage suite's data, topology and online expansion for csi.appstorage.local, all passed", (t) => {
    assert.ok(state, "APPSTORAGE_CLUSTER_DIR is set (node scripts/test.mjs zones sets it)");
    const run = spawnSync("bash", [join(root, "lab", "specs", "run.sh"), "subset"], {
      encoding: "utf8",
      env: { ...process.env, KUBECONFIG: kubeconfig(), APPSTORAGE_E2E_STATE: state },
      stdio: ["ignore", "pipe", "inherit"],
    });
    t.diagnostic(run.stdout);
    assert.equal(run.status, 0, `run.sh subset exited ${run.status}:\n${run.stdout}`);
    const ran = /^Ran (\d+) of (\d+) Specs/m.exec(run.stdout);
    const counts = /^SUCCESS! -- (\d+) Passed \| (\d+) Failed \| (\d+) Pending \| (\d+) Skipped/m.exec(run.stdout);
    assert.ok(ran && counts, `a Ginkgo summary in:\n${run.stdout}`);
    const [passed, failed] = [Number(counts[1]), Number(counts[2])];
    assert.equal(failed, 0, run.stdout);
    assert.equal(passed, Number(ran[1]), "every spec that ran passed");
    assert.ok(passed >= 5, `the subset's five specs ran (${passed})`);
    assert.deepEqual(
      run.stdout.split("\n").filter((l) => l.startsWith("skipped ")),
      [],
      "no chosen spec skipped itself",
    );
  });
});
