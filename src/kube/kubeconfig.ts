// Where a command acts and as whom, decided exactly as kubectl decides it: client-go's clientcmd
// (tools/clientcmd loader.go, client_config.go, merged_client_builder.go), not client-node,
// which merges differently (kubernetes-client/javascript#579).
//
// - Files: `--kubeconfig` is exactly that one file, which must exist. Otherwise the files of
//   $KUBECONFIG in order (duplicates dropped, missing ones skipped), or ~/.kube/config.
// - Merge: for every cluster, user and context, the FIRST file that names it wins, whole (a
//   later file's entry of the same name is ignored, even its fields the first one lacks); the
//   first non-empty `current-context` wins. A duplicate name inside one file is an error.
//   Relative paths (certificate-authority, client-certificate, client-key, token-file, an exec
//   command with a slash) are relative to the file that holds the entry.
// - Overrides: --context, then --cluster and --user replace the context's, --namespace, and
//   the cluster and user fields (--server, --certificate-authority, --insecure-skip-tls-verify,
//   --tls-server-name, --token, --client-certificate, --client-key, --as, --as-group,
//   --as-uid) replace the entry's, with clientcmd's special cases (a CA or insecure flag
//   replaces all three TLS fields; --server resets tls-server-name to the flag's).
// - In-cluster (a pod's service account) only when all that gives no server at all.
//
// Why not client-node's KubeConfig: it merges otherwise, and initialising it costs about 50 ms
// on every command. It is still used, loaded only then, for a user with an auth provider.
import { existsSync, readFileSync, statSync } from "node:fs";
import { isIPv6 } from "node:net";
import { delimiter, dirname, isAbsolute, join, resolve as resolvePath, sep } from "node:path";
// js-yaml: several times faster to start than the yaml package (~3 ms against ~12 ms).
import { load } from "js-yaml";
import { ConfigError } from "./config-error";
import type { KubeFlags } from "./kube-flags";

export const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

export interface ClusterInfo {
  server?: string;
  certificateAuthority?: string;
  certificateAuthorityData?: string;
  insecureSkipTlsVerify?: boolean;
  tlsServerName?: string;
  proxyUrl?: string;
}

export interface ExecConfig {
  command: string;
  args?: string[];
  env?: { name: string; value: string }[];
  apiVersion?: string;
  installHint?: string;
  provideClusterInfo?: boolean;
}

export interface AuthInfo {
  token?: string;
  tokenFile?: string;
  clientCertificate?: string;
  clientCertificateData?: string;
  clientKey?: string;
  clientKeyData?: string;
  username?: string;
  password?: string;
  as?: string;
  asGroups?: string[];
  asUid?: string;
  exec?: ExecConfig;
  authProvider?: { name: string; config?: Record<string, string> };
}

export interface ContextInfo {
  cluster?: string;
  user?: string;
  namespace?: string;
}

/** The merged kubeconfig (clientcmdapi.Config): maps by name and the current context. */
export interface RawConfig {
  clusters: Map<string, ClusterInfo>;
  users: Map<string, AuthInfo>;
  contexts: Map<string, ContextInfo>;
  currentContext: string;
}

/** Everything a client needs: where, as whom, and in which namespace. */
export interface ResolvedConfig {
  source: "kubeconfig" | "in-cluster";
  context: string;
  clusterName: string;
  userName: string;
  namespace: string;
  cluster: ClusterInfo & { server: string };
  user: AuthInfo;
}

export interface LoadEnvironment {
  env: Record<string, string | undefined>;
  /** The operating system, as Node names it (src/main.ts passes process.platform): where the home directory is. */
  platform: NodeJS.Platform;
  /** The service account folder of in-cluster configuration (tests may point it elsewhere). */
  serviceAccountDir?: string;
}

type Doc = Record<string, unknown>;

function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

function obj(v: unknown): Doc {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Doc) : {};
}

function stripUndefined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}

