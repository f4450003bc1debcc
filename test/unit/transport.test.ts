import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { apiServerAddress } from "../../src/kube/api-server";
import type { Credentials } from "../../src/kube/credentials";
import { RateLimiter } from "../../src/kube/rate-limit";
import { maxRequestsInFlight, transport } from "../../src/kube/transport";

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
