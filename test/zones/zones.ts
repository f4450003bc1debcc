// Helpers of the zones suite (scripts/cluster up --nodes 3): the nodes, their zones, and where each
// claim's pod runs and its volume lives and is attached.
import type { PersistentVolume, Pod } from "../../src/api/types";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { claims, kubectlJson, root } from "../shared/harness";
import { workload, workloadImage } from "../shared/node";

export const cluster = join(root, "scripts", "cluster");
export const zones: Record<string, string> = { "node-a": "zone-a", "node-b": "zone-b", "node-c": "zone-c" };

export interface NodeObject {
  metadata: { name: string; labels?: Record<string, string> };
  status?: { addresses?: { type: string; address: string }[]; conditions?: { type: string; status: string }[] };
}
export const nodeObjects = () => kubectlJson<{ items: NodeObject[] }>(["get", "nodes"]).items;
export const readyOf = (n: NodeObject) => n.status?.conditions?.find((c) => c.type === "Ready")?.status;
export const zoneOfNode = (name: string) => nodeObjects().find((n) => n.metadata.name === name)?.metadata.labels?.["topology.kubernetes.io/zone"];

/** The zones a PV's node affinity allows (topology.kubernetes.io/zone In [...]). */
export function affinityZones(pv: PersistentVolume): string[] {
  const terms = (pv.spec.nodeAffinity as { required?: { nodeSelectorTerms?: { matchExpressions?: { key: string; values?: string[] }[] }[] } } | undefined)?.required?.nodeSelectorTerms ?? [];
  return terms.flatMap((t) => (t.matchExpressions ?? []).filter((e) => e.key === "topology.kubernetes.io/zone").flatMap((e) => e.values ?? []));
}

/** Claim name -> where its pod runs and where its volume lives and is attached. */
export function placement(ns: string): Record<string, { node: string; podZone: string; volumeZones: string[]; attachedTo: string[] }> {
  const pods = kubectlJson<{ items: Pod[] }>(["get", "pods", "-n", ns]).items;
  const attachments = kubectlJson<{ items: { spec: { nodeName: string; source: { persistentVolumeName?: string } }; status?: { attached?: boolean } }[] }>(["get", "volumeattachments"]).items;
  const out: Record<string, { node: string; podZone: string; volumeZones: string[]; attachedTo: string[] }> = {};
  for (const c of claims(ns)) {
    const pod = pods.find((p) => (p.spec?.volumes as { persistentVolumeClaim?: { claimName: string } }[] | undefined)?.some((v) => v.persistentVolumeClaim?.claimName === c.metadata.name));
    const pvName = c.spec.volumeName!;
    const pv = kubectlJson<PersistentVolume>(["get", "pv", pvName]);
    const node = (pod?.spec as { nodeName?: string } | undefined)?.nodeName ?? "";
    out[c.metadata.name!] = {
      node,
      podZone: zones[node] ?? "",
      volumeZones: affinityZones(pv),
      attachedTo: attachments.filter((a) => a.spec.source.persistentVolumeName === pvName && a.status?.attached).map((a) => a.spec.nodeName),
    };
  }
  return out;
}

/** Three replicas, one per zone (a topology spread constraint that refuses a skew). */
export function spread(name: string, replicas: number, size: string, claim = "pgdata", storageClass?: string) {
  const sts = workload(name, { replicas, size, claim, podManagementPolicy: "Parallel", ...(storageClass ? { storageClass } : {}) });
  (sts.spec.template.spec as Record<string, unknown>)["topologySpreadConstraints"] = [
    { maxSkew: 1, topologyKey: "topology.kubernetes.io/zone", whenUnsatisfiable: "DoNotSchedule", labelSelector: { matchLabels: { app: name } } },
  ];
  return sts;
}

/** A container script that runs until SIGTERM, then exits 0 at once (a graceful termination). */
export const untilTerm = "trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done";

/**
 * A pod whose container app, of the workload image, runs `script`; with `claim`, that claim is
 * mounted at /data. `spec` adds to the pod's spec (nodeName, tolerations, ...).
 */
export function workloadPod(name: string, script: string, opts: { claim?: string; spec?: Record<string, unknown>; namespace?: string } = {}) {
  const mounted = opts.claim !== undefined;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, ...(opts.namespace ? { namespace: opts.namespace } : {}) },
    spec: {
      ...opts.spec,
      containers: [{ name: "app", image: workloadImage, imagePullPolicy: "Never", command: ["sh", "-c", script], ...(mounted ? { volumeMounts: [{ name: "v", mountPath: "/data" }] } : {}) }],
      ...(mounted ? { volumes: [{ name: "v", persistentVolumeClaim: { claimName: opts.claim } }] } : {}),
    },
  };
}

/** A ReadWriteOnce claim of 1Gi of the storage class. */
export function claimOf1Gi(name: string, storageClass: string, namespace?: string) {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, ...(namespace ? { namespace } : {}) },
    spec: { accessModes: ["ReadWriteOnce"], storageClassName: storageClass, resources: { requests: { storage: "1Gi" } } },
  };
}

/** scripts/cluster with ARGS (node stop NODE, node start NODE). */
export const clusterScript = (args: string[]) => execFileSync("bash", [cluster, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

interface EventSeen {
  reason?: string;
  message?: string;
  involvedObject?: { kind?: string; name?: string };
}
/** Events of the namespace that say a volume was attached twice or a pod had no node. */
export function troubleEvents(ns: string): string[] {
  return kubectlJson<{ items: EventSeen[] }>(["get", "events", "-n", ns])
    .items.filter((e) => e.reason === "FailedScheduling" || /Multi-Attach/i.test(e.message ?? "") || e.reason === "FailedAttachVolume")
    .map((e) => `${e.involvedObject?.kind}/${e.involvedObject?.name}: ${e.reason}: ${e.message}`);
}
