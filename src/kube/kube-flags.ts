// The connection flags as plain values: a types module of its own, so that the resolver
// (kubeconfig.ts) and the client (client.ts) both depend on data, not on each other.
/** kubectl's global flags, as values: where a command acts and as whom (see src/cli/flags.ts). */
export interface KubeFlags {
  kubeconfig?: string;
  context?: string;
  cluster?: string;
  user?: string;
  namespace?: string;
  server?: string;
  token?: string;
  /** --username and --password: basic authentication. */
  username?: string;
  password?: string;
  certificateAuthority?: string;
  clientCertificate?: string;
  clientKey?: string;
  insecureSkipTlsVerify?: boolean;
  tlsServerName?: string;
  /** --as, --as-group (repeatable), --as-uid: impersonation. */
  as?: string;
  asGroups?: string[];
  asUid?: string;
  /** --request-timeout in milliseconds, when given; 0 waits forever. Absent: 30 s (client.ts; completion 5 s). */
  requestTimeoutMs?: number;
  /** -v N: at 6 and up, one stderr line per request (method, URL, status, latency). */
  verbosity?: number;
}
