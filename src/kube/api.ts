// Kubernetes operations this tool performs, named in Kubernetes words, over the narrow client.
import type { KubeClient } from "./client";
import { isGone, isNotFound } from "./errors";
import type { KubeObject, ObjectList, PersistentVolumeClaim, Pod, StatefulSet, StorageClass } from "./types";

export type DryRun = "none" | "client" | "server";

const sts = (ns: string, name = "") => `/apis/apps/v1/namespaces/${encodeURIComponent(ns)}/statefulsets${name ? `/${encodeURIComponent(name)}` : ""}`;
const secrets = (ns: string, name = "") => `/api/v1/namespaces/${encodeURIComponent(ns)}/secrets${name ? `/${encodeURIComponent(name)}` : ""}`;
const serverDryRun = (dryRun: DryRun) => (dryRun === "server" ? "All" : undefined);

/** Lists every page (500 at a time) of a collection. */
export async function listAll<T>(client: KubeClient, path: string, query: Record<string, string | undefined> = {}): Promise<T[]> {
  const items: T[] = [];
  let cont: string | undefined;
  do {
    const page = await client.request<ObjectList<T>>({ method: "GET", path, query: { ...query, limit: 500, continue: cont } });
    items.push(...page.items);
    cont = page.metadata.continue || undefined;
  } while (cont);
  return items;
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

export function getStatefulSet(client: KubeClient, ns: string, name: string): Promise<StatefulSet | undefined> {
  return getIfExists<StatefulSet>(client, sts(ns, name));
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
  return listAll<StatefulSet>(client, ns === undefined ? "/apis/apps/v1/statefulsets" : sts(ns), { labelSelector });
}

export function listClaims(client: KubeClient, ns: string | undefined): Promise<PersistentVolumeClaim[]> {
  return listAll(client, ns === undefined ? "/api/v1/persistentvolumeclaims" : `/api/v1/namespaces/${encodeURIComponent(ns)}/persistentvolumeclaims`);
}

export function listPods(client: KubeClient, ns: string | undefined, labelSelector?: string): Promise<Pod[]> {
  return listAll(client, ns === undefined ? "/api/v1/pods" : `/api/v1/namespaces/${encodeURIComponent(ns)}/pods`, { labelSelector });
}

export function listStorageClasses(client: KubeClient): Promise<StorageClass[]> {
  return listAll(client, "/apis/storage.k8s.io/v1/storageclasses");
}

/**
 * Deletes the StatefulSet and leaves its pods and claims in place (propagationPolicy Orphan),
 * only if it is still exactly the object that was planned: a changed uid or resourceVersion
 * is a 409 Conflict and nothing is deleted. There is deliberately no other way to delete.
 */
export function orphanDelete(client: KubeClient, ns: string, name: string, pre: { uid: string; resourceVersion: string }, dryRun: DryRun = "none"): Promise<StatefulSet> {
  return client.request<StatefulSet>({
    method: "DELETE",
    path: sts(ns, name),
    // With a body, the API server reads DeleteOptions from the body alone and ignores query
    // parameters: dryRun must be in the body, or a "dry run" really deletes.
    body: {
      kind: "DeleteOptions",
      apiVersion: "v1",
      propagationPolicy: "Orphan",
      preconditions: { uid: pre.uid, resourceVersion: pre.resourceVersion },
      ...(dryRun === "server" ? { dryRun: ["All"] } : {}),
    },
  });
}

export function createStatefulSet(client: KubeClient, ns: string, body: StatefulSet, dryRun: DryRun = "none"): Promise<StatefulSet> {
  return client.request<StatefulSet>({ method: "POST", path: sts(ns), query: { dryRun: serverDryRun(dryRun) }, body });
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
        sts(ns),
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
export async function waitList<T extends KubeObject>(client: KubeClient, path: string, labelSelector: string | undefined, check: (objects: Map<string, T>) => boolean, signal: AbortSignal): Promise<Map<string, T>> {
  while (!signal.aborted) {
    const list = await client.request<ObjectList<T>>({ method: "GET", path, query: { labelSelector } });
    const objects = new Map(list.items.map((o) => [o.metadata.name!, o]));
    if (check(objects)) return objects;
    try {
      const done = await client.watch<T>(
        path,
        { labelSelector, resourceVersion: list.metadata.resourceVersion, timeoutSeconds: 60 },
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
  return waitList<Pod>(client, `/api/v1/namespaces/${encodeURIComponent(ns)}/pods`, labelSelector, check, signal);
}

export function getSecret(client: KubeClient, ns: string, name: string): Promise<(KubeObject & { data?: Record<string, string> }) | undefined> {
  return getIfExists(client, secrets(ns, name));
}

export function createSecret(client: KubeClient, ns: string, body: KubeObject): Promise<KubeObject> {
  return client.request({ method: "POST", path: secrets(ns), body });
}

/** Replaces the Secret only if it is still at resourceVersion (the body carries it). */
export function updateSecret(client: KubeClient, ns: string, body: KubeObject): Promise<KubeObject> {
  return client.request({ method: "PUT", path: secrets(ns, body.metadata.name), body });
}

export async function deleteSecret(client: KubeClient, ns: string, name: string, uid?: string): Promise<void> {
  try {
    await client.request({ method: "DELETE", path: secrets(ns, name), body: { kind: "DeleteOptions", apiVersion: "v1", preconditions: uid ? { uid } : undefined } });
  } catch (e) {
    if (!isNotFound(e)) throw e; // already gone: done
  }
}

export interface AccessCheck {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
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

/** Kubernetes MicroTime: RFC 3339 with exactly six fractional digits. */
export function microTime(iso: string): string {
  return new Date(iso).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export function createEvent(client: KubeClient, ns: string, regarding: StatefulSet, reason: string, note: string, now: string): Promise<unknown> {
  return client.request({
    method: "POST",
    path: `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(ns)}/events`,
    body: {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      // kubectl's naming: the object's name and a unique hexadecimal suffix.
      metadata: { name: `${regarding.metadata.name}.${Date.parse(now).toString(16)}${Math.floor(Math.random() * 0xfff).toString(16)}` },
      eventTime: microTime(now),
      reportingController: "kubectl-appstorage",
      reportingInstance: "kubectl-appstorage",
      action: "Recreate",
      reason,
      note: note.slice(0, 1024),
      type: "Normal",
      regarding: { apiVersion: "apps/v1", kind: "StatefulSet", namespace: ns, name: regarding.metadata.name, uid: regarding.metadata.uid, resourceVersion: regarding.metadata.resourceVersion },
    },
  });
}
