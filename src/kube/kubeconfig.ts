// Where a command acts and as whom, decided exactly as kubectl decides it: client-go's clientcmd
// (tools/clientcmd client_config.go, merged_client_builder.go; loader.go is ./kubeconfig-loader.ts),
// not client-node, which merges differently (kubernetes-client/javascript#579).
//
// - Files and merge: ./kubeconfig-loader.ts.
// - Overrides: --context, then --cluster and --user replace the context's, --namespace, and
//   the cluster and user fields (--server, --certificate-authority, --insecure-skip-tls-verify,
//   --tls-server-name, --token, --username, --password, --client-certificate, --client-key,
//   --as, --as-group, --as-uid) replace the entry's, with clientcmd's special cases (a CA or
//   insecure flag replaces all three TLS fields; --server resets tls-server-name to the flag's).
// - In-cluster (a pod's service account) only when all that gives no server at all.
//
// Why not client-node's KubeConfig: it merges otherwise, and initialising it costs about 50 ms
// on every command. It is still used, loaded only then, for a user with an auth provider.
import { existsSync, readFileSync, statSync } from "node:fs";
import { isIPv6 } from "node:net";
import { join, resolve as resolvePath } from "node:path";
import { ConfigError } from "./config-error";
import type { KubeFlags } from "./kube-flags";
import { type AuthInfo, type ClusterInfo, loadKubeconfig, stripUndefined } from "./kubeconfig-loader";

export const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

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
