// The kubeconfig files as clientcmd's loader (loader.go) reads them: which files, each parsed, and
// their merge into one config. Apart from resolving the context, cluster and user from it and the flags
// (./kubeconfig.ts): shell completion lists the merged names and needs nothing else.
//
// - Files: `--kubeconfig` is exactly that one file, which must exist. Otherwise the files of
//   $KUBECONFIG in order (duplicates dropped, missing ones skipped), or ~/.kube/config.
// - Merge: for every cluster, user and context, the FIRST file that names it wins, whole (a
//   later file's entry of the same name is ignored, even its fields the first one lacks); the
//   first non-empty `current-context` wins. A duplicate name inside one file is an error.
//   Relative paths (certificate-authority, client-certificate, client-key, token-file, an exec
//   command with a slash) are relative to the file that holds the entry.
import { existsSync, readFileSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, resolve as resolvePath, sep } from "node:path";
// js-yaml: several times faster to start than the yaml package (~3 ms against ~12 ms).
import { load } from "js-yaml";
import { ConfigError } from "./config-error";

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

type Doc = Record<string, unknown>;

function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

function obj(v: unknown): Doc {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Doc) : {};
}

export function stripUndefined<T extends object>(o: T): T {
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
