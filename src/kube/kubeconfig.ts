// Kubeconfig loading and credentials, as @kubernetes/client-node's KubeConfig does them, for the
// part of its interface that client.ts uses. Why not client-node itself for everything:
// initialising it (and the libraries it imports: node-fetch, whatwg-url's Unicode tables, ws,
// openid-client, jsonpath, proxy agents) costs about 50 ms on every command, which is a large
// share of a `show` that kubectl answers in about 100 ms. Client certificates, bearer tokens,
// token files and basic auth, which is what local clusters, kubeadm, kind, minikube and k3s
// write, are handled here. A user with an exec plugin or an auth provider (cloud clusters,
// OIDC, in-cluster service accounts) is handed to client-node's KubeConfig, loaded only then,
// with the same parsed configuration (those users pay for starting a plugin process anyway).
//
// Loading follows client-node 1.4 (config.js, config_types.js): the same fields, the same
// errors for invalid entries, $KUBECONFIG merging, ~/.kube/config, in-cluster, then the
// http://localhost:8080 fallback that client.ts recognises as "no kubeconfig".
import { spawnSync } from "node:child_process";
import { accessSync, constants, readFileSync } from "node:fs";
import type { RequestOptions } from "node:https";
import { isIPv6 } from "node:net";
import { delimiter, dirname, isAbsolute, join } from "node:path";
import type { Cluster, Context, KubeConfig as ClientNodeKubeConfig, User } from "@kubernetes/client-node";
// js-yaml, as client-node reads kubeconfigs with it: the same documents give the same values.
// (It also starts several times faster than the yaml package's parser, ~3 ms against ~12 ms.)
import { load } from "js-yaml";

const serviceAccount = "/var/run/secrets/kubernetes.io/serviceaccount";

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type Entry = Record<string, unknown> & { name?: unknown };

