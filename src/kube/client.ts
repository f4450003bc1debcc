// The narrow client the rest of the tool uses: raw JSON reads and watches against the API
// server. Objects stay plain JSON as the server sent them: a typed model would drop fields it
// does not know, and a re-created StatefulSet must carry its pod template unchanged.
// Where it connects and as whom is decided as kubectl decides it (kubeconfig.ts and
// kubeconfig-loader.ts: clientcmd's loading rules and kubectl's global flags); credentials are
// kept fresh per request (credentials.ts); proxies follow Go's rules (proxy.ts); connections
// (agents.ts), one exchange (transport.ts), retries (retry.ts) and watches (watch.ts) each have
// their module.
// Writes are not part of what a holder of a client can call: src/kube/write.ts alone sends them,
// through the symbol of write-access.ts.
import { assertReadOnly, type Query, type RequestSpec, type WatchEvent, type WriteRequest } from "./api-request";
import { agentPool, certificateAuthority, type ProxyRoute } from "./agents";
import { apiServerAddress, type ApiServerAddress } from "./api-server";
import { ConfigError } from "./config-error";
import type { ResolvedConfig } from "./kubeconfig";
import { defaultBurst, defaultQps, RateLimiter } from "./rate-limit";
import { SilentServer, withRetries } from "./retry";
import { transport, type Transport } from "./transport";
import { watchEvents } from "./watch";
import { sendWrite } from "./write-access";
import type { Target } from "../api/types";

export { ConfigError };
export { maxAttempts, retryDelay } from "./retry";
export type { ReadRequest, RequestSpec, ReviewRequest, WatchEvent } from "./api-request";

import type { KubeFlags } from "./kube-flags";

export type { KubeFlags };

export interface ConnectOptions {
  /** The environment (KUBECONFIG, HOME, proxies, in-cluster variables): src/main.ts passes it in. */
  env: Record<string, string | undefined>;
  /** The operating system, as Node names it: where kubectl looks for the home directory. */
  platform: NodeJS.Platform;
  /** Called with "METHOD /path?query" for every request sent (benchmarks count them). */
  onRequest?: (line: string) => void;
  /** Where -v lines go (stderr); never given a credential. */
  log?: (line: string) => void;
  /** Where a request that got no answer says it tries again (stderr). */
  notice?: (line: string) => void;
  /** Without --request-timeout (default 30 s); completion asks for less. Not a flag: in-cluster still applies. */
  defaultRequestTimeoutMs?: number;
}

export interface KubeClient {
  /** The namespace from -n, else the context's, else (in a pod) the pod's, else "default". */
  readonly namespace: string;
  /** Where this client acts: context, cluster, server, namespace, user, impersonation. */
  readonly target: Target;
  /** A GET, or an access or identity review (api-request.ts says why those POSTs are reads). */
  request<T>(spec: RequestSpec): Promise<T>;
  /**
   * Streams watch events to onEvent until it returns true (then resolves true), the server
   * ends the watch (resolves false), or the signal aborts (resolves false).
   */
  watch<T>(path: string, query: Query | undefined, onEvent: (e: WatchEvent<T>) => boolean, signal?: AbortSignal): Promise<boolean>;
  /** A write: callable only with the symbol, which only src/kube/write.ts may import. */
  [sendWrite]<T>(spec: WriteRequest): Promise<T>;
}

export async function connect(flags: KubeFlags, options: ConnectOptions): Promise<KubeClient> {
  // Loaded on connect, not at start-up: commands that fail before they reach a cluster never pay for them.
  const { resolveConfig } = await import("./kubeconfig");
  const { Credentials } = await import("./credentials");
  const { env, platform } = options;
  const config = resolveConfig(flags, { env, platform });
  const address = apiServerAddress(config.cluster.server);
  const proxy = await proxyRoute(address, config, env);
  const credentials = new Credentials(config, env);
  const agentFor = agentPool(address, config.cluster, certificateAuthority(config.cluster), proxy);
  const timeoutMs = flags.requestTimeoutMs ?? options.defaultRequestTimeoutMs ?? 30_000;
  const limiter = new RateLimiter(defaultQps, defaultBurst);
  const wire = transport({ address, credentials, agentFor, timeoutMs, verbosity: flags.verbosity ?? 0, onRequest: options.onRequest, log: options.log, limiter });
  return kubeClient(config, address, wire, new SilentServer(options.notice));
}

/** The proxy that Go's rules (proxy-url, then HTTPS_PROXY/HTTP_PROXY/NO_PROXY) choose, if any. */
async function proxyRoute(address: ApiServerAddress, config: ResolvedConfig, env: Record<string, string | undefined>): Promise<ProxyRoute | undefined> {
  const { proxyFor, tunnel } = await import("./proxy");
  let url: URL | undefined;
  try {
    url = proxyFor(address.url, config.cluster.proxyUrl, env);
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  return url ? { url, tunnel } : undefined;
}

function kubeClient(config: ResolvedConfig, address: ApiServerAddress, wire: Transport, silent: SilentServer): KubeClient {
  return {
    namespace: config.namespace,
    target: targetOf(config, address),
    request<T>(spec: RequestSpec): Promise<T> {
      assertReadOnly(spec);
      return withRetries(spec, (first) => wire.send<T>(spec, first), silent);
    },
    watch: (path, query, onEvent, signal) => watchEvents(wire, path, query, onEvent, signal),
    [sendWrite]<T>(spec: WriteRequest): Promise<T> {
      return withRetries(spec, (first) => wire.send<T>(spec, first), silent);
    },
  };
}

function targetOf(config: ResolvedConfig, address: ApiServerAddress): Target {
  return {
    context: config.context,
    cluster: config.clusterName,
    server: address.server,
    namespace: config.namespace,
    ...(config.userName ? { user: config.userName } : {}),
    ...(config.user.as ? { impersonate: describeImpersonation(config.user.as, config.user.asGroups) } : {}),
  };
}

function describeImpersonation(as: string, groups: string[] | undefined): string {
  return groups?.length ? `${as} (groups ${groups.join(", ")})` : as;
}
