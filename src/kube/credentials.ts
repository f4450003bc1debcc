// The credentials a request carries, fresh for every request as client-go keeps them fresh:
// - a token file is re-read when it changes (a projected service-account token is rotated);
// - an exec credential plugin is run again when its credential expires
//   (status.expirationTimestamp) or after the server answered 401, never in parallel;
// - an auth provider (gcp, azure, oidc) is handed to client-node's KubeConfig, loaded only then.
// Nothing here prints a credential.
import { spawn } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import type { ResolvedConfig } from "./kubeconfig";
import type { AuthInfo, ClusterInfo } from "./kubeconfig-loader";
import { ConfigError } from "./config-error";

export interface RequestCredentials {
  headers: Record<string, string | string[]>;
  /** Client certificate and key (PEM) when the user has them; the agent is keyed on them. */
  cert?: string | Buffer;
  key?: string | Buffer;
}

interface ExecStatus {
  token?: string;
  clientCertificateData?: string;
  clientKeyData?: string;
  expirationTimestamp?: string;
}

function fileOrData(file: string | undefined, data: string | undefined): Buffer | undefined {
  if (file) return readFileSync(file);
  if (data) return Buffer.from(data, "base64");
  return undefined;
}

export class Credentials {
  private tokenFromFile?: { token: string; mtimeMs: number; size: number };
  private execCached?: { status: ExecStatus; expiresAt: number };
  private execQueue: Promise<unknown> = Promise.resolve();
  /** How many times the exec plugin ran (tests and -v read it). */
  execRuns = 0;
  private readonly staticCert?: Buffer;
  private readonly staticKey?: Buffer;
  private delegate?: Promise<import("@kubernetes/client-node").KubeConfig>;

  constructor(
    private readonly config: ResolvedConfig,
    private readonly env: Record<string, string | undefined>,
    private readonly now: () => number = Date.now,
  ) {
    const u = config.user;
    this.staticCert = fileOrData(u.clientCertificate, u.clientCertificateData);
    this.staticKey = fileOrData(u.clientKey, u.clientKeyData);
  }

  get user(): AuthInfo {
    return this.config.user;
  }

  /** The server said 401: the next request asks the exec plugin again (client-go does the same). */
  invalidate(): void {
    this.execCached = undefined;
  }

  async forRequest(): Promise<RequestCredentials> {
    const u = this.config.user;
    const headers: Record<string, string | string[]> = {};
    if (u.as) headers["Impersonate-User"] = u.as;
    if (u.as && u.asGroups?.length) headers["Impersonate-Group"] = u.asGroups;
    if (u.as && u.asUid) headers["Impersonate-Uid"] = u.asUid;
    const out: RequestCredentials = { headers };
    if (this.staticCert && this.staticKey) {
      out.cert = this.staticCert;
      out.key = this.staticKey;
    }
    // clientcmd: a token (flag or entry) first, else the token file, else a user name and password.
    const token = u.token ?? (u.tokenFile ? this.readTokenFile(u.tokenFile) : undefined);
    if (token) headers["Authorization"] = `Bearer ${token}`;
    else if (u.username || u.password) headers["Authorization"] = `Basic ${Buffer.from(`${u.username ?? ""}:${u.password ?? ""}`).toString("base64")}`;
    if (u.exec && !headers["Authorization"]) {
      const status = await this.execCredential();
      if (status.token) headers["Authorization"] = `Bearer ${status.token}`;
      if (status.clientCertificateData && status.clientKeyData) {
        out.cert = status.clientCertificateData;
        out.key = status.clientKeyData;
      }
    }
    if (u.authProvider && !headers["Authorization"]) {
      const auth = await this.authProviderHeader();
      if (auth) headers["Authorization"] = auth;
    }
    return out;
  }

  /** Re-read only when the file changed (mtime or size), as a rotated token changes it. */
  private readTokenFile(path: string): string {
    let st;
    try {
      st = statSync(path);
    } catch (e) {
      throw new ConfigError(`cannot read token file ${path} (${(e as NodeJS.ErrnoException).code}); fix the path in the kubeconfig`);
    }
    const cached = this.tokenFromFile;
    if (cached && cached.mtimeMs === st.mtimeMs && cached.size === st.size) return cached.token;
    const token = readFileSync(path, "utf8").trim();
    this.tokenFromFile = { token, mtimeMs: st.mtimeMs, size: st.size };
    return token;
  }

  /**
   * client-go's exec authenticator under its mutex: one run at a time, and each request checks
   * the expiry again once the run before it ended (parallel requests share a valid credential;
   * a credential that is already expired is asked for again, as client-go does).
   */
  private execCredential(): Promise<ExecStatus> {
    const next = this.execQueue.then(() => {
      const cached = this.execCached;
      // Go: expired once now is after expirationTimestamp.
      if (cached && this.now() <= cached.expiresAt) return cached.status;
      return this.runExec();
    });
    this.execQueue = next.catch(() => undefined);
    return next;
  }

