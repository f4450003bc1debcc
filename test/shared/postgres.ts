// PostgreSQL on the real node (appstorage.local/postgres:15, lab/node/db-images.sh): a StatefulSet
// of plain, standalone servers (no replication), each with data checksums on (initdb -k) and its data
// folder inside its claim, run as the image's postgres user (uid 999); and a pgbench client in a pod
// of its own that keeps committing numbered transactions, reconnecting whenever the server goes away,
// and logs each commit it was told of (pgbench -l), so that a test counts them against the table.
import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { after } from "node:test";
import { promisify } from "node:util";
import type { StatefulSet } from "../../src/api/types";
import { eventually, kubeconfig, kubectl } from "./harness";
import { appContainer, clientPod, dataDirInit, exec, statefulSetWith } from "./node";

export const postgresImage = "appstorage.local/postgres:15";
/** The image's postgres user (lab/node/db-images.sh). */
export const postgresUid = 999;
export const pgMount = "/var/lib/postgresql/data";
/** PGDATA: a folder inside the claim, not its root (which holds the file system's lost+found). */
export const pgData = `${pgMount}/pgdata`;
const execFileAsync = promisify(execFile);

/**
 * The server's container: initdb -k on an empty claim (trust authentication: a lab), then postgres in
 * the foreground. SIGTERM, which kubelet sends, is turned into postgres's fast shutdown (SIGINT):
 * postgres's own SIGTERM is a smart shutdown that waits for every client to leave, and the pgbench
 * client never does. A fast shutdown ends with a checkpoint, so the next start needs no recovery.
 */
const serverScript = [
  `if [ ! -s ${pgData}/PG_VERSION ]; then`,
  `  initdb -k -D ${pgData} --locale=C -E UTF8 -U postgres -A trust > /tmp/initdb.log 2>&1 || { cat /tmp/initdb.log; exit 1; }`,
  `  echo 'host all all 0.0.0.0/0 trust' >> ${pgData}/pg_hba.conf`,
  "fi",
  `postgres -D ${pgData} -c listen_addresses='*' -c shared_buffers=32MB -c max_wal_size=64MB -c min_wal_size=32MB -c jit=off -c checkpoint_timeout=30s &`,
  "pid=$!",
  `trap 'kill -INT "$pid"' TERM`,
  // The first wait returns when the trap runs; the second waits for postgres to finish its shutdown.
  'wait "$pid"; wait "$pid"',
].join("\n");

export interface PostgresOptions {
  replicas?: number;
  size?: string;
  claim?: string;
  storageClass?: string;
}

/**
 * A StatefulSet of PostgreSQL servers. An init container of the workload image, as root with only
 * CAP_CHOWN, makes PGDATA once (0700, owned by postgres) on the claim's root-owned file system; the
 * server runs as postgres, never as root. Ready once it accepts connections (pg_isready).
 */
export function postgresStatefulSet(name: string, opts: PostgresOptions = {}): StatefulSet {
  const claim = opts.claim ?? "pgdata";
  const mount = [{ name: claim, mountPath: pgMount }];
  return statefulSetWith(
    name,
    opts.replicas ?? 1,
    { name: claim, storageClass: opts.storageClass, size: opts.size },
    {
      template: {
        metadata: { labels: { app: name } },
        spec: {
          terminationGracePeriodSeconds: 30,
          automountServiceAccountToken: false,
          initContainers: [dataDirInit("pgdata", pgData, postgresUid, mount)],
          containers: [
            appContainer(postgresImage, postgresUid, serverScript, {
              ports: [{ name: "postgres", containerPort: 5432 }],
              volumeMounts: mount,
              // Generous: on a loaded 2-core machine a probe that times out would say Ready flipped when nothing happened.
              readinessProbe: { exec: { command: ["pg_isready", "-q", "-h", "/var/run/postgresql"] }, periodSeconds: 2, timeoutSeconds: 5, failureThreshold: 3 },
            }),
          ],
        },
      },
    },
  );
}

