// Who holds a journal's lock, and whether that holder is certainly dead.
//
// A holder names its process by what identifies a process on Linux: the boot id (a pid means
// nothing after a reboot), the pid namespace (in containers small pids repeat across pods), the
// pid, and the process's start time (pids are reused). Host name and a random suffix make it
// readable and unique. A holder is "dead" only when all of that can be read and matches this
// machine and namespace, and the process is gone, a zombie, or a newer process with the same
// pid. Anything else is "unknown" and only the lease decides: calling a live holder dead would
// let two runs work on one StatefulSet, while calling a dead one unknown only costs the lease.
//
// Why not kill(pid, 0): it succeeds on a zombie, and a plugin killed together with its parent
// (`timeout -s KILL`) stays a zombie until PID 1 reaps it, which in containers may be never.
//
// The parsing is pure (strings in, values out) so that tests can feed it any /proc text; only
// `procReader` and `ownIdentity` touch the file system.
import { readFileSync, readlinkSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";

/** Marks the holder format; holders without it ("host/pid/random", before it) are "unknown". */
export const holderPrefix = "appstorage-holder/v2";

export interface ProcessIdentity {
  host: string;
  bootId: string;
  /** readlink /proc/self/ns/pid, e.g. "pid:[4026531836]". */
  pidNamespace: string;
  pid: number;
  /** Field 22 of /proc/PID/stat: clock ticks since boot, as text (it may exceed 2^53 in theory). */
  startTime: string;
}

export type HolderVerdict = "dead" | "unknown";

/** What a /proc/PID/stat line says about its process. */
export interface ProcStat {
  pid: number;
  comm: string;
  state: string;
  startTime: string;
}

/**
 * Parses /proc/PID/stat. The second field (comm) is the executable's name in parentheses and may
 * itself contain spaces and parentheses, so it ends at the LAST ")" of the line; the fields after
 * it are separated by single spaces, state first (field 3), start time 20 fields later (field 22).
 */
export function parseProcStat(text: string): ProcStat | undefined {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 1 || close < open) return undefined;
  const pidText = text.slice(0, open).trim();
  if (!/^\d+$/.test(pidText)) return undefined;
  const rest = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  const state = rest[0];
  const startTime = rest[19];
  if (!state || !/^[A-Za-z]$/.test(state) || !startTime || !/^\d+$/.test(startTime)) return undefined;
  return { pid: Number(pidText), comm: text.slice(open + 1, close), state, startTime };
}

/** "Threads:" of /proc/PID/status: a thread-group leader can be a zombie while its threads run. */
export function parseThreadCount(statusText: string): number | undefined {
  const m = /^Threads:\s*(\d+)\s*$/m.exec(statusText);
  return m ? Number(m[1]) : undefined;
}

const bootIdPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const pidNamespacePattern = /^pid:\[\d+\]$/;

export function parseBootId(text: string): string | undefined {
  const id = text.trim();
  return bootIdPattern.test(id) ? id : undefined;
}

export function parsePidNamespace(link: string): string | undefined {
  return pidNamespacePattern.test(link.trim()) ? link.trim() : undefined;
}

/** The holder string written into the journal. Fields are URI-encoded, so ";" and "=" never occur inside one. */
export function formatHolder(id: Partial<ProcessIdentity>, suffix: string): string {
  const field = (k: string, v: string | number | undefined) => `${k}=${encodeURIComponent(v === undefined ? "" : String(v))}`;
  return [holderPrefix, field("host", id.host), field("boot", id.bootId), field("pidns", id.pidNamespace), field("pid", id.pid), field("start", id.startTime), field("id", suffix)].join(";");
}

/** The identity in a holder string, or undefined when it is of another format or incomplete. */
export function parseHolder(holder: string): ProcessIdentity | undefined {
  const [prefix, ...fields] = holder.split(";");
  if (prefix !== holderPrefix) return undefined;
  const values = new Map<string, string>();
  for (const f of fields) {
    const eq = f.indexOf("=");
    if (eq < 0) return undefined;
    try {
      values.set(f.slice(0, eq), decodeURIComponent(f.slice(eq + 1)));
    } catch {
      return undefined;
    }
  }
  const host = values.get("host");
  const bootId = parseBootId(values.get("boot") ?? "");
  const pidNamespace = parsePidNamespace(values.get("pidns") ?? "");
  const pidText = values.get("pid") ?? "";
  const startTime = values.get("start") ?? "";
  if (!host || !bootId || !pidNamespace || !/^[1-9]\d*$/.test(pidText) || !/^\d+$/.test(startTime)) return undefined;
  return { host, bootId, pidNamespace, pid: Number(pidText), startTime };
}

