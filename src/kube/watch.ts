// kubectl get --watch's stream: a watch request from a resourceVersion, one JSON event per line.
// A watch that ends, breaks or stalls is not an error: the caller lists again and watches anew.
import type * as http from "node:http";
import type { Query, WatchEvent } from "./api-request";
import { apiErrorFromBody, UnreachableError } from "./errors";
import type { Transport } from "./transport";

/**
 * Streams watch events to onEvent until it returns true (then resolves true), the server ends
 * the watch (resolves false), or the signal aborts (resolves false).
 */
export async function watchEvents<T>(transport: Transport, path: string, query: Query | undefined, onEvent: (e: WatchEvent<T>) => boolean, signal?: AbortSignal): Promise<boolean> {
  const local = new AbortController();
  const onAbort = () => local.abort();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    // The head within --request-timeout (the API server sends it at once), then the stream's own idle timer.
    const res = await transport.open({ method: "GET", path, query: { ...query, watch: 1, allowWatchBookmarks: true } }, transport.timeoutMs, local.signal);
    const code = res.statusCode ?? 0;
    if (code < 200 || code >= 300) throw apiErrorFromBody(code, await transport.readAll(res));
    return await readEvents(res, onEvent, local, transport.timeoutMs);
  } catch (e) {
    if ((e as Error).name === "AbortError" || local.signal.aborted) return false;
    // A watch that breaks is not an error: the caller reads again and watches anew.
    if (e instanceof UnreachableError || (e as NodeJS.ErrnoException).code === "ECONNRESET") return false;
    throw e;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    local.abort();
  }
}

/** Hands each line's event to onEvent; true as soon as onEvent is satisfied, false when the stream ends. */
async function readEvents<T>(res: http.IncomingMessage, onEvent: (e: WatchEvent<T>) => boolean, local: AbortController, idleTimeoutMs: number): Promise<boolean> {
  // A watch that stays silent longer than the request timeout may be stalled (a proxy, a
  // half-open connection): end it, and the caller reads again and watches anew.
  let idle: NodeJS.Timeout | undefined;
  const touch = () => {
    if (idleTimeoutMs <= 0) return;
    clearTimeout(idle);
    idle = setTimeout(() => local.abort(), idleTimeoutMs);
  };
  touch();
  let buffered = "";
  try {
    for await (const chunk of res) {
      touch();
      buffered += (chunk as Buffer).toString("utf8");
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (line && onEvent(JSON.parse(line) as WatchEvent<T>)) {
          local.abort();
          return true;
        }
      }
    }
  } finally {
    clearTimeout(idle);
  }
  return false;
}
