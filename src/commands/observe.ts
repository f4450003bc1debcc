// Reads everything a plan needs in a constant number of requests, all at once.
import { hostname } from "node:os";
import { RefusedError } from "../errors";
import type { KubeClient } from "../kube/client";
import { isForbidden } from "../kube/errors";
import { getStatefulSet, getStorageClass, listClaims, listPods, listResourceQuotas, listStorageClasses, listVolumeAttributesClassNames, namespaceExists, readJournal, whoAmI } from "../kube/read";
import type { StorageClass } from "../kube/types";
import type { Directive } from "../plan/directive";
import type { ExistingClaimsObserved, ExistingClaimsOptions, Observed } from "../plan/types";

const firstLine = (e: unknown) => (e as Error).message.split("\n")[0]!;

/**
 * Storage classes are cluster-scoped: a namespace admin may not list them. Then the classes the
 * directives name are read one by one (get may be granted where list is not); what cannot be
 * read at all is left for the plan to refuse or warn about.
 */
async function observeStorageClasses(client: KubeClient, directives: readonly Directive[]): Promise<Pick<Observed, "storageClasses" | "storageClassError" | "storageClassesUnknown">> {
  try {
    return { storageClasses: await listStorageClasses(client) };
  } catch (e) {
    if (!isForbidden(e)) throw e;
    const named = [...new Set(directives.flatMap((d) => (d.storageClass !== undefined ? [d.storageClass] : [])))];
    const storageClasses: StorageClass[] = [];
    const unknown: string[] = [];
    await Promise.all(
      named.map((name) =>
        getStorageClass(client, name).then(
          (c) => void (c && storageClasses.push(c)),
          (err) => {
            if (!isForbidden(err)) throw err;
            unknown.push(name);
          },
        ),
      ),
    );
    return { storageClasses, storageClassError: firstLine(e), ...(unknown.length ? { storageClassesUnknown: unknown.sort() } : {}) };
  }
}

/** The journal; a user who may not read secrets still gets a plan, with a warning. */
async function observeJournal(client: KubeClient, ns: string, name: string): Promise<Pick<Observed, "journal" | "journalSecret" | "journalError">> {
  try {
    const { journal, secret } = await readJournal(client, ns, name);
    return { ...(journal ? { journal } : {}), ...(secret ? { journalSecret: secret } : {}) };
  } catch (e) {
    if (!isForbidden(e)) throw e;
    return { journalError: firstLine(e) };
  }
}
import type { CommandDeps } from "./deps";

/**
 * A journal holder is "host/pid/random". On this host, a holder whose process is gone was
 * killed: its lease need not be waited out. Elsewhere only the lease can tell.
 */
export function holderGone(holder: string, processAlive: (pid: number) => boolean): boolean {
  const [host, pid] = holder.split("/");
  if (host !== hostname() || !/^\d+$/.test(pid ?? "")) return false;
  return !processAlive(Number(pid));
}

/**
 * Reads quotas (when claims may grow) and volume attributes classes (when a directive names
 * one), in parallel; nothing at all otherwise, so a plain `set` makes no extra request.
 */
async function observeExistingClaims(client: KubeClient, options: ExistingClaimsOptions | undefined, directives: readonly Directive[]): Promise<ExistingClaimsObserved | undefined> {
  const quotas = options?.resize === true;
  const vacs = directives.some((d) => d.volumeAttributesClass !== undefined);
  if (!quotas && !vacs) return undefined;
  const out: ExistingClaimsObserved = {};
  await Promise.all([
    quotas
      ? listResourceQuotas(client, client.namespace).then(
          (q) => (out.resourceQuotas = q),
          (e) => {
            if (!isForbidden(e)) throw e;
            out.quotaError = firstLine(e);
          },
        )
      : undefined,
    vacs
      ? listVolumeAttributesClassNames(client).then(
          (names) => {
            if (names) out.volumeAttributesClasses = names;
          },
          (e) => {
            if (!isForbidden(e)) throw e;
            out.volumeAttributesClassError = firstLine(e);
          },
        )
      : undefined,
  ]);
  return out;
}

export interface ObserveRequest {
  name: string;
  directives: readonly Directive[];
  existing?: ExistingClaimsOptions;
}

export async function observe(client: KubeClient, request: ObserveRequest, deps: Pick<CommandDeps, "now" | "processAlive">): Promise<Observed> {
  const now = deps.now();
  const ns = client.namespace;
  const [statefulSet, claims, pods, classes, found, user, existing] = await Promise.all([
    getStatefulSet(client, ns, request.name),
    listClaims(client, ns),
    listPods(client, ns),
    observeStorageClasses(client, request.directives),
    observeJournal(client, ns, request.name),
    whoAmI(client),
    observeExistingClaims(client, request.existing, request.directives),
  ]);
  const journal = found.journal;
  if (!statefulSet && !journal && !(await namespaceExists(client, ns))) {
    throw new RefusedError(`namespace "${ns}" not found; check -n, or list namespaces with: kubectl get namespaces`);
  }
  return {
    statefulSet,
    claims,
    pods,
    ...classes,
    ...found,
    ...(existing ? { existing } : {}),
    holderGone: journal && deps.processAlive ? holderGone(journal.holder, deps.processAlive) : false,
    user,
    now: now.toISOString(),
  };
}
