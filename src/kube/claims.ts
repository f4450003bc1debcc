// Operations on existing claims and pods for the resize work: patch a claim, evict a pod,
// read quotas and volume attributes classes, follow claims. Named in Kubernetes words.
import { getIfExists, listAll, waitList, type DryRun } from "./api";
import type { KubeClient } from "./client";
import { isNotFound } from "./errors";
import type { PersistentVolumeClaim, ResourceQuota } from "./types";

const claimsPath = (ns: string, name = "") => `/api/v1/namespaces/${encodeURIComponent(ns)}/persistentvolumeclaims${name ? `/${encodeURIComponent(name)}` : ""}`;

export function listResourceQuotas(client: KubeClient, ns: string): Promise<ResourceQuota[]> {
  return listAll<ResourceQuota>(client, `/api/v1/namespaces/${encodeURIComponent(ns)}/resourcequotas`);
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
  return client.request<PersistentVolumeClaim>({
    method: "PATCH",
    path: claimsPath(ns, name),
    query: { dryRun: dryRun === "server" ? "All" : undefined },
    contentType: "application/merge-patch+json",
    body: { ...(patch.resourceVersion ? { metadata: { resourceVersion: patch.resourceVersion } } : {}), spec },
  });
}

/**
 * Evicts a pod through the Eviction API (policy/v1), which honours PodDisruptionBudgets: a
 * budget that allows no disruption now answers 429 TooManyRequests and nothing happens.
 */
export function evictPod(client: KubeClient, ns: string, name: string, uid: string): Promise<unknown> {
  return client.request({
    method: "POST",
    path: `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(name)}/eviction`,
    // The uid precondition: evict exactly the pod that was looked at, never its replacement.
    body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name, namespace: ns }, deleteOptions: { preconditions: { uid } } },
  });
}

/** Watches the namespace's claims until check(claims) is true; claims are keyed by name. */
export function waitClaims(client: KubeClient, ns: string, check: (claims: Map<string, PersistentVolumeClaim>) => boolean, signal: AbortSignal): Promise<Map<string, PersistentVolumeClaim>> {
  return waitList<PersistentVolumeClaim>(client, claimsPath(ns), undefined, check, signal);
}
