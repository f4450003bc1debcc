// A fault-injecting proxy between the plugin and the local API server, on 127.0.0.1. It serves
// TLS with the API server's own certificate (valid for 127.0.0.1, signed by the cluster CA) and
// forwards each request upstream with the credentials of the kubeconfig it was given, so the
// plugin sees an ordinary API server. It can fail the Nth request matching a rule: an HTTP
// status (500, 503, 429 with Retry-After), a reset before or after forwarding, a stalled answer,
// or a watch dropped mid-stream; and it can hold a request (never forwarding it) so a test can
// kill the client exactly there.
import { readFileSync, writeFileSync } from "node:fs";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parse } from "yaml";

export type FaultKind = "500" | "503" | "429" | "reset-before" | "reset-after" | "stall" | "drop-watch" | "hold" | "hold-after";

export interface Fault {
  /** 0-based index among requests that match. */
  nth: number;
  kind: FaultKind;
  match?: (r: SeenRequest) => boolean;
}

export interface SeenRequest {
  index: number;
  method: string;
  path: string;
  watch: boolean;
  /** "METHOD resource": e.g. "DELETE statefulsets", "GET pods". */
  kind: string;
  fault?: FaultKind;
}

export interface Held {
  request: SeenRequest;
  /** Sends the held request on (hold) or its answer back (hold-after). */
  release(): void;
}

export interface FaultProxy {
  kubeconfig: string;
  requests: SeenRequest[];
  /**
   * Resolves when a request is held: "hold" keeps it from the server, "hold-after" lets the
   * server do it and keeps the answer from the client (a kill there is a crash right after it).
   */
  held: Promise<Held>;
  close(): Promise<void>;
}

interface Credentials {
  server: URL;
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

function credentials(kubeconfigPath: string): Credentials {
  const kc = parse(readFileSync(kubeconfigPath, "utf8"));
  const cluster = kc.clusters[0].cluster;
  const user = kc.users[0].user;
  return {
    server: new URL(cluster.server),
    ca: Buffer.from(cluster["certificate-authority-data"], "base64"),
    cert: Buffer.from(user["client-certificate-data"], "base64"),
    key: Buffer.from(user["client-key-data"], "base64"),
  };
}

/** "METHOD resource" from an API path: /apis/apps/v1/namespaces/x/statefulsets/y -> statefulsets. */
export function requestKind(method: string, path: string): string {
  const parts = path.split("?")[0]!.split("/").filter(Boolean);
  const i = parts.indexOf("namespaces");
  let resource: string | undefined;
  if (i >= 0 && parts.length > i + 2) resource = parts[i + 2];
  else resource = parts[parts[0] === "api" ? 2 : 3];
  return `${method} ${resource ?? path}`;
}

export async function startFaultProxy(upstreamKubeconfig: string, faults: Fault[] = []): Promise<FaultProxy> {
  const creds = credentials(upstreamKubeconfig);
  const pki = join(dirname(upstreamKubeconfig), "pki");
  const requests: SeenRequest[] = [];
  const matched = new Map<Fault, number>();
  let onHeld: (h: Held) => void = () => undefined;
  const held = new Promise<Held>((r) => (onHeld = r));
  const upstreamAgent = new https.Agent({ ca: creds.ca, cert: creds.cert, key: creds.key, keepAlive: true });
  const server = https.createServer({ key: readFileSync(join(pki, "apiserver.key")), cert: readFileSync(join(pki, "apiserver.crt")) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = req.url ?? "/";
      const seen: SeenRequest = { index: requests.length, method: req.method ?? "GET", path: url, watch: /[?&]watch=(1|true)/.test(url), kind: requestKind(req.method ?? "GET", url) };
      requests.push(seen);
      let fault: FaultKind | undefined;
      for (const f of faults) {
        if (f.match && !f.match(seen)) continue;
        const n = matched.get(f) ?? 0;
        matched.set(f, n + 1);
        if (n === f.nth) fault = f.kind;
      }
      seen.fault = fault;
      const status = (code: number, headers: Record<string, string> = {}) => {
        res.writeHead(code, { "Content-Type": "application/json", ...headers });
        res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message: `injected ${code}`, reason: code === 429 ? "TooManyRequests" : "InternalError", code }));
      };
      if (fault === "500") return status(500);
      if (fault === "503") return status(503);
      if (fault === "429") return status(429, { "Retry-After": "1" });
      if (fault === "reset-before") return req.socket.destroy();
      if (fault === "stall") return; // never answer: the client's timeout must fire
      const forward = () => {
        const headers = { ...req.headers };
        delete headers.host;
        delete headers.connection;
        const up = https.request(
          { hostname: creds.server.hostname, port: creds.server.port, method: req.method, path: url, headers, agent: upstreamAgent },
          (upRes) => {
            if (fault === "reset-after") {
              // The server did the work; the client never hears of it.
              upRes.resume();
              upRes.on("end", () => req.socket.destroy());
              return;
            }
            const answer = () => {
              res.writeHead(upRes.statusCode ?? 502, upRes.headers);
              if (fault === "drop-watch" && seen.watch) {
                setTimeout(() => req.socket.destroy(), 50);
                return;
              }
              upRes.pipe(res);
            };
            if (fault === "hold-after") onHeld({ request: seen, release: answer });
            else answer();
          },
        );
        up.on("error", () => req.socket.destroy());
        res.on("close", () => up.destroy());
        up.end(Buffer.concat(chunks));
      };
      if (fault === "hold") return onHeld({ request: seen, release: forward });
      forward();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  const original = readFileSync(upstreamKubeconfig, "utf8");
  const kubeconfig = join(tmpdir(), `appstorage-proxy-${port}.kubeconfig`);
  writeFileSync(kubeconfig, original.replace(`server: ${creds.server.origin}`, `server: https://127.0.0.1:${port}`), { mode: 0o600 });
  return {
    kubeconfig,
    requests,
    held,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
        upstreamAgent.destroy();
      }),
  };
}
