// Client-side rate limiting, as client-go's token bucket (rest.Config QPS and Burst): a run that
// changes many StatefulSets side by side must not flood a busy API server. A request takes a
// token; tokens come back at `qps` a second, at most `burst` saved. Taking one that is not there
// yet reserves it and waits for it, so requests go out in the order they asked.

/** kubectl's own client-side limits (the ones it sets for discovery: 50 requests a second, bursts of 300). */
export const defaultQps = 50;
export const defaultBurst = 300;

export class RateLimiter {
  private tokens: number;
  private last: number;

  constructor(
    private readonly qps: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {
    this.tokens = burst;
    this.last = now();
  }

  /** How long the request that takes the next token waits, in milliseconds (0: it goes at once). */
  reserve(): number {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  async take(): Promise<void> {
    const wait = this.reserve();
    if (wait > 0) await this.sleep(wait);
  }
}
