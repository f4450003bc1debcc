// The data of a change that adds or removes claim templates (set -f): the one change whose pod
// template changes with them, so every pod restarts once. Apart from the Plan/Journal core
// (./types.ts), which holds it only as an optional part; the logic is in ./roll.ts.
import type { ClaimTemplate, StatefulSetSpec } from "../api/types";

/** Where a container of the pod template uses a claim: a mount (mountPath) or, for a raw block claim, a device (devicePath). */
export interface ClaimMount {
  container: string;
  /** An init container's (spec.template.spec.initContainers). */
  init?: true;
  path: string;
  /** volumeDevices: the claim is a raw block device at `path`. */
  device?: true;
  subPath?: string;
  readOnly?: boolean;
}

/** A claim of a removed template: kept, with the command that would delete it (this tool never does). */
export interface KeptClaim {
  name: string;
  uid: string;
  deleteCommand: string;
}

/**
 * Claim templates added or removed, with the pod template change that mounts or unmounts them. The
 * StatefulSet is re-created with updateStrategy OnDelete (./roll.ts says why), every pod is then
 * evicted in `order`, one at a time, and the original updateStrategy is put back exactly.
 */
export interface TemplateRoll {
  /** Added templates, as the manifest has them, and where the pod template mounts each. */
  added: { claim: string; template: ClaimTemplate; size?: string; storageClass?: string; mounts: ClaimMount[] }[];
  /** Removed templates, where the pods mounted each, and their claims: kept, whatever persistentVolumeClaimRetentionPolicy says. */
  removed: { claim: string; mounts: ClaimMount[]; claims: KeptClaim[] }[];
  /** The pods, in the order they restart. */
  order: string[];
  /** Why that order, in words. */
  orderReason: string;
  /** The original's updateStrategy, put back exactly once every pod restarted. */
  updateStrategy: StatefulSetSpec["updateStrategy"];
}

/** What the manifest asks beyond the existing templates' directives: templates added and removed, and the pod template that mounts them. */
export interface TemplateSetRequest {
  added: ClaimTemplate[];
  removed: string[];
  /** The live pod template with the added templates' mounts inserted and the removed ones' taken out: nothing else of it changes. */
  podTemplate: StatefulSetSpec["template"];
  /** Where the manifest mounts each added template, and where the live pods mount each removed one. */
  mounts: Record<string, ClaimMount[]>;
  /** The manifest's claim templates in its order: the re-created object has them so (a later helm upgrade compares the list whole). */
  order: string[];
}
