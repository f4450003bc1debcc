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
import { observeOwnersOfMany } from "./observe-owner";
import type { KubeNode, PodDisruptionBudget, ResourceQuota, StatefulSet, StorageClass } from "../api/types";
import { matchesSelector } from "../plan/selector";
import type { Directive } from "../plan/directive";
import type { Journal, JournalSecretRef, Observed } from "../plan/types";
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
async function observeVolumes(client: KubeClient, listed: string[] | undefined, statefulSets: readonly StatefulSet[]): Promise<(sts: StatefulSet) => VolumesObserved> {
  if (!statefulSets.length) return () => ({});
  // The full pods: the metadata list the plan reads has no node names.
  const namespaces = [...new Set(statefulSets.map((s) => s.metadata.namespace ?? ""))];
  const [pods, volumes, budgets] = await Promise.all([
    // In the namespaces of the StatefulSets (listed: those of the scope; -A: all at once).
    listIn(listed === undefined ? undefined : namespaces, (n) => listPods(client, n)),
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

/** Which StatefulSets a command plans for: by name (set NAME, set -f: each document's, in its namespace), or every one a selector matches. */
export type ObserveScope = { kind: "names"; targets: readonly { namespace: string; name: string }[] } | { kind: "selector"; selector: string; allNamespaces: boolean };

export interface ObserveRequest {
  scope: ObserveScope;
  /** What the plans will be asked (set -f: the manifest's classes): which storage classes and volume attributes classes are read. */
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

/** The journals found, and why those of a namespace could not be read (forbidden), by namespace ("" for all). */
type Journals = { journals: { journal: Journal; secret: JournalSecretRef }[]; errors: Map<string, string> };
type Quotas = { byNamespace: Map<string, ResourceQuota[]> } | { error: string } | undefined;

/** What each scope reads of its own: the StatefulSets and their journals, and where the lists of claims and pods are taken. */
interface ScopeReads {
  statefulSets: Promise<{ namespace: string; name: string; statefulSet?: StatefulSet }[]>;
  journals: Promise<Journals>;
  /** The namespaces listed one by one, or undefined: every namespace at once (-A). */
  namespaces?: string[];
  /** A list that fails at cluster scope: as kubectl says it, with where to look instead. */
  clusterScope: (e: unknown) => never;
}

function scopeReads(client: KubeClient, scope: ObserveScope): ScopeReads {
  if (scope.kind === "names") {
    const namespaces = [...new Set(scope.targets.map((t) => t.namespace))];
    return {
      namespaces,
      statefulSets: Promise.all(scope.targets.map(async (t) => ({ ...t, statefulSet: await getStatefulSet(client, t.namespace, t.name) }))),
      // One journal per StatefulSet, read by name (a user who may not read secrets still gets a plan, with a warning).
      journals: Promise.all(scope.targets.map((t) => observeJournal(client, t.namespace, t.name))).then((found) => ({
        journals: found.flatMap((f) => (f.journal && f.journalSecret ? [{ journal: f.journal, secret: f.journalSecret }] : [])),
        errors: new Map(found.flatMap((f, i) => (f.journalError !== undefined ? [[scope.targets[i]!.namespace, f.journalError] as [string, string]] : []))),
      })),
      clusterScope: (e) => {
        throw e;
      },
    };
  }
  const ns = scope.allNamespaces ? undefined : client.namespace;
  const clusterScope = (e: unknown): never => {
    // As kubectl: the server's answer, and where a namespace admin can look instead.
    if (isForbidden(e) && ns === undefined) throw new RefusedError(`${firstLine(e)}; select in one namespace with -n NAMESPACE instead of -A`);
    throw e;
  };
  return {
    ...(ns !== undefined ? { namespaces: [ns] } : {}),
    statefulSets: listStatefulSets(client, ns, scope.selector)
      .then((all) => all.map((s) => ({ namespace: s.metadata.namespace ?? client.namespace, name: s.metadata.name!, statefulSet: s })))
      .catch(clusterScope),
    journals: listJournals(client, ns, () => undefined).then(
      (journals): Journals => ({ journals, errors: new Map() }),
      (e): Journals => {
        if (!isForbidden(e)) throw e;
        return { journals: [], errors: new Map([["", "you may not list secrets"]]) };
      },
    ),
    clusterScope,
  };
}

/** A list in each namespace of the scope (or in all at once), as one list. */
async function listIn<T>(namespaces: string[] | undefined, list: (ns: string | undefined) => Promise<T[]>): Promise<T[]> {
  if (namespaces === undefined) return list(undefined);
  return (await Promise.all(namespaces.map((n) => list(n)))).flat();
}

/**
 * The one observation stage of the change commands (set NAME, set -l, set -f, diff and undo alike):
 * everything their plans need, read at once, in a number of requests that does not grow with the
 * StatefulSets (per namespace in play: its claims, its pods' metadata and, for --resize-existing,
 * its quotas; once: the storage classes, who the user is and, when a directive names one, the
 * volume attributes classes; the Argo CD and Flux objects they name; for --migrate-existing the
 * nodes, volumes and budgets of observeVolumes). Each StatefulSet, and each journal whose
 * StatefulSet an interrupted run deleted (by name, or matched by a selector on the labels it
 * saved), gets its Observed.
 */
export async function observeTargets(client: KubeClient, request: ObserveRequest, deps: Pick<CommandDeps, "now" | "holderDead">): Promise<Target[]> {
  const now = deps.now();
  const reads = scopeReads(client, request.scope);
  const quotas = request.existing?.resize === true;
  const vacsNamed = request.directives.some((d) => d.volumeAttributesClass !== undefined);
  const [found, claims, pods, classes, journals, user, resourceQuotas, vacs] = await Promise.all([
    reads.statefulSets,
    listIn(reads.namespaces, (n) => listClaims(client, n)).catch(reads.clusterScope),
    listIn(reads.namespaces, (n) => listPodMetadata(client, n)).catch(reads.clusterScope),
    observeStorageClasses(client, request.directives),
    reads.journals,
    whoAmI(client),
    quotas
      ? listIn(reads.namespaces, (n) => listResourceQuotas(client, n)).then(
          (all): Quotas => ({ byNamespace: byNamespace(all) }),
          (e): Quotas => {
            if (!isForbidden(e)) throw e;
            return { error: firstLine(e) };
          },
        )
      : undefined,
    observeVolumeAttributesClasses(client, request.directives),
  ]);
  const claimsIn = byNamespace(claims);
  const podsIn = byNamespace(pods);
  const journalOf = new Map(journals.journals.map((j) => [`${j.journal.namespace}/${j.journal.name}`, j]));
  // By name, a StatefulSet that is not there and has no journal: is its namespace there at all?
  if (request.scope.kind === "names") {
    for (const t of found) {
      if (!t.statefulSet && !journalOf.has(`${t.namespace}/${t.name}`) && !(await namespaceExists(client, t.namespace))) {
        throw new RefusedError(`namespace "${t.namespace}" not found; check -n, or list namespaces with: kubectl get namespaces`);
      }
    }
  }
  // Quotas and volume attributes classes were read once for every namespace in play; each StatefulSet gets its namespace's.
  const existingIn = (namespace: string): ExistingClaimsObserved | undefined => {
    if (resourceQuotas) return { ...vacs, ...("error" in resourceQuotas ? { quotaError: resourceQuotas.error } : { resourceQuotas: resourceQuotas.byNamespace.get(namespace) ?? [] }) };
    return vacsNamed ? vacs : undefined;
  };
  const targets = new Map<string, Target>();
  const add = (namespace: string, name: string, statefulSet: StatefulSet | undefined) => {
    const j = journalOf.get(`${namespace}/${name}`);
    const existing = existingIn(namespace);
    targets.set(`${namespace}/${name}`, {
      namespace,
      name,
      observed: {
        statefulSet,
        claims: claimsIn.get(namespace) ?? [],
        pods: podsIn.get(namespace) ?? [],
        ...classes,
        ...(j ? { journal: j.journal, journalSecret: j.secret } : {}),
        ...((journalError) => (journalError !== undefined ? { journalError } : {}))(journals.errors.get(namespace) ?? journals.errors.get("")),
        ...(existing ? { existing } : {}),
        holderGone: j && deps.holderDead ? deps.holderDead(j.journal.holder) : false,
        user,
        now: now.toISOString(),
      },
    });
  };
  for (const t of found) add(t.namespace, t.name, t.statefulSet);
  const statefulSets = found.flatMap((t) => (t.statefulSet ? [t.statefulSet] : []));
  // Argo CD and Flux objects the StatefulSets name (whether they sync on their own, how to pause them), each read once.
  for (const [key, owners] of await observeOwnersOfMany(client, statefulSets)) {
    const target = targets.get(key);
    if (target) target.observed.owners = owners;
  }
  if (request.existing?.migrate) {
    const volumesOf = await observeVolumes(client, reads.namespaces, statefulSets);
    for (const t of targets.values()) if (t.observed.statefulSet) Object.assign(t.observed, volumesOf(t.observed.statefulSet));
  }
  // A StatefulSet deleted by an interrupted run: only its journal knows it, with the labels it had.
  if (request.scope.kind === "selector") {
    const selector = request.scope.selector;
    for (const { journal } of journals.journals) {
      if (!targets.has(`${journal.namespace}/${journal.name}`) && matchesSelector(journal.original.metadata.labels, selector)) add(journal.namespace, journal.name, undefined);
    }
  }
  const all = [...targets.values()];
  // By name: in the order asked (set -f: the manifest's); by selector: by namespace, then name.
  if (request.scope.kind === "names") return all;
  return all.sort((a, b) => (a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
