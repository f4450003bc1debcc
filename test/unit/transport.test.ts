import assert from "node:assert/strict";
import * as http from "node:http";
import * as net from "node:net";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { apiServerAddress } from "../../src/kube/api-server";
import type { Credentials } from "../../src/kube/credentials";
import { RateLimiter } from "../../src/kube/rate-limit";
import { maxRequestsInFlight, transport } from "../../src/kube/transport";
import { NoAnswerError } from "../../src/kube/errors";
import { maxAttempts, SilentServer, withRetries } from "../../src/kube/retry";

test("at most maxRequestsInFlight requests are on the wire at once; watches are not counted", async (t) => {
  let now = 0;
  let most = 0;
  const held: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    if (req.url?.includes("watch=1")) {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.write(""); // a watch stays open
      return;
    }
    most = Math.max(most, ++now);
    held.push(() => {
      now--;
      res.end('{"kind":"List"}');
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const agent = new http.Agent({ keepAlive: true });
  t.after(() => agent.destroy());
  const wire = transport({
    address: apiServerAddress(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    credentials: { forRequest: async () => ({ headers: {} }), invalidate: () => undefined } as unknown as Credentials,
    agentFor: () => agent,
    timeoutMs: 10_000,
    verbosity: 0,
    limiter: new RateLimiter(1000, 1000),
  });
  // Two watches hold their connections; the seven reads still go out three at a time.
  const watches = new AbortController();
  t.after(() => watches.abort());
  const watching = [1, 2].map(() => wire.open({ method: "GET", path: "/api/v1/pods", query: { watch: 1 } }, 0, watches.signal));
  await Promise.all(watching);
  const reads = Array.from({ length: 7 }, (_, i) => wire.send({ method: "GET", path: `/api/v1/list-${i}` }));
  let answered = 0;
  while (answered < 7) {
    await new Promise((r) => setTimeout(r, 20));
    assert.ok(now <= maxRequestsInFlight, `${now} in flight`);
    const next = held.shift();
    if (next) {
      next();
      answered++;
    }
  }
  assert.equal((await Promise.all(reads)).length, 7);
  assert.equal(most, maxRequestsInFlight, "three at once, not one after another");
});

/** A server that takes connections and never answers: the transport of a client against it. */
async function silentServer(t: { after: (f: () => void) => void }): Promise<{ port: number; accepted: () => number }> {
  let accepted = 0;
  const sockets: net.Socket[] = [];
  const server = net.createServer((s) => {
    accepted++;
    sockets.push(s);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return { port: (server.address() as AddressInfo).port, accepted: () => accepted };
}

test("a request without an answer fails with NoAnswerError at --request-timeout, not twice that", async (t) => {
  const silent = await silentServer(t);
  const agent = new http.Agent({ keepAlive: true });
  t.after(() => agent.destroy());
  const wire = transport({
    address: apiServerAddress(`http://127.0.0.1:${silent.port}`),
    credentials: { forRequest: async () => ({ headers: {} }), invalidate: () => undefined } as unknown as Credentials,
    agentFor: () => agent,
    timeoutMs: 1500,
    verbosity: 0,
    limiter: new RateLimiter(1000, 1000),
  });
  const started = Date.now();
  await assert.rejects(wire.send({ method: "GET", path: "/api/v1/pods" }), (e) => e instanceof NoAnswerError && e.timeoutMs === 1500);
  const took = Date.now() - started;
  // Twice the timeout (3000 ms) is what Node's socket timeout gave; a loaded machine adds a little.
  assert.ok(took >= 1490 && took < 2700, `${took} ms`);
  // A watch's head is bounded the same way.
  await assert.rejects(wire.open({ method: "GET", path: "/api/v1/pods", query: { watch: 1 } }, 300), (e) => e instanceof NoAnswerError);
});

test("against a silent server one request asks again, a line per try, the others wait; its last try fails them all", async () => {
  const lines: string[] = [];
  const silent = new SilentServer((l) => lines.push(l));
  let sent = 0;
  const noAnswer = () =>
    new Promise<never>((_, reject) => {
      sent++;
      setTimeout(() => reject(new NoAnswerError("https://k:6443", 50)), 50);
    });
  const started = Date.now();
  const all = Array.from({ length: 7 }, () =>
    withRetries({ method: "GET" }, noAnswer, silent).then(
      () => "answered",
      (e: Error) => e,
    ),
  );
  const outcomes = await Promise.all(all);
  const took = Date.now() - started;
  for (const o of outcomes) assert.ok(o instanceof NoAnswerError, String(o));
  assert.deepEqual(
    lines,
    [2, 3, 4].map((n) => `no answer from https://k:6443 in 0.05s; trying again (${n} of ${maxAttempts})`),
  );
  // 7 first tries, then only the one that asks: 3 more.
  assert.equal(sent, 7 + maxAttempts - 1);
  assert.ok(took < 50 * maxAttempts + 3000, `${took} ms`);
});

test("against a silent server: once the one that asks again gets an answer, the waiting requests go on", async () => {
  const silent = new SilentServer();
  let calls = 0;
  const flaky = () => {
    calls++;
    // The first three tries (of three requests) get no answer; from then on the server answers.
    return calls <= 3 ? new Promise<never>((_, reject) => setTimeout(() => reject(new NoAnswerError("s", 20)), 20)) : Promise.resolve("ok");
  };
  const outcomes = await Promise.all(Array.from({ length: 3 }, () => withRetries({ method: "GET" }, flaky, silent)));
  assert.deepEqual(outcomes, ["ok", "ok", "ok"]);
  assert.equal(calls, 6);
});
