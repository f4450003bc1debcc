// set -f adding a claim template with its mount, then removing it, on the real node: kubelet stops
// each old pod gracefully and starts the new one with the new volume mounted; the existing claims
// keep their uid and their data (the payload's checksum); never more than one replica is down; the
// removed template's claims stay, with their uids.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { StatefulSet } from "../../src/api/types";
import { getSts, namespace, runPlugin, uids } from "../shared/harness";
import { allReady, claimStatus, create, exec, maxDown, payloadSha, watchPods, workload } from "../shared/node";

const names = ["db-0", "db-1", "db-2"];

function file(s: StatefulSet): string {
  const path = join(mkdtempSync(join(tmpdir(), "appstorage-manifest-")), "db.json");
  writeFileSync(path, JSON.stringify(s));
  return path;
}

/** The workload with a second claim template, logs, mounted at /logs. */
function withLogs(base: StatefulSet): StatefulSet {
  const s = JSON.parse(JSON.stringify(base)) as StatefulSet;
  s.spec.volumeClaimTemplates!.push({ metadata: { name: "logs" }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } });
  (s.spec.template.spec["containers"] as { volumeMounts: unknown[] }[])[0]!.volumeMounts.push({ name: "logs", mountPath: "/logs" });
  return s;
}

const mounted = (ns: string, pod: string, path: string) => exec(ns, pod, `grep -q ' ${path} ' /proc/mounts && echo yes || echo no`).trim() === "yes";

describe("node: set -f adds a claim template with its mount, then removes it", { timeout: 900_000 }, () => {
  test("every replica gets its new claim Bound and mounted, one pod down at a time; the old claims keep uid and data; removing it keeps its claims", async (t) => {
    const ns = namespace(t, "node");
    const base = { ...workload("db", { replicas: 3 }), metadata: { name: "db", namespace: ns } } as StatefulSet;
    create(base, ns);
    const first = await allReady(ns, "db", 3);
    const data = Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));
    const ids = uids(ns);
    const strategy = getSts(ns, "db").spec.updateStrategy;

    const watch = watchPods(ns);
    const add = await runPlugin(["set", "-f", file(withLogs(base)), "-n", ns, "--yes", "--timeout", "240s"]);
    assert.equal(add.code, 0, add.stderr);
    assert.equal(add.stdout, `statefulset.apps/db recreated\n${names.map((n) => `pod/${n} restarted\n`).join("")}`);
    const added = await allReady(ns, "db", 3);
    await watch.stop();
    assert.ok(maxDown(watch.seen, names) <= 1, "never more than one replica down");
    for (const [o, n] of names.entries()) {
      assert.notEqual(added[n]!.uid, first[n]!.uid, `${n}: restarted once`);
      assert.equal(added[n]!.restartCount, 0);
      assert.deepEqual(claimStatus(ns, `logs-db-${o}`).phase, "Bound", `${n}: its new claim is Bound`);
      assert.ok(mounted(ns, n, "/logs"), `${n}: and mounted at /logs`);
      assert.equal(uids(ns)[`pvc/data-${n}`], ids[`pvc/data-${n}`], `${n}: the old claim kept its uid`);
      assert.equal(payloadSha(ns, n), data[n], `${n}: and its data`);
    }
    assert.deepEqual(getSts(ns, "db").spec.updateStrategy, strategy, "the updateStrategy is put back");
    const logs = uids(ns);

    const rm = await runPlugin(["set", "-f", file(base), "-n", ns, "--yes", "--timeout", "240s"]);
    assert.equal(rm.code, 0, rm.stderr);
    assert.equal(
      rm.stdout,
      `statefulset.apps/db recreated\n${[...names]
        .reverse()
        .map((n) => `pod/${n} restarted\n`)
        .join("")}`,
    );
    await allReady(ns, "db", 3);
    for (const [o, n] of names.entries()) {
      assert.ok(!mounted(ns, n, "/logs"), `${n}: /logs no longer mounted`);
      assert.equal(uids(ns)[`pvc/logs-db-${o}`], logs[`pvc/logs-db-${o}`], `logs-db-${o} is kept`);
      assert.equal(payloadSha(ns, n), data[n], `${n}: data kept`);
    }
    assert.deepEqual(getSts(ns, "db").spec.updateStrategy, strategy);
  });
});
