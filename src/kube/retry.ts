// When a failed request is sent again, as client-go's rest client decides it for kubectl.
import type { WireRequest } from "./api-request";
import { ApiError, UnreachableError } from "./errors";

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

/** Sends the request, and again after retryDelay's pause for as long as it says to. */
export async function withRetries<T>(spec: Pick<WireRequest, "method" | "idempotent">, send: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (e) {
      const delay = retryDelay(spec, e, attempt);
      if (delay === undefined) throw e;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
