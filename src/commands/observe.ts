// Reads everything a plan needs, all at once, in a number of requests that does not grow with the
// StatefulSets: lists, and (for --migrate-existing) one list of pods, one of volumes and one read per node.
import { RefusedError } from "../errors";
import type { KubeClient } from "../kube/client";
import { isForbidden } from "../kube/errors";
import {
  getStatefulSet,
  getNode,
  listDisruptionBudgets,
  getStorageClass,
  listClaims,
  listPodMetadata,
  listPods,
  listResourceQuotas,
  listStatefulSets,
  listStorageClasses,
  listVolumeAttributesClassNames,
  listVolumes,
  namespaceExists,
  whoAmI,
} from "../kube/read";
import { labelSelector } from "../plan/objects";
import { listJournals, readJournal } from "./journals";
import { observeOwners, observeOwnersOfMany } from "./observe-owner";
import type { KubeNode, PodDisruptionBudget, StatefulSet, StorageClass } from "../api/types";
import { matchesSelector } from "../plan/selector";
import type { Directive } from "../plan/directive";
import type { Observed } from "../plan/types";
import type { ExistingClaimsObserved, ExistingClaimsOptions } from "../plan/existing-claims-types";

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

/** The VolumeAttributesClasses, read only when a directive names one (or why they could not be read). */
async function observeVolumeAttributesClasses(client: KubeClient, directives: readonly Directive[]): Promise<ExistingClaimsObserved> {
  if (!directives.some((d) => d.volumeAttributesClass !== undefined)) return {};
  try {
    const names = await listVolumeAttributesClassNames(client);
    return names ? { volumeAttributesClasses: names } : {};
  } catch (e) {
    if (!isForbidden(e)) throw e;
    return { volumeAttributesClassError: firstLine(e) };
  }
}

/**
 * Reads quotas (when claims may grow) and volume attributes classes (when a directive names
 * one), in parallel; nothing at all otherwise, so a plain `set` makes no extra request.
 */
async function observeExistingClaims(client: KubeClient, ns: string, options: ExistingClaimsOptions | undefined, directives: readonly Directive[]): Promise<ExistingClaimsObserved | undefined> {
  const quotas = options?.resize === true;
  if (!quotas && !directives.some((d) => d.volumeAttributesClass !== undefined)) return undefined;
  const [q, vacs] = await Promise.all([
    quotas
      ? listResourceQuotas(client, ns).then(
          (resourceQuotas): ExistingClaimsObserved => ({ resourceQuotas }),
          (e): ExistingClaimsObserved => {
            if (!isForbidden(e)) throw e;
            return { quotaError: firstLine(e) };
          },
        )
      : {},
    observeVolumeAttributesClasses(client, directives),
  ]);
  return { ...q, ...vacs };
}

type VolumesObserved = Pick<Observed, "podNodes" | "persistentVolumes" | "cordonedNodes" | "nodeTaints" | "disruptionBudgets">;

/**
 * For --migrate-existing, once for all the StatefulSets in play: the node of each of their running
 * pods (their copy pods run there), each such node's taints (the copy pods tolerate exactly those)
 * and whether it is cordoned, and the PersistentVolumes (where an old volume can be used). One list
 * of pods, one of volumes and one read per node, side by side, however many StatefulSets there are.
 * Reading the nodes needs get on nodes, the list of volumes list on persistentvolumes; without
 * them, the nodes' taints are not known (the copy pods tolerate none) or the volumes are left out.
 * How much data a claim holds is never read from kubelet (its stats need nodes/proxy, which lets its
 * holder run commands in any pod of the node): a shrink is measured by a pod once it is confirmed.
 */
