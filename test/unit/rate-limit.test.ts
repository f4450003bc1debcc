// The client's token bucket (client-go's QPS and burst), on a fake clock.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RateLimiter } from "../../src/kube/rate-limit";

describe("RateLimiter", () => {
  test("a burst goes at once; then one request per 1/qps, in the order they asked", () => {
    let now = 0;
    const limiter = new RateLimiter(10, 3, () => now);
    assert.deepEqual([limiter.reserve(), limiter.reserve(), limiter.reserve()], [0, 0, 0]);
    // The fourth and fifth wait for tokens not yet there: 100 ms and 200 ms at 10 a second.
    assert.equal(Math.round(limiter.reserve()), 100);
    assert.equal(Math.round(limiter.reserve()), 200);
  });
  test("tokens come back with time, never more than the burst", () => {
    let now = 0;
    const limiter = new RateLimiter(10, 2, () => now);
    limiter.reserve();
    limiter.reserve();
    now = 60_000;
    assert.deepEqual([limiter.reserve(), limiter.reserve()], [0, 0]);
    assert.ok(limiter.reserve() > 0, "a third request waits: the bucket holds at most the burst");
  });
  test("take() sleeps for the reserved time", async () => {
    let now = 0;
    const slept: number[] = [];
    const limiter = new RateLimiter(
      4,
      1,
      () => now,
      async (ms) => void slept.push(ms),
    );
    await limiter.take();
    await limiter.take();
    assert.deepEqual(slept, [250]);
  });
});