/** psql in the server's pod, over its Unix socket: the rows, unaligned, one a line. */
export function psql(ns: string, pod: string, sql: string): string {
  return exec(ns, pod, `psql -X -At -v ON_ERROR_STOP=1 -h /var/run/postgresql -U postgres -d postgres <<'SQL'\n${sql}\nSQL`).trim();
}

/**
 * pgbench's tables (scale 1: 100,000 accounts) and a unique index on pgbench_history (tid, bid): the
 * client's transactions write their run in tid and their number within the run in bid.
 */
export function initPgbench(ns: string, pod: string): void {
  exec(ns, pod, "pgbench -q -i -s 1 -h /var/run/postgresql -U postgres postgres 2>&1");
  psql(ns, pod, "CREATE UNIQUE INDEX pgbench_history_run ON pgbench_history (tid, bid);");
}

/**
 * The client's transaction: a TPC-B-like account update and a history row numbered within its run.
 * The number is the run's rows so far plus one, and one client runs at a time: the k-th transaction
 * pgbench reports committed in a run is row k of that run, so every reported commit is a row.
 */
const transaction = [
  "\\set aid random(1, 100000)",
  "\\set delta random(-5000, 5000)",
  "BEGIN;",
  "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;",
  "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) SELECT :run, coalesce(max(bid), 0) + 1, :aid, :delta, now() FROM pgbench_history WHERE tid = :run;",
  "END;",
].join("\n");

/**
 * The client pod's loop. It waits for /tmp/go, then runs pgbench against the address in /tmp/host
 * (the test writes the server pod's address there whenever it changes) again and again, 10 s each
 * (one connection, -c 1), until /tmp/stop; then writes /tmp/stopped and waits for /tmp/go again. Each
 * pgbench run has a number (its tid), logs each transaction it saw committed to /tmp/tx-RUN.PID (-l),
 * and leaves a line "RUN EXIT HOST" in /tmp/runs.log: exit 0 when its connection lasted, 2 when it
 * lost it mid-run, 1 when it could not connect. A run that is not 0 is retried after 0.2 s.
 */
const clientScript = [
  "trap 'exit 0' TERM",
  `cat > /tmp/tx.sql <<'EOF'\n${transaction}\nEOF`,
  ": > /tmp/runs.log",
  "run=0",
  "while :; do",
  "  while [ ! -f /tmp/go ]; do sleep 0.2 & wait $!; done",
  "  rm -f /tmp/go /tmp/stopped",
  "  while [ ! -f /tmp/stop ]; do",
  '    host="$(cat /tmp/host 2>/dev/null)"',
  '    [ -n "$host" ] || { sleep 0.2 & wait $!; continue; }',
  "    run=$((run + 1))",
  '    pgbench -h "$host" -U postgres -n -c 1 -T 10 -f /tmp/tx.sql -D run=$run -l --log-prefix=/tmp/tx-$run postgres > /tmp/out-$run.log 2>&1 &',
  '    wait $!; echo "$run $? $host" >> /tmp/runs.log',
  "    sleep 0.2 & wait $!",
  "  done",
  "  rm -f /tmp/stop; touch /tmp/stopped",
  "done",
].join("\n");

/** What the client reported: per run, its exit code and the commits it logged. */
export interface ClientReport {
  runs: { run: number; exit: number; host: string; committed: number }[];
  committed: number;
}

/** Per run, the rows of pgbench_history: how many, and the highest number (equal when none is missing). */
export function historyRuns(ns: string, pod: string): Map<number, { rows: number; last: number }> {
  const out = new Map<number, { rows: number; last: number }>();
  for (const line of psql(ns, pod, "SELECT tid, count(*), max(bid) FROM pgbench_history GROUP BY tid ORDER BY tid;").split("\n").filter(Boolean)) {
    const [tid, rows, last] = line.split("|").map(Number);
    out.set(tid!, { rows: rows!, last: last! });
  }
  return out;
}

/**
 * Every commit the client was told of is a row: for each run, the table has at least as many rows as
 * pgbench logged commits, numbered 1..n with none missing, and at most one more (a commit whose
 * answer the lost connection never brought back).
 */
