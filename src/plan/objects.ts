// What a StatefulSet's pods and claims are, by Kubernetes' naming rules: pod `<sts>-<ordinal>`,
// claim `<template>-<sts>-<ordinal>`. Pure, shared by the plan, the writer and `show`.
import type { ClaimTemplate, PersistentVolumeClaim, Pod, StatefulSet, StorageClass } from "../api/types";
import { sameQuantity } from "./quantity";

/** Ordinal of a name `<prefix><ordinal>`, or undefined. */
export function ordinalOf(name: string, prefix: string): number | undefined {
  if (!name.startsWith(prefix)) return undefined;
  const rest = name.slice(prefix.length);
  return /^(0|[1-9]\d*)$/.test(rest) ? Number(rest) : undefined;
}

/**
 * Kubernetes names are ASCII: ordered by code unit, as kubectl orders them. (localeCompare would
 * give the same order for them, but its first call initialises a collator: milliseconds.)
 */
export function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function claimTemplateNames(sts: StatefulSet): string[] {
  return (sts.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name ?? "");
}

export function templateSize(t: ClaimTemplate): string | undefined {
  return t.spec?.resources?.requests?.storage;
}

export function ordinalStart(sts: StatefulSet): number {
  return sts.spec.ordinals?.start ?? 0;
}

export function replicasOf(sts: StatefulSet): number {
  return sts.spec.replicas ?? 1;
}

/** Outside [start, start + replicas): left by an earlier scale-down. */
export function isLeftover(sts: StatefulSet, ordinal: number): boolean {
  const start = ordinalStart(sts);
  return ordinal < start || ordinal >= start + replicasOf(sts);
}

