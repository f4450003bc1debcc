// npm run bench:realdb: what a PostgreSQL client sees of a move, against a plain restart of the same
// pod. One replica of postgresql-k8s (appstorage.local/postgres:15, 1Gi) under the pgbench client of
// test/shared/postgres.ts (one connection, reconnecting 0.2 s after a failed run, following the
// server's new address); in one run, rounds alternating:
//   - a plain restart: the pod evicted (the Eviction API), its new pod Ready on the same volume;
//   - `set --migrate-existing` to the other class (appstorage-csi <-> appstorage-csi-b, so every
//     round moves): the data copied to a new volume while the server runs, then the pod evicted and
//     the rest copied, and the pod started on the new volume.
// The figure of each: the longest gap between two successive transactions that pgbench reported
// committed (their completion times in its per-transaction log), from just before the operation
// until the client has committed again. Both include the client's own reconnect (0.2 s, then the
// new address, written into the client by a watch): the same for both.
// Run by the node suite's runner on the node's cluster (node scripts/test.mjs node FILE: it brings
// the cluster up and down); BENCH_REALDB_ROUNDS rounds (3 by default). Prints the rows as the test's
// diagnostics and writes dist/bench/realdb.json.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { eventually, kubectl, namespace, root, runPlugin } from "../../test/shared/harness";
import { allReady, create, deleteKeptVolumes, running, workloadImage } from "../../test/shared/node";
import { initPgbench, PgbenchClient, postgresStatefulSet } from "../../test/shared/postgres";

const rounds = Number(process.env["BENCH_REALDB_ROUNDS"] ?? 3);
const sts = "postgresql-k8s";
const pod = `${sts}-0`;
const classes = ["appstorage-csi-b", "appstorage-csi"];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

test(`bench: the longest gap a pgbench client sees, a plain restart against --migrate-existing, ${rounds} rounds each, alternated`, { timeout: 3_600_000 }, async (t) => {
  const ns = namespace(t, "bench-realdb");
  deleteKeptVolumes(t, ns);
  create(postgresStatefulSet(sts, { size: "1Gi", storageClass: classes[1] }), ns);
  await allReady(ns, sts, 1, 180_000);
  initPgbench(ns, pod);
  const client = new PgbenchClient(ns, pod);
  await client.create();
  await client.start();

  /** Runs `operation`, then waits for 20 more commits; the longest gap from just before it. */
  const measure = async (operation: () => Promise<void>): Promise<{ gap: number; seconds: number }> => {
    const from = Date.now() / 1000;
    await operation();
    await allReady(ns, sts, 1, 180_000);
    await client.committedAtLeast(client.report().committed + 20);
    const to = Date.now() / 1000;
    return { gap: client.longestCommitGap(from, to).gap, seconds: to - from };
  };
  const rows: { round: number; restart: number; move: number; moveSeconds: number }[] = [];
  for (let round = 1; round <= rounds; round++) {
    const restart = await measure(async () => {
      const uid = running(ns, sts)[pod]!.uid;
      kubectl(["create", "--raw", `/api/v1/namespaces/${ns}/pods/${pod}/eviction`, "-f", "-"], {
        input: JSON.stringify({ apiVersion: "policy/v1", kind: "Eviction", metadata: { name: pod, namespace: ns } }),
      });
      await eventually(
        "the evicted pod's successor Ready",
        () => {
          const p = running(ns, sts)[pod];
          return p && p.uid !== uid && p.ready;
        },
        180_000,
      );
    });
    const to = classes[(round - 1) % 2]!;
    const move = await measure(async () => {
      const r = await runPlugin(["set", sts, `pgdata=1Gi,${to}`, "--migrate-existing", "--copy-image", workloadImage, "--timeout", "300s", "-n", ns, "--yes"]);
      assert.equal(r.code, 0, r.stderr);
    });
    rows.push({ round, restart: restart.gap, move: move.gap, moveSeconds: move.seconds });
    t.diagnostic(`round ${round}: plain restart ${restart.gap.toFixed(2)} s, move to ${to} ${move.gap.toFixed(2)} s (the move took ${move.seconds.toFixed(0)} s)`);
  }
  const report = await client.stop();
  client.stopWatch();
  const result = {
    rounds,
    restartMedian: median(rows.map((r) => r.restart)),
    moveMedian: median(rows.map((r) => r.move)),
    rows,
    commits: report.committed,
  };
  t.diagnostic(`median longest gap: plain restart ${result.restartMedian.toFixed(2)} s, --migrate-existing ${result.moveMedian.toFixed(2)} s (${report.committed} commits in all)`);
  mkdirSync(join(root, "dist", "bench"), { recursive: true });
  writeFileSync(join(root, "dist", "bench", "realdb.json"), `${JSON.stringify(result, null, 2)}\n`);
});
