// What the kill checks share, on the control plane (reliability.test.ts) and on the real node
// (test/node/kill.test.ts): SIGKILL the plugin while the fault proxy holds one request, tell
// whether the process really was alive there, and pick the requests of a run's phase to kill at.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Fault, type FaultProxy, type Held, isWrite, type SeenRequest, startFaultProxy, writeDisciplineViolations } from "./faultproxy";
import { kubeconfig, plugin } from "./harness";

/** A fresh state folder for one plugin run. */
export const stateDir = () => mkdtempSync(join(tmpdir(), "appstorage-state-"));

/** Rejects when `p` takes longer than `ms`: a run that hangs fails the test instead of hanging CI. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms / 1000}s`)), ms)))]).finally(() => clearTimeout(timer));
}

/** Runs `items` through `f`, `width` at a time (each case has its own namespace); fails with every failure. */
export async function pool<T>(items: T[], width: number, f: (item: T) => Promise<void>): Promise<void> {
  const failures: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++]!;
        try {
          await f(item);
        } catch (e) {
          failures.push((e as Error).message);
        }
      }
    }),
  );
  if (failures.length) assert.fail(`${failures.length} of ${items.length} case(s) failed:\n${failures.join("\n")}`);
}

/** /proc state letter of a process, or undefined when it is gone. */
export function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
  } catch {
    return undefined;
  }
}

/**
 * The request to kill at: its signature and occurrence (counted from the first `after` request on,
 * if given; or from the first request naming `afterObject`, that one included).
 */
export type KillTarget = { signature: string; nth: number; after?: string; afterObject?: string };

