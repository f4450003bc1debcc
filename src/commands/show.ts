// `show [STS] [-n NS | -A] [-l SELECTOR]`: claim templates and every claim per ordinal.
// Reads in one parallel round (lists, each paged; a get for one StatefulSet by name), whatever the
// number of StatefulSets, and a namespace check when none is found. What is read depends on the view
// (readsFor): the default table reads less than -o wide and -o json|yaml, which read every volume.
import { RefusedError, UsageError } from "../errors";
import type { KubeFlags } from "../kube/client";
import type { KubeClient } from "../kube/client";
import { isForbidden } from "../kube/errors";
import { getStatefulSet, listClaimProvisioningFailures, listClaims, listPodMetadata, listPods, listStatefulSets, listStorageClasses, listVolumes, namespaceExists } from "../kube/read";
import { neverBound } from "../plan/pending";
import { journalLabel } from "../plan/journal";
import { listJournals } from "./journals";
import type { KubeEvent, PersistentVolume, StatefulSet } from "../api/types";
import type { Journal } from "../plan/types";
import { buildStorageReport, type StorageInputs } from "../report/storage-report";
import { printFlags } from "../output/print-flags";
import { renderStorageReport, type ShowTableOptions } from "../output/show";
import { connectWith, type CommandDeps } from "./deps";

export interface ShowOptions {
  flags: KubeFlags;
  /** One StatefulSet, else every one in the namespace (or, with -A, everywhere). */
  name?: string;
  allNamespaces: boolean;
  selector?: string;
  /** -o as given (printFlags.show says which values). */
  output?: string;
  /** --no-headers: the tables (and -o custom-columns) without their header lines. */
  noHeaders?: boolean;
  /** --show-labels: a LABELS column, last: a claim template's labels, a claim's. */
  showLabels?: boolean;
}

/** The Validate step: usage errors only, before anything is read. */
export function validateShow(opts: ShowOptions): void {
  if (opts.name && opts.allNamespaces) throw new UsageError("a StatefulSet name cannot be combined with --all-namespaces; pass -n NAMESPACE instead");
  if (opts.name && opts.selector !== undefined) throw new UsageError("a StatefulSet name cannot be combined with --selector");
  if (opts.selector === "") throw new UsageError("--selector must not be empty");
  printFlags.show.validate(opts.output);
}

/** Pending journals; a user who may not list secrets still gets the rest of the view. */
async function readJournals(client: KubeClient, ns: string | undefined, warn: (m: string) => void): Promise<Journal[]> {
  try {
    const found = await listJournals(client, ns, (s) => warn(`secret/${s.metadata.name} in namespace ${s.metadata.namespace} is not a readable journal`));
    return found.map((f) => f.journal);
  } catch (e) {
    if (!isForbidden(e)) throw e;
    warn("you may not list secrets here, so interrupted changes (journals) are not shown");
    return [];
  }
}

/**
 * What a view of show reads. The default table reads only what its columns and notes need: the
 * pods' metadata (their names), the volumes --migrate-existing kept (selected by label), and
 * ProvisioningFailed events only when a claim never bound. -o wide (pod phases, every claim's
 * volume) and the data formats (the whole StorageReport) read whole pods and every volume.
 */
interface ShowReads {
  pods: "metadata" | "full";
  volumes: "kept" | "all";
  events: "whenPending" | "always";
}

function readsFor(output: string | undefined): ShowReads {
  return output === undefined || output === "table" ? { pods: "metadata", volumes: "kept", events: "whenPending" } : { pods: "full", volumes: "all", events: "always" };
}

/** The ProvisioningFailed events of claims; a user who may not list events still gets the rest. */
function readEvents(client: KubeClient, ns: string | undefined, warn: (m: string) => void): Promise<KubeEvent[]> {
  return listClaimProvisioningFailures(client, ns).catch((e): KubeEvent[] => {
    if (!isForbidden(e)) throw e;
    warn("you may not list events, so provisioning failures of Pending claims are not shown");
    return [];
  });
}

