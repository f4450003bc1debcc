// Every write this tool can make, named in Kubernetes words. Only src/apply imports this module
// (a dependency-cruiser rule in npm test): plans and output never write, commands only through src/apply.
import type { WriteRequest } from "./api-request";
import type { KubeClient } from "./client";
import { isNotFound } from "./errors";
import type { DryRun, KubeObject, PersistentVolume, PersistentVolumeClaim, Pod, StatefulSet } from "../api/types";
import { claimsPath, podsPath, secretsPath, statefulSetsPath, volumesPath } from "./paths";
import { sendWrite } from "./write-access";

const serverDryRun = (dryRun: DryRun) => (dryRun === "server" ? "All" : undefined);

/** The one way this module reaches the cluster: the client's write capability (write-access.ts). */
function send<T = unknown>(client: KubeClient, spec: WriteRequest): Promise<T> {
  return client[sendWrite]<T>(spec);
}

/**
 * Deletes the StatefulSet and leaves its pods and claims in place (propagationPolicy Orphan),
 * only if it is still exactly the object that was planned: a changed uid or resourceVersion
 * is a 409 Conflict and nothing is deleted. There is deliberately no other way to delete a StatefulSet.
 */
export function orphanDelete(client: KubeClient, ns: string, name: string, pre: { uid: string; resourceVersion: string }, dryRun: DryRun = "none"): Promise<StatefulSet> {
  return send<StatefulSet>(client, {
    method: "DELETE",
    path: statefulSetsPath(ns, name),
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
  return send<StatefulSet>(client, { method: "POST", path: statefulSetsPath(ns), query: { dryRun: serverDryRun(dryRun) }, body });
}

/**
 * Puts the owners of the fields back (metadata.managedFields, exactly as given) on the StatefulSet
 * of this uid: a patch that changes only managedFields is recorded under no manager.
 */
export function restoreFieldManagers(client: KubeClient, ns: string, name: string, uid: string, managedFields: Record<string, unknown>[]): Promise<StatefulSet> {
  return client[sendWrite]<StatefulSet>({
    method: "PATCH",
    path: `/apis/apps/v1/namespaces/${encodeURIComponent(ns)}/statefulsets/${encodeURIComponent(name)}`,
    contentType: "application/merge-patch+json",
    body: { metadata: { uid, managedFields } },
  });
}

export function createSecret(client: KubeClient, ns: string, body: KubeObject): Promise<KubeObject> {
  return send(client, { method: "POST", path: secretsPath(ns), body });
}

/** Replaces the Secret only if it is still at resourceVersion (the body carries it). */
export function updateSecret(client: KubeClient, ns: string, body: KubeObject): Promise<KubeObject> {
  return send(client, { method: "PUT", path: secretsPath(ns, body.metadata.name), body });
}

export async function deleteSecret(client: KubeClient, ns: string, name: string, uid?: string): Promise<void> {
  try {
    await send(client, { method: "DELETE", path: secretsPath(ns, name), body: { kind: "DeleteOptions", apiVersion: "v1", preconditions: uid ? { uid } : undefined } });
  } catch (e) {
    if (!isNotFound(e)) throw e; // already gone: done
  }
}

/** Kubernetes MicroTime: RFC 3339 with exactly six fractional digits. */
export function microTime(iso: string): string {
  return new Date(iso).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export function createEvent(client: KubeClient, ns: string, regarding: StatefulSet, reason: string, note: string, now: string): Promise<unknown> {
  return send(client, {
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

export interface ClaimPatch {
  /** Only if the claim is still at this resourceVersion (409 Conflict otherwise). */
  resourceVersion?: string;
  storage?: string;
  volumeAttributesClassName?: string;
}

/** A JSON merge patch of the claim's spec, guarded by its resourceVersion. */
export function patchClaim(client: KubeClient, ns: string, name: string, patch: ClaimPatch, dryRun: DryRun = "none"): Promise<PersistentVolumeClaim> {
  const spec: Record<string, unknown> = {};
  if (patch.storage !== undefined) spec["resources"] = { requests: { storage: patch.storage } };
  if (patch.volumeAttributesClassName !== undefined) spec["volumeAttributesClassName"] = patch.volumeAttributesClassName;
  return send<PersistentVolumeClaim>(client, {
    method: "PATCH",
    path: claimsPath(ns, name),
    query: { dryRun: serverDryRun(dryRun) },
    contentType: "application/merge-patch+json",
    body: { ...(patch.resourceVersion ? { metadata: { resourceVersion: patch.resourceVersion } } : {}), spec },
  });
}

/**
 * A JSON merge patch of the claim's labels and annotations (null removes a key), guarded by its uid
 * (the claim that was planned, never a replacement) and, when given, its resourceVersion.
 */
export function patchClaimMetadata(
  client: KubeClient,
  ns: string,
  name: string,
  patch: { uid: string; resourceVersion?: string; labels?: Record<string, string | null>; annotations?: Record<string, string | null> },
  dryRun: DryRun = "none",
): Promise<PersistentVolumeClaim> {
  return send<PersistentVolumeClaim>(client, {
    method: "PATCH",
    path: claimsPath(ns, name),
    query: { dryRun: serverDryRun(dryRun) },
    contentType: "application/merge-patch+json",
    body: { metadata: patch },
  });
}

/**
 * Evicts a pod through the Eviction API (policy/v1), which honours PodDisruptionBudgets: a
 * budget that allows no disruption now answers 429 TooManyRequests and nothing happens.
 */
export function evictPod(client: KubeClient, ns: string, name: string, uid: string, dryRun: DryRun = "none"): Promise<unknown> {
  return send(client, {
    method: "POST",
    path: `${podsPath(ns, name)}/eviction`,
    // dryRun server: the PodDisruptionBudgets are asked, nothing is evicted.
    query: { dryRun: serverDryRun(dryRun) },
    // The uid precondition: evict exactly the pod that was looked at, never its replacement.
    body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name, namespace: ns }, deleteOptions: { preconditions: { uid } } },
  });
}

/** The copy pods of --migrate-existing (the tool's own pods; dryRun server: admission, Pod Security, checks it). */
export function createPod(client: KubeClient, ns: string, body: Pod, dryRun: DryRun = "none"): Promise<Pod> {
  return send<Pod>(client, { method: "POST", path: podsPath(ns), query: { dryRun: serverDryRun(dryRun) }, body });
}

/**
 * Tells one of the tool's own waiting copy pods to go: a graceful delete (its own, long grace
 * period), of exactly the one looked at (uid), makes kubelet send it SIGTERM at once.
 */
export function signalCopyPod(client: KubeClient, ns: string, name: string, uid: string): Promise<unknown> {
  return send(client, { method: "DELETE", path: podsPath(ns, name), body: { kind: "DeleteOptions", apiVersion: "v1", preconditions: { uid } } });
}

/** Deletes one of the tool's own copy pods, exactly the one looked at (uid); gone already is done. */
export async function deleteCopyPod(client: KubeClient, ns: string, name: string, uid: string): Promise<void> {
  try {
    await send(client, { method: "DELETE", path: podsPath(ns, name), body: { kind: "DeleteOptions", apiVersion: "v1", gracePeriodSeconds: 0, preconditions: { uid } } });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

export function createClaim(client: KubeClient, ns: string, body: PersistentVolumeClaim, dryRun: DryRun = "none"): Promise<PersistentVolumeClaim> {
  return send<PersistentVolumeClaim>(client, { method: "POST", path: claimsPath(ns), query: { dryRun: serverDryRun(dryRun) }, body });
}

/**
 * Deletes exactly the claim looked at (uid precondition). Only --migrate-existing calls it: for
 * its own claim of a new volume, and for a moved claim once its data is verified on the new
 * volume and its old volume's reclaim policy is Retain. Gone already is done.
 */
export async function deleteClaim(client: KubeClient, ns: string, name: string, uid: string): Promise<void> {
  try {
    await send(client, { method: "DELETE", path: claimsPath(ns, name), body: { kind: "DeleteOptions", apiVersion: "v1", preconditions: { uid } } });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

/** A JSON merge patch of a PersistentVolume (reclaim policy, labels, claimRef), guarded by its resourceVersion when given. */
export function patchVolume(client: KubeClient, name: string, patch: Record<string, unknown>): Promise<PersistentVolume> {
  return send<PersistentVolume>(client, { method: "PATCH", path: volumesPath(name), contentType: "application/merge-patch+json", body: patch });
}

/**
 * Puts back a StatefulSet's updateStrategy, exactly as given, on the object of this uid only (a JSON
 * patch: its test fails with 422 on another object, its replace leaves nothing of the strategy before).
 */
export function replaceUpdateStrategy(client: KubeClient, ns: string, name: string, uid: string, updateStrategy: unknown): Promise<StatefulSet> {
  return send<StatefulSet>(client, {
    method: "PATCH",
    path: statefulSetsPath(ns, name),
    contentType: "application/json-patch+json",
    body: [
      { op: "test", path: "/metadata/uid", value: uid },
      { op: "replace", path: "/spec/updateStrategy", value: updateStrategy },
    ],
  });
}

/** A JSON merge patch of a custom object (--pause-owner: an Argo CD Application's sync policy, a Flux object's suspend). */
export function mergePatchCustomObject(client: KubeClient, path: string, patch: Record<string, unknown>): Promise<KubeObject> {
  return send<KubeObject>(client, { method: "PATCH", path, contentType: "application/merge-patch+json", body: patch });
}