/** The StatefulSet's selector as a label selector string (matchLabels; what the controller uses for its pods). */
export function labelSelector(sts: StatefulSet): string {
  return Object.entries(sts.spec.selector.matchLabels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
}

export function podRevision(pod: Pod): string | undefined {
  return pod.metadata.labels?.["controller-revision-hash"];
}

export function isReady(p: Pod | undefined): boolean {
  return !!p && !p.metadata.deletionTimestamp && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
}

export function controlledBy(o: { metadata: { ownerReferences?: { uid: string; controller?: boolean }[] } } | undefined, uid: string): boolean {
  return o?.metadata.ownerReferences?.some((r) => r.controller && r.uid === uid) === true;
}

/** Pods that belong to the StatefulSet: named `<sts>-<ordinal>`, not owned by another controller. */
export function memberPods(name: string, uid: string | undefined, pods: readonly Pod[]): Pod[] {
  return pods.filter((p) => {
    if (ordinalOf(p.metadata.name ?? "", `${name}-`) === undefined) return false;
    const controller = p.metadata.ownerReferences?.find((r) => r.controller);
    return !controller || (controller.kind === "StatefulSet" && (uid === undefined || controller.uid === uid || controller.name === name));
  });
}

/** The cluster's default StorageClass (the annotation, GA or beta), if any. */
export function defaultStorageClass(classes: readonly StorageClass[]): string | undefined {
  const isDefault = (c: StorageClass) =>
    c.metadata.annotations?.["storageclass.kubernetes.io/is-default-class"] === "true" || c.metadata.annotations?.["storageclass.beta.kubernetes.io/is-default-class"] === "true";
  return classes.find(isDefault)?.metadata.name;
}

/**
 * Claims and pods looked up by name instead of scanned once per StatefulSet, so a view over
 * thousands of claims costs time in proportion to them. A claim of template T of StatefulSet S
 * is named T-S-ORDINAL; claims are filed under "namespace/T-S".
 */
export interface ObjectIndex {
  claims: Map<string, { claim: PersistentVolumeClaim; ordinal: number }[]>;
  pods: Map<string, Pod>;
  /** Pods named `<prefix>-<ordinal>`, by namespace/prefix: the candidates of memberPods. */
  podsByPrefix: Map<string, Pod[]>;
}

/** namespaceOf: how objects are filed; a plan, which reads one namespace, files them all under "". */
export function indexObjects(claims: readonly PersistentVolumeClaim[], pods: readonly Pod[], namespaceOf: (o: PersistentVolumeClaim | Pod) => string = (o) => o.metadata.namespace ?? ""): ObjectIndex {
  const byPrefix: ObjectIndex["claims"] = new Map();
  for (const claim of claims) {
    const m = /^(.*)-(0|[1-9]\d*)$/.exec(claim.metadata.name ?? "");
    if (!m) continue;
    const key = `${namespaceOf(claim)}/${m[1]}`;
    const list = byPrefix.get(key);
    const entry = { claim, ordinal: Number(m[2]) };
    if (list) list.push(entry);
    else byPrefix.set(key, [entry]);
  }
  const byName: ObjectIndex["pods"] = new Map();
  const podsByPrefix: ObjectIndex["podsByPrefix"] = new Map();
  for (const p of pods) {
    const ns = namespaceOf(p);
    byName.set(`${ns}/${p.metadata.name ?? ""}`, p);
    const m = /^(.*)-(0|[1-9]\d*)$/.exec(p.metadata.name ?? "");
    if (!m) continue;
    const key = `${ns}/${m[1]}`;
    const list = podsByPrefix.get(key);
    if (list) list.push(p);
    else podsByPrefix.set(key, [p]);
  }
  return { claims: byPrefix, pods: byName, podsByPrefix };
}

export interface MemberClaim {
  claim: PersistentVolumeClaim;
  template: string;
  ordinal: number;
  pod?: Pod;
  leftover: boolean;
}

/** Every claim of every claim template of the StatefulSet, with its ordinal and pod; ns as filed in the index. */
export function memberClaims(sts: StatefulSet, index: ObjectIndex, ns: string): MemberClaim[] {
  const name = sts.metadata.name ?? "";
  return claimTemplateNames(sts).flatMap((template) =>
    (index.claims.get(`${ns}/${template}-${name}`) ?? []).map(({ claim, ordinal }) => {
      const pod = index.pods.get(`${ns}/${name}-${ordinal}`);
      return { claim, template, ordinal, ...(pod ? { pod } : {}), leftover: isLeftover(sts, ordinal) };
    }),
  );
}

/** Claim templates compared by what matters: names, sizes by value, classes, attributes classes. */
/** The same keys and values, in any order. */
export function sameMap(a: Readonly<Record<string, string>> | undefined, b: Readonly<Record<string, string>> | undefined): boolean {
  const x = Object.keys(a ?? {});
  return x.length === Object.keys(b ?? {}).length && x.every((k) => b?.[k] === a![k]);
}

/** The labels, annotations and access modes of two claim templates are the same (what set -f and --template-label change besides the spec's size and classes). */
export function sameTemplateMetadata(t: ClaimTemplate, u: ClaimTemplate): boolean {
  return sameMap(t.metadata.labels, u.metadata.labels) && sameMap(t.metadata.annotations, u.metadata.annotations) && (t.spec.accessModes ?? []).join() === (u.spec.accessModes ?? []).join();
}

/** Two lists of claim templates ask for the same claims: names, sizes (by value), classes, and (unless `specOnly`) labels, annotations and access modes. */
export function sameClaimTemplates(a: readonly ClaimTemplate[] = [], b: readonly ClaimTemplate[] = [], specOnly = false): boolean {
  if (a.length !== b.length) return false;
  return a.every((t, i) => {
    const u = b[i]!;
    return (
      t.metadata.name === u.metadata.name &&
      sameQuantity(templateSize(t) ?? "", templateSize(u) ?? "") &&
      (t.spec.storageClassName ?? "") === (u.spec.storageClassName ?? "") &&
      (t.spec.volumeAttributesClassName ?? "") === (u.spec.volumeAttributesClassName ?? "") &&
      (specOnly || sameTemplateMetadata(t, u))
    );
  });
}
