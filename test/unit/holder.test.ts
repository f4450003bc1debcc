// The journal holder: who holds the lock, and when it is certainly dead. Pure parsing is fed
// /proc text; the real-process cases (a real zombie, a live process, a reused pid) use this
// machine's /proc and run only where it exists, and say so when skipped.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";
import {
  describeHolder,
  formatHolder,
  holderDead,
  holderFor,
  judgeHolder,
  ownIdentity,
  parseHolder,
  parseProcStat,
  parseThreadCount,
  procReader,
  type ProcessIdentity,
  type ProcReader,
} from "../../src/lock-holder";

/** A /proc/PID/stat line as Linux writes it (52 fields), with the given comm, state and start time. */
function statLine(pid: number, comm: string, state: string, start: string): string {
  const after = [state, "1", String(pid), "1", "0", "-1", "4194304", "168", "0", "0", "0", "0", "0", "0", "0", "20", "0", "1", "0", start, "2990080", "379"];
  return `${pid} (${comm}) ${after.join(" ")} 18446744073709551615 ${Array(29).fill("0").join(" ")}\n`;
}

const self: ProcessIdentity = { host: "db-0", bootId: "f22078f5-ecd8-4dff-8d59-acfb972b65b6", pidNamespace: "pid:[4026531836]", pid: 7, startTime: "100" };
const holderOf = (over: Partial<ProcessIdentity> = {}) => formatHolder({ ...self, pid: 42, startTime: "5000", ...over }, "ab12cd34");
/** A /proc where `procs` maps pid -> [stat line, status text] (undefined: no such process). */
const fakeProc = (procs: Record<number, [string, string] | "unreadable">): Pick<ProcReader, "stat" | "status"> => ({
  stat: (pid) => {
    const p = procs[pid];
    if (p === "unreadable") throw Object.assign(new Error("EACCES"), { code: "EACCES" });
    return p?.[0];
  },
  status: (pid) => {
    const p = procs[pid];
    if (p === "unreadable") throw Object.assign(new Error("EACCES"), { code: "EACCES" });
    return p?.[1];
  },
});
const status = (state: string, threads: number) => `Name:\tx\nState:\t${state}\nTgid:\t42\nThreads:\t${threads}\n`;

describe("parseProcStat: the comm field may hold spaces and parentheses", () => {
  const cases: [string, string][] = [
    ["sleep", "sleep"],
    ["with space", "with space"],
    ["a) S 1 2 (b", "a) S 1 2 (b"],
    [")", ")"],
    ["((", "(("],
    ["", ""],
  ];
  for (const [comm, expected] of cases) {
    test(`comm ${JSON.stringify(comm)}`, () => {
      assert.deepEqual(parseProcStat(statLine(42, comm, "Z", "98765")), { pid: 42, comm: expected, state: "Z", startTime: "98765" });
    });
  }
  test("a real line of this machine (when /proc exists)", { skip: !existsSync("/proc/self/stat") && "no /proc here" }, () => {
    const parsed = parseProcStat(readFileSync("/proc/self/stat", "utf8"));
    assert.equal(parsed?.pid, process.pid);
    assert.match(parsed!.startTime, /^\d+$/);
  });
  for (const bad of ["", "42", "42 (x", "x (sleep) S", `42 (x) S ${Array(10).fill("0").join(" ")}`, "42 (x) 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21"]) {
    test(`unparseable: ${JSON.stringify(bad)}`, () => assert.equal(parseProcStat(bad), undefined));
  }
  test("Threads: from /proc/PID/status", () => {
    assert.equal(parseThreadCount(status("Z (zombie)", 1)), 1);
    assert.equal(parseThreadCount(status("S (sleeping)", 11)), 11);
    assert.equal(parseThreadCount("Name:\tx\n"), undefined);
  });
});

describe("holder strings", () => {
  test("round trip, host names with separators included", () => {
    const id = { ...self, host: "we;ird=host/x" };
    assert.deepEqual(parseHolder(formatHolder(id, "ab12cd34")), id);
  });
  const notOurs: [string, string][] = [
    ["the old format host/pid/random", "db-0/42/ab12cd34"],
    ["empty", ""],
    ["incomplete (no boot id: written where /proc was unreadable)", formatHolder({ host: "db-0", pid: 42 }, "x")],
    ["pid zero", formatHolder({ ...self, pid: 0 }, "x")],
    ["bad escape", `${formatHolder(self, "x")};junk=%E0%A4%A`],
  ];
  for (const [name, h] of notOurs) test(`not parsed: ${name}`, () => assert.equal(parseHolder(h), undefined));
  test("an old-format holder is unknown even when its pid is gone (the lease decides)", () => {
    assert.equal(judgeHolder("db-0/42/ab12cd34", self, fakeProc({})), "unknown");
  });
  test("an old plugin reads a new holder as another host's (not numeric after the first '/')", () => {
    const [host, pid] = holderOf().split("/");
    assert.ok(host !== "db-0" || !/^\d+$/.test(pid ?? ""));
  });
});

