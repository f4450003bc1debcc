// PostgreSQL, the seed's application, on the real node: postgresql-k8s (appstorage.local/postgres:15,
// data checksums on, PGDATA inside claim template pgdata, run as postgres) under a pgbench client
// that keeps committing numbered transactions from a pod of its own, reconnecting whenever the server
// goes away, through each of:
// 1. the reference flow: set pgdata=2Gi, then scale 1 -> 2. Ordinal 0's postmaster is never
//    restarted (the same pg_postmaster_start_time(), the same container) and the client never loses
//    its connection (every pgbench run ends with exit 0). Ordinal 1 is a fresh standalone server on
//    its own new claim (plain replicas, no replication: its data is not the primary's);
// 2. --resize-existing --restart-pods on a class whose volumes grow only when mounted: each server
//    stopped (fast shutdown) and started again on its grown file system;
// 3. --migrate-existing to appstorage-csi-b, then a shrink to 1Gi that the data fits in.
// After each: every transaction pgbench reported committed is a row of pgbench_history (counted per
// run against pgbench's per-transaction log), pg_amcheck --heapallindexed finds nothing, and the
// server's log says it started from a clean shutdown, with no recovery and no error.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { claims, kubectl, kubectlJson, namespace, runPlugin } from "../shared/harness";
import { aboutGiB, allReady, atMountClass, claimStatus, create, deleteKeptVolumes, exec, GiB, running, workloadImage } from "../shared/node";
import { amcheck, assertCleanStart, assertCommitsKept, initPgbench, PgbenchClient, pgData, pgMount, postgresStatefulSet, postgresUid, postmasterStart, psql } from "../shared/postgres";

const sts = "postgresql-k8s";
const p0 = `${sts}-0`;
const p1 = `${sts}-1`;

/** The size of the file system PGDATA is on, in bytes. */
const pgFsBytes = (ns: string, pod: string) => Number(exec(ns, pod, `df -k ${pgMount}`).trim().split("\n").pop()!.trim().split(/\s+/)[1]) * 1024;

/** Every check of a step: the commits, amcheck, and a clean start of ordinal 0's server. */
function assertDatabaseKept(ns: string, report: ReturnType<PgbenchClient["report"]>, context: string): void {
  assertCommitsKept(ns, p0, report, context);
  const check = amcheck(ns, p0);
  assert.deepEqual(check, { code: 0, output: "" }, `${context}: pg_amcheck --heapallindexed`);
  assertCleanStart(ns, p0, context);
  assert.equal(psql(ns, p0, "SHOW data_checksums;"), "on", `${context}: data checksums on`);
}

