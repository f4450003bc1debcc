// The narrow client the rest of the tool uses: raw JSON requests and watches against the API
// server. Objects stay plain JSON as the server sent them: a typed model would drop fields it
// does not know, and a re-created StatefulSet must carry its pod template unchanged.
// Where it connects and as whom is decided as kubectl decides it (kubeconfig.ts: clientcmd's
// loading rules and kubectl's global flags); credentials are kept fresh per request
// (credentials.ts); proxies follow Go's rules (proxy.ts).
import * as http from "node:http";
import * as https from "node:https";
import { readFileSync } from "node:fs";
import * as net from "node:net";
import * as tls from "node:tls";
import { ApiError, apiErrorFromBody, UnreachableError } from "./errors";
import { ConfigError } from "./config-error";

export { ConfigError };

import type { KubeFlags } from "./kube-flags";

export type { KubeFlags };

export interface ConnectOptions {
  /** Called with "METHOD /path?query" for every request sent (benchmarks count them). */
  onRequest?: (line: string) => void;
  /** Where -v lines go (stderr); never given a credential. */
  log?: (line: string) => void;
  /** Without --request-timeout (default 30 s); completion asks for less. Not a flag: in-cluster still applies. */
  defaultRequestTimeoutMs?: number;
  /** The environment (KUBECONFIG, HOME, proxies, in-cluster variables); default process.env. */
  env?: Record<string, string | undefined>;
}

/** Where a client acts, for the plan and the confirmation prompt to name. */
export interface Target {
  /** The kubeconfig context ("" in a pod with in-cluster configuration). */
  context: string;
  /** The kubeconfig cluster name ("" in-cluster). */
  cluster: string;
  server: string;
  namespace: string;
  /** The kubeconfig user name, when there is one. */
  user?: string;
  /** --as (or the kubeconfig's as), with its groups: who the server is asked to act as. */
  impersonate?: string;
}