describe("judgeHolder: dead only when certain", () => {
  const cases: [string, string, Pick<ProcReader, "stat" | "status">, Partial<ProcessIdentity>, "dead" | "unknown"][] = [
    ["same boot and namespace, pid gone", holderOf(), fakeProc({}), self, "dead"],
    ["a zombie (state Z, one thread)", holderOf(), fakeProc({ 42: [statLine(42, "kubectl-appstorage", "Z", "5000"), status("Z (zombie)", 1)] }), self, "dead"],
    ["a zombie reaped between the two reads", holderOf(), { stat: () => statLine(42, "k", "Z", "5000"), status: () => undefined }, self, "dead"],
    ["a zombie leader whose threads still run", holderOf(), fakeProc({ 42: [statLine(42, "k", "Z", "5000"), status("Z (zombie)", 7)] }), self, "unknown"],
    ["a reused pid: same pid, another start time", holderOf(), fakeProc({ 42: [statLine(42, "postgres", "S", "9999"), status("S (sleeping)", 1)] }), self, "dead"],
    ["alive: same pid and start time, running", holderOf(), fakeProc({ 42: [statLine(42, "kubectl-appstorage", "S", "5000"), status("S (sleeping)", 11)] }), self, "unknown"],
    ["another host (same boot id and namespace: pods sharing a pid namespace)", holderOf({ host: "db-1" }), fakeProc({}), self, "unknown"],
    ["another pid namespace (a container on the same kernel)", holderOf({ pidNamespace: "pid:[4026532999]" }), fakeProc({}), self, "unknown"],
    ["another boot", holderOf({ bootId: "00000000-0000-4000-8000-000000000000" }), fakeProc({}), self, "unknown"],
    ["our boot id unreadable (not Linux)", holderOf(), fakeProc({}), { host: "db-0", pid: 7 }, "unknown"],
    ["our pid namespace unreadable", holderOf(), fakeProc({}), { ...self, pidNamespace: undefined }, "unknown"],
    ["/proc/PID/stat unreadable", holderOf(), fakeProc({ 42: "unreadable" }), self, "unknown"],
    ["/proc/PID/stat garbled", holderOf(), { stat: () => "42 (k", status: () => undefined }, self, "unknown"],
    ["/proc/PID/stat of another pid", holderOf(), { stat: () => statLine(43, "k", "Z", "5000"), status: () => status("Z", 1) }, self, "unknown"],
    [
      "zombie with unreadable status",
      holderOf(),
      {
        stat: () => statLine(42, "k", "Z", "5000"),
        status: () => {
          throw new Error("EACCES");
        },
      },
      self,
      "unknown",
    ],
  ];
  for (const [name, holder, reader, me, verdict] of cases) {
    test(name, () => assert.equal(judgeHolder(holder, me, reader), verdict));
  }
});

describe("ownIdentity", () => {
  const reader = (over: Partial<ProcReader>): ProcReader => ({
    bootId: () => `${self.bootId}\n`,
    selfPidNamespace: () => self.pidNamespace,
    selfLink: () => "7",
    stat: (pid) => (pid === 7 ? statLine(7, "node", "R", "100") : undefined),
    status: () => undefined,
    ...over,
  });
  test("complete on Linux", () => assert.deepEqual(ownIdentity(7, reader({}), "db-0"), self));
  test("/proc of another pid namespace (it numbers us otherwise): nothing from it is used", () => {
    assert.deepEqual(ownIdentity(7, reader({ selfLink: () => "1" }), "db-0"), { host: "db-0", pid: 7 });
  });
  test("no /proc (not Linux): host and pid only, and such a holder is never judged dead", () => {
    const none = reader({
      selfLink: () => {
        throw new Error("ENOENT");
      },
    });
    const id = ownIdentity(7, none, "db-0");
    assert.deepEqual(id, { host: "db-0", pid: 7 });
    assert.equal(parseHolder(holderFor(7, none, "db-0")), undefined);
    assert.equal(judgeHolder(holderFor(7, none, "db-0"), id, fakeProc({})), "unknown");
  });
});