/** One named list of a file as a map; a name twice in one file is an error, as in client-go. */
function named<T>(doc: Doc, key: string, entryKey: string, file: string, read: (e: Doc) => T): Map<string, T> {
  const out = new Map<string, T>();
  const list = doc[key];
  if (list === undefined || list === null) return out;
  if (!Array.isArray(list)) throw new ConfigError(`cannot load kubeconfig "${file}": ${key} is not a list; fix the kubeconfig or pass another with --kubeconfig`);
  for (const e of list as unknown[]) {
    const name = typeof obj(e)["name"] === "string" ? (obj(e)["name"] as string) : "";
    if (out.has(name)) throw new ConfigError(`cannot load kubeconfig "${file}": duplicate name "${name}" in ${key}; remove one of them`);
    out.set(name, read(obj(obj(e)[entryKey])));
  }
  return out;
}

function absolute(path: string | undefined, base: string): string | undefined {
  return path && !isAbsolute(path) ? join(base, path) : path;
}

function readCluster(c: Doc, base: string): ClusterInfo {
  return stripUndefined({
    server: str(c["server"]),
    certificateAuthority: absolute(str(c["certificate-authority"]), base),
    certificateAuthorityData: str(c["certificate-authority-data"]),
    insecureSkipTlsVerify: c["insecure-skip-tls-verify"] === true ? true : undefined,
    tlsServerName: str(c["tls-server-name"]),
    proxyUrl: str(c["proxy-url"]),
  });
}

function readUser(u: Doc, base: string): AuthInfo {
  const exec = obj(u["exec"]);
  const provider = obj(u["auth-provider"]);
  const groups = Array.isArray(u["as-groups"]) ? (u["as-groups"] as unknown[]).map(String).filter(Boolean) : [];
  const command = str(exec["command"]);
  return stripUndefined({
    token: str(u["token"]),
    tokenFile: absolute(str(u["tokenFile"]) ?? str(u["token-file"]), base),
    clientCertificate: absolute(str(u["client-certificate"]), base),
    clientCertificateData: str(u["client-certificate-data"]),
    clientKey: absolute(str(u["client-key"]), base),
    clientKeyData: str(u["client-key-data"]),
    username: str(u["username"]),
    password: str(u["password"]),
    as: str(u["as"]),
    asGroups: groups.length ? groups : undefined,
    asUid: str(u["as-uid"]),
    exec: command
      ? stripUndefined({
          // client-go resolves the command against the file only when it names a path.
          command: command.includes(sep) ? absolute(command, base)! : command,
          args: Array.isArray(exec["args"]) ? (exec["args"] as unknown[]).map(String) : undefined,
          env: Array.isArray(exec["env"]) ? (exec["env"] as unknown[]).map((e) => ({ name: String(obj(e)["name"] ?? ""), value: String(obj(e)["value"] ?? "") })) : undefined,
          apiVersion: str(exec["apiVersion"]),
          installHint: str(exec["installHint"]),
          provideClusterInfo: exec["provideClusterInfo"] === true ? true : undefined,
        })
      : undefined,
    authProvider: str(provider["name"]) ? { name: provider["name"] as string, config: obj(provider["config"]) as Record<string, string> } : undefined,
  });
}

function readContext(c: Doc): ContextInfo {
  return stripUndefined({ cluster: str(c["cluster"]), user: str(c["user"]), namespace: str(c["namespace"]) });
}

/** One kubeconfig file (clientcmd.LoadFromFile); an empty file is an empty config. */
export function parseKubeconfig(text: string, file: string): RawConfig {
  let doc: unknown;
  try {
    doc = text.trim() === "" ? {} : load(text);
  } catch (e) {
    throw new ConfigError(`cannot load kubeconfig "${file}": ${(e as Error).message.split("\n")[0]}; fix the file or pass another with --kubeconfig`);
  }
  if (doc !== null && doc !== undefined && (typeof doc !== "object" || Array.isArray(doc))) {
    throw new ConfigError(`cannot load kubeconfig "${file}": not a kubeconfig; fix the file or pass another with --kubeconfig`);
  }
  const d = obj(doc);
  const base = dirname(resolvePath(file));
  return {
    clusters: named(d, "clusters", "cluster", file, (c) => readCluster(c, base)),
    users: named(d, "users", "user", file, (u) => readUser(u, base)),
    contexts: named(d, "contexts", "context", file, readContext),
    currentContext: str(d["current-context"]) ?? "",
  };
}

