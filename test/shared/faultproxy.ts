// A fault-injecting proxy between the plugin and the local API server, on 127.0.0.1. It serves
// TLS with the API server's own certificate (valid for 127.0.0.1, signed by the cluster CA) and
// forwards each request upstream with the credentials of the kubeconfig it was given, so the
// plugin sees an ordinary API server; the real server does the work and decides every answer
// that is not an injected fault.
//
// Faults are placed by what a request is (its signature: verb and resource, e.g. "create secrets",
// "watch pods") and its occurrence among requests of that signature, never by raw index. Each
// fault records the request it landed on, and only a fault that really acted counts as landed: a
// dropped watch must have delivered an event first, a reset-after must have let the server answer.
// The proxy also logs every request (what reached the server, its body and answer) so a test can
// check that no write was repeated and that an unknown outcome was read back.
//
// The proxy runs in a worker thread: the tests call kubectl synchronously (execFileSync), which
// blocks their thread for a while; a proxy on that thread would stall every plugin run meanwhile
// (and requests timed out by the plugin would reach the server late, as if repeated).
import { createHash } from "node:crypto";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parse } from "yaml";

export type FaultKind =
  | "500"
  | "503"
  | "429"
  | "reset-before"
  | "reset-after"
  | "stall"
  /** A watch reset before any byte reaches the client. */
  | "drop-watch"
  /** A watch reset right after its first event reached the client. */
  | "drop-watch-after-event"
  /** A watch that ends cleanly with no event (as when the server's timeout ends it). */
  | "end-watch"
  /** 410 Gone: the resourceVersion is too old. */
  | "gone-410"
  | "hold"
  | "hold-after";

/** Faults whose write may or may not have been done as far as the client can tell. */
export const unknownOutcome: FaultKind[] = ["500", "503", "reset-before", "reset-after", "stall"];

export interface Fault {
  kind: FaultKind;
  /** The signature of the request to fault ("update secrets"). */
  signature: string;
  /** 0-based occurrence among requests that match; default 0. */
  nth?: number;
  /**
   * Counts occurrences only from the first request of this signature on (a phase of the run,
   * e.g. "delete secrets": what comes after the journal is removed), not from the start.
   */
  after?: string;
  /**
   * Counts occurrences only from the first request that names this object on, that request
   * included (by its path, or a create by its body's metadata.name): one claim's move of
   * --migrate-existing begins with the create of its claim of a new volume.
   */
  afterObject?: string;
  /** The request it landed on, once it really acted. */
  landed?: SeenRequest;
}

export interface SeenRequest {
  index: number;
  method: string;
  /** Path with query, as sent. */
  path: string;
  watch: boolean;
  /** get, list, watch, create, update, patch, delete. */
  verb: string;
  /** "statefulsets", "secrets", "pods", "selfsubjectaccessreviews", ... (with "/subresource"). */
  resource: string;
  name?: string;
  /** A create's object: its body's metadata.name (a POST's path names only the collection). */
  object?: string;
  /** A server-side dry run (dryRun=All). */
  dryRun: boolean;
  /** "verb resource": what the request is, e.g. "update secrets", "dry-run patch persistentvolumeclaims". */
  signature: string;
  /** sha256 of the body, for telling a repeated write from another write to the same object. */
  bodyHash: string;
  fault?: FaultKind;
  /** The request was sent on to the real server. */
  reachedServer: boolean;
  /** The status the client was given (undefined: none, the connection broke or stalled). */
  answered?: number;
  /** The status the server gave, when it was reached. */
  serverStatus?: number;
  /** For watches: events (lines) passed to the client. */
  eventsDelivered: number;
  /** When the proxy received it (ms since the epoch). */
  at: number;
  /** A write of a journal Secret: what it records, and what kind of write it is (see journalWrite). */
  journal?: JournalWrite;
}

/**
 * A journal write, told apart by its content against the last journal write the server recorded:
 * "release" sets the lease to expire at once (a run that failed on its own); "renewal" changes
 * nothing but the timestamps (updatedAt, leaseExpires); "step" records something new (a step, a
 * move of --migrate-existing) or is the first. Renewals and releases get signatures of their own
 * ("renew secrets", "release secrets"), so that "update secrets" #N is the same step write in
 * every run, however many renewals a slow run makes between two steps.
 */
export interface JournalWrite {
  kind: "step" | "renewal" | "release";
  /** The Secret's name. */
  secret: string;
  step: string;
  /** sha256 of the journal without its timestamps. */
  digest: string;
  /** leaseExpires minus updatedAt, in seconds. */
  leaseSeconds: number;
}

