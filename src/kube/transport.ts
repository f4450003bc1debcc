// One HTTP exchange with the API server, as kubectl's round trippers make it: fresh credentials
// per request, kubectl's -v=6 line, the request timeout, and a failed connection told in
// kubectl's words with what to check.
import * as http from "node:http";
import * as https from "node:https";
import { queryString, type WireRequest } from "./api-request";
import type { AgentFor } from "./agents";
import { shown, type ApiServerAddress } from "./api-server";
import type { Credentials, RequestCredentials } from "./credentials";
import type { RateLimiter } from "./rate-limit";
import { apiErrorFromBody, NoAnswerError, UnreachableError } from "./errors";

export interface TransportOptions {
  address: ApiServerAddress;
  credentials: Credentials;
  agentFor: AgentFor;
  /** --request-timeout (0: none): the limit of a request that is not a watch, and how long a watch may stay silent. */
  timeoutMs: number;
  /** -v: at 6 and up, one line per request. */
  verbosity: number;
  onRequest?: (line: string) => void;
  log?: (line: string) => void;
  /** Client-side rate limiting (QPS and burst), shared by every request of the client. */
  limiter: RateLimiter;
}

export interface Transport {
  readonly timeoutMs: number;
  /** The server as its errors name it. */
  readonly server: string;
  /**
   * Sends the request and resolves with the answer's head, which must come within timeoutMs (0:
   * no limit); the answer's body is the caller's (a watch's stream is bounded by its own idle timer).
   */
  open(spec: WireRequest, timeoutMs: number, signal?: AbortSignal): Promise<http.IncomingMessage>;
  readAll(res: http.IncomingMessage): Promise<string>;
  /**
   * One attempt, within --request-timeout: the decoded JSON answer, or the server's error as an
   * ApiError. `first`: it goes before the requests that wait for a place on the wire (a retry
   * that tells whether a silent server answers again).
   */
  send<T>(spec: WireRequest, first?: boolean): Promise<T>;
}

/**
 * How many requests (not watches) are on the wire at once. A command's reads start together
 * (show sends seven lists), and each would open a connection of its own: seven TLS handshakes
 * cost more, on 127.0.0.1 and a 2-core machine, than three connections that each carry two or
 * three answers (about 32 against 22 ms, measured with a script of seven parallel GETs). kubectl
 * multiplexes its requests over one HTTP/2 connection. Watches hold their connection for as long
 * as they run, so they are not counted here: a wait never queues behind another.
 */
export const maxRequestsInFlight = 3;

/** A counting semaphore: `run` waits for a free slot, in the order asked (`first`: before the others). */
function slots(size: number): <T>(work: () => Promise<T>, first?: boolean) => Promise<T> {
  let free = size;
  const waiting: (() => void)[] = [];
  return async (work, first = false) => {
    if (free > 0) free--;
    else await new Promise<void>((resolve) => (first ? waiting.unshift(resolve) : waiting.push(resolve)));
    try {
      return await work();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else free++;
    }
  };
}

export function transport(options: TransportOptions): Transport {
  const inFlight = slots(maxRequestsInFlight);
  const t: Transport = {
    timeoutMs: options.timeoutMs,
    server: options.address.server,
    open: (spec, timeoutMs, signal) => open(options, spec, timeoutMs, signal),
    readAll: (res) => readAll(options.address, res),
    send<T>(spec: WireRequest, first = false): Promise<T> {
      // --request-timeout bounds the whole exchange, head and body, as kubectl's http.Client.Timeout does.
      return inFlight(
        () =>
          withinRequestTimeout(options.address.server, options.timeoutMs, async (signal) => {
            const res = await t.open(spec, 0, signal);
            return answer<T>(res, await t.readAll(res));
          }),
        first,
      );
    },
  };
  return t;
}

/**
 * Runs one exchange under a deadline of its own: a timer from the start, not the socket's idle
 * timeout (Node arms that one only once the socket connects, and again for TLS, so a server that
 * accepts and never answers was given twice the time). On the deadline the exchange is aborted
 * and fails with NoAnswerError.
 */
async function withinRequestTimeout<T>(server: string, timeoutMs: number, exchange: (signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
  if (timeoutMs <= 0) return exchange(undefined);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new NoAnswerError(server, timeoutMs)), timeoutMs);
  try {
    return await exchange(controller.signal);
  } catch (e) {
    throw controller.signal.aborted ? controller.signal.reason : e;
  } finally {
    clearTimeout(timer);
  }
}