/** clientcmd's merge: the first file to name an entry wins, whole; the first current-context too. */
export function mergeKubeconfigs(configs: readonly RawConfig[]): RawConfig {
  const out: RawConfig = { clusters: new Map(), users: new Map(), contexts: new Map(), currentContext: "" };
  for (const c of configs) {
    for (const [k, v] of c.clusters) if (!out.clusters.has(k)) out.clusters.set(k, v);
    for (const [k, v] of c.users) if (!out.users.has(k)) out.users.set(k, v);
    for (const [k, v] of c.contexts) if (!out.contexts.has(k)) out.contexts.set(k, v);
    if (!out.currentContext && c.currentContext) out.currentContext = c.currentContext;
  }
  return out;
}

function homeDir(env: Record<string, string | undefined>, platform: NodeJS.Platform): string | undefined {
  if (platform !== "win32") return env["HOME"] || undefined;
  // client-go's homedir.HomeDir on Windows: the first of these that holds .kube/config, else that exists.
  const drive = env["HOMEDRIVE"] && env["HOMEPATH"] ? join(env["HOMEDRIVE"], env["HOMEPATH"]) : undefined;
  const candidates = [env["HOME"], drive, env["USERPROFILE"]].filter((d): d is string => !!d);
  return candidates.find((d) => existsSync(join(d, ".kube", "config"))) ?? candidates.find((d) => existsSync(d)) ?? candidates[0];
}

/** The files kubectl would read, in order: --kubeconfig alone, else $KUBECONFIG's, else ~/.kube/config. */
export function kubeconfigFiles(explicit: string | undefined, env: Record<string, string | undefined>, platform: NodeJS.Platform): string[] {
  if (explicit) return [explicit];
  const list = env["KUBECONFIG"];
  if (list) return list.split(delimiter).filter((f, i, all) => f !== "" && all.indexOf(f) === i);
  const home = homeDir(env, platform);
  return home ? [join(home, ".kube", "config")] : [];
}

/** Loads and merges the files; missing ones are skipped, except an explicit --kubeconfig. */
export function loadKubeconfig(explicit: string | undefined, env: Record<string, string | undefined>, platform: NodeJS.Platform): { config: RawConfig; loaded: string[] } {
  if (explicit && !existsSync(explicit)) throw new ConfigError(`kubeconfig "${explicit}" does not exist; pass --kubeconfig with an existing file`);
  const configs: RawConfig[] = [];
  const loaded: string[] = [];
  for (const file of kubeconfigFiles(explicit, env, platform)) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw new ConfigError(`cannot load kubeconfig "${file}": ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; check the file's permissions`);
    }
    configs.push(parseKubeconfig(text, file));
    loaded.push(file);
  }
  return { config: mergeKubeconfigs(configs), loaded };
}

/** Non-empty override values replace the entry's (clientcmd's merge skips zero values). */
function overlay<T extends object>(base: T, over: Partial<T>): T {
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) if (v !== undefined && v !== "" && v !== false && !(Array.isArray(v) && v.length === 0)) (out as Record<string, unknown>)[k] = v;
  return out;
}

function clusterOverrides(flags: KubeFlags): ClusterInfo {
  return stripUndefined({
    server: flags.server,
    certificateAuthority: flags.certificateAuthority ? resolvePath(flags.certificateAuthority) : undefined,
    insecureSkipTlsVerify: flags.insecureSkipTlsVerify || undefined,
    tlsServerName: flags.tlsServerName,
  });
}

function userOverrides(flags: KubeFlags): AuthInfo {
  return stripUndefined({
    token: flags.token,
    username: flags.username,
    password: flags.password,
    clientCertificate: flags.clientCertificate ? resolvePath(flags.clientCertificate) : undefined,
    clientKey: flags.clientKey ? resolvePath(flags.clientKey) : undefined,
    as: flags.as,
    asGroups: flags.asGroups,
    asUid: flags.asUid,
  });
}

