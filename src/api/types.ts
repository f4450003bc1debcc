// The parts of Kubernetes objects this tool reads, as plain JSON. Objects are kept as the
// server sent them (never round-tripped through typed models) so that fields this tool
// does not know about, including ones newer than it, are copied unchanged.

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  [key: string]: unknown;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

export interface ClaimSpec {
  accessModes?: string[];
  storageClassName?: string;
  volumeMode?: string;
  volumeName?: string;
  volumeAttributesClassName?: string;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  [key: string]: unknown;
}

export interface ClaimTemplate {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: ClaimSpec;
  [key: string]: unknown;
}

export interface PersistentVolumeClaim extends KubeObject {
  spec: ClaimSpec;
  status?: {
    phase?: string;
    capacity?: Record<string, string>;
    conditions?: { type: string; status: string; message?: string; reason?: string; lastTransitionTime?: string }[];
    /** What the resize controllers work towards (RecoverVolumeExpansionFailure, 1.32+). */
    allocatedResources?: Record<string, string>;
    /** e.g. storage: ControllerResizeInProgress, NodeResizePending, ...Infeasible. */
    allocatedResourceStatuses?: Record<string, string>;
    currentVolumeAttributesClassName?: string;
    modifyVolumeStatus?: { targetVolumeAttributesClassName?: string; status?: string };
    [key: string]: unknown;
  };
}

export interface StatefulSetSpec {
  replicas?: number;
  serviceName?: string;
  selector: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
  template: { metadata?: ObjectMeta; spec: { volumes?: { name: string }[]; [key: string]: unknown } };
  volumeClaimTemplates?: ClaimTemplate[];
  podManagementPolicy?: string;
  updateStrategy?: { type?: string; rollingUpdate?: { partition?: number; maxUnavailable?: unknown } };
  persistentVolumeClaimRetentionPolicy?: { whenDeleted?: string; whenScaled?: string };
  ordinals?: { start?: number };
  [key: string]: unknown;
}

export interface StatefulSet extends KubeObject {
  spec: StatefulSetSpec;
  status?: {
    observedGeneration?: number;
    replicas?: number;
    readyReplicas?: number;
    currentReplicas?: number;
    updatedReplicas?: number;
    currentRevision?: string;
    updateRevision?: string;
    [key: string]: unknown;
  };
}

export interface Pod extends KubeObject {
  spec?: {
    nodeName?: string;
    volumes?: {
      name: string;
      persistentVolumeClaim?: { claimName: string; readOnly?: boolean };
      downwardAPI?: { items: { path: string; fieldRef: { fieldPath: string } }[] };
      emptyDir?: Record<string, unknown>;
    }[];
    [key: string]: unknown;
  };
  status?: {
    phase?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }[];
    containerStatuses?: {
      name: string;
      image?: string;
      state?: { terminated?: { exitCode?: number; message?: string; reason?: string }; waiting?: { reason?: string; message?: string }; running?: { startedAt?: string } };
      ready?: boolean;
    }[];
    /** Why the pod failed (kubelet's admission: OutOfcpu, NodeAffinity, ...), with a message. */
    reason?: string;
    message?: string;
    [key: string]: unknown;
  };
}

export interface PersistentVolume extends KubeObject {
  spec: {
    capacity?: Record<string, string>;
    persistentVolumeReclaimPolicy?: string;
    storageClassName?: string;
    claimRef?: { namespace?: string; name?: string; uid?: string; resourceVersion?: string; apiVersion?: string; kind?: string };
    [key: string]: unknown;
  };
  status?: { phase?: string; [key: string]: unknown };
}

export interface StorageClass extends KubeObject {
  provisioner?: string;
  allowVolumeExpansion?: boolean;
  /** Immediate (the default) or WaitForFirstConsumer (provisioned once a pod using the claim is scheduled). */
  volumeBindingMode?: string;
}

/** A core/v1 Event (events.k8s.io/v1 events are the same objects, read through core/v1 here). */
export interface KubeEvent extends KubeObject {
  involvedObject?: { kind?: string; namespace?: string; name?: string; uid?: string };
  reason?: string;
  message?: string;
  type?: string;
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  /** Set instead of the timestamps above by events.k8s.io writers. */
  eventTime?: string;
  series?: { count?: number; lastObservedTime?: string };
  source?: { component?: string; host?: string };
  reportingComponent?: string;
}

export interface ObjectList<T> {
  metadata: { resourceVersion?: string; continue?: string };
  /** null in a metadata-only list of nothing (PartialObjectMetadataList). */
  items: T[] | null;
}

export interface ResourceQuota extends KubeObject {
  spec?: { hard?: Record<string, string>; scopes?: string[]; scopeSelector?: unknown };
  status?: { hard?: Record<string, string>; used?: Record<string, string> };
}

/** A node's taint: a pod that does not tolerate it is not scheduled there (NoSchedule) or is evicted (NoExecute). */
export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

/** A pod's toleration of a taint (Equal: key and value; Exists: the key, any value). */
export interface Toleration {
  key?: string;
  operator?: "Equal" | "Exists";
  value?: string;
  effect?: string;
}

/** A node as the tool reads it: whether it is cordoned, its taints, and its Ready condition. */
export interface KubeNode extends KubeObject {
  spec?: { unschedulable?: boolean; taints?: Taint[] };
  status?: { conditions?: { type: string; status: string; reason?: string; lastHeartbeatTime?: string }[] };
}

/** policy/v1 PodDisruptionBudget: how many of the pods it selects may be down at once. */
export interface PodDisruptionBudget extends KubeObject {
  spec: {
    selector?: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] };
    minAvailable?: number | string;
    maxUnavailable?: number | string;
  };
}

/** The attributes of a SelfSubjectAccessReview: may the current user do this? */
export interface AccessCheck {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

/** kubectl's --dry-run: none (really change), client (print only), server (the server checks, persists nothing). */
export type DryRun = "none" | "client" | "server";

/** Where a client acts, for the plan and the confirmation prompt to name. */
export interface Target {
  /** The kubeconfig context ("" in a pod with in-cluster configuration). */
  context: string;
  /** The kubeconfig cluster name ("" in-cluster). */
  cluster: string;
  server: string;
  namespace: string;
  /** The kubeconfig user name, when there is one. */
  user?: string;
  /** --as (or the kubeconfig's as), with its groups: who the server is asked to act as. */
  impersonate?: string;
}
