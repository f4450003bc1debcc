// When a failed request is sent again, as client-go's rest client decides it for kubectl, and
// what the client's requests do while its server takes them and never answers.
import type { WireRequest } from "./api-request";
import { ApiError, NoAnswerError, UnreachableError } from "./errors";

export const maxAttempts = 4;

/**
 * Milliseconds to wait before trying again, or undefined to give up. Reads (and reviews, which
 * change nothing) are retried on 500, 502, 503, 504, 429 and broken connections. A write is
 * retried only on 429, which the server sends before doing anything; any other failure of a write
 * has an unknown outcome that the caller resolves by reading back, never by blindly repeating.
 */
export function retryDelay(spec: Pick<WireRequest, "method" | "idempotent">, err: unknown, attempt: number): number | undefined {
  if (attempt >= maxAttempts) return undefined;
  const safe = spec.method === "GET" || spec.idempotent === true;
  const backoff = 100 * 2 ** (attempt - 1) + Math.floor(Math.random() * 50);
  if (err instanceof ApiError) {
    if (err.code === 429) return Math.min(5000, err.retryAfterSeconds !== undefined ? err.retryAfterSeconds * 1000 : backoff);
    if (safe && [500, 502, 503, 504].includes(err.code)) return Math.min(5000, err.retryAfterSeconds !== undefined ? err.retryAfterSeconds * 1000 : backoff);
    return undefined;
  }
  if (err instanceof UnreachableError && safe) return backoff;
  return undefined;
}

type Waiter = { resolve: () => void; reject: (e: unknown) => void };

/**
 * A server that takes requests and sends no answer: kubectl tries its request again, a line per
 * try, and gives up after its tries. A command here sends several requests at once (show, seven
 * lists), and each would wait out its own tries on the few places on the wire (transport.ts), one
 * after another: 16 times --request-timeout in all. Instead, once a request got no answer it
 * alone asks again (its tries go before any other request on the wire) and says so on stderr;
 * every other request waits for what it learns: an answer lets them all go on, its last try
 * without one fails them all with its error. So a silent server ends a command after about
 * maxAttempts times --request-timeout, as kubectl's own tries do.
 */
export class SilentServer {
  private asking?: object;
  private waiting: Waiter[] = [];

  constructor(private readonly notice?: (line: string) => void) {}

  /** Resolves when the request may be sent: no request is asking again, or it is the one; rejects with that one's last failure. */
  async pass(request: object): Promise<void> {
    while (this.asking !== undefined && this.asking !== request) await new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  /** The request that asks again goes before the others on the wire. */
  asks(request: object): boolean {
    return this.asking === request;
  }

  /** The server answered (anything, an error too): every request goes on. */
  answered(): void {
    if (this.asking === undefined) return;
    this.asking = undefined;
    this.settle((w) => w.resolve());
  }

  /** A request got no answer: if it is to try again and none else asks, it asks, and says so; its last try without an answer fails the waiting ones. */
  noAnswer(request: object, err: NoAnswerError, nextAttempt: number | undefined): void {
    if (this.asking !== undefined && this.asking !== request) return;
    if (nextAttempt === undefined) {
      if (this.asking === undefined) return;
      this.asking = undefined;
      this.settle((w) => w.reject(err));
      return;
    }
    this.asking = request;
    this.notice?.(`no answer from ${err.server} in ${err.timeoutMs / 1000}s; trying again (${nextAttempt} of ${maxAttempts})`);
  }

  private settle(f: (w: Waiter) => void): void {
    const all = this.waiting;
    this.waiting = [];
    for (const w of all) f(w);
  }
}

/**
 * Sends the request, and again after retryDelay's pause for as long as it says to; with `silent`,
 * as the client's other requests learn whether the server answers at all.
 */
export async function withRetries<T>(spec: Pick<WireRequest, "method" | "idempotent">, send: (first: boolean) => Promise<T>, silent?: SilentServer): Promise<T> {
  const request = {};
  for (let attempt = 1; ; attempt++) {
    await silent?.pass(request);
    try {
      const answer = await send(silent?.asks(request) ?? false);
      silent?.answered();
      return answer;
    } catch (e) {
      if (e instanceof ApiError) silent?.answered();
      const delay = retryDelay(spec, e, attempt);
      if (e instanceof NoAnswerError) silent?.noAnswer(request, e, delay === undefined ? undefined : attempt + 1);
      if (delay === undefined) throw e;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