async function open(options: TransportOptions, spec: WireRequest, timeoutMs: number, signal?: AbortSignal): Promise<http.IncomingMessage> {
  const { address, credentials } = options;
  await options.limiter.take();
  options.onRequest?.(`${spec.method} ${spec.path}${queryString(spec.query)}`);
  const path = address.basePath + spec.path + queryString(spec.query);
  // kubectl -v=6: one line per request, no headers, no body, no credential.
  const started = Date.now();
  const logLine = (outcome: string) => {
    if (options.verbosity >= 6) options.log?.(`${spec.method} ${shown(new URL(path, address.url))} ${outcome} in ${Date.now() - started} milliseconds`);
  };
  // Fresh credentials per request: exec plugins and token files may rotate them.
  const creds = await credentials.forRequest();
  return new Promise((resolve, reject) => {
    const protocol = address.url.protocol === "http:" ? http : https;
    const req = protocol.request(requestOptions(options, spec, path, creds, signal), (res) => {
      if (res.statusCode === 401) credentials.invalidate();
      logLine(`${res.statusCode} ${http.STATUS_CODES[res.statusCode ?? 0] ?? ""}`);
      resolve(res);
    });
    // The answer's head within timeoutMs (a watch's: its stream may then stay open as long as it runs).
    const head = timeoutMs > 0 ? setTimeout(() => req.destroy(new NoAnswerError(address.server, timeoutMs)), timeoutMs) : undefined;
    req.on("response", () => clearTimeout(head));
    req.on("close", () => clearTimeout(head));
    req.on("error", (e: NodeJS.ErrnoException) => {
      const reason = signal?.aborted ? signal.reason : e;
      if (reason instanceof NoAnswerError) logLine(`(no answer within ${reason.timeoutMs / 1000}s)`);
      else if (e.name !== "AbortError") logLine(`(no answer: ${e.code ?? e.message})`);
      reject(connectionError(address, e));
    });
    req.end(bodyText(spec));
  });
}

function bodyText(spec: WireRequest): string | undefined {
  return spec.body === undefined ? undefined : JSON.stringify(spec.body);
}

function requestOptions(options: TransportOptions, spec: WireRequest, path: string, creds: RequestCredentials, signal: AbortSignal | undefined): http.RequestOptions {
  const { url, hostname, port } = options.address;
  const body = bodyText(spec);
  return {
    protocol: url.protocol,
    hostname,
    port,
    path,
    method: spec.method,
    agent: options.agentFor(creds.cert, creds.key),
    headers: {
      ...creds.headers,
      Accept: spec.accept ?? "application/json",
      "User-Agent": "kubectl-appstorage",
      ...(body !== undefined ? { "Content-Type": spec.contentType ?? "application/json", "Content-Length": Buffer.byteLength(body) } : {}),
    },
    signal,
  };
}

/** A socket error as kubectl tells it: a TLS failure names the flags that set the trust. */
function connectionError(address: ApiServerAddress, e: NodeJS.ErrnoException): Error {
  if (e instanceof UnreachableError || e.name === "AbortError") return e;
  const host = address.url.host;
  if (/^(ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/.test(e.code ?? "")) {
    return new UnreachableError(
      `the server ${host} failed TLS verification: ${e.message.split("\n")[0]} (${e.code}); check --certificate-authority, --tls-server-name or the kubeconfig's certificate-authority`,
    );
  }
  return new UnreachableError(`the connection to the server ${host} failed (${e.code ?? e.message}) - did you specify the right host or port?`);
}

async function readAll(address: ApiServerAddress, res: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  try {
    for await (const c of res) chunks.push(c as Buffer);
  } catch (e) {
    if (e instanceof UnreachableError) throw e;
    throw new UnreachableError(`the connection to the server ${address.url.host} broke while reading an answer (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** A 2xx answer's JSON; any other status is the server's Status as an ApiError, with Retry-After. */
function answer<T>(res: http.IncomingMessage, text: string): T {
  const code = res.statusCode ?? 0;
  if (code < 200 || code >= 300) {
    const err = apiErrorFromBody(code, text);
    const retryAfter = Number(res.headers["retry-after"]);
    if (Number.isFinite(retryAfter)) err.retryAfterSeconds = retryAfter;
    throw err;
  }
  return (text ? JSON.parse(text) : {}) as T;
}