/** DirectClientConfig.getCluster with clientcmd's special cases for the TLS overrides. */
function mergedCluster(entry: ClusterInfo | undefined, flags: KubeFlags): ClusterInfo {
  const merged = overlay(entry ?? {}, clusterOverrides(flags));
  if (flags.insecureSkipTlsVerify || flags.certificateAuthority) {
    // A CA or insecure flag replaces all three: the kubeconfig's CA data must not survive it.
    delete merged.certificateAuthorityData;
    delete merged.certificateAuthority;
    delete merged.insecureSkipTlsVerify;
    if (flags.certificateAuthority) merged.certificateAuthority = resolvePath(flags.certificateAuthority);
    if (flags.insecureSkipTlsVerify) merged.insecureSkipTlsVerify = true;
  }
  if (flags.tlsServerName || flags.server) {
    delete merged.tlsServerName;
    if (flags.tlsServerName) merged.tlsServerName = flags.tlsServerName;
  }
  return merged;
}

function mergedUser(entry: AuthInfo | undefined, flags: KubeFlags): AuthInfo {
  const merged = overlay(entry ?? {}, userOverrides(flags));
  // A --client-key (or certificate) flag replaces the entry's inline data too (getAuthInfo).
  if (flags.clientKey) delete merged.clientKeyData;
  if (flags.clientCertificate) delete merged.clientCertificateData;
  return merged;
}

/** inClusterClientConfig.Possible: the service host and port, and a token file. */
function inClusterPossible(e: LoadEnvironment): boolean {
  const dir = e.serviceAccountDir ?? serviceAccountDir;
  try {
    return !!e.env["KUBERNETES_SERVICE_HOST"] && !!e.env["KUBERNETES_SERVICE_PORT"] && statSync(join(dir, "token")).isFile();
  } catch {
    return false;
  }
}

/** The in-cluster namespace: POD_NAMESPACE, else the service account's namespace file, else default. */
function inClusterNamespace(e: LoadEnvironment): string {
  if (e.env["POD_NAMESPACE"]) return e.env["POD_NAMESPACE"];
  try {
    const ns = readFileSync(join(e.serviceAccountDir ?? serviceAccountDir, "namespace"), "utf8").trim();
    if (ns) return ns;
  } catch {
    // no namespace file
  }
  return "default";
}

function validate(cluster: ClusterInfo, user: AuthInfo, clusterName: string, userName: string): void {
  if (cluster.insecureSkipTlsVerify && (cluster.certificateAuthority || cluster.certificateAuthorityData)) {
    throw new ConfigError(`cluster "${clusterName}": specifying a root certificates file with the insecure flag is not allowed; drop --insecure-skip-tls-verify or the certificate authority`);
  }
  if (cluster.certificateAuthority && !existsSync(cluster.certificateAuthority)) {
    throw new ConfigError(`unable to read certificate-authority ${cluster.certificateAuthority} for ${clusterName}: no such file; fix the path`);
  }
  const hasCert = !!(user.clientCertificate || user.clientCertificateData);
  const hasKey = !!(user.clientKey || user.clientKeyData);
  if (hasCert !== hasKey) {
    throw new ConfigError(`user "${userName}": a client certificate needs its key (and a key its certificate); pass both --client-certificate and --client-key`);
  }
  for (const [what, path] of [
    ["client-cert", user.clientCertificate],
    ["client-key", user.clientKey],
  ] as const) {
    if (path && !existsSync(path)) throw new ConfigError(`unable to read ${what} ${path} for ${userName}: no such file; fix the path`);
  }
}

/**
 * DeferredLoadingClientConfig: the kubeconfig with the flags applied, or the pod's service
 * account when that gives no server. Throws ConfigError with what to do.
 */
