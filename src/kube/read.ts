// Everything this tool reads from the API server, named in Kubernetes words, over the narrow
// client: gets, paged lists, list-then-watch waits, access and identity reviews, Secrets
// (journals are decoded above it, in src/commands/journals.ts).
// Nothing here writes (src/kube/write.ts does, for src/apply alone).
import type { KubeClient } from "./client";
import { isGone, isNotFound } from "./errors";
import {
  type AccessCheck,
  type KubeEvent,
  type KubeObject,
  type ObjectList,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type KubeNode,
  type PodDisruptionBudget,
  type ResourceQuota,
  type StatefulSet,
  type StorageClass,
} from "../api/types";
import { claimsPath, customObjectsPath, eventsPath, podsPath, resourceQuotasPath, secretsPath, statefulSetsPath, volumesPath } from "./paths";

/**
 * Lists every page (500 at a time) of a collection, with the resourceVersion it was read at: the
 * pages of one list are one snapshot (the continue token carries its resourceVersion), so a watch
 * from there misses nothing, as client-go's pager and reflector do it.
 */
export async function listPages<T>(client: KubeClient, path: string, query: Record<string, string | undefined> = {}, accept?: string): Promise<{ items: T[]; resourceVersion?: string }> {
  const items: T[] = [];
  let cont: string | undefined;
  let resourceVersion: string | undefined;
  do {
    const page = await client.request<ObjectList<T>>({ method: "GET", path, query: { ...query, limit: 500, continue: cont }, ...(accept ? { accept } : {}) });
    // A metadata-only list of nothing has items: null, not [].
    for (const item of page.items ?? []) items.push(item);
    resourceVersion = page.metadata.resourceVersion ?? resourceVersion;
    cont = page.metadata.continue || undefined;
  } while (cont);
  return { items, ...(resourceVersion !== undefined ? { resourceVersion } : {}) };
}

/** Lists every page (500 at a time) of a collection. */
export async function listAll<T>(client: KubeClient, path: string, query: Record<string, string | undefined> = {}, accept?: string): Promise<T[]> {
  return (await listPages<T>(client, path, query, accept)).items;
}