/** Everything the report is built from, in one round of parallel reads (and events after it, when only a Pending claim needs them). */
async function readStorage(client: KubeClient, opts: ShowOptions, reads: ShowReads, warn: (m: string) => void): Promise<StorageInputs> {
  const ns = opts.allNamespaces ? undefined : client.namespace;
  const statefulSetsRead: Promise<StatefulSet[]> = opts.name ? getStatefulSet(client, client.namespace, opts.name).then((s) => (s ? [s] : [])) : listStatefulSets(client, ns, opts.selector);
  let storageClassesUnknown = false;
  const kept = `${journalLabel.key}=${journalLabel.value}`;
  const [statefulSets, claims, pods, storageClasses, journals, events, volumes] = await Promise.all([
    statefulSetsRead,
    listClaims(client, ns),
    reads.pods === "full" ? listPods(client, ns) : listPodMetadata(client, ns),
    listStorageClasses(client).catch((e) => {
      if (!isForbidden(e)) throw e;
      warn("you may not list storage classes, so default classes and expansion are shown as unknown");
      storageClassesUnknown = true;
      return [];
    }),
    readJournals(client, ns, warn),
    reads.events === "always" ? readEvents(client, ns, warn) : undefined,
    // Every volume: what each claim's is, and the old ones kept by --migrate-existing (cluster scope:
    // a namespace admin may not list them, and then neither is shown).
    listVolumes(client, reads.volumes === "kept" ? kept : undefined).catch((e): PersistentVolume[] => {
      if (!isForbidden(e)) throw e;
      return [];
    }),
  ]).catch((e: unknown) => {
    // As kubectl: the server's answer (the first list it refused), and where a namespace admin can look instead.
    if (isForbidden(e) && opts.allNamespaces) throw new RefusedError(`${(e as Error).message.split("\n")[0]}; list one namespace with -n NAMESPACE instead of -A`);
    throw e;
  });
  const wanted = opts.name ? journals.filter((j) => j.name === opts.name) : journals;
  const keptVolumes = volumes.filter((v) => v.metadata.labels?.[journalLabel.key] === journalLabel.value && (ns === undefined || v.metadata.labels?.["appstorage.kubectl.io/namespace"] === ns));
  const pendingEvents = events ?? (claims.some(neverBound) ? await readEvents(client, ns, warn) : []);
  return { statefulSets, claims, pods, storageClasses, storageClassesUnknown, journals: wanted, events: pendingEvents, keptVolumes, ...(reads.volumes === "all" ? { volumes } : {}) };
}

/** --show-labels: a claim template's labels (from the StatefulSet, or the journal of a deleted one) and a claim's. */
function labelsOf(inputs: StorageInputs): NonNullable<ShowTableOptions["labels"]> {
  const templates = new Map<string, Record<string, string> | undefined>();
  for (const sts of [...inputs.statefulSets, ...inputs.journals.map((j) => j.original)]) {
    for (const t of sts.spec.volumeClaimTemplates ?? []) templates.set(`${sts.metadata.namespace}/${sts.metadata.name}/${t.metadata.name}`, t.metadata.labels);
  }
  const claims = new Map(inputs.claims.map((c) => [`${c.metadata.namespace}/${c.metadata.name}`, c.metadata.labels]));
  return { template: (s, t) => templates.get(`${s.namespace}/${s.name}/${t.name}`), claim: (s, c) => claims.get(`${s.namespace}/${c.name}`) };
}

export async function runShow(opts: ShowOptions, deps: CommandDeps): Promise<void> {
  validateShow(opts);
  const printer = printFlags.show.toPrinter(opts.output, { noHeaders: opts.noHeaders === true });
  const client = await connectWith(deps, opts.flags);
  const warnings: string[] = [];
  const inputs = await readStorage(client, opts, readsFor(opts.output), (m) => warnings.push(m));
  const report = buildStorageReport(inputs);
  for (const w of warnings) deps.streams.errOut.write(`Warning: ${w}\n`);
  if (!opts.allNamespaces && report.items.length === 0 && !(await namespaceExists(client, client.namespace))) {
    throw new RefusedError(`namespace "${client.namespace}" not found; check -n, or list namespaces with: kubectl get namespaces`);
  }
  if (opts.name && report.items.length === 0) throw new RefusedError(`statefulsets.apps "${opts.name}" not found in namespace "${client.namespace}"`);
  if (report.items.length === 0 && printer.human) {
    deps.streams.errOut.write(opts.allNamespaces ? "No resources found\n" : `No resources found in ${client.namespace} namespace.\n`);
    return;
  }
  const table = (wide: boolean) => ({ wide, namespaces: opts.allNamespaces, noHeaders: opts.noHeaders === true, ...(opts.showLabels ? { labels: labelsOf(inputs) } : {}) });
  printer.print(deps.streams.out, { data: () => report, text: (wide) => renderStorageReport(report, table(wide)) });
}
