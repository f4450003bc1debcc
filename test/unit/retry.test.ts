// Which failed requests are sent again, and what the client's requests do while its server takes
// them and never answers (src/kube/retry.ts): the line per try on stderr, the one request that asks
// again while the others wait, and its last try failing them all. Pure: the sends are functions of
// the test, no socket, no timer but a promise's turn.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ApiError, NoAnswerError, UnreachableError } from "../../src/kube/errors";
import type { WireRequest } from "../../src/kube/api-request";
import { maxAttempts, retryDelay, SilentServer, withRetries } from "../../src/kube/retry";

const noAnswer = (timeoutMs = 30_000) => new NoAnswerError("https://k:6443", timeoutMs);
/** Lets every promise that can settle do so. */
const settle = () => new Promise<void>((r) => setImmediate(r));

describe("retryDelay: a request without an answer", () => {
  const cases: { name: string; spec: Pick<WireRequest, "method" | "idempotent">; err: unknown; attempt: number; retried: boolean }[] = [
    { name: "a read without an answer is sent again", spec: { method: "GET" }, err: noAnswer(), attempt: 1, retried: true },
    { name: "a review (idempotent) without an answer is sent again", spec: { method: "POST", idempotent: true }, err: noAnswer(), attempt: 2, retried: true },
    { name: "a write without an answer is not: its outcome is unknown (read back, never repeated blindly)", spec: { method: "POST" }, err: noAnswer(), attempt: 1, retried: false },
    { name: "a delete without an answer is not either", spec: { method: "DELETE" }, err: noAnswer(), attempt: 1, retried: false },
    { name: `a read's ${maxAttempts}th try is its last`, spec: { method: "GET" }, err: noAnswer(), attempt: maxAttempts, retried: false },
    { name: "a read whose connection broke is sent again (a NoAnswerError is one kind of unreachable)", spec: { method: "GET" }, err: new UnreachableError("ECONNRESET"), attempt: 1, retried: true },
    { name: "a 429 is sent again, a write too (the server did nothing)", spec: { method: "PATCH" }, err: new ApiError(429, "TooManyRequests", "slow down"), attempt: 1, retried: true },
    { name: "a 503 on a write is not", spec: { method: "PATCH" }, err: new ApiError(503, "ServiceUnavailable", "down"), attempt: 1, retried: false },
  ];
  for (const k of cases) test(k.name, () => assert.equal(retryDelay(k.spec, k.err, k.attempt) !== undefined, k.retried));
});

describe("SilentServer: one request asks again, a line per try; the others wait for what it learns", () => {
  test("the first request without an answer asks again and says so; a second one without an answer says nothing more", () => {
    const lines: string[] = [];
    const silent = new SilentServer((l) => lines.push(l));
    const a = {};
    const b = {};
    silent.noAnswer(a, noAnswer(), 2);
    silent.noAnswer(b, noAnswer(), 2);
    assert.deepEqual(lines, ["no answer from https://k:6443 in 30s; trying again (2 of 4)"]);
    assert.equal(silent.asks(a), true, "a asks: its tries go first on the wire");
    assert.equal(silent.asks(b), false);
  });

  test("while one asks, the others wait; an answer to it (an error from the server too) lets them all go on", async () => {
    const silent = new SilentServer();
    const asking = {};
    silent.noAnswer(asking, noAnswer(), 2);
    let passed = 0;
    const waiting = [{}, {}, {}].map((r) => silent.pass(r).then(() => passed++));
    await settle();
    assert.equal(passed, 0, "the others wait");
    await silent.pass(asking);
    silent.answered();
    await Promise.all(waiting);
    assert.equal(passed, 3);
    assert.equal(silent.asks(asking), false, "nobody asks any more");
  });

  test("its last try without an answer fails every waiting request with its error", async () => {
    const silent = new SilentServer();
    const asking = {};
    silent.noAnswer(asking, noAnswer(), 2);
    const outcomes = [{}, {}].map((r) =>
      silent.pass(r).then(
        () => "passed",
        (e: unknown) => e,
      ),
    );
    const last = noAnswer();
    silent.noAnswer(asking, last, undefined);
    for (const o of await Promise.all(outcomes)) assert.equal(o, last);
  });

  test("its tries, one line each, counted up to the last", () => {
    const lines: string[] = [];
    const silent = new SilentServer((l) => lines.push(l));
    const r = {};
    for (let next = 2; next <= maxAttempts; next++) silent.noAnswer(r, noAnswer(2000), next);
    silent.noAnswer(r, noAnswer(2000), undefined);
    assert.deepEqual(lines, [
      "no answer from https://k:6443 in 2s; trying again (2 of 4)",
      "no answer from https://k:6443 in 2s; trying again (3 of 4)",
      "no answer from https://k:6443 in 2s; trying again (4 of 4)",
    ]);
  });
});

describe("withRetries against a silent server", () => {
  test("a read: asked again three times with a line each, then its error; the fourth try is the last", async () => {
    const lines: string[] = [];
    let sent = 0;
    const err = noAnswer(1000);
    await assert.rejects(
      withRetries(
        { method: "GET" },
        async () => {
          sent++;
          throw err;
        },
        new SilentServer((l) => lines.push(l)),
      ),
      (e) => e === err,
    );
    assert.equal(sent, maxAttempts);
    assert.equal(lines.length, maxAttempts - 1);
  });

  test("a write without an answer: sent once, no line (what it did is read back, not sent again)", async () => {
    const lines: string[] = [];
    let sent = 0;
    await assert.rejects(
      withRetries(
        { method: "POST" },
        async () => {
          sent++;
          throw noAnswer();
        },
        new SilentServer((l) => lines.push(l)),
      ),
      NoAnswerError,
    );
    assert.equal(sent, 1);
    assert.deepEqual(lines, []);
  });

  test("the request that asks again is told so when it is sent (it goes first on the wire)", async () => {
    const firsts: boolean[] = [];
    let calls = 0;
    const answer = await withRetries(
      { method: "GET" },
      async (first) => {
        firsts.push(first);
        if (++calls < 3) throw noAnswer();
        return "ok";
      },
      new SilentServer(),
    );
    assert.equal(answer, "ok");
    assert.deepEqual(firsts, [false, true, true]);
  });
});
