// The connections to the API server: keep-alive agents with the cluster's TLS settings, one per
// client certificate, tunnelled through the proxy when there is one (proxy.ts says which).
import * as http from "node:http";
import * as https from "node:https";
import { readFileSync } from "node:fs";
import * as net from "node:net";
import * as tls from "node:tls";
import type { ApiServerAddress } from "./api-server";
import { UnreachableError } from "./errors";
import type { ClusterInfo } from "./kubeconfig-loader";
import type { tunnel } from "./proxy";

/** A proxy to reach the server through, and how to open a tunnel through it. */
export interface ProxyRoute {
  url: URL;
  tunnel: typeof tunnel;
}

/** An agent for requests with this client certificate (none: token or no credentials). */
export type AgentFor = (cert?: string | Buffer, key?: string | Buffer) => http.Agent;

/** The cluster's certificate authority, from its file or its inline data; none: the system's roots. */
export function certificateAuthority(cluster: ClusterInfo): Buffer | undefined {
  if (cluster.certificateAuthority) return readFileSync(cluster.certificateAuthority);
  return cluster.certificateAuthorityData ? Buffer.from(cluster.certificateAuthorityData, "base64") : undefined;
}

/** One agent per client certificate: an exec plugin may hand out a new one. */
export function agentPool(address: ApiServerAddress, cluster: ClusterInfo, ca: Buffer | undefined, proxy: ProxyRoute | undefined): AgentFor {
  const agents = new Map<string, http.Agent>();
  return (cert, key) => {
    const id = cert ? String(cert) : "";
    let agent = agents.get(id);
    if (agent) return agent;
    if (address.url.protocol === "http:") agent = proxied(new http.Agent({ keepAlive: true }), {}, address, proxy);
    else {
      const tlsOptions = secureAgentOptions(cluster, ca, cert, key);
      agent = proxied(new https.Agent(tlsOptions), tlsOptions, address, proxy);
    }
    agents.set(id, agent);
    return agent;
  };
}

function secureAgentOptions(cluster: ClusterInfo, ca: Buffer | undefined, cert?: string | Buffer, key?: string | Buffer): https.AgentOptions {
  // One secure context for every connection of this agent: without it each connection parses
  // the CA bundle and the client certificate again (about 2 ms each; commands open several
  // connections at once).
  const secureContext = tls.createSecureContext({ ...(ca ? { ca } : {}), ...(cert && key ? { cert, key } : {}) });
  return {
    keepAlive: true,
    secureContext,
    ...(cluster.insecureSkipTlsVerify ? { rejectUnauthorized: false } : {}),
    ...(cluster.tlsServerName ? { servername: cluster.tlsServerName } : {}),
  };
}

/** Through the proxy, when there is one: a tunnel, then TLS (or plain HTTP) inside it. */
function proxied<A extends http.Agent>(agent: A, tlsOptions: https.AgentOptions, address: ApiServerAddress, proxy: ProxyRoute | undefined): A {
  if (!proxy) return agent;
  const { hostname, port, url } = address;
  (agent as unknown as { createConnection: unknown }).createConnection = (_opts: unknown, done: (err: Error | null, socket?: net.Socket) => void) => {
    proxy
      .tunnel(proxy.url, hostname, port)
      .then((socket) => {
        if (url.protocol === "http:") return done(null, socket);
        const secure = tls.connect({ ...(tlsOptions as object), socket, host: hostname, servername: tlsOptions.servername ?? (net.isIP(hostname) ? undefined : hostname) });
        secure.once("secureConnect", () => done(null, secure));
        secure.once("error", (e) => done(e));
      })
      .catch((e: Error) => done(new UnreachableError(`the connection to the server ${url.host} through the proxy ${proxy.url.host} failed: ${e.message}`)));
    return undefined;
  };
  return agent;
}