export function assertCommitsKept(ns: string, pod: string, report: ClientReport, context: string): void {
  const rows = historyRuns(ns, pod);
  for (const r of report.runs) {
    const h = rows.get(r.run) ?? { rows: 0, last: 0 };
    assert.equal(h.rows, h.last, `${context}: run ${r.run}'s rows are numbered 1..${h.rows} with none missing (highest ${h.last})`);
    assert.ok(h.rows >= r.committed, `${context}: run ${r.run} (exit ${r.exit}) reported ${r.committed} commits; the table has ${h.rows} of its rows`);
    assert.ok(h.rows <= r.committed + 1, `${context}: run ${r.run} has ${h.rows} rows for ${r.committed} reported commits`);
  }
}

/**
 * pgbench in a pod of its own (the postgres image, as postgres) against the server pod `server`,
 * following the server's address as the pod is re-created (a watch of that pod; the client reads the
 * address before each run). start() begins a session of runs, stop() ends it and returns what the
 * client reported since the pod began (every session's runs).
 */
export class PgbenchClient {
  private readonly pod = "pgbench";
  private watch: ChildProcess | undefined;
  private host = "";
  private writing: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly ns: string,
    private readonly server: string,
  ) {}

  async create(): Promise<void> {
    // A server pod that is gone leaves an address nobody answers: give up connecting after 3 s.
    await clientPod(this.ns, this.pod, postgresImage, postgresUid, clientScript, { container: { env: [{ name: "PGCONNECT_TIMEOUT", value: "3" }] } });
    this.follow();
  }

  /** Writes the server's address into the client whenever a watch of the server pod shows a new one. */
  private follow(): void {
    const child = spawn("kubectl", ["--kubeconfig", kubeconfig(), "get", "pod", this.server, "-n", this.ns, "-w", "-o", 'jsonpath={.status.podIP}{"\\n"}'], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    this.watch = child;
    after(() => child.kill());
    let buf = "";
    child.stdout.on("data", (d: Buffer) => {
      buf += d.toString();
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        const ip = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!ip || ip === this.host) continue;
        this.host = ip;
        this.writing = this.writing.then(() =>
          execFileAsync("kubectl", ["--kubeconfig", kubeconfig(), "exec", "-n", this.ns, this.pod, "-c", "app", "--", "sh", "-c", `echo ${ip} > /tmp/host.new && mv /tmp/host.new /tmp/host`]).catch(
            () => undefined,
          ),
        );
      }
    });
  }

  /** The server's address the client uses now. */
  async currentHost(): Promise<string> {
    await this.writing;
    return exec(this.ns, this.pod, "cat /tmp/host 2>/dev/null || true").trim();
  }

  /** Starts a session of runs and waits until the client has `atLeast` commits more than before. */
  async start(atLeast = 20): Promise<void> {
    const before = this.report().committed;
    exec(this.ns, this.pod, "rm -f /tmp/stopped && touch /tmp/go");
    await this.committedAtLeast(before + atLeast, 120_000);
  }

  /** Waits until the client has logged `n` commits in all (its running pgbench's log is read when that run ends). */
  async committedAtLeast(n: number, timeoutMs = 180_000): Promise<void> {
    await eventually(`the pgbench client to report ${n} commits`, () => this.report().committed >= n, timeoutMs);
  }

  /** Ends the session (the running pgbench finishes its 10 s) and returns every run's report. */
  async stop(): Promise<ClientReport> {
    exec(this.ns, this.pod, "touch /tmp/stop");
    await eventually("the pgbench client to stop", () => exec(this.ns, this.pod, "test -f /tmp/stopped && echo yes || true").trim() === "yes", 60_000);
    return this.report();
  }

  /**
   * The runs that ended (runs.log) and the commits each logged: pgbench writes a line per transaction
   * to its log (time "failed" for one that failed; none here), and its file is complete once the run ended.
   */
  report(): ClientReport {
    const out = exec(
      this.ns,
      this.pod,
      ["cat /tmp/runs.log", "echo ---", 'for f in /tmp/tx-*; do [ -f "$f" ] || continue; r=${f#/tmp/tx-}; r=${r%%.*}; awk -v r="$r" \'$3 != "failed" { n++ } END { print r, n + 0 }\' "$f"; done'].join(
        "\n",
      ),
    );
    const [runsPart = "", logsPart = ""] = out.split("---\n");
    const committed = new Map<number, number>();
    for (const line of logsPart.split("\n").filter(Boolean)) {
      const [r, n] = line.split(" ").map(Number);
      committed.set(r!, (committed.get(r!) ?? 0) + n!);
    }
    const runs = runsPart
      .split("\n")
      .filter(Boolean)
      .map((line) => {
        const [run = "", exit = "", host = ""] = line.split(" ");
        return { run: Number(run), exit: Number(exit), host, committed: committed.get(Number(run)) ?? 0 };
      });
    return { runs, committed: runs.reduce((s, r) => s + r.committed, 0) };
  }

  /**
   * The longest gap between two successive transactions pgbench reported committed (its log's
   * time_epoch and time_us: when each finished), among those around [from, to] (seconds since the
   * epoch), and when it began; of the runs that ended (a running pgbench's log is written at its
   * end). Computed in the client pod: the logs hold a line per transaction, hundreds of thousands.
   */
  longestCommitGap(from: number, to: number): { gap: number; at: number } {
    const out = exec(
      this.ns,
      this.pod,
      `cat /tmp/tx-* 2>/dev/null | awk '$3 != "failed" { printf "%d.%06d\\n", $5, $6 }' | sort -n | awk -v from=${from} -v to=${to} 'NR > 1 && $1 >= from && prev <= to && $1 - prev > gap { gap = $1 - prev; at = prev } { prev = $1 } END { printf "%.6f %.6f\\n", gap, at }'`,
    );
    const [gap = "0", at = "0"] = out.trim().split(" ");
    return { gap: Number(gap), at: Number(at) };
  }

  /** The output of a run (pgbench's own messages: why it stopped). */
  runOutput(run: number): string {
    return exec(this.ns, this.pod, `cat /tmp/out-${run}.log`);
  }

  stopWatch(): void {
    this.watch?.kill();
  }
}

