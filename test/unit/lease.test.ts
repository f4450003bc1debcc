// The lease on a journal (src/apply/lease.ts): renewed a third of the lease after the last write,
// never right after a step's write, and no more once the run stops.
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, mock, test } from "node:test";
import type { JournalStore } from "../../src/apply/journal-store";
import { Lease, renewAfterMs } from "../../src/apply/lease";
import { leaseSeconds } from "../../src/plan/journal";
import type { Journal } from "../../src/plan/types";

/** A store that records what was written, at the fake clock's time. */
function recordingStore(clock: { ms: number }) {
  const writes: { at: number; step: string; leaseExpires: string; updatedAt: string }[] = [];
  const store = {
    acquire: async (j: Journal) => void writes.push({ at: clock.ms, step: j.step, leaseExpires: j.leaseExpires, updatedAt: j.updatedAt }),
    save: async (j: Journal) => void writes.push({ at: clock.ms, step: j.step, leaseExpires: j.leaseExpires, updatedAt: j.updatedAt }),
    remove: async () => undefined,
  };
  return { store: store as unknown as JournalStore, writes };
}

describe("Lease", () => {
  const clock = { ms: 0 };
  beforeEach(() => {
    clock.ms = Date.UTC(2026, 11, 1);
    mock.timers.enable({ apis: ["setTimeout"] });
  });
  afterEach(() => mock.timers.reset());
  const tick = async (ms: number) => {
    clock.ms += ms;
    mock.timers.tick(ms);
    await new Promise<void>((r) => setImmediate(r));
  };
  const journal = { step: "started", updatedAt: new Date(0).toISOString(), leaseExpires: new Date(0).toISOString() } as unknown as Journal;

  test(`renews a third of the lease (${renewAfterMs} ms) after the last write, for ${leaseSeconds} s each time`, async () => {
    const { store, writes } = recordingStore(clock);
    const lease = new Lease(store, () => new Date(clock.ms), "pid 1 on host");
    const start = clock.ms;
    await lease.acquire(journal);
    await tick(renewAfterMs - 1);
    assert.equal(writes.length, 1, "no renewal before a third of the lease");
    await tick(1);
    assert.equal(writes.length, 2);
    assert.equal(writes[1]!.at - start, renewAfterMs);
    assert.equal(Date.parse(writes[1]!.leaseExpires) - Date.parse(writes[1]!.updatedAt), leaseSeconds * 1000);
    await tick(renewAfterMs);
    assert.equal(writes.length, 3);
    await lease.stop();
  });

  test("a step's write puts the next renewal a third of the lease after it; stop ends renewing", async () => {
    const { store, writes } = recordingStore(clock);
    const lease = new Lease(store, () => new Date(clock.ms), "pid 1 on host");
    await lease.acquire(journal);
    await tick(renewAfterMs - 100);
    await lease.save("deleted");
    const saved = clock.ms;
    await tick(renewAfterMs - 1);
    assert.deepEqual(
      writes.map((w) => w.step),
      ["started", "deleted"],
      "no renewal right after the step's write",
    );
    await tick(1);
    assert.equal(writes.length, 3);
    assert.equal(writes[2]!.at - saved, renewAfterMs);
    assert.equal(writes[2]!.step, "deleted");
    await lease.stop();
    await tick(renewAfterMs * 3);
    assert.equal(writes.length, 3, "no renewal after stop");
  });
});

describe("Lease.run and Ctrl-C", () => {
  const journal = { step: "planned", updatedAt: new Date(0).toISOString(), leaseExpires: new Date(0).toISOString() } as unknown as Journal;
  const store = (writes: string[]) =>
    ({
      name: "db",
      acquire: async () => void writes.push("acquire"),
      save: async (j: Journal) => void writes.push(`save ${j.step}${j.leaseExpires === j.updatedAt ? " (released)" : ""}`),
      remove: async () => void writes.push("remove"),
    }) as unknown as JournalStore;

  test("the step under way finishes, none starts after it, the lease is released, and the error says where it stopped", async () => {
    const writes: string[] = [];
    const lease = new Lease(store(writes), () => new Date(), "pid 1 on host");
    const controller = new AbortController();
    const ran: string[] = [];
    const runners = {
      lock: async () => {
        ran.push("lock");
        await lease.acquire(journal);
      },
      delete: async () => {
        ran.push("delete");
        controller.abort(new Error("interrupted"));
      },
      create: async () => void ran.push("create"),
    };
    await assert.rejects(lease.run(["lock", "delete", "create"], runners, { delete: "deleted" }, controller.signal), (e: Error) => {
      assert.equal(e.constructor.name, "StopError");
      assert.equal(e.message, "interrupted (Ctrl-C) while changing statefulset.apps/db: the journal records step deleted; run the same command again to finish");
      return true;
    });
    assert.deepEqual(ran, ["lock", "delete"]);
    assert.deepEqual(writes, ["acquire", "save deleted", "save deleted (released)"]);
  });

  test("before the journal is written nothing was changed, and it says so", async () => {
    const writes: string[] = [];
    const lease = new Lease(store(writes), () => new Date(), "pid 1 on host");
    const controller = new AbortController();
    controller.abort(new Error("interrupted"));
    await assert.rejects(lease.run(["lock"], { lock: async () => lease.acquire(journal) }, {}, controller.signal), (e: Error) => {
      assert.equal(e.constructor.name, "RefusedError");
      assert.equal(e.message, "interrupted (Ctrl-C) before anything was changed on statefulset.apps/db");
      return true;
    });
    assert.deepEqual(writes, []);
  });
});

describe("Lease.run on a stop", () => {
  test("onStop (a paused owner resumed) runs before the lease is released, on a failure and on Ctrl-C alike; the owner's state is saved", async () => {
    for (const how of ["fails", "ctrl-c"] as const) {
      const order: string[] = [];
      const store = {
        acquire: async () => void order.push("acquire"),
        save: async (j: Journal) => void order.push(`save ${j.step}${j.owner ? ` paused=${j.owner.paused}` : ""}${Date.parse(j.leaseExpires) <= Date.parse(j.updatedAt) ? " (released)" : ""}`),
        remove: async () => undefined,
        name: "db",
      } as unknown as JournalStore;
      const lease = new Lease(store, () => new Date(Date.UTC(2026, 11, 1)), "pid 1 on host");
      const journal = { step: "planned", updatedAt: new Date(0).toISOString(), leaseExpires: new Date(0).toISOString(), owner: { paused: false } } as unknown as Journal;
      const abort = new AbortController();
      const runners = {
        take: () => lease.acquire(journal),
        pause: () => lease.saveOwner(true),
        work: async () => {
          if (how === "ctrl-c") abort.abort();
          else throw new Error("the re-create was denied");
        },
        // Not started after Ctrl-C.
        more: async () => void order.push("more"),
      };
      await assert.rejects(lease.run(["take", "pause", "work", "more"] as const, runners, {}, abort.signal, () => lease.saveOwner(false).then(() => void order.push("resumed"))));
      assert.deepEqual(order.slice(1), ["save planned paused=true", "save planned paused=false", "resumed", "save planned paused=false (released)"], how);
      await lease.stop();
    }
  });
});