/** GET of one object; undefined when it does not exist (404). */
export async function getIfExists<T>(client: KubeClient, path: string): Promise<T | undefined> {
  try {
    return await client.request<T>({ method: "GET", path });
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** A node (cluster scope: a namespace admin may not read it, and gets Forbidden). */
export function getNode(client: KubeClient, name: string): Promise<KubeNode | undefined> {
  return getIfExists<KubeNode>(client, `/api/v1/nodes/${encodeURIComponent(name)}`);
}

export function getStatefulSet(client: KubeClient, ns: string, name: string): Promise<StatefulSet | undefined> {
  return getIfExists<StatefulSet>(client, statefulSetsPath(ns, name));
}

/** false only when the server says the namespace does not exist (not when it may not be read). */
export async function namespaceExists(client: KubeClient, ns: string): Promise<boolean> {
  try {
    await client.request({ method: "GET", path: `/api/v1/namespaces/${encodeURIComponent(ns)}` });
    return true;
  } catch (e) {
    if (isNotFound(e)) return false;
    return true;
  }
}

export function listStatefulSets(client: KubeClient, ns: string | undefined, labelSelector?: string): Promise<StatefulSet[]> {
  return listAll<StatefulSet>(client, statefulSetsPath(ns), { labelSelector });
}

export function listClaims(client: KubeClient, ns: string | undefined): Promise<PersistentVolumeClaim[]> {
  return listAll(client, claimsPath(ns));
}

export function listPods(client: KubeClient, ns: string | undefined, labelSelector?: string): Promise<Pod[]> {
  return listAll(client, podsPath(ns), { labelSelector });
}

/**
 * The pods with their metadata only (PartialObjectMetadataList, as the garbage collector reads
 * them): all a plan looks at (names, uids, owners, revision labels), about half the bytes of the
 * whole pods, which are most of what a plan reads. Same permission: list pods.
 */
export function listPodMetadata(client: KubeClient, ns: string | undefined): Promise<Pod[]> {
  return listAll(client, podsPath(ns), {}, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json");
}

export function getStorageClass(client: KubeClient, name: string): Promise<StorageClass | undefined> {
  return getIfExists<StorageClass>(client, `/apis/storage.k8s.io/v1/storageclasses/${encodeURIComponent(name)}`);
}

export function listStorageClasses(client: KubeClient): Promise<StorageClass[]> {
  return listAll(client, "/apis/storage.k8s.io/v1/storageclasses");
}

/**
 * The ProvisioningFailed events of claims (the PV controller's and external provisioners'),
 * selected by the server: core/v1 events support field selectors on reason and involvedObject.
 */
export function listClaimProvisioningFailures(client: KubeClient, ns: string | undefined): Promise<KubeEvent[]> {
  return listAll(client, eventsPath(ns), { fieldSelector: "involvedObject.kind=PersistentVolumeClaim,reason=ProvisioningFailed" });
}

/** A short pause before reading again after a watch ended, so a failing watch cannot spin. */
const settle = () => new Promise((r) => setTimeout(r, 100));

/**
 * Resolves when the object with this uid no longer exists (deleted, or replaced by another uid
 * with the same name): wait on the uid, not the name, since the re-created StatefulSet has the
 * same name. A watch from the last seen resourceVersion, not a polling loop.
 */
export async function waitStatefulSetGone(client: KubeClient, ns: string, name: string, uid: string, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    const current = await getStatefulSet(client, ns, name);
    if (!current || current.metadata.uid !== uid) return;
    try {
      const gone = await client.watch<StatefulSet>(
        statefulSetsPath(ns),
        { fieldSelector: `metadata.name=${name}`, resourceVersion: current.metadata.resourceVersion, timeoutSeconds: 60 },
        (e) => (e.type === "DELETED" && e.object.metadata.uid === uid) || (e.type === "ADDED" && e.object.metadata.uid !== uid),
        signal,
      );
      if (gone) return;
    } catch (e) {
      if (!isGone(e)) throw e; // 410: the resourceVersion is too old; read again
    }
    await settle();
  }
  throw signal.reason instanceof Error ? signal.reason : new Error("aborted");
}

/**
 * Lists a collection, then watches it from that resourceVersion until check(objects) is true;
 * objects are keyed by name. A watch that ends or expires (410) is replaced by a fresh list.
 */
export async function waitList<T extends KubeObject>(
  client: KubeClient,
  path: string,
  labelSelector: string | undefined,
  check: (objects: Map<string, T>) => boolean,
  signal: AbortSignal,
  fieldSelector?: string,
): Promise<Map<string, T>> {
  while (!signal.aborted) {
    // In pages, as every list: a selector may match more objects than one answer should carry.
    const list = await listPages<T>(client, path, { labelSelector, ...(fieldSelector ? { fieldSelector } : {}) });
    const objects = new Map(list.items.map((o) => [o.metadata.name!, o]));
    if (check(objects)) return objects;
    try {
      const done = await client.watch<T>(
        path,
        { labelSelector, ...(fieldSelector ? { fieldSelector } : {}), resourceVersion: list.resourceVersion, timeoutSeconds: 60 },
        (e) => {
          if (e.type === "BOOKMARK" || e.type === "ERROR") return false;
          if (e.type === "DELETED") objects.delete(e.object.metadata.name!);
          else objects.set(e.object.metadata.name!, e.object);
          return check(objects);
        },
        signal,
      );
      if (done) return objects;
    } catch (e) {
      if (!isGone(e)) throw e;
    }
    await settle();
  }
  throw signal.reason instanceof Error ? signal.reason : new Error("aborted");
}

/** Watches pods with the selector until check(pods) is true; pods are keyed by name. */
export function waitPods(client: KubeClient, ns: string, labelSelector: string, check: (pods: Map<string, Pod>) => boolean, signal: AbortSignal): Promise<Map<string, Pod>> {
  return waitList<Pod>(client, podsPath(ns), labelSelector, check, signal);
}

export function getSecret(client: KubeClient, ns: string, name: string): Promise<SecretObject | undefined> {
  return getIfExists(client, secretsPath(ns, name));
}

/** SelfSubjectAccessReview: may the current user do this? */
export async function canI(client: KubeClient, check: AccessCheck): Promise<boolean> {
  const review = await client.request<{ status?: { allowed?: boolean } }>({
    method: "POST",
    idempotent: true,
    path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
    body: { apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview", spec: { resourceAttributes: check } },
  });
  return review.status?.allowed === true;
}

/** The user name the server sees (SelfSubjectReview), or "unknown" where it is not served. */
export async function whoAmI(client: KubeClient): Promise<string> {
  try {
    const review = await client.request<{ status?: { userInfo?: { username?: string } } }>({
      method: "POST",
      idempotent: true,
      path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
      body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    });
    return review.status?.userInfo?.username ?? "unknown";
  } catch {
    return "unknown";
  }
}

/** The PodDisruptionBudgets of a namespace (policy/v1). */
export function listDisruptionBudgets(client: KubeClient, ns: string): Promise<PodDisruptionBudget[]> {
  return listAll<PodDisruptionBudget>(client, `/apis/policy/v1/namespaces/${encodeURIComponent(ns)}/poddisruptionbudgets`);
}

export function listResourceQuotas(client: KubeClient, ns: string | undefined): Promise<ResourceQuota[]> {
  return listAll<ResourceQuota>(client, resourceQuotasPath(ns));
}

/**
 * Names of the VolumeAttributesClasses, or undefined when the server serves the API in neither
 * storage.k8s.io/v1 (1.34+) nor v1beta1 (1.31-1.33 with the feature enabled).
 */
export async function listVolumeAttributesClassNames(client: KubeClient): Promise<string[] | undefined> {
  for (const version of ["v1", "v1beta1"]) {
    try {
      const items = await listAll<{ metadata: { name?: string } }>(client, `/apis/storage.k8s.io/${version}/volumeattributesclasses`);
      return items.map((i) => i.metadata.name ?? "");
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
  return undefined;
}

export function getClaim(client: KubeClient, ns: string, name: string): Promise<PersistentVolumeClaim | undefined> {
  return getIfExists<PersistentVolumeClaim>(client, claimsPath(ns, name));
}

/** Watches the namespace's claims until check(claims) is true; claims are keyed by name. */
export function waitClaims(client: KubeClient, ns: string, check: (claims: Map<string, PersistentVolumeClaim>) => boolean, signal: AbortSignal): Promise<Map<string, PersistentVolumeClaim>> {
  return waitList<PersistentVolumeClaim>(client, claimsPath(ns), undefined, check, signal);
}

export type SecretObject = KubeObject & { data?: Record<string, string> };

/** The Secrets a label selector matches, in one namespace or all (paged). */
export function listSecrets(client: KubeClient, ns: string | undefined, labelSelector: string): Promise<SecretObject[]> {
  return listAll<SecretObject>(client, secretsPath(ns), { labelSelector });
}

export function getPod(client: KubeClient, ns: string, name: string): Promise<Pod | undefined> {
  return getIfExists(client, podsPath(ns, name));
}

export function getVolume(client: KubeClient, name: string): Promise<PersistentVolume | undefined> {
  return getIfExists(client, volumesPath(name));
}

/** PersistentVolumes, all of them or those a label selector matches (cluster scope). */
export function listVolumes(client: KubeClient, labelSelector?: string): Promise<PersistentVolume[]> {
  return listAll(client, volumesPath(), { labelSelector });
}

/**
 * As waitPod, and `last` hears every state of the pod a watch delivers, its deletion's too (the
 * object as it was when it went): what a pod that kubelet removes once it ended last reported.
 */
export async function waitPodSeeingLast(
  client: KubeClient,
  ns: string,
  name: string,
  check: (pod: Pod | undefined) => boolean,
  last: (pod: Pod) => void,
  signal: AbortSignal,
): Promise<Pod | undefined> {
  while (!signal.aborted) {
    const list = await listPages<Pod>(client, podsPath(ns), { fieldSelector: `metadata.name=${name}` });
    let pod: Pod | undefined = list.items[0];
    if (pod) last(pod);
    if (check(pod)) return pod;
    try {
      const done = await client.watch<Pod>(
        podsPath(ns),
        { fieldSelector: `metadata.name=${name}`, resourceVersion: list.resourceVersion, timeoutSeconds: 60 },
        (e) => {
          if (e.type === "BOOKMARK" || e.type === "ERROR") return false;
          last(e.object);
          pod = e.type === "DELETED" ? undefined : e.object;
          return check(pod);
        },
        signal,
      );
      if (done) return pod;
    } catch (e) {
      if (!isGone(e)) throw e;
    }
    await settle();
  }
  throw signal.reason instanceof Error ? signal.reason : new Error("aborted");
}

/** Waits until check(pod) holds for one pod (undefined: it does not exist). */
export async function waitPod(client: KubeClient, ns: string, name: string, check: (pod: Pod | undefined) => boolean, signal: AbortSignal): Promise<Pod | undefined> {
  const pods = await waitList<Pod>(client, podsPath(ns), undefined, (all) => check(all.get(name)), signal, `metadata.name=${name}`);
  return pods.get(name);
}

/** Waits until check(claim) holds for one claim (undefined: it does not exist). */
export async function waitClaim(
  client: KubeClient,
  ns: string,
  name: string,
  check: (claim: PersistentVolumeClaim | undefined) => boolean,
  signal: AbortSignal,
): Promise<PersistentVolumeClaim | undefined> {
  const claims = await waitList<PersistentVolumeClaim>(client, claimsPath(ns), undefined, (all) => check(all.get(name)), signal, `metadata.name=${name}`);
  return claims.get(name);
}

/** One custom object (an Argo CD Application, a Flux Kustomization); undefined when it, or its resource, does not exist. */
export function getCustomObject(client: KubeClient, group: string, version: string, resource: string, ns: string, name: string): Promise<KubeObject | undefined> {
  return getIfExists<KubeObject>(client, customObjectsPath(group, version, resource, ns, name));
}

/** The custom objects of one name in every namespace; [] when the resource is not served. */
export async function findCustomObjects(client: KubeClient, group: string, version: string, resource: string, name: string): Promise<KubeObject[]> {
  try {
    return await listAll<KubeObject>(client, customObjectsPath(group, version, resource, undefined), { fieldSelector: `metadata.name=${name}` });
  } catch (e) {
    if (isNotFound(e)) return [];
    throw e;
  }
}