/** When the server (the postmaster) started, as it says itself. */
export const postmasterStart = (ns: string, pod: string) => psql(ns, pod, "SELECT pg_postmaster_start_time();");

/** pg_amcheck of every database, heap and every index entry against its heap (--heapallindexed): its output, "" when clean. */
export function amcheck(ns: string, pod: string): { code: number; output: string } {
  try {
    // Warnings and worse only: --install-missing's CREATE EXTENSION IF NOT EXISTS says NOTICE on every run after the first.
    const output = exec(ns, pod, "PGOPTIONS='-c client_min_messages=warning' pg_amcheck -h /var/run/postgresql -U postgres --all --install-missing --heapallindexed 2>&1");
    return { code: 0, output: output.trim() };
  } catch (e) {
    const err = e as { status?: number; stdout?: string; stderr?: string };
    return { code: err.status ?? -1, output: `${err.stdout ?? ""}${err.stderr ?? ""}`.trim() };
  }
}

/**
 * The server's log since its container started (kubectl logs): it started from a clean shutdown
 * (no crash recovery: no "redo", not "interrupted") and reported no checksum failure, no invalid
 * record, no ERROR, no PANIC or FATAL of its own (a LOG line such as an IPv6 socket it could not
 * open is not a failure).
 */
export function assertCleanStart(ns: string, pod: string, context: string): string {
  const log = kubectl(["logs", pod, "-n", ns, "-c", "app"]);
  assert.match(log, /database system was shut down at .*\n(.*\n)*.*database system is ready to accept connections/, `${context}: the server started from a clean shutdown\n${log}`);
  const bad = log
    .split("\n")
    .filter((l) =>
      /PANIC|ERROR:|was interrupted|redo starts|invalid record|invalid checkpoint|checksum|page verification failed|database system was not properly shut down|automatic recovery/i.test(l),
    );
  // A client's own connection closing is FATAL for that connection only: not the server's.
  const fatal = log.split("\n").filter((l) => /FATAL:/.test(l) && !/terminating connection due to administrator command|the database system is (starting up|shutting down)/.test(l));
  assert.deepEqual([...bad, ...fatal], [], `${context}: the server's log shows recovery or errors\n${log}`);
  return log;
}
