// The narrow client the rest of the tool uses: raw JSON requests and watches against the API
// server. Objects stay plain JSON as the server sent them: a typed model would drop fields it
// does not know, and a re-created StatefulSet must carry its pod template unchanged.
// @kubernetes/client-node does what kubectl's client does for credentials (kubeconfig
// merging, contexts, client certificates, tokens, exec and auth plugins); it is loaded only by
// commands that talk to a cluster, to keep start-up fast.
import * as http from "node:http";
import * as https from "node:https";
import { ApiError, apiErrorFromBody, UnreachableError } from "./errors";

export interface KubeFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  /** kubectl's --request-timeout: "0" (none), "30s", "1m", or a number of seconds. */
  requestTimeout?: string;
}

export interface ConnectOptions {
  /** Called with "METHOD /path?query" for every request sent (benchmarks count them). */
  onRequest?: (line: string) => void;
}

export interface RequestSpec {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  /** A POST that changes nothing (access and identity reviews): safe to retry like a read. */
  idempotent?: boolean;
}

export interface WatchEvent<T = unknown> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: T;
}

export interface KubeClient {
  /** The namespace from -n, else the context's, else "default". */
  readonly namespace: string;
  readonly server: string;
  request<T>(spec: RequestSpec): Promise<T>;
  /**
   * Streams watch events to onEvent until it returns true (then resolves true), the server
   * ends the watch (resolves false), or the signal aborts (resolves false).
   */
  watch<T>(path: string, query: RequestSpec["query"], onEvent: (e: WatchEvent<T>) => boolean, signal?: AbortSignal): Promise<boolean>;
}

/** Thrown for a kubeconfig or context problem, before any request. */
export class ConfigError extends Error {}

export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new ConfigError(`invalid duration "${text}": use a number with a unit, such as 30s or 5m`);
  const n = Number(m[1]);
  const unit = m[2] ?? "s";
  return Math.round(n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit]!);
}

function queryString(query: RequestSpec["query"]): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : "";
}

export const maxAttempts = 4;

/**
 * Milliseconds to wait before trying again, or undefined to give up. Reads (and reviews, which
 * change nothing) are retried on 5xx, 429 and broken connections. A write is retried only on
 * 429, which the server sends before doing anything; any other failure of a write has an
 * unknown outcome that the caller resolves by reading back, never by blindly repeating.
 */
