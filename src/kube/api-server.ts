// Where the API server is, from the kubeconfig's (or --server's) server string, as kubectl reads it.
import { ConfigError } from "./config-error";

export interface ApiServerAddress {
  /** The server as the kubeconfig or --server wrote it: messages quote it. */
  server: string;
  url: URL;
  /** The host without IPv6 brackets: what sockets and TLS take. */
  hostname: string;
  port: number;
  /** A server behind a path (an API proxy): the prefix of every API path, without a trailing "/". */
  basePath: string;
}

/** kubectl takes a server without a scheme as https://; anything but http and https is refused. */
export function apiServerAddress(server: string): ApiServerAddress {
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(server) ? server : `https://${server}`);
  } catch {
    throw new ConfigError(`the server "${server}" is not a URL; pass --server https://HOST:PORT or fix the kubeconfig`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new ConfigError(`the server "${server}" is not http or https; pass --server https://HOST:PORT`);
  return {
    server,
    url,
    hostname: url.hostname.replace(/^\[|\]$/g, ""),
    port: Number(url.port || (url.protocol === "https:" ? 443 : 80)),
    basePath: url.pathname.replace(/\/$/, ""),
  };
}

/** A URL as -v prints it: the query is kept, a user:password in it is not. */
export function shown(url: URL): string {
  const u = new URL(url.href);
  u.username = "";
  u.password = "";
  return u.href;
}