export function resolveConfig(flags: KubeFlags, e: LoadEnvironment): ResolvedConfig {
  const { config } = loadKubeconfig(flags.kubeconfig, e.env, e.platform);
  const contextName = flags.context ?? config.currentContext;
  const contextEntry = config.contexts.get(contextName);
  if (flags.context && !contextEntry) throw new ConfigError(`context "${flags.context}" does not exist in the kubeconfig; list contexts with: kubectl config get-contexts`);
  if (!flags.context && contextName && !contextEntry) {
    throw new ConfigError(`the kubeconfig's current-context "${contextName}" does not exist; choose one with --context or kubectl config use-context`);
  }
  const context = overlay(contextEntry ?? {}, stripUndefined({ cluster: flags.cluster, user: flags.user, namespace: flags.namespace }));
  const clusterName = context.cluster ?? "";
  const userName = context.user ?? "";
  if (flags.cluster && !config.clusters.has(flags.cluster)) throw new ConfigError(`cluster "${flags.cluster}" does not exist in the kubeconfig; list clusters with: kubectl config get-clusters`);
  if (flags.user && !config.users.has(flags.user)) throw new ConfigError(`user "${flags.user}" does not exist in the kubeconfig; list users with: kubectl config get-users`);
  const cluster = mergedCluster(config.clusters.get(clusterName), flags);
  const user = mergedUser(config.users.get(userName), flags);

  if ((user.asGroups?.length || user.asUid) && !user.as) {
    throw new ConfigError(`requesting uid, groups or user-extra for ${userName || "the user"} without impersonating a user (as kubectl refuses it): add --as USER, or drop --as-group and --as-uid`);
  }
  if (!cluster.server) {
    if (inClusterPossible(e)) {
      // kubectl uses the pod's service account only while the flags leave client-go's default
      // config unchanged: --as or a non-zero --request-timeout make it fall back to
      // http://localhost:8080 instead. Refuse rather than act anywhere else.
      const blocking = [flags.as ? "--as" : "", flags.requestTimeoutMs ? "--request-timeout" : ""].filter(Boolean);
      if (blocking.length) {
        throw new ConfigError(
          `with ${blocking.join(" and ")} and no kubeconfig, kubectl does not use the pod's service account (it falls back to http://localhost:8080); drop ${blocking.join(" and ")}, or pass --server, --token and --certificate-authority`,
        );
      }
      return inCluster(flags, e);
    }
    throw new ConfigError(
      config.clusters.size || config.contexts.size
        ? `no server for context "${contextName}" (cluster "${clusterName}"); pass --server, --context or --cluster, or fix the kubeconfig`
        : "no kubeconfig found (neither --kubeconfig, $KUBECONFIG nor ~/.kube/config) and not in a cluster: pass --kubeconfig, set KUBECONFIG, or pass --server",
    );
  }
  validate(cluster, user, clusterName, userName);
  let namespace = context.namespace ?? "default";
  // Without a namespace from the flags or the context, a pod's own namespace (DeferredLoadingClientConfig.Namespace).
  if (!context.namespace && inClusterPossible(e)) namespace = inClusterNamespace(e);
  return { source: "kubeconfig", context: contextName, clusterName, userName, namespace, cluster: { ...cluster, server: cluster.server }, user };
}

/**
 * rest.InClusterConfig with the only flags clientcmd's inClusterClientConfig lets through:
 * server, token, CA (and the namespace). As in kubectl, impersonation flags do not apply here.
 */
function inCluster(flags: KubeFlags, e: LoadEnvironment): ResolvedConfig {
  const dir = e.serviceAccountDir ?? serviceAccountDir;
  const host = e.env["KUBERNETES_SERVICE_HOST"]!;
  const port = e.env["KUBERNETES_SERVICE_PORT"]!;
  const ca = join(dir, "ca.crt");
  const cluster: ClusterInfo & { server: string } = {
    server: flags.server ?? `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
    ...(flags.certificateAuthority ? { certificateAuthority: resolvePath(flags.certificateAuthority) } : existsSync(ca) ? { certificateAuthority: ca } : {}),
  };
  const user: AuthInfo = flags.token ? { token: flags.token } : { tokenFile: join(dir, "token") };
  return { source: "in-cluster", context: "", clusterName: "", userName: "", namespace: flags.namespace ?? inClusterNamespace(e), cluster, user };
}