async function observeVolumes(client: KubeClient, ns: string | undefined, statefulSets: readonly StatefulSet[]): Promise<(sts: StatefulSet) => VolumesObserved> {
  if (!statefulSets.length) return () => ({});
  // The full pods: the metadata list the plan reads has no node names.
  const namespaces = [...new Set(statefulSets.map((s) => s.metadata.namespace ?? ""))];
  const [pods, volumes, budgets] = await Promise.all([
    listPods(client, ns),
    listVolumes(client).catch((e) => (isForbidden(e) ? undefined : Promise.reject(e))),
    // A budget that may not be read is not known: the move's eviction then says what it refuses.
    Promise.all(namespaces.map((n) => listDisruptionBudgets(client, n).catch(() => [] as PodDisruptionBudget[]))).then((l) => l.flat()),
  ]);
  const podsOf = (sts: StatefulSet) => {
    const selector = labelSelector(sts);
    return pods.filter((p) => p.metadata.namespace === sts.metadata.namespace && p.spec?.nodeName && p.status?.phase === "Running" && matchesSelector(p.metadata.labels, selector));
  };
  const nodes = [...new Set(statefulSets.flatMap((sts) => podsOf(sts).map((p) => p.spec!.nodeName!)))];
  // A node that may not be read is left out (a namespace admin may not read nodes).
  const seen = new Map(await Promise.all(nodes.map(async (node) => [node, await getNode(client, node).catch(() => undefined)] as [string, KubeNode | undefined])));
  return (sts) => {
    const own = podsOf(sts);
    const podNodes: Record<string, string> = Object.fromEntries(own.map((p) => [p.metadata.name!, p.spec!.nodeName!]));
    const mine = [...new Set(Object.values(podNodes))].sort();
    const cordoned = mine.filter((n) => seen.get(n)?.spec?.unschedulable === true);
    const nodeTaints = Object.fromEntries(mine.flatMap((n) => (seen.get(n) ? [[n, seen.get(n)!.spec?.taints ?? []]] : [])));
    const disruptionBudgets = budgets.filter((b) => b.metadata.namespace === sts.metadata.namespace);
    const persistentVolumes = volumes ? { persistentVolumes: volumes.filter((v) => v.spec.claimRef?.namespace === sts.metadata.namespace) } : {};
    return {
      podNodes,
      ...(cordoned.length ? { cordonedNodes: cordoned } : {}),
      nodeTaints,
      ...(disruptionBudgets.length ? { disruptionBudgets } : {}),
      ...persistentVolumes,
    };
  };
}

export interface ObserveRequest {
  name: string;
  /** Where the StatefulSet is (set -f: a document's namespace); default: the client's. */
  namespace?: string;
  directives: readonly Directive[];
  existing?: ExistingClaimsOptions;
}

export async function observe(client: KubeClient, request: ObserveRequest, deps: Pick<CommandDeps, "now" | "holderDead">): Promise<Observed> {
  const now = deps.now();
  const ns = request.namespace ?? client.namespace;
  const [statefulSet, claims, pods, classes, found, user, existing] = await Promise.all([
    getStatefulSet(client, ns, request.name),
    listClaims(client, ns),
    listPodMetadata(client, ns),
    observeStorageClasses(client, request.directives),
    observeJournal(client, ns, request.name),
    whoAmI(client),
    observeExistingClaims(client, ns, request.existing, request.directives),
  ]);
  const journal = found.journal;
  if (!statefulSet && !journal && !(await namespaceExists(client, ns))) {
    throw new RefusedError(`namespace "${ns}" not found; check -n, or list namespaces with: kubectl get namespaces`);
  }
  const volumes = request.existing?.migrate && statefulSet ? (await observeVolumes(client, ns, [statefulSet]))(statefulSet) : {};
  // Argo CD or Flux, when the object names them: whether they sync on their own, and how to pause them.
  const owners = statefulSet ? await observeOwners(client, statefulSet) : undefined;
  return {
    ...(owners ? { owners } : {}),
    statefulSet,
    claims,
    pods,
    ...classes,
    ...found,
    ...volumes,
    ...(existing ? { existing } : {}),
    holderGone: journal && deps.holderDead ? deps.holderDead(journal.holder) : false,
    user,
    now: now.toISOString(),
  };
}

export interface ObserveManyRequest {
  selector: string;
  allNamespaces: boolean;
  directives: readonly Directive[];
  existing?: ExistingClaimsOptions;
}

export interface Target {
  namespace: string;
  name: string;
  observed: Observed;
}

function byNamespace<T extends { metadata: { namespace?: string } }>(items: readonly T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const ns = item.metadata.namespace ?? "";
    const list = out.get(ns);
    if (list) list.push(item);
    else out.set(ns, [item]);
  }
  return out;
}