/** One journal Secret: its namespace's path (up to /secrets) and its name. */
const journalKeyOf = (path: string, secret: string) => `${path.split("?")[0]!.replace(/\/secrets(\/[^/]*)?$/, "")} ${secret}`;

function secretName(body: Buffer): string | undefined {
  try {
    return (JSON.parse(body.toString("utf8")) as { metadata?: { name?: string } }).metadata?.name;
  } catch {
    return undefined;
  }
}

/** The journal a Secret write carries, or undefined when it is not one (or has no body). */
export function journalWrite(body: Buffer, previous: JournalWrite | undefined): JournalWrite | undefined {
  let journal: Record<string, unknown>;
  try {
    const secret = JSON.parse(body.toString("utf8")) as { data?: Record<string, string> };
    const data = secret.data?.["journal.json"];
    if (!data) return undefined;
    journal = JSON.parse(Buffer.from(data, "base64").toString("utf8")) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const { updatedAt, leaseExpires, ...content } = journal;
  const digest = createHash("sha256").update(JSON.stringify(content)).digest("hex");
  const lease = (Date.parse(String(leaseExpires)) - Date.parse(String(updatedAt))) / 1000;
  const kind = lease <= 0 ? "release" : previous?.digest === digest ? "renewal" : "step";
  return { kind, secret: secretName(body) ?? "", step: String(content["step"]), digest, leaseSeconds: lease };
}

export interface Held {
  request: SeenRequest;
  /** Sends the held request on (hold) or its answer back (hold-after). */
  release(): void;
}

export interface FaultProxy {
  kubeconfig: string;
  requests: SeenRequest[];
  faults: Fault[];
  /** The next held request, or a rejection after `ms` (a run that never gets there must fail the test, not hang it). */
  nextHeld(ms: number): Promise<Held>;
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

/** What an API request is: verb, resource (with subresource) and name, from method and path. */
export function describeRequest(method: string, path: string): { verb: string; resource: string; name?: string; watch: boolean; dryRun: boolean; signature: string } {
  const [p, q = ""] = path.split("?");
  const parts = p!.split("/").filter(Boolean);
  // /api/v1/... or /apis/GROUP/VERSION/...
  let rest = parts[0] === "api" ? parts.slice(2) : parts.slice(3);
  if (rest[0] === "namespaces" && rest.length >= 3) rest = rest.slice(2);
  const resource = rest[0] ?? p!;
  const name = rest[1];
  const sub = rest[2];
  const watch = /(^|&)watch=(1|true)(&|$)/.test(q);
  const verb = { POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" }[method] ?? (watch ? "watch" : name ? "get" : "list");
  const res = sub ? `${resource}/${sub}` : resource;
  // A server-side dry run changes nothing: it is named apart and is not a write.
  const dryRun = /(^|&)dryRun=/.test(q);
  return { verb, resource: res, ...(name ? { name } : {}), watch, dryRun, signature: `${dryRun ? "dry-run " : ""}${verb} ${res}` };
}

/** A request that changes something: not a read, not a review (create selfsubject*reviews), not a dry run. */
export const isWrite = (r: Pick<SeenRequest, "verb" | "resource" | "dryRun">) => ["create", "update", "patch", "delete"].includes(r.verb) && !r.dryRun && !r.resource.startsWith("selfsubject");

/** Messages from the worker: request log updates, landed faults, held requests, its address. */
type FromWorker =
  | { type: "listening"; kubeconfig: string }
  | { type: "request"; request: SeenRequest }
  | { type: "landed"; fault: number; index: number }
  | { type: "held"; id: number; index: number }
  | { type: "closed" };
type ToWorker = { type: "release"; id: number } | { type: "close" };

export interface ProxyOptions {
  /**
   * Serves the API server's node proxy (GET /api/v1/nodes/NAME/proxy/PATH) from the kubelet on
   * 127.0.0.1 at this port, with the cluster's admin client certificate. The API server refuses to
   * proxy to a loopback address ("address not allowed"), and the test node's kubelet serves on
   * loopback only: this one hop is the test's, what is served is kubelet's own answer.
   */
  kubeletPort?: number;
}

/** Starts the proxy (in a worker thread) with these faults. */
export function startFaultProxy(upstreamKubeconfig: string, faults: Fault[] = [], options: ProxyOptions = {}): Promise<FaultProxy> {
  // eval: the worker loads this TypeScript file through the same require hook (test/register.cjs).
  const worker = new Worker(`require(${JSON.stringify(__filename)})`, {
    eval: true,
    workerData: { upstreamKubeconfig, faults: faults.map((f) => ({ kind: f.kind, signature: f.signature, nth: f.nth ?? 0, after: f.after ?? "", afterObject: f.afterObject ?? "" })), options },
  });
  const requests: SeenRequest[] = [];
  const heldQueue: Held[] = [];
  const heldWaiters: ((h: Held) => void)[] = [];
  let closed: () => void = () => undefined;
  const whenClosed = new Promise<void>((r) => (closed = r));
  return new Promise((resolve, reject) => {
    worker.once("error", reject);
    worker.on("message", (m: FromWorker) => {
      if (m.type === "request") requests[m.request.index] = m.request;
      else if (m.type === "landed") faults[m.fault]!.landed = requests[m.index];
      else if (m.type === "held") {
        const h: Held = { request: requests[m.index]!, release: () => worker.postMessage({ type: "release", id: m.id } satisfies ToWorker) };
        const w = heldWaiters.shift();
        if (w) w(h);
        else heldQueue.push(h);
      } else if (m.type === "closed") closed();
      else if (m.type === "listening") {
        resolve({
          kubeconfig: m.kubeconfig,
          requests,
          faults,
          nextHeld: (ms) => {
            const h = heldQueue.shift();
            if (h) return Promise.resolve(h);
            return new Promise<Held>((res, rej) => {
              const waiter = (x: Held) => {
                clearTimeout(timer);
                res(x);
              };
              const timer = setTimeout(() => {
                heldWaiters.splice(heldWaiters.indexOf(waiter), 1);
                rej(new Error(`no request was held within ${ms} ms (seen: ${requests.map((r) => r.signature).join(", ")})`));
              }, ms);
              heldWaiters.push(waiter);
            });
          },
          close: async () => {
            worker.postMessage({ type: "close" } satisfies ToWorker);
            // Every message the worker sent before "closed" has been handled: the log is complete.
            await whenClosed;
            await worker.terminate();
          },
        });
      }
    });
  });
}

if (!isMainThread && workerData?.upstreamKubeconfig) void runProxy(workerData.upstreamKubeconfig as string, workerData.faults as Required<Omit<Fault, "landed">>[], workerData.options as ProxyOptions);

async function runProxy(upstreamKubeconfig: string, faults: Required<Omit<Fault, "landed">>[], options: ProxyOptions = {}): Promise<void> {
  const port = parentPort!;
  const post = (m: FromWorker) => port.postMessage(m);
  const creds = credentials(upstreamKubeconfig);
  // The cluster's certificates: beside the admin kubeconfig, or one folder up for a user's (scripts/cluster user NAME writes users/NAME.kubeconfig).
  const pki = [join(dirname(upstreamKubeconfig), "pki"), join(dirname(upstreamKubeconfig), "..", "pki")].find((d) => existsSync(join(d, "apiserver.crt"))) ?? join(dirname(upstreamKubeconfig), "pki");
  const requests: SeenRequest[] = [];
  const matched = new Map<number, number>();
  const landed = new Set<number>();
  const signaturesSeen = new Set<string>();
  const objectsSeen = new Set<string>();
  /** The last journal write per Secret (namespace path and name) that the server recorded: renewals are told apart against it. */
  const lastJournal = new Map<string, JournalWrite>();
  const releases = new Map<number, () => void>();
  let nextId = 0;
  const onHeld = (request: SeenRequest, release: () => void) => {
    const id = nextId++;
    releases.set(id, release);
    post({ type: "held", id, index: request.index });
  };
  /** Sends the request's current state to the test's thread (after every change). */
  const sync = (r: SeenRequest) => post({ type: "request", request: r });
  const upstreamAgent = new https.Agent({ ca: creds.ca, cert: creds.cert, key: creds.key, keepAlive: true });
  // kubelet's serving certificate is its own self-signed one (the node tests read it with curl -k too).
  const kubeletAgent = new https.Agent({ cert: readFileSync(join(pki, "admin.crt")), key: readFileSync(join(pki, "admin.key")), rejectUnauthorized: false });
  const server = https.createServer({ key: readFileSync(join(pki, "apiserver.key")), cert: readFileSync(join(pki, "apiserver.crt")) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = req.url ?? "/";
      const body = Buffer.concat(chunks);
      const what = describeRequest(req.method ?? "GET", url);
      const journalKey = journalKeyOf(url, secretName(body) ?? what.name ?? "");
      const journal = what.resource === "secrets" && isWrite(what) ? journalWrite(body, lastJournal.get(journalKey)) : undefined;
      if (journal && journal.kind !== "step") what.signature = `${journal.kind === "renewal" ? "renew" : "release"} secrets`;
      const created = req.method === "POST" ? secretName(body) : undefined;
      const seen: SeenRequest = {
        index: requests.length,
        method: req.method ?? "GET",
        path: url,
        ...what,
        ...(created ? { object: created } : {}),
        bodyHash: createHash("sha256").update(body).digest("hex"),
        reachedServer: false,
        eventsDelivered: 0,
        at: Date.now(),
        ...(journal ? { journal } : {}),
      };
      requests.push(seen);
      let fault: number | undefined;
      for (const o of [seen.name, seen.object]) if (o) objectsSeen.add(o);
      faults.forEach((f, i) => {
        if (landed.has(i) || f.signature !== seen.signature || (f.after && !signaturesSeen.has(f.after)) || (f.afterObject && !objectsSeen.has(f.afterObject))) return;
        const n = matched.get(i) ?? 0;
        matched.set(i, n + 1);
        if (n === f.nth && fault === undefined) fault = i;
      });
      signaturesSeen.add(seen.signature);
      const kind = fault === undefined ? undefined : faults[fault]!.kind;
      if (kind) seen.fault = kind;
      sync(seen);
      const land = () => {
        if (fault === undefined || landed.has(fault)) return;
        landed.add(fault);
        sync(seen);
        post({ type: "landed", fault, index: seen.index });
      };
      const status = (code: number, headers: Record<string, string> = {}) => {
        seen.answered = code;
        land();
        const reason = { 429: "TooManyRequests", 410: "Expired", 503: "ServiceUnavailable" }[code] ?? "InternalError";
        res.writeHead(code, { "Content-Type": "application/json", ...headers });
        res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message: `injected ${code}`, reason, code }));
      };
      if (kind === "500") return status(500);
      if (kind === "503") return status(503);
      if (kind === "429") return status(429, { "Retry-After": "1" });
      if (kind === "gone-410") return status(410);
      if (kind === "reset-before" || kind === "drop-watch") {
        land();
        return req.socket.destroy();
      }
      if (kind === "stall") {
        land();
        return; // never answer: the client's timeout must fire
      }
      if (kind === "end-watch") {
        seen.answered = 200;
        land();
        res.writeHead(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
        return res.end();
      }
      const forward = () => {
        const headers = { ...req.headers };
        delete headers.host;
        delete headers.connection;
        seen.reachedServer = true;
        sync(seen);
        const toNode = options.kubeletPort !== undefined ? /^\/api\/v1\/nodes\/[^/]+\/proxy(\/.*)$/.exec(url) : null;
        const target = toNode
          ? { hostname: "127.0.0.1", port: options.kubeletPort, path: toNode[1], agent: kubeletAgent }
          : { hostname: creds.server.hostname, port: creds.server.port, path: url, agent: upstreamAgent };
        const up = https.request({ ...target, method: req.method, headers }, (upRes) => {
          seen.serverStatus = upRes.statusCode;
          // Only what the server recorded is what a later journal write is told apart against.
          if (journal && (upRes.statusCode ?? 500) < 300) lastJournal.set(journalKey, journal);
          sync(seen);
          if (kind === "reset-after") {
            // The server did the work; the client never hears of it.
            upRes.resume();
            upRes.on("end", () => {
              land();
              req.socket.destroy();
            });
            return;
          }
          const answer = () => {
            seen.answered = upRes.statusCode;
            sync(seen);
            res.writeHead(upRes.statusCode ?? 502, upRes.headers);
            if (!seen.watch) return void upRes.pipe(res);
            // Watches: pass events on line by line, counting them.
            let pending = "";
            upRes.on("data", (c: Buffer) => {
              if (res.destroyed) return;
              pending += c.toString("utf8");
              let nl: number;
              while ((nl = pending.indexOf("\n")) >= 0) {
                const line = pending.slice(0, nl + 1);
                pending = pending.slice(nl + 1);
                res.write(line);
                seen.eventsDelivered += 1;
                sync(seen);
                if (kind === "drop-watch-after-event") {
                  // Let the event reach the client, then break the connection while it still listens.
                  setTimeout(() => {
                    if (!req.socket.destroyed && !res.writableEnded) {
                      land();
                      req.socket.destroy();
                    }
                    up.destroy();
                  }, 50);
                  upRes.pause();
                  return;
                }
              }
            });
            upRes.on("end", () => {
              if (!res.destroyed) res.end(pending);
            });
          };
          if (kind === "hold-after") {
            land();
            onHeld(seen, answer);
          } else answer();
        });
        up.on("error", () => req.socket.destroy());
        res.on("close", () => up.destroy());
        up.end(body);
      };
      if (kind === "hold") {
        land();
        return onHeld(seen, forward);
      }
      forward();
    });
  });
  // Node closes a connection idle for 5 s (keepAliveTimeout), and a request the plugin sends on it
  // just then is reset before the proxy reads it: the plugin sends it again and logs both, the proxy
  // saw one, and the comparison of the two logs fails (a rerun of --wait-resize, under load, whose
  // waits leave a connection idle that long). kube-apiserver keeps idle connections far longer; so
  // does the proxy, for as long as any run through it lasts.
  server.keepAliveTimeout = 600_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const listening = (server.address() as AddressInfo).port;
  const original = readFileSync(upstreamKubeconfig, "utf8");
  const kubeconfig = join(tmpdir(), `appstorage-proxy-${listening}.kubeconfig`);
  writeFileSync(kubeconfig, original.replace(`server: ${creds.server.origin}`, `server: https://127.0.0.1:${listening}`), { mode: 0o600 });
  port.on("message", (m: ToWorker) => {
    if (m.type === "release") {
      releases.get(m.id)?.();
      releases.delete(m.id);
    } else if (m.type === "close") {
      server.closeAllConnections();
      upstreamAgent.destroy();
      kubeletAgent.destroy();
      server.close(() => post({ type: "closed" }));
    }
  });
  post({ type: "listening", kubeconfig });
}

