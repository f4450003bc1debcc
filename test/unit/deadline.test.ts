// withDeadline: every wait follows Ctrl-C, also one that came before the wait began.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { withDeadline } from "../../src/apply/deadline";

describe("withDeadline", () => {
  test("a parent already aborted (Ctrl-C before the wait began) aborts the wait at once, with its reason", () => {
    const parent = new AbortController();
    parent.abort(new Error("interrupted"));
    const d = withDeadline(parent.signal, 60_000, () => new Error("timed out"));
    assert.equal(d.signal.aborted, true);
    assert.equal((d.signal.reason as Error).message, "interrupted");
    d.done();
  });
  test("a parent aborted during the wait aborts it; the deadline aborts it with its own error", async () => {
    const parent = new AbortController();
    const d = withDeadline(parent.signal, 60_000, () => new Error("timed out"));
    assert.equal(d.signal.aborted, false);
    parent.abort(new Error("interrupted"));
    assert.equal((d.signal.reason as Error).message, "interrupted");
    d.done();
    const late = withDeadline(new AbortController().signal, 5, () => new Error("timed out"));
    await new Promise((r) => setTimeout(r, 30));
    assert.equal((late.signal.reason as Error).message, "timed out");
    late.done();
  });
});