describe("node: PostgreSQL under pgbench", { timeout: 1_800_000 }, () => {
  test("postgresql-k8s: the reference flow without a restart, then --resize-existing --restart-pods, --migrate-existing and a shrink; every reported commit kept, amcheck clean, clean starts", async (t) => {
    const ns = namespace(t, "node");
    deleteKeptVolumes(t, ns);
    const cls = atMountClass(t, ns);
    create(postgresStatefulSet(sts, { size: "1Gi", storageClass: cls }), ns);
    await allReady(ns, sts, 1, 180_000);
    assert.equal(exec(ns, p0, "id -u").trim(), String(postgresUid), "the server runs as postgres");
    assert.equal(psql(ns, p0, "SHOW data_directory;"), pgData);
    assert.equal(exec(ns, p0, `stat -c '%u %a' ${pgData}`).trim(), `${postgresUid} 700`);
    assert.equal(psql(ns, p0, "SHOW data_checksums;"), "on");
    initPgbench(ns, p0);
    const client = new PgbenchClient(ns, p0);
    await client.create();
    const session = (from: number, report: ReturnType<PgbenchClient["report"]>) => report.runs.filter((r) => r.run > from);
    const summary = (runs: ReturnType<PgbenchClient["report"]>["runs"]) =>
      `${runs.length} runs, ${runs.reduce((s, r) => s + r.committed, 0)} commits, exits ${JSON.stringify(runs.reduce<Record<number, number>>((m, r) => ({ ...m, [r.exit]: (m[r.exit] ?? 0) + 1 }), {}))}`;

    // 1. The reference flow, under load: ordinal 0's server is never restarted and no connection is lost.
    let from = client.report().runs.length;
    await client.start();
    const started = postmasterStart(ns, p0);
    const before = running(ns, sts);
    let t0 = Date.now();
    const set = await runPlugin(["set", sts, "pgdata=2Gi", "-n", ns, "--yes"]);
    assert.equal(set.code, 0, set.stderr);
    assert.equal(set.stdout, "statefulset.apps/postgresql-k8s recreated\n");
    kubectl(["scale", "statefulset", sts, "-n", ns, "--replicas=2"]);
    await allReady(ns, sts, 2, 180_000);
    t.diagnostic(`reference flow: set and scale to 2 Ready in ${(Date.now() - t0) / 1000}s`);
    await client.committedAtLeast(client.report().committed + 20);
    let report = await client.stop();
    let runs = session(from, report);
    t.diagnostic(`reference flow: ${summary(runs)}`);
    assert.ok(runs.length > 0 && runs.every((r) => r.exit === 0), `no connection lost: every pgbench run kept its connection (${JSON.stringify(runs)})`);
    assert.ok(runs.every((r) => r.committed > 0));
    assert.equal(postmasterStart(ns, p0), started, "ordinal 0's postmaster never restarted");
    assert.deepEqual(running(ns, sts)[p0], before[p0], "ordinal 0: the same pod and container, no restart");
    assertDatabaseKept(ns, report, "reference flow");
    assert.deepEqual(claimStatus(ns, `pgdata-${p0}`), { phase: "Bound", capacity: "1Gi", conditions: [] });
    assert.deepEqual(claimStatus(ns, `pgdata-${p1}`), { phase: "Bound", capacity: "2Gi", conditions: [] });
    // Ordinal 1: a standalone server of its own, initialised on its new claim.
    assert.equal(psql(ns, p1, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'pgbench%';"), "0", "ordinal 1 is a fresh server, not a copy of 0");
    assert.equal(psql(ns, p1, "SHOW data_checksums;"), "on");
    assertCleanStart(ns, p1, "ordinal 1");

    // 2. Grown at mount: each server stopped and started again on its bigger file system, the client reconnecting.
    from = report.runs.length;
    await client.start();
    const pods2 = running(ns, sts);
    t0 = Date.now();
    const resize = await runPlugin(["set", sts, "pgdata=3Gi", "--resize-existing", "--restart-pods", "--timeout", "300s", "-n", ns, "--yes"]);
    assert.equal(resize.code, 0, resize.stderr);
    assert.match(resize.stderr, /restarting 2 pod\(s\) one at a time, highest ordinal first/);
    const after2 = await allReady(ns, sts, 2, 180_000);
    t.diagnostic(`--resize-existing --restart-pods: ${(Date.now() - t0) / 1000}s`);
    await client.committedAtLeast(client.report().committed + 20);
    report = await client.stop();
    runs = session(from, report);
    t.diagnostic(`--resize-existing --restart-pods: ${summary(runs)}`);
    for (const p of [p0, p1]) {
      assert.notEqual(after2[p]!.uid, pods2[p]!.uid, `${p}: restarted`);
      assert.deepEqual(claimStatus(ns, `pgdata-${p}`), { phase: "Bound", capacity: "3Gi", conditions: [] });
      assert.ok(aboutGiB(pgFsBytes(ns, p), 3), `${p}: a 3 GiB file system`);
    }
    assert.notEqual(postmasterStart(ns, p0), started, "ordinal 0's server was restarted");
    assertDatabaseKept(ns, report, "--resize-existing --restart-pods");

    // 3. Moved to another class, then shrunk, each replica's data copied to a new volume.
    for (const [directive, size] of [
      ["pgdata=3Gi,appstorage-csi-b", "3Gi"],
      ["pgdata=1Gi,appstorage-csi-b", "1Gi"],
    ] as const) {
      from = report.runs.length;
      await client.start();
      const pods3 = running(ns, sts);
      const oldClaims = Object.fromEntries(claims(ns).map((c) => [c.metadata.name!, c.metadata.uid!]));
      t0 = Date.now();
      const move = await runPlugin(["set", sts, directive, "--migrate-existing", "--copy-image", workloadImage, "--timeout", "300s", "-n", ns, "--yes"]);
      assert.equal(move.code, 0, move.stderr);
      const after3 = await allReady(ns, sts, 2, 180_000);
      t.diagnostic(`--migrate-existing ${directive}: ${(Date.now() - t0) / 1000}s`);
      await client.committedAtLeast(client.report().committed + 20);
      report = await client.stop();
      runs = session(from, report);
      t.diagnostic(`--migrate-existing ${directive}: ${summary(runs)}`);
      for (const p of [p0, p1]) {
        assert.notEqual(after3[p]!.uid, pods3[p]!.uid, `${p}: restarted on its new volume`);
        const c = kubectlJson<{ metadata: { uid: string }; spec: { storageClassName?: string }; status?: { capacity?: { storage?: string } } }>(["get", "pvc", `pgdata-${p}`, "-n", ns]);
        assert.notEqual(c.metadata.uid, oldClaims[`pgdata-${p}`], `${p}: a new claim`);
        assert.equal(c.spec.storageClassName, "appstorage-csi-b");
        assert.equal(c.status?.capacity?.storage, size);
      }
      assert.ok(aboutGiB(pgFsBytes(ns, p0), size === "1Gi" ? 1 : 3), `${p0}: a ${size} file system`);
      assert.ok(pgFsBytes(ns, p0) > 0.5 * GiB);
      assert.equal(exec(ns, p0, `stat -c '%u %a' ${pgData}`).trim(), `${postgresUid} 700`, "PGDATA's owner and mode copied");
      assertDatabaseKept(ns, report, `--migrate-existing ${directive}`);
    }
    client.stopWatch();
    t.diagnostic(`in all: ${summary(report.runs)}`);
  });
});