export function retryDelay(spec: Pick<RequestSpec, "method" | "idempotent">, err: unknown, attempt: number): number | undefined {
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

export async function connect(flags: KubeFlags, options: ConnectOptions = {}): Promise<KubeClient> {
  const { KubeConfig } = await import("./kubeconfig");
  const kc = new KubeConfig();
  try {
    if (flags.kubeconfig) kc.loadFromFile(flags.kubeconfig);
    else kc.loadFromDefault();
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const where = flags.kubeconfig ? `"${flags.kubeconfig}"` : "from $KUBECONFIG or ~/.kube/config";
    if (err.code === "ENOENT") throw new ConfigError(`kubeconfig "${err.path ?? flags.kubeconfig}" does not exist; pass --kubeconfig with a valid file`);
    if (err instanceof TypeError) throw new ConfigError(`kubeconfig ${where} is empty or not a kubeconfig; pass --kubeconfig with a valid file`);
    throw new ConfigError(`cannot load kubeconfig ${where}: ${err.message.split("\n")[0]}; pass --kubeconfig with a valid file`);
  }
  // With nothing to load, client-node falls back to http://localhost:8080, as old kubectl did.
  if (!flags.kubeconfig && kc.getCurrentCluster()?.server === "http://localhost:8080" && kc.getContexts().every((c) => c.name === "loaded-context")) {
    throw new ConfigError("no kubeconfig found (neither $KUBECONFIG nor ~/.kube/config): pass --kubeconfig, or set KUBECONFIG");
  }
  if (flags.context) {
    if (!kc.getContextObject(flags.context)) throw new ConfigError(`context "${flags.context}" does not exist in the kubeconfig; list contexts with: kubectl config get-contexts`);
    kc.setCurrentContext(flags.context);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new ConfigError("no cluster in the kubeconfig's current context; set one with kubectl config use-context, or pass --kubeconfig");
  const context = kc.getContextObject(kc.getCurrentContext());
  const namespace = flags.namespace || context?.namespace || "default";
  const timeoutMs = flags.requestTimeout === undefined ? 30_000 : parseDuration(flags.requestTimeout);
  const base = new URL(cluster.server);
  const transport = base.protocol === "http:" ? http : https;
  const agentOptions: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(agentOptions);
  const agent = base.protocol === "http:" ? new http.Agent({ keepAlive: true }) : new https.Agent({ ...(agentOptions as https.AgentOptions), keepAlive: true });
  const basePath = base.pathname.replace(/\/$/, "");

  function open(spec: RequestSpec, timeout: number, signal?: AbortSignal): Promise<http.IncomingMessage> {
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    options.onRequest?.(`${spec.method} ${spec.path}${queryString(spec.query)}`);
    return new Promise((resolve, reject) => {
      // Fresh credentials per request: exec plugins and token files may rotate them.
      const credentials: https.RequestOptions = {};
      kc.applyToHTTPSOptions(credentials)
        .then(() => {
          const req = transport.request(
            {
              protocol: base.protocol,
              hostname: base.hostname,
              port: base.port,
              path: basePath + spec.path + queryString(spec.query),
              method: spec.method,
              agent,
              auth: credentials.auth,
              headers: {
                ...(credentials.headers ?? {}),
                Accept: "application/json",
                "User-Agent": "kubectl-appstorage",
                ...(body !== undefined ? { "Content-Type": spec.contentType ?? "application/json", "Content-Length": Buffer.byteLength(body) } : {}),
              },
              signal,
            },
            resolve,
          );
          if (timeout > 0) {
            req.setTimeout(timeout, () => req.destroy(new UnreachableError(`the server ${cluster!.server} did not answer within ${timeout / 1000}s; check the server or raise --request-timeout`)));
          }
          req.on("error", (e: NodeJS.ErrnoException) => {
            if (e instanceof UnreachableError || e.name === "AbortError") reject(e);
            else reject(new UnreachableError(`the connection to the server ${base.host} failed (${e.code ?? e.message}) - did you specify the right host or port?`));
          });
          req.end(body);
        })
        .catch(reject);
    });
  }

  async function readAll(res: http.IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    try {
      for await (const c of res) chunks.push(c as Buffer);
    } catch (e) {
      if (e instanceof UnreachableError) throw e;
      throw new UnreachableError(`the connection to the server ${base.host} broke while reading an answer (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    return Buffer.concat(chunks).toString("utf8");
  }

  async function once<T>(spec: RequestSpec): Promise<T> {
    const res = await open(spec, timeoutMs);
    const text = await readAll(res);
    const code = res.statusCode ?? 0;
    if (code < 200 || code >= 300) {
      const err = apiErrorFromBody(code, text);
      const retryAfter = Number(res.headers["retry-after"]);
      if (Number.isFinite(retryAfter)) err.retryAfterSeconds = retryAfter;
      throw err;
    }
    return (text ? JSON.parse(text) : {}) as T;
  }

  return {
    namespace,
    server: cluster.server,
    async request<T>(spec: RequestSpec): Promise<T> {
      for (let attempt = 1; ; attempt++) {
        try {
          return await once<T>(spec);
        } catch (e) {
          const delay = retryDelay(spec, e, attempt);
          if (delay === undefined) throw e;
          await new Promise((r) => setTimeout(r, delay));
        }
      }
    },
    async watch<T>(path: string, query: RequestSpec["query"], onEvent: (e: WatchEvent<T>) => boolean, signal?: AbortSignal): Promise<boolean> {
      const local = new AbortController();
      const onAbort = () => local.abort();
      signal?.addEventListener("abort", onAbort, { once: true });
      try {
        const res = await open({ method: "GET", path, query: { ...query, watch: 1, allowWatchBookmarks: true } }, 0, local.signal);
        const code = res.statusCode ?? 0;
        if (code < 200 || code >= 300) throw apiErrorFromBody(code, await readAll(res));
        // A watch that stays silent longer than the request timeout may be stalled (a proxy, a
        // half-open connection): end it, and the caller reads again and watches anew.
        let idle: NodeJS.Timeout | undefined;
        const touch = () => {
          if (timeoutMs <= 0) return;
          clearTimeout(idle);
          idle = setTimeout(() => local.abort(), timeoutMs);
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
      } catch (e) {
        if ((e as Error).name === "AbortError" || local.signal.aborted) return false;
        // A watch that breaks is not an error: the caller reads again and watches anew.
        if (e instanceof UnreachableError || (e as NodeJS.ErrnoException).code === "ECONNRESET") return false;
        throw e;
      } finally {
        signal?.removeEventListener("abort", onAbort);
        local.abort();
      }
    },
  };
}
