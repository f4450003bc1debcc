// Why a Pending claim has no volume, when the storage classes and its provisioner's events can
// tell, and what a user can run by hand about a claim that never bound and no longer matches its
// template. Pure; the plan uses the classes alone, `show` the classes and ProvisioningFailed events.
import type { ClaimTemplate, KubeEvent, PersistentVolumeClaim, Pod, StorageClass } from "../api/types";
import { sameQuantity } from "./quantity";
import type { PendingReason, RecreateByHand } from "./types";

/**
 * Set by the scheduler on a WaitForFirstConsumer claim once it picked a node for the pod, and read by
 * provisioners of any class: where to make the volume (--migrate-existing sets it for an Immediate class).
 */
export const selectedNodeAnnotation = "volume.kubernetes.io/selected-node";

/** Pending with no volume: it never bound, so it holds no data. */
export function neverBound(c: PersistentVolumeClaim): boolean {
  return c.status?.phase === "Pending" && !c.spec.volumeName;
}

/** When an event last happened, in milliseconds: series (events.k8s.io writers), else the core/v1 timestamps. */
function lastSeen(e: KubeEvent): number {
  const t = e.series?.lastObservedTime ?? e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp;
  const ms = t ? Date.parse(t) : NaN;
  return Number.isNaN(ms) ? 0 : ms;
}

/** The latest of a claim's ProvisioningFailed events. */
export function latestEvent(events: readonly KubeEvent[]): KubeEvent | undefined {
  let latest: KubeEvent | undefined;
  for (const e of events) if (!latest || lastSeen(e) >= lastSeen(latest)) latest = e;
  return latest;
}

export interface PendingContext {
  /** The cluster's storage classes by name; undefined when they could not be read (a missing class cannot be told then). */
  classes?: ReadonlyMap<string, StorageClass>;
  /** The claim's ProvisioningFailed events (show reads them; a plan does not). */
  events?: readonly KubeEvent[];
  /** The pod of the claim's ordinal, if it exists. */
  pod?: Pod;
}

/** Why a claim that never bound is Pending, when it can be known; undefined otherwise (and for any other claim). */
export function pendingReason(claim: PersistentVolumeClaim, ctx: PendingContext): PendingReason | undefined {
  if (!neverBound(claim)) return undefined;
  const className = claim.spec.storageClassName;
  const cls = className ? ctx.classes?.get(className) : undefined;
  if (className && ctx.classes && !cls) return { reason: "StorageClassNotFound", stuck: true, message: `storage class "${className}" does not exist` };
  const failed = latestEvent(ctx.events ?? []);
  if (failed) {
    const by = cls?.provisioner ? `the provisioner ${cls.provisioner} of storage class "${className}"` : "the provisioner";
    const when = failed.series?.lastObservedTime ?? failed.lastTimestamp ?? failed.eventTime;
    const count = failed.series?.count ?? failed.count;
    const source = failed.reportingComponent || failed.source?.component;
    return {
      reason: "ProvisioningFailed",
      stuck: true,
      message: `${by} reported ProvisioningFailed`,
      event: { message: failed.message ?? "", ...(count !== undefined ? { count } : {}), ...(when ? { lastTimestamp: when } : {}), ...(source ? { source } : {}) },
    };
  }
  // Until the scheduler picks a node (and says so on the claim), nothing is provisioned: by design.
  if (cls?.volumeBindingMode === "WaitForFirstConsumer" && !claim.metadata.annotations?.[selectedNodeAnnotation]) {
    const pod = ctx.pod?.metadata.name;
    return {
      reason: "WaitForFirstConsumer",
      stuck: false,
      message: `storage class "${className}" has volumeBindingMode WaitForFirstConsumer, so the volume is provisioned once ${pod ? `pod ${pod}` : "a pod that uses the claim"} is scheduled`,
    };
  }
  return undefined;
}

/** Where a claim differs from a template in what this tool changes (size, class, attributes class). */
export function matchesTemplate(claim: PersistentVolumeClaim, template: ClaimTemplate, defaultClass: string | undefined): boolean {
  const size = template.spec.resources?.requests?.storage;
  const request = claim.spec.resources?.requests?.storage;
  if (size && request && size !== request && !sameQuantity(size, request)) return false;
  // No class in the template: the claim got the default class when it was created.
  const cls = template.spec.storageClassName ?? defaultClass;
  if (cls !== undefined && (claim.spec.storageClassName ?? "") !== cls) return false;
  return (template.spec.volumeAttributesClassName ?? "") === (claim.spec.volumeAttributesClassName ?? "");
}

/**
 * The commands that have a never-bound claim created again from the template: its delete, then
 * its pod's; the StatefulSet controller creates both again. Without a pod, the claim's delete alone.
 */
export function recreateByHand(claim: string, namespace: string, pod: string, podExists: boolean): RecreateByHand {
  const deleteClaim = `kubectl delete pvc ${claim} -n ${namespace}`;
  if (!podExists) return { command: deleteClaim, warning: `no pod uses it: the StatefulSet controller creates a new claim when it creates pod ${pod}` };
  return { command: `${deleteClaim} && kubectl delete pod ${pod} -n ${namespace}`, warning: `pod ${pod} restarts: the StatefulSet controller creates it again, with a new claim` };
}