/** Linux only: real processes. */
const notLinux = existsSync("/proc/self/stat") && existsSync("/proc/sys/kernel/random/boot_id") ? false : "needs Linux /proc";

async function until<T>(what: string, f: () => T | undefined, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const childrenOf = (pid: number): number[] => {
  const text = (() => {
    try {
      return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8");
    } catch {
      return "";
    }
  })();
  return text.trim().split(/\s+/).filter(Boolean).map(Number);
};

describe("real processes on this machine", { skip: notLinux }, () => {
  const kill = (c: ChildProcess) => {
    try {
      c.kill("SIGKILL");
    } catch {
      /* gone */
    }
  };

  test("this process: alive, never judged dead; its holder parses", () => {
    const h = holderFor(process.pid);
    assert.equal(parseHolder(h)?.pid, process.pid);
    assert.equal(holderDead(h, process.pid), false);
  });

  test("a real zombie (its parent does not reap it) is dead; kill(pid, 0) still succeeds on it", async (t) => {
    // sh starts `sleep 0` in the background and replaces itself with a sleep that never waits.
    const parent = spawn("sh", ["-c", "sleep 0 & exec sleep 30"], { stdio: "ignore" });
    t.after(() => kill(parent));
    const zombie = await until("the child of sh", () => childrenOf(parent.pid!)[0]);
    const stat = await until("the child to become a zombie", () => {
      const s = parseProcStat(readFileSync(`/proc/${zombie}/stat`, "utf8"));
      return s?.state === "Z" ? s : undefined;
    });
    assert.doesNotThrow(() => process.kill(zombie, 0), "kill(pid, 0) succeeds on a zombie: why it cannot tell");
    // The holder the zombie wrote while it ran: this machine, this namespace, its pid and start time.
    const me = ownIdentity(process.pid);
    const h = formatHolder({ ...me, pid: zombie, startTime: stat.startTime }, "zzzzzzzz");
    assert.equal(judgeHolder(h, me, procReader()), "dead");
    assert.equal(holderDead(h, process.pid), true);
  });

  test("a live process: same pid and start time is not dead; with a forged start time (a reused pid) it is", async (t) => {
    const live = spawn("sleep", ["30"], { stdio: "ignore" });
    t.after(() => kill(live));
    const stat = await until("sleep to start", () => parseProcStat(readFileSync(`/proc/${live.pid}/stat`, "utf8")));
    const me = ownIdentity(process.pid);
    assert.equal(judgeHolder(formatHolder({ ...me, pid: live.pid!, startTime: stat.startTime }, "x"), me, procReader()), "unknown");
    const forged = String(BigInt(stat.startTime) - 1n);
    assert.equal(judgeHolder(formatHolder({ ...me, pid: live.pid!, startTime: forged }, "x"), me, procReader()), "dead");
  });

  test("a process that exited and was reaped is dead", async () => {
    const gone = spawn("true", { stdio: "ignore" });
    const startTime = parseProcStat(readFileSync(`/proc/${gone.pid}/stat`, "utf8"))?.startTime ?? "0";
    await new Promise((r) => gone.on("close", r));
    const me = ownIdentity(process.pid);
    assert.equal(judgeHolder(formatHolder({ ...me, pid: gone.pid!, startTime }, "x"), me, procReader()), "dead");
  });

  test("a dead process's holder as another host or another pid namespace would write it is unknown", async () => {
    const gone = spawn("true", { stdio: "ignore" });
    await new Promise((r) => gone.on("close", r));
    const me = ownIdentity(process.pid);
    const asWritten = (over: Partial<ProcessIdentity>) => formatHolder({ ...me, pid: gone.pid!, startTime: "1", ...over }, "x");
    assert.equal(judgeHolder(asWritten({}), me, procReader()), "dead", "the control case: here, it is dead");
    assert.equal(judgeHolder(asWritten({ host: `${me.host}-other` }), me, procReader()), "unknown");
    assert.equal(judgeHolder(asWritten({ pidNamespace: "pid:[1]" }), me, procReader()), "unknown");
    assert.equal(judgeHolder(asWritten({ bootId: "00000000-0000-4000-8000-000000000000" }), me, procReader()), "unknown");
  });
});

describe("describeHolder", () => {
  test("new format", () => assert.equal(describeHolder(formatHolder(self, "x")), "pid 7 on db-0"));
  test("old format", () => assert.equal(describeHolder("db-0/42/ab12cd34"), "pid 42 on db-0"));
  test("anything else", () => assert.equal(describeHolder("test"), "holder test"));
});
