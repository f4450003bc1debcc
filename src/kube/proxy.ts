// Proxies as kubectl (Go's net/http) uses them. A cluster's `proxy-url` (http, https or
// socks5) always applies. Otherwise the environment: HTTPS_PROXY for https servers, HTTP_PROXY
// for http ones (upper or lower case), except hosts matched by NO_PROXY; and, as in Go's
// golang.org/x/net/http/httpproxy, `localhost` and loopback addresses are never proxied from the
// environment. Connections are tunnelled (HTTP CONNECT, or SOCKS5), then TLS runs end to end.
import * as net from "node:net";
import * as tls from "node:tls";

/** The proxy for a request to `target`, or undefined to connect directly. */
export function proxyFor(target: URL, clusterProxyUrl: string | undefined, env: Record<string, string | undefined>): URL | undefined {
  if (clusterProxyUrl) return parseProxyUrl(clusterProxyUrl, "the cluster's proxy-url");
  const get = (name: string) => env[name] ?? env[name.toLowerCase()];
  const raw = target.protocol === "https:" ? get("HTTPS_PROXY") : get("HTTP_PROXY");
  if (!raw) return undefined;
  const host = target.hostname.replace(/^\[|\]$/g, "");
  if (host === "localhost" || isLoopback(host)) return undefined;
  if (noProxyMatches(host, target.port || (target.protocol === "https:" ? "443" : "80"), get("NO_PROXY") ?? "")) return undefined;
  // Go reads a proxy without a scheme as http://.
  return parseProxyUrl(/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`, "the proxy from the environment");
}

function parseProxyUrl(text: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`${what} "${text}" is not a URL; use http://, https:// or socks5://HOST:PORT`);
  }
  if (!["http:", "https:", "socks5:"].includes(url.protocol)) throw new Error(`${what} "${text}" has an unsupported scheme ${url.protocol}; use http, https or socks5`);
  return url;
}

function isLoopback(host: string): boolean {
  if (net.isIPv4(host)) return host.startsWith("127.");
  if (net.isIPv6(host)) return host === "::1" || /^(0:){7}1$/.test(host) || /^::ffff:127\./i.test(host);
  return false;
}

function ipInCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split("/");
  const list = new net.BlockList();
  try {
    list.addSubnet(base!, Number(bits), net.isIPv6(base!) ? "ipv6" : "ipv4");
    return list.check(ip, net.isIPv6(ip) ? "ipv6" : "ipv4");
  } catch {
    return false;
  }
}

/** Go's NO_PROXY: "*", IPs, CIDRs, host names (a name matches itself and its subdomains; ".name" only subdomains), each with an optional port. */
export function noProxyMatches(host: string, port: string, noProxy: string): boolean {
  const h = host.toLowerCase();
  for (let entry of noProxy
    .split(",")
    .map((e) => e.trim().toLowerCase())
    .filter(Boolean)) {
    if (entry === "*") return true;
    if (entry.includes("/")) {
      if (net.isIP(h) && ipInCidr(h, entry)) return true;
      continue;
    }
    let entryPort = "";
    const m = /^(.*?):(\d+)$/.exec(entry);
    if (m && !net.isIPv6(entry)) [entry, entryPort] = [m[1]!, m[2]!];
    entry = entry.replace(/^\[|\]$/g, "");
    if (entryPort && entryPort !== port) continue;
    if (net.isIP(entry)) {
      if (entry === h) return true;
      continue;
    }
    if (entry.startsWith("*.")) entry = entry.slice(1);
    if (entry.startsWith(".")) {
      if (h.endsWith(entry)) return true;
    } else if (h === entry || h.endsWith(`.${entry}`)) {
      return true;
    }
  }
  return false;
}

function once(socket: net.Socket): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      cleanup();
      resolve(d);
    };
    const onError = (e: Error) => {
      cleanup();
      reject(e);
    };
    const onClose = () => {
      cleanup();
      reject(new Error("the proxy closed the connection"));
    };
    const cleanup = () => {
      socket.off("data", onData);
      socket.off("error", onError);
      socket.off("close", onClose);
    };
    socket.on("data", onData);
    socket.on("error", onError);
    socket.on("close", onClose);
  });
}