/** Reads /proc; `undefined` means the file does not exist, a thrown error that it could not be read. */
export interface ProcReader {
  bootId(): string;
  selfPidNamespace(): string;
  /** readlink /proc/self: the pid of this process as the mounted /proc numbers it. */
  selfLink(): string;
  stat(pid: number): string | undefined;
  status(pid: number): string | undefined;
}

const readIfExists = (path: string): string | undefined => {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "ESRCH") return undefined;
    throw e;
  }
};

export function procReader(proc = "/proc"): ProcReader {
  return {
    bootId: () => readFileSync(`${proc}/sys/kernel/random/boot_id`, "utf8"),
    selfPidNamespace: () => readlinkSync(`${proc}/self/ns/pid`),
    selfLink: () => readlinkSync(`${proc}/self`),
    stat: (pid) => readIfExists(`${proc}/${pid}/stat`),
    status: (pid) => readIfExists(`${proc}/${pid}/status`),
  };
}

/**
 * This process's identity, or the parts that could be read. `pid` is this process's id as the
 * caller knows it (process.pid); /proc must number it the same way, or /proc belongs to another
 * pid namespace and nothing read there is about us.
 */
export function ownIdentity(pid: number, reader: ProcReader = procReader(), host = hostname()): Partial<ProcessIdentity> {
  const id: Partial<ProcessIdentity> = { host, pid };
  const attempt = <T>(f: () => T | undefined): T | undefined => {
    try {
      return f();
    } catch {
      return undefined;
    }
  };
  if (attempt(() => reader.selfLink().trim()) !== String(pid)) return id;
  const bootId = attempt(() => parseBootId(reader.bootId()));
  const pidNamespace = attempt(() => parsePidNamespace(reader.selfPidNamespace()));
  const stat = attempt(() => {
    const text = reader.stat(pid);
    return text === undefined ? undefined : parseProcStat(text);
  });
  if (bootId) id.bootId = bootId;
  if (pidNamespace) id.pidNamespace = pidNamespace;
  if (stat && stat.pid === pid) id.startTime = stat.startTime;
  return id;
}

/** The holder string for this process: its identity and a random suffix. */
export function holderFor(pid: number, reader: ProcReader = procReader(), host = hostname()): string {
  return formatHolder(ownIdentity(pid, reader, host), randomUUID().slice(0, 8));
}

/**
 * Whether the holder's process is certainly dead, given our own identity (`self`) and what /proc
 * says now. Pure apart from the reader's answers.
 */
export function judgeHolder(holder: string, self: Partial<ProcessIdentity>, reader: Pick<ProcReader, "stat" | "status">): HolderVerdict {
  const h = parseHolder(holder);
  if (!h) return "unknown";
  if (!self.bootId || !self.pidNamespace || !self.host) return "unknown";
  if (h.bootId !== self.bootId || h.pidNamespace !== self.pidNamespace || h.host !== self.host) return "unknown";
  let statText: string | undefined;
  try {
    statText = reader.stat(h.pid);
  } catch {
    return "unknown";
  }
  if (statText === undefined) return "dead"; // no such process in our namespace since the same boot
  const stat = parseProcStat(statText);
  if (!stat || stat.pid !== h.pid) return "unknown";
  if (stat.startTime !== h.startTime) return "dead"; // the pid was reused by a later process
  if (stat.state === "Z" || stat.state === "X") {
    // A zombie thread-group leader whose other threads still run is alive: count them.
    let statusText: string | undefined;
    try {
      statusText = reader.status(h.pid);
    } catch {
      return "unknown";
    }
    if (statusText === undefined) return "dead"; // reaped between the two reads
    const threads = parseThreadCount(statusText);
    return threads !== undefined && threads <= 1 ? "dead" : "unknown";
  }
  return "unknown";
}

/** judgeHolder against this process and the real /proc. */
export function holderDead(holder: string, pid: number, reader: ProcReader = procReader(), host = hostname()): boolean {
  return judgeHolder(holder, ownIdentity(pid, reader, host), reader) === "dead";
}

/** For messages: "pid 123 on host db-0", or the holder as written by an older version. */
export function describeHolder(holder: string): string {
  const h = parseHolder(holder);
  if (h) return `pid ${h.pid} on ${h.host}`;
  const [host, pid] = holder.split("/");
  return pid && /^\d+$/.test(pid) ? `pid ${pid} on ${host}` : `holder ${holder}`;
}