  private async runExec(): Promise<ExecStatus> {
    const exec = this.config.user.exec!;
    const apiVersion = exec.apiVersion ?? "client.authentication.k8s.io/v1";
    const cluster: ClusterInfo = this.config.cluster;
    const info = {
      apiVersion,
      kind: "ExecCredential",
      spec: {
        interactive: false,
        ...(exec.provideClusterInfo
          ? {
              cluster: {
                server: cluster.server,
                ...(cluster.tlsServerName ? { "tls-server-name": cluster.tlsServerName } : {}),
                ...(cluster.insecureSkipTlsVerify ? { "insecure-skip-tls-verify": true } : {}),
                ...(cluster.certificateAuthorityData || cluster.certificateAuthority
                  ? { "certificate-authority-data": (fileOrData(cluster.certificateAuthority, cluster.certificateAuthorityData) ?? Buffer.alloc(0)).toString("base64") }
                  : {}),
                ...(cluster.proxyUrl ? { "proxy-url": cluster.proxyUrl } : {}),
              },
            }
          : {}),
      },
    };
    const env = { ...this.env, ...Object.fromEntries((exec.env ?? []).map((e) => [e.name, e.value])), KUBERNETES_EXEC_INFO: JSON.stringify(info) };
    this.execRuns++;
    const { code, stdout, stderr, error } = await new Promise<{ code: number | null; stdout: string; stderr: string; error?: NodeJS.ErrnoException }>((resolve) => {
      const child = spawn(exec.command, exec.args ?? [], { env, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      let err = "";
      child.stdout.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr.on("data", (d: Buffer) => (err += d.toString()));
      child.on("error", (e) => resolve({ code: null, stdout: out, stderr: err, error: e }));
      child.on("close", (c) => resolve({ code: c, stdout: out, stderr: err }));
    });
    const hint = exec.installHint ? ` (${exec.installHint.split("\n")[0]})` : "";
    if (error) throw new ConfigError(`exec credential plugin "${exec.command}" could not be started (${error.code ?? error.message})${hint}; install it or fix the kubeconfig`);
    if (code !== 0) throw new ConfigError(`exec credential plugin "${exec.command}" failed with exit code ${code}: ${stderr.trim().split("\n")[0] ?? ""}`);
    let status: ExecStatus;
    try {
      const parsed = JSON.parse(stdout) as { apiVersion?: string; status?: ExecStatus };
      if (parsed.apiVersion && parsed.apiVersion !== apiVersion) throw new Error(`it answered ${parsed.apiVersion}, the kubeconfig asks for ${apiVersion}`);
      status = parsed.status ?? {};
    } catch (e) {
      throw new ConfigError(`exec credential plugin "${exec.command}" did not print an ExecCredential: ${(e as Error).message.split("\n")[0]}`);
    }
    if (!status.token && !(status.clientCertificateData && status.clientKeyData)) {
      throw new ConfigError(`exec credential plugin "${exec.command}" gave neither a token nor a client certificate and key`);
    }
    const expiresAt = status.expirationTimestamp ? Date.parse(status.expirationTimestamp) : Number.POSITIVE_INFINITY;
    this.execCached = { status, expiresAt: Number.isNaN(expiresAt) ? Number.POSITIVE_INFINITY : expiresAt };
    return status;
  }

  private async authProviderHeader(): Promise<string | undefined> {
    this.delegate ??= Promise.resolve().then(() => {
      // require(), not import(): the tests run the sources as CommonJS, where import() of a .ts
      // file fails; in the bundle both are the same lazy initialisation of the module.
      const { KubeConfig } = require("./kubeconfig-client-node") as typeof import("./kubeconfig-client-node");
      const kc = new KubeConfig();
      const c = this.config.cluster;
      kc.loadFromOptions({
        clusters: [
          {
            name: "c",
            server: c.server,
            skipTLSVerify: c.insecureSkipTlsVerify === true,
            ...(c.certificateAuthorityData ? { caData: c.certificateAuthorityData } : {}),
            ...(c.certificateAuthority ? { caFile: c.certificateAuthority } : {}),
          },
        ],
        users: [{ name: "u", authProvider: this.config.user.authProvider }],
        contexts: [{ name: "x", cluster: "c", user: "u" }],
        currentContext: "x",
      });
      return kc;
    });
    const kc = await this.delegate;
    const opts: { headers?: Record<string, string> } = { headers: {} };
    await kc.applyToHTTPSOptions(opts as never);
    return opts.headers?.["Authorization"] ?? opts.headers?.["authorization"];
  }
}