function connectTo(proxy: URL): Promise<net.Socket> {
  const port = Number(proxy.port || (proxy.protocol === "https:" ? 443 : proxy.protocol === "socks5:" ? 1080 : 80));
  const host = proxy.hostname.replace(/^\[|\]$/g, "");
  return new Promise((resolve, reject) => {
    const s: net.Socket = proxy.protocol === "https:" ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host }) : net.connect({ host, port });
    s.once(proxy.protocol === "https:" ? "secureConnect" : "connect", () => {
      s.off("error", reject);
      resolve(s);
    });
    s.once("error", reject);
  });
}

async function httpConnect(proxy: URL, host: string, port: number): Promise<net.Socket> {
  const s = await connectTo(proxy);
  const authority = net.isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
  const auth = proxy.username ? `Proxy-Authorization: Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString("base64")}\r\n` : "";
  s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth}\r\n`);
  let head = Buffer.alloc(0);
  while (!head.includes("\r\n\r\n")) head = Buffer.concat([head, await once(s)]);
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(head.toString("latin1"));
  if (!status || status[1] !== "200") {
    s.destroy();
    throw new Error(`the proxy ${proxy.host} refused the tunnel to ${authority} (${head.toString("latin1").split("\r\n")[0]})`);
  }
  return s;
}

function ipv6Bytes(ip: string): Buffer {
  const [head = "", tail = ""] = ip.split("::");
  const words = (part: string) => (part ? part.split(":") : []);
  const h = words(head);
  const t = words(tail);
  const all = ip.includes("::") ? [...h, ...Array(8 - h.length - t.length).fill("0"), ...t] : h;
  const out = Buffer.alloc(16);
  all.forEach((w, i) => out.writeUInt16BE(parseInt(w, 16), i * 2));
  return out;
}

async function socks5Connect(proxy: URL, host: string, port: number): Promise<net.Socket> {
  const s = await connectTo(proxy);
  const user = decodeURIComponent(proxy.username);
  const pass = decodeURIComponent(proxy.password);
  s.write(Buffer.from(user ? [5, 2, 0, 2] : [5, 1, 0]));
  const method = await once(s);
  if (method[0] !== 5 || (method[1] !== 0 && method[1] !== 2)) throw new Error(`the SOCKS5 proxy ${proxy.host} accepts none of our authentication methods`);
  if (method[1] === 2) {
    s.write(Buffer.concat([Buffer.from([1, Buffer.byteLength(user)]), Buffer.from(user), Buffer.from([Buffer.byteLength(pass)]), Buffer.from(pass)]));
    const ok = await once(s);
    if (ok[1] !== 0) throw new Error(`the SOCKS5 proxy ${proxy.host} refused the user name and password`);
  }
  let address: Buffer;
  if (net.isIPv4(host)) address = Buffer.from([1, ...host.split(".").map(Number)]);
  else if (net.isIPv6(host)) address = Buffer.concat([Buffer.from([4]), ipv6Bytes(host)]);
  else address = Buffer.concat([Buffer.from([3, Buffer.byteLength(host)]), Buffer.from(host)]);
  s.write(Buffer.concat([Buffer.from([5, 1, 0]), address, Buffer.from([port >> 8, port & 0xff])]));
  const reply = await once(s);
  if (reply[0] !== 5 || reply[1] !== 0) {
    s.destroy();
    throw new Error(`the SOCKS5 proxy ${proxy.host} refused the connection to ${host}:${port} (reply ${reply[1]})`);
  }
  return s;
}

/** A socket to host:port through the proxy, ready for TLS (or plain HTTP). */
export function tunnel(proxy: URL, host: string, port: number): Promise<net.Socket> {
  return proxy.protocol === "socks5:" ? socks5Connect(proxy, host, port) : httpConnect(proxy, host, port);
}