/**
 * Everything the plans of `-l SELECTOR` (and `-A`) need, in the same lists (each paged) whatever
 * the number of StatefulSets: each matching StatefulSet, and each journal whose
 * StatefulSet an interrupted run deleted (matched on the labels it saved), gets its Observed.
 */
export async function observeMany(client: KubeClient, request: ObserveManyRequest, deps: Pick<CommandDeps, "now" | "holderDead">): Promise<Target[]> {
  const now = deps.now();
  const ns = request.allNamespaces ? undefined : client.namespace;
  const forbiddenAtClusterScope = (e: unknown) => {
    // As kubectl: the server's answer, and where a namespace admin can look instead.
    if (isForbidden(e) && ns === undefined) throw new RefusedError(`${firstLine(e)}; select in one namespace with -n NAMESPACE instead of -A`);
    throw e;
  };
  const quotas = request.existing?.resize === true;
  const [statefulSets, claims, pods, classes, journals, user, resourceQuotas, vacs] = await Promise.all([
    listStatefulSets(client, ns, request.selector).catch(forbiddenAtClusterScope),
    listClaims(client, ns).catch(forbiddenAtClusterScope),
    listPodMetadata(client, ns).catch(forbiddenAtClusterScope),
    observeStorageClasses(client, request.directives),
    listJournals(client, ns, () => undefined).catch((e) => {
      if (!isForbidden(e)) throw e;
      return undefined;
    }),
    whoAmI(client),
    quotas ? listResourceQuotas(client, ns).catch((e) => (isForbidden(e) ? firstLine(e) : Promise.reject(e))) : undefined,
    observeVolumeAttributesClasses(client, request.directives),
  ]);
  const claimsIn = byNamespace(claims);
  const podsIn = byNamespace(pods);
  const quotasIn = Array.isArray(resourceQuotas) ? byNamespace(resourceQuotas) : undefined;
  const journalOf = new Map((journals ?? []).map((j) => [`${j.journal.namespace}/${j.journal.name}`, j]));
  const targets = new Map<string, Target>();
  const add = (namespace: string, name: string, statefulSet: StatefulSet | undefined) => {
    const j = journalOf.get(`${namespace}/${name}`);
    // Quotas were listed once for every namespace in play; each StatefulSet gets its namespace's.
    const existing: ExistingClaimsObserved | undefined = quotas
      ? { ...vacs, ...(quotasIn ? { resourceQuotas: quotasIn.get(namespace) ?? [] } : { quotaError: resourceQuotas as string }) }
      : request.directives.some((d) => d.volumeAttributesClass !== undefined)
        ? vacs
        : undefined;
    targets.set(`${namespace}/${name}`, {
      namespace,
      name,
      observed: {
        statefulSet,
        claims: claimsIn.get(namespace) ?? [],
        pods: podsIn.get(namespace) ?? [],
        ...classes,
        ...(j ? { journal: j.journal, journalSecret: j.secret } : {}),
        ...(journals === undefined ? { journalError: "you may not list secrets" } : {}),
        ...(existing ? { existing } : {}),
        holderGone: j && deps.holderDead ? deps.holderDead(j.journal.holder) : false,
        user,
        now: now.toISOString(),
      },
    });
  };
  for (const s of statefulSets) add(s.metadata.namespace ?? client.namespace, s.metadata.name!, s);
  // Argo CD and Flux objects the StatefulSets name, each read once.
  for (const [key, owners] of await observeOwnersOfMany(client, statefulSets)) {
    const target = targets.get(key);
    if (target) target.observed.owners = owners;
  }
  if (request.existing?.migrate) {
    const volumesOf = await observeVolumes(client, ns, statefulSets);
    for (const t of targets.values()) if (t.observed.statefulSet) Object.assign(t.observed, volumesOf(t.observed.statefulSet));
  }
  // A StatefulSet deleted by an interrupted run: only its journal knows it, with the labels it had.
  for (const { journal } of journals ?? []) {
    if (!targets.has(`${journal.namespace}/${journal.name}`) && matchesSelector(journal.original.metadata.labels, request.selector)) add(journal.namespace, journal.name, undefined);
  }
  return [...targets.values()].sort((a, b) => (a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
