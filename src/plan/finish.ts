// The command that finishes an interrupted run: the same command, with every flag of the run that
// finishing it needs. The one list of those flags is here (finishFlags); a run records its own
// values in its journal (Journal.finish, made by runFinish from the command line), and every
// "finish it with" line (a stop's, show's, a refusal's) is made from the journal by finishCommand.
// Pure.
import type { ExistingClaimsOptions } from "./existing-claims-types";
import { defaultCopyImage } from "./migration-types";
import type { Journal } from "./types";

/** --timeout's default (src/cli/flags.ts, "5m"): a run that kept it needs no --timeout to be finished. */
export const defaultTimeoutMs = 5 * 60_000;

/** What a run was given that its finish command repeats (a KubeFlags is a `connection`, structurally). */
export interface RunInputs {
  /** -f FILE, each as an absolute path; "-" (standard input) cannot be given again. */
  filenames?: readonly string[];
  timeoutMs?: number;
  connection: {
    kubeconfig?: string;
    context?: string;
    cluster?: string;
    user?: string;
    server?: string;
    certificateAuthority?: string;
    clientCertificate?: string;
    clientKey?: string;
    insecureSkipTlsVerify?: boolean;
    tlsServerName?: string;
    as?: string;
    asGroups?: readonly string[];
    asUid?: string;
    requestTimeoutMs?: number;
    token?: string;
    username?: string;
    password?: string;
  };
}

const seconds = (ms: number) => `${ms / 1000}s`;

/**
 * Every flag a finish command repeats besides the StatefulSet, its directives, the existing-claim
 * flags and -n, in the order it prints them (--copy-image comes from the journal's own move). A
 * credential is never recorded: its flag is repeated with a placeholder the user fills in.
 */
export const finishFlags: readonly { flag: string; of: (r: RunInputs) => string | readonly string[] | boolean | undefined; secret?: boolean }[] = [
  { flag: "--timeout", of: (r) => (r.timeoutMs !== undefined && r.timeoutMs !== defaultTimeoutMs ? seconds(r.timeoutMs) : undefined) },
  { flag: "--kubeconfig", of: (r) => r.connection.kubeconfig },
  { flag: "--context", of: (r) => r.connection.context },
  { flag: "--cluster", of: (r) => r.connection.cluster },
  { flag: "--user", of: (r) => r.connection.user },
  { flag: "--server", of: (r) => r.connection.server },
  { flag: "--certificate-authority", of: (r) => r.connection.certificateAuthority },
  { flag: "--client-certificate", of: (r) => r.connection.clientCertificate },
  { flag: "--client-key", of: (r) => r.connection.clientKey },
  { flag: "--insecure-skip-tls-verify", of: (r) => r.connection.insecureSkipTlsVerify === true },
  { flag: "--tls-server-name", of: (r) => r.connection.tlsServerName },
  { flag: "--as", of: (r) => r.connection.as },
  { flag: "--as-group", of: (r) => r.connection.asGroups },
  { flag: "--as-uid", of: (r) => r.connection.asUid },
  { flag: "--request-timeout", of: (r) => (r.connection.requestTimeoutMs !== undefined ? seconds(r.connection.requestTimeoutMs) : undefined) },
  { flag: "--token", of: (r) => r.connection.token, secret: true },
  { flag: "--username", of: (r) => r.connection.username },
  { flag: "--password", of: (r) => r.connection.password, secret: true },
];

/** A word as a shell reads it back: quoted when it holds anything but plain characters. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'"'"'`)}'`;
}

/** What a run records in its journal of its own flags: the -f files (when they can be read again) and the other flags' words. */
export function runFinish(r: RunInputs): NonNullable<Journal["finish"]> {
  const flags: string[] = [];
  for (const f of finishFlags) {
    const value = f.of(r);
    if (value === undefined || value === false || value === "") continue;
    if (value === true) flags.push(f.flag);
    else for (const v of typeof value === "string" ? [value] : value) flags.push(f.flag, f.secret ? `<${f.flag.slice(2).toUpperCase()}>` : v);
  }
  const files = r.filenames?.length && !r.filenames.includes("-") ? { filenames: [...r.filenames] } : {};
  return { ...files, flags };
}

/** The flags of a run that was changing existing claims. */
export function existingClaimsFlags(o: ExistingClaimsOptions): string {
  return [o.resize && "--resize-existing", o.vac && "--vac-existing", o.migrate && "--migrate-existing", o.relabel && "--relabel-existing"].filter(Boolean).join(" ");
}

/**
 * The command that finishes an interrupted change: its set (set -f with the same files, when it
 * was one) or undo again, with the flags that change claims, the copy image its moves use, and
 * the flags its run recorded.
 */
export function finishCommand(journal: Journal): string {
  const finish = journal.finish;
  const tail = [...(journal.migration && journal.migration.copyImage !== defaultCopyImage ? ["--copy-image", journal.migration.copyImage] : []), ...(finish?.flags ?? []), "-n", journal.namespace];
  if (journal.command === "undo") return ["kubectl appstorage undo", journal.name, ...tail.map(shellWord)].join(" ");
  const existing = journal.existing ? existingClaimsFlags(journal.existing.options) : journal.migration ? "--migrate-existing" : "";
  const line = (what: string[]) => ["kubectl appstorage set", ...what, ...(existing ? [existing] : []), ...tail.map(shellWord)].join(" ");
  if (finish?.filenames) return line(finish.filenames.flatMap((f) => ["-f", shellWord(f)]));
  // Templates added or removed come only from a manifest: the same one finishes the change (one
  // read from standard input cannot be named again).
  if (journal.roll) return `${line(["-f", "MANIFEST"])} (MANIFEST: the one that ${journal.request.join(" ")} came from)`;
  // The request is the change as the command line says it (a directive, --template-label words): as recorded, not quoted again.
  return line([journal.name, ...journal.request]);
}