/** The least time between a journal write and a renewal of it (the plugin waits 5 s; 1 s of slack for the request's way). */
export const renewalGapMs = 4000;

/** What a run of the plugin through the proxy did wrong, from the proxy's log (empty: nothing). */
export function writeDisciplineViolations(requests: SeenRequest[]): string[] {
  const problems: string[] = [];
  const reached = new Map<string, SeenRequest>();
  for (const r of requests) {
    if (!isWrite(r)) continue;
    // A write is identified by method, path and body: a retry sends the very same request.
    const key = `${r.method} ${r.path} ${r.bodyHash}`;
    const earlier = reached.get(key);
    if (earlier && r.reachedServer && earlier.serverStatus !== 429) problems.push(`write repeated: #${earlier.index} and #${r.index} ${r.signature} ${r.path}`);
    if (r.reachedServer) reached.set(key, r);
    // A delete the server did: the same create in that collection after it makes a new object, not a
    // repeat (--migrate-existing creates the StatefulSet again, from the same body, after each claim).
    if (r.method === "DELETE" && r.reachedServer && (r.serverStatus ?? 500) < 300) {
      const collection = `POST ${r.path.split("?")[0]!.replace(/\/[^/]+$/, "")} `;
      for (const k of [...reached.keys()]) if (k.startsWith(collection)) reached.delete(k);
    }
  }
  // A journal write that changes only its timestamps is a renewal; the plugin renews only after a
  // third of the lease without a write (5 s of 15). Sooner, it is the same write again.
  const previousJournal = new Map<string, SeenRequest>();
  for (const r of requests) {
    if (!r.journal) continue;
    const key = journalKeyOf(r.path, r.journal.secret);
    const previous = previousJournal.get(key);
    if (r.journal.kind === "renewal" && r.reachedServer && previous && r.at - previous.at < renewalGapMs)
      problems.push(`write repeated: journal #${previous.index} and #${r.index} record the same (step ${r.journal.step}), ${r.at - previous.at} ms apart, differing only by their timestamps`);
    // A write the server did not record (a fault, a 429) may be sent again: only recorded ones count.
    if (r.reachedServer && (r.serverStatus ?? 500) < 300) previousJournal.set(key, r);
  }
  for (const r of requests) {
    if (!isWrite(r) || !r.fault || !unknownOutcome.includes(r.fault)) continue;
    // The next request about the same kind of object must read it back, not write again (a
    // subresource's, such as an eviction, is read back through its object: pods/eviction by pods).
    const kind = (x: SeenRequest) => x.resource.split("/")[0];
    const next = requests.find((x) => x.index > r.index && kind(x) === kind(r));
    if (next && isWrite(next)) problems.push(`the unknown outcome of #${r.index} ${r.signature} (${r.fault}) was followed by a write (#${next.index} ${next.signature}) without a read`);
  }
  return problems;
}