export interface RequestSpec {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  /** The Accept header; application/json unless asked otherwise (metadata-only lists). */
  accept?: string;
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
  /** Where this client acts: context, cluster, server, namespace, user, impersonation. */
  readonly target: Target;
  request<T>(spec: RequestSpec): Promise<T>;
  /**
   * Streams watch events to onEvent until it returns true (then resolves true), the server
   * ends the watch (resolves false), or the signal aborts (resolves false).
   */
  watch<T>(path: string, query: RequestSpec["query"], onEvent: (e: WatchEvent<T>) => boolean, signal?: AbortSignal): Promise<boolean>;
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

function describeImpersonation(as: string | undefined, groups: string[] | undefined): string | undefined {
  if (!as) return undefined;
  return groups?.length ? `${as} (groups ${groups.join(", ")})` : as;
}

/** A URL as -v prints it: the query is kept, a user:password in it is not. */
function shown(url: URL): string {
  const u = new URL(url.href);
  u.username = "";
  u.password = "";
  return u.href;
}

export async function connect(flags: KubeFlags, options: ConnectOptions = {}): Promise<KubeClient> {
  const env = options.env ?? process.env;
  const { resolveConfig } = await import("./kubeconfig");
  const { Credentials } = await import("./credentials");
  const { proxyFor, tunnel } = await import("./proxy");
  const config = resolveConfig(flags, { env });
  const cluster = config.cluster;
  const namespace = config.namespace;
  const timeoutMs = flags.requestTimeoutMs ?? options.defaultRequestTimeoutMs ?? 30_000;
  const verbosity = flags.verbosity ?? 0;
  let base: URL;
  try {
    base = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(cluster.server) ? cluster.server : `https://${cluster.server}`);
  } catch {
    throw new ConfigError(`the server "${cluster.server}" is not a URL; pass --server https://HOST:PORT or fix the kubeconfig`);
  }
  if (base.protocol !== "http:" && base.protocol !== "https:") throw new ConfigError(`the server "${cluster.server}" is not http or https; pass --server https://HOST:PORT`);
  let proxy: URL | undefined;
  try {
    proxy = proxyFor(base, cluster.proxyUrl, env);
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  const credentials = new Credentials(config, env);
  const transport = base.protocol === "http:" ? http : https;
  const ca = cluster.certificateAuthority ? readFileSync(cluster.certificateAuthority) : cluster.certificateAuthorityData ? Buffer.from(cluster.certificateAuthorityData, "base64") : undefined;
  const basePath = base.pathname.replace(/\/$/, "");
  const port = Number(base.port || (base.protocol === "https:" ? 443 : 80));
  const hostname = base.hostname.replace(/^\[|\]$/g, "");
  const target: Target = {
    context: config.context,
    cluster: config.clusterName,
    server: cluster.server,
    namespace,
    ...(config.userName ? { user: config.userName } : {}),
    ...(config.user.as ? { impersonate: describeImpersonation(config.user.as, config.user.asGroups)! } : {}),
  };

  /** Through the proxy, when there is one: a tunnel, then TLS (or plain HTTP) inside it. */
  function proxied<A extends http.Agent>(agent: A, tlsOptions: https.AgentOptions): A {
    if (!proxy) return agent;
    const via = proxy;
    (agent as unknown as { createConnection: unknown }).createConnection = (_opts: unknown, done: (err: Error | null, socket?: net.Socket) => void) => {
      tunnel(via, hostname, port)
        .then((socket) => {
          if (base.protocol === "http:") return done(null, socket);
          const secure = tls.connect({ ...(tlsOptions as object), socket, host: hostname, servername: tlsOptions.servername ?? (net.isIP(hostname) ? undefined : hostname) });
          secure.once("secureConnect", () => done(null, secure));
          secure.once("error", (e) => done(e));
        })
        .catch((e: Error) => done(new UnreachableError(`the connection to the server ${base.host} through the proxy ${via.host} failed: ${e.message}`)));
      return undefined;
    };
    return agent;
  }

  // One agent per client certificate: an exec plugin may hand out a new one.
  const agents = new Map<string, http.Agent>();
  function agentFor(cert?: string | Buffer, key?: string | Buffer): http.Agent {
    const id = cert ? String(cert) : "";
    let agent = agents.get(id);
    if (agent) return agent;
    if (base.protocol === "http:") agent = proxied(new http.Agent({ keepAlive: true }), {});
    else {
      // One secure context for every connection of this agent: without it each connection parses
      // the CA bundle and the client certificate again (about 2 ms each; commands open several
      // connections at once).
      const secureContext = tls.createSecureContext({ ...(ca ? { ca } : {}), ...(cert && key ? { cert, key } : {}) });
      const tlsOptions: https.AgentOptions = {
        keepAlive: true,
        secureContext,
        ...(cluster.insecureSkipTlsVerify ? { rejectUnauthorized: false } : {}),
        ...(cluster.tlsServerName ? { servername: cluster.tlsServerName } : {}),
      };
      agent = proxied(new https.Agent(tlsOptions), tlsOptions);
    }
    agents.set(id, agent);
    return agent;
  }

  function open(spec: RequestSpec, timeout: number, signal?: AbortSignal): Promise<http.IncomingMessage> {
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const path = basePath + spec.path + queryString(spec.query);
    options.onRequest?.(`${spec.method} ${spec.path}${queryString(spec.query)}`);
    const started = Date.now();
    return new Promise((resolve, reject) => {
      // Fresh credentials per request: exec plugins and token files may rotate them.
      credentials
        .forRequest()
        .then((creds) => {
          const req = transport.request(
            {
              protocol: base.protocol,
              hostname,
              port,
              path,
              method: spec.method,
              agent: agentFor(creds.cert, creds.key),
              headers: {
                ...creds.headers,
                Accept: spec.accept ?? "application/json",
                "User-Agent": "kubectl-appstorage",
                ...(body !== undefined ? { "Content-Type": spec.contentType ?? "application/json", "Content-Length": Buffer.byteLength(body) } : {}),
              },
              signal,
            },
            (res) => {
              if (res.statusCode === 401) credentials.invalidate();
              // kubectl -v=6: one line per request, no headers, no body, no credential.
              if (verbosity >= 6) options.log?.(`${spec.method} ${shown(new URL(path, base))} ${res.statusCode} ${http.STATUS_CODES[res.statusCode ?? 0] ?? ""} in ${Date.now() - started} milliseconds`);
              resolve(res);
            },
          );
          if (timeout > 0) {
            req.setTimeout(timeout, () => req.destroy(new UnreachableError(`the server ${cluster.server} did not answer within ${timeout / 1000}s; check the server or raise --request-timeout`)));
          }
          req.on("error", (e: NodeJS.ErrnoException) => {
            if (verbosity >= 6 && e.name !== "AbortError") options.log?.(`${spec.method} ${shown(new URL(path, base))} (no answer: ${e.code ?? e.message}) in ${Date.now() - started} milliseconds`);
            if (e instanceof UnreachableError || e.name === "AbortError") reject(e);
            else if (/^(ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/.test(e.code ?? "")) {
              reject(new UnreachableError(`the server ${base.host} failed TLS verification: ${e.message.split("\n")[0]} (${e.code}); check --certificate-authority, --tls-server-name or the kubeconfig's certificate-authority`));
            } else reject(new UnreachableError(`the connection to the server ${base.host} failed (${e.code ?? e.message}) - did you specify the right host or port?`));
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
    target,
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
