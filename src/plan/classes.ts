// What a storage class can and cannot do, as `show` and the plan say it: whether its volumes
// expand, when it binds a claim, and which of its volumes are tied to a node (their
// PersistentVolumes' node affinity, where those were read). Pure.
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from "../api/types";

export interface ClassView {
  name: string;
  provisioner?: string;
  /** The cluster's default class. */
  default: boolean;
  /** allowVolumeExpansion; null when the class could not be read. */
  expandable: boolean | null;
  /** Immediate (the API's default) or WaitForFirstConsumer; absent when the class could not be read. */
  volumeBindingMode?: string;
  /** Claims of this class whose volume can be used only where its node affinity allows (one node, or a zone), by where; absent when none is or the volumes were not read. */
  boundVolumes?: { where: string; claims: string[] }[];
}

type Terms = { required?: { nodeSelectorTerms?: { matchExpressions?: { key: string; operator?: string; values?: string[] }[] }[] } };

/**
 * Where a volume can be used, from its required node affinity: "node NAME" for one host name,
 * else its single-valued terms as KEY=VALUE (a driver's own node key, a zone); undefined when it
 * has none (any node).
 */
export function volumeTopology(pv: PersistentVolume): string | undefined {
  const terms = (pv.spec["nodeAffinity"] as Terms | undefined)?.required?.nodeSelectorTerms ?? [];
  const each = terms
    .map((t) =>
      (t.matchExpressions ?? [])
        .filter((e) => (e.operator ?? "In") === "In" && e.values?.length === 1)
        .map((e) => (e.key === "kubernetes.io/hostname" ? `node ${e.values![0]}` : `${e.key}=${e.values![0]}`))
        .join(", "),
    )
    .filter(Boolean);
  return each.length ? each.join(" or ") : undefined;
}

const sources = ["csi", "local", "hostPath", "nfs", "iscsi", "fc", "rbd", "cephfs", "glusterfs", "awsElasticBlockStore", "gcePersistentDisk", "azureDisk", "azureFile", "vsphereVolume"];

/** What a PersistentVolume is: "csi DRIVER", local, hostPath, nfs, ... (its volume source). */
export function volumeSource(pv: PersistentVolume): string | undefined {
  const csi = pv.spec["csi"] as { driver?: string } | undefined;
  if (csi) return `csi ${csi.driver ?? ""}`.trim();
  return sources.find((s) => pv.spec[s] !== undefined);
}

/**
 * The views of the named classes, in the order named (each once); claims and volumes tell which of
 * their volumes are bound. `listed`: `classes` is every class of the cluster, so a name not among
 * them does not exist and is left out (the claims' notes say so); otherwise it could not be read.
 */
export function classViews(
  names: readonly (string | undefined)[],
  classes: readonly StorageClass[],
  listed: boolean,
  defaultClass: string | undefined,
  claims: readonly PersistentVolumeClaim[],
  volumes?: readonly PersistentVolume[],
): ClassView[] {
  const byName = new Map(classes.map((c) => [c.metadata.name ?? "", c]));
  const volumeByName = new Map((volumes ?? []).map((v) => [v.metadata.name ?? "", v]));
  const out: ClassView[] = [];
  for (const name of new Set(names.filter((n): n is string => !!n))) {
    const cls = byName.get(name);
    if (!cls && listed) continue;
    const bound = new Map<string, string[]>();
    for (const c of claims) {
      const pv = c.spec.storageClassName === name && c.spec.volumeName ? volumeByName.get(c.spec.volumeName) : undefined;
      const where = pv ? volumeTopology(pv) : undefined;
      if (where) bound.set(where, [...(bound.get(where) ?? []), c.metadata.name ?? ""]);
    }
    out.push({
      name,
      ...(cls?.provisioner ? { provisioner: cls.provisioner } : {}),
      default: name === defaultClass,
      expandable: cls ? cls.allowVolumeExpansion === true : null,
      ...(cls ? { volumeBindingMode: cls.volumeBindingMode ?? "Immediate" } : {}),
      ...(bound.size ? { boundVolumes: [...bound].map(([where, names]) => ({ where, claims: names.sort() })) } : {}),
    });
  }
  return out;
}