function exists(path: string, mode?: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

function list(value: unknown): Entry[] {
  return Array.isArray(value) ? (value as Entry[]) : [];
}

function field<T = unknown>(obj: unknown, key: string): T | undefined {
  return obj !== null && typeof obj === "object" ? ((obj as Record<string, unknown>)[key] as T | undefined) : undefined;
}

function clusters(entries: unknown): Cluster[] {
  return list(entries).map((e, i) => {
    if (!e?.name) throw new Error(`clusters[${i}].name is missing`);
    const c = field(e, "cluster");
    if (!c) throw new Error(`clusters[${i}].cluster is missing`);
    const server = field<string>(c, "server");
    if (!server) throw new Error(`clusters[${i}].cluster.server is missing`);
    return {
      caData: field(c, "certificate-authority-data"),
      caFile: field(c, "certificate-authority"),
      name: e.name as string,
      server: String(server).replace(/\/$/, ""),
      skipTLSVerify: field(c, "insecure-skip-tls-verify") === true,
      tlsServerName: field(c, "tls-server-name"),
      proxyUrl: field(c, "proxy-url"),
    } as Cluster;
  });
}

function users(entries: unknown): User[] {
  return list(entries).map((e, i) => {
    if (!e?.name) throw new Error(`users[${i}].name is missing`);
    const u = field(e, "user");
    const tokenFile = field<string>(u, "token-file");
    return {
      authProvider: u ? field(u, "auth-provider") : null,
      certData: u ? field(u, "client-certificate-data") : null,
      certFile: u ? field(u, "client-certificate") : null,
      exec: u ? field(u, "exec") : null,
      keyData: u ? field(u, "client-key-data") : null,
      keyFile: u ? field(u, "client-key") : null,
      name: e.name as string,
      token: field(u, "token") || (tokenFile ? readFileSync(tokenFile).toString() : undefined),
      password: u ? field(u, "password") : null,
      username: u ? field(u, "username") : null,
      impersonateUser: u ? field(u, "as") : null,
    } as User;
  });
}

function contexts(entries: unknown): Context[] {
  return list(entries).map((e, i) => {
    if (!e?.name) throw new Error(`contexts[${i}].name is missing`);
    const c = field(e, "context");
    if (!c) throw new Error(`contexts[${i}].context is missing`);
    if (!field(c, "cluster")) throw new Error(`contexts[${i}].context.cluster is missing`);
    return { cluster: field(c, "cluster"), name: e.name as string, user: field(c, "user") || undefined, namespace: field(c, "namespace") || undefined } as Context;
  });
}

function fileOrData(file: string | undefined | null, data: string | undefined | null): Buffer | undefined {
  if (file) return readFileSync(file);
  if (data) return Buffer.from(data, "base64");
  return undefined;
}

/** client-node's findHomeDir: $HOME when it exists; on Windows, the Go client's order. */
function homeDir(): string | undefined {
  const env = process.env;
  if (process.platform !== "win32") return env["HOME"] && exists(env["HOME"]) ? env["HOME"] : undefined;
  const drive = env["HOMEDRIVE"] && env["HOMEPATH"] ? join(env["HOMEDRIVE"], env["HOMEPATH"]) : "";
  const unique = (xs: string[]) => xs.filter((x, i) => x && xs.indexOf(x) === i);
  const favourDrive = unique([env["HOME"] ?? "", drive, env["USERPROFILE"] ?? ""]);
  const favourProfile = unique([env["HOME"] ?? "", env["USERPROFILE"] ?? "", drive]);
  return (
    favourDrive.find((d) => exists(join(d, ".kube", "config"))) ??
    favourProfile.find((d) => exists(d, constants.W_OK)) ??
    favourProfile.find((d) => exists(d)) ??
    favourProfile[0]
  );
}

export class KubeConfig {
  private clusters: Cluster[] = [];
  private users: User[] = [];
  private contexts: Context[] = [];
  private currentContext = "";
  /** client-node's KubeConfig for users this module does not handle, made on first use. */
  private delegate?: Promise<ClientNodeKubeConfig>;

  getContexts(): Context[] {
    return this.contexts;
  }

  getCurrentContext(): string {
    return this.currentContext;
  }

  setCurrentContext(name: string): void {
    this.currentContext = name;
  }

  getContextObject(name: string): Context | null {
    return this.contexts.find((c) => c.name === name) ?? null;
  }

  getCurrentCluster(): Cluster | null {
    const context = this.getContextObject(this.currentContext);
    return (context && this.clusters.find((c) => c.name === context.cluster)) ?? null;
  }

  getCurrentUser(): User | null {
    const context = this.getContextObject(this.currentContext);
    return (context && this.users.find((u) => u.name === context.user)) ?? null;
  }

  /** Throws ENOENT for a missing file, a TypeError for an empty one, an Error for an invalid entry. */
  loadFromFile(file: string): void {
    this.loadFromString(readFileSync(file, "utf8"));
    // Relative certificate paths are relative to the kubeconfig, as kubectl reads them.
    const root = dirname(file);
    const absolute = (f: string) => (isAbsolute(f) ? f : join(root, f));
    for (const c of this.clusters as Mutable<Cluster>[]) if (c.caFile) c.caFile = absolute(c.caFile);
    for (const u of this.users as Mutable<User>[]) {
      if (u.certFile) u.certFile = absolute(u.certFile);
      if (u.keyFile) u.keyFile = absolute(u.keyFile);
    }
  }

  loadFromString(text: string): void {
    const doc: unknown = load(text);
    if (doc === null || doc === undefined) throw new TypeError("the kubeconfig is empty");
    this.clusters = clusters(field(doc, "clusters"));
    this.contexts = contexts(field(doc, "contexts"));
    this.users = users(field(doc, "users"));
    this.currentContext = field(doc, "current-context") ?? "";
  }

  /** $KUBECONFIG (its files merged), ~/.kube/config, in-cluster, or nothing. */
  loadFromDefault(): void {
    const files = (process.env["KUBECONFIG"] ?? "").split(delimiter).filter(Boolean);
    if (files.length) {
      this.loadFromFile(files[0]!);
      for (const file of files.slice(1)) {
        const next = new KubeConfig();
        next.loadFromFile(file);
        this.merge(next);
      }
      return;
    }
    const home = homeDir();
    if (home && exists(join(home, ".kube", "config"))) {
      this.loadFromFile(join(home, ".kube", "config"));
      return;
    }
    if (process.platform === "win32" && this.loadFromWsl()) return;
    if (exists(`${serviceAccount}/token`)) {
      this.loadInCluster();
      return;
    }
    this.clusters = [{ name: "cluster", server: "http://localhost:8080" } as Cluster];
    this.users = [{ name: "user" }];
    this.currentContext = "loaded-context";
    this.contexts = [{ cluster: "cluster", user: "user", name: "loaded-context" }];
  }

  /** Sets the TLS options and credentials of the current context on opts, as client-node does. */
  async applyToHTTPSOptions(opts: RequestOptions): Promise<void> {
    const user = this.getCurrentUser();
    if (user && (user.exec || user.authProvider)) {
      const full = await this.clientNode();
      full.setCurrentContext(this.currentContext);
      return full.applyToHTTPSOptions(opts);
    }
    const cluster = this.getCurrentCluster();
    if (cluster?.skipTLSVerify) opts.rejectUnauthorized = false;
    if (cluster?.tlsServerName) opts.servername = cluster.tlsServerName;
    const ca = cluster ? fileOrData(cluster.caFile, cluster.caData) : undefined;
    if (ca) opts.ca = ca;
    if (!user) return;
    const cert = fileOrData(user.certFile, user.certData);
    if (cert) opts.cert = cert;
    const key = fileOrData(user.keyFile, user.keyData);
    if (key) opts.key = key;
    const headers = (opts.headers ??= {}) as Record<string, string>;
    if (user.impersonateUser) headers["Impersonate-User"] = user.impersonateUser;
    if (user.token) headers["Authorization"] = `Bearer ${user.token}`;
    if (user.username) opts.auth = `${user.username}:${user.password}`;
  }

  private clientNode(): Promise<ClientNodeKubeConfig> {
    this.delegate ??= Promise.resolve().then(() => {
      // require(), not import(): the tests run the sources as CommonJS, where import() of a .ts
      // file fails; in the bundle both are the same lazy initialisation of the module.
      const { KubeConfig: Full } = require("./kubeconfig-client-node") as typeof import("./kubeconfig-client-node");
      const kc = new Full();
      kc.loadFromOptions({ clusters: this.clusters, users: this.users, contexts: this.contexts, currentContext: this.currentContext });
      return kc;
    });
    return this.delegate;
  }

  private merge(other: KubeConfig): void {
    const add = <T extends { name: string }>(into: T[], from: T[], what: string) => {
      for (const x of from) {
        if (into.some((y) => y.name === x.name)) throw new Error(`Duplicate ${what}: ${x.name}`);
        into.push(x);
      }
    };
    // client-node lets a later file's current context win (kubectl keeps the first one's).
    if (other.currentContext) this.currentContext = other.currentContext;
    add(this.clusters, other.clusters, "cluster");
    add(this.users, other.users, "user");
    add(this.contexts, other.contexts, "context");
  }

  /** Windows without a kubeconfig: the one of the WSL distribution, as client-node looks for it. */
  private loadFromWsl(): boolean {
    try {
      const env = spawnSync("wsl.exe", ["bash", "-c", "printenv KUBECONFIG"]);
      if (env.status === 0 && env.stdout.length > 0) {
        const r = spawnSync("wsl.exe", ["cat", env.stdout.toString("utf8")]);
        if (r.status === 0) {
          this.loadFromString(r.stdout.toString("utf8"));
          return true;
        }
      }
    } catch {
      // no WSL: go on
    }
    try {
      const r = spawnSync("wsl.exe", ["cat", "~/.kube/config"]);
      if (r.status === 0) {
        this.loadFromString(r.stdout.toString("utf8"));
        return true;
      }
    } catch {
      // no WSL: go on
    }
    return false;
  }

  /** A pod's service account; its token file is an auth provider, so client-node reads (and re-reads) it. */
  private loadInCluster(): void {
    const host = process.env["KUBERNETES_SERVICE_HOST"] ?? "";
    const port = process.env["KUBERNETES_SERVICE_PORT"] ?? "";
    const scheme = ["80", "8080", "8001"].includes(port) ? "http" : "https";
    this.clusters = [{ name: "inCluster", caFile: `${serviceAccount}/ca.crt`, server: `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`, skipTLSVerify: false }];
    this.users = [{ name: "inClusterUser", authProvider: { name: "tokenFile", config: { tokenFile: `${serviceAccount}/token` } } }];
    const namespaceFile = `${serviceAccount}/namespace`;
    const namespace = exists(namespaceFile) ? readFileSync(namespaceFile, "utf8") : undefined;
    this.contexts = [{ cluster: "inCluster", name: "inClusterContext", user: "inClusterUser", ...(namespace ? { namespace } : {}) }];
    this.currentContext = "inClusterContext";
  }
}