/** A plugin run stopped at its held request, alive there. */
interface HeldRun {
  proxy: FaultProxy;
  child: ChildProcess;
  held: Held;
  /** How the plugin ended: its exit code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

/**
 * Runs the plugin with `args` through a proxy that holds the request `x` (before the server sees
 * it, or after the server handled it but before the plugin hears back), and returns once it is
 * held with the plugin alive there (not exited, not a zombie). Fails when the plugin exits
 * before, or the request is not held within `holdMs`. The caller ends the run and closes the proxy.
 */
async function runToHeld(args: string[], x: KillTarget, when: "hold" | "hold-after", env: Record<string, string>, started?: (proxy: FaultProxy) => void, holdMs = 60_000): Promise<HeldRun> {
  const fault: Fault = { kind: when, nth: x.nth, signature: x.signature, ...(x.after ? { after: x.after } : {}), ...(x.afterObject ? { afterObject: x.afterObject } : {}) };
  const proxy = await startFaultProxy(kubeconfig(), [fault]);
  started?.(proxy);
  const child = spawn(plugin, [...args, "--kubeconfig", proxy.kubeconfig], {
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", APPSTORAGE_STATE_DIR: stateDir(), ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on("close", (code, signal) => r({ code, signal })));
  try {
    const held = await Promise.race([
      proxy.nextHeld(holdMs),
      exited.then(({ code, signal }) => Promise.reject(new Error(`the plugin exited (${code ?? signal}) before reaching ${x.signature} #${x.nth + 1}: ${stderr}`))),
    ]);
    const state = procState(child.pid!);
    assert.ok(child.exitCode === null && child.signalCode === null && state !== undefined && state !== "Z", `the plugin was not alive at the held request (state ${state})`);
    return { proxy, child, held, exited, stderr: () => stderr };
  } catch (e) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await proxy.close();
    throw e;
  }
}

/**
 * SIGKILLs the plugin at the held request `x` (runToHeld). Returns only when the kill landed: the
 * process was alive there and died of the SIGKILL.
 */
export async function killAt(args: string[], x: KillTarget, when: "hold" | "hold-after", started?: (proxy: FaultProxy) => void, holdMs = 60_000): Promise<SeenRequest> {
  const run = await runToHeld(args, x, when, {}, started, holdMs);
  try {
    run.child.kill("SIGKILL");
    assert.equal((await within(run.exited, 10_000, "the killed plugin")).signal, "SIGKILL");
    return run.held.request;
  } finally {
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill("SIGKILL");
    await run.proxy.close();
  }
}

/**
 * The proxy is in the path: it saw exactly the requests the plugin's own log lists, no more, no
 * fewer. And no write reached the server twice, and an unknown outcome was read back. `tally`
 * hears the writes checked and the repeated ones before the check decides.
 */
export function assertRequestsAccountedFor(proxy: FaultProxy, logFile: string, context: string, tally?: (writes: number, repeated: number) => void): void {
  const logged = existsSync(logFile) ? readFileSync(logFile, "utf8").trim().split("\n").filter(Boolean) : [];
  const seen = proxy.requests.map((r) => `${r.method} ${r.path}`);
  assert.ok(logged.length > 0, `${context}: the plugin logged no request`);
  assert.deepEqual([...seen].sort(), [...logged].sort(), `${context}: the proxy did not see exactly the plugin's requests`);
  const problems = writeDisciplineViolations(proxy.requests);
  tally?.(proxy.requests.filter(isWrite).length, problems.filter((p) => p.startsWith("write repeated")).length);
  assert.deepEqual(problems, [], `${context}: ${problems.join("; ")}`);
}

/** Pods whose eviction the server accepted, in order. */
export const evictions = (requests: SeenRequest[]) => requests.filter((r) => r.signature === "create pods/eviction" && r.reachedServer && (r.serverStatus ?? 500) < 300).map((r) => r.name!);

/** The wait and restart phase: what comes after the journal is removed (remove-journal, then wait-resize, restart-pods). */
export const afterJournal = "delete secrets";

export type PhaseTarget = KillTarget & { after: string; write: boolean };
export const phaseLabel = (x: PhaseTarget) => `${x.signature} #${x.nth + 1}`;

/** Every request of `baseline` after its first `after` request, each with its occurrence counted from there. */
export function phaseTargets(baseline: SeenRequest[], after = afterJournal): PhaseTarget[] {
  const start = baseline.findIndex((r) => r.signature === after);
  assert.ok(start >= 0, `the baseline made no ${after}`);
  const count = new Map<string, number>();
  return baseline.slice(start + 1).map((r) => {
    const nth = count.get(r.signature) ?? 0;
    count.set(r.signature, nth + 1);
    return { signature: r.signature, nth, after, write: isWrite(r) };
  });
}

/** Whether a request names this object (by its path, or a create by its body). */
export const names = (r: SeenRequest, object: string) => r.name === object || r.object === object;

/** The held request is the intended one: its signature, and its occurrence after the phase's start (or from the object that begins it). */
export function assertHeldIntended(log: SeenRequest[], at: SeenRequest, x: KillTarget & { after?: string }, context: string): void {
  assert.equal(at.signature, x.signature, context);
  if (x.afterObject) {
    const from = log.findIndex((r) => names(r, x.afterObject!));
    assert.ok(from >= 0 && at.index >= from, `${context}: held before ${x.afterObject}`);
    assert.equal(log.filter((r) => r.signature === x.signature && r.index >= from && r.index < at.index).length, x.nth, `${context}: held another occurrence`);
    return;
  }
  const from = log.findIndex((r) => r.signature === x.after);
  assert.ok(from >= 0 && at.index > from, `${context}: held before ${x.after}`);
  assert.equal(log.filter((r) => r.signature === x.signature && r.index > from && r.index < at.index).length, x.nth, `${context}: held another occurrence`);
}

/** What an interrupted run did: the request it was interrupted at, how it ended, and what it sent. */
export interface Interrupted {
  held: SeenRequest;
  code: number | null;
  stderr: string;
  requests: SeenRequest[];
  logFile: string;
  proxy: FaultProxy;
}

/**
 * As killAt, but Ctrl-C: SIGINT while the request `x` is held (before the server sees it, or after
 * it handled it), then the request goes on, and the plugin must end by itself within a minute. The
 * plugin's own request log goes to `logFile` (for assertRequestsAccountedFor). Returns only when
 * the signal landed on a live process.
 */
export async function interruptAt(args: string[], x: KillTarget, when: "hold" | "hold-after"): Promise<Interrupted> {
  const logFile = join(stateDir(), "requests.log");
  const run = await runToHeld(args, x, when, { APPSTORAGE_REQUEST_LOG: logFile });
  let closed = false;
  try {
    run.child.kill("SIGINT");
    // The signal is handled while the request is still held; then the request goes on.
    await new Promise((r) => setTimeout(r, 200));
    run.held.release();
    const { code } = await within(run.exited, 60_000, "the interrupted plugin");
    // Closed, the proxy's log is complete.
    await run.proxy.close();
    closed = true;
    return { held: run.held.request, code, stderr: run.stderr(), requests: run.proxy.requests, logFile, proxy: run.proxy };
  } finally {
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill("SIGKILL");
    if (!closed) await run.proxy.close();
  }
}
