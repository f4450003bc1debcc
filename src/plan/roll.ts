// set -f with claim templates added or removed: the one change whose pod template changes too,
// so that the pods mount the new claims (or stop mounting the removed ones). What the manifest
// may ask (and what is refused), the pod template to create, the order the pods restart in, and the
// object created while they do. Pure.
//
// Why the StatefulSet is created with updateStrategy OnDelete while the pods restart, and not
// with its own RollingUpdate (or a partition lowered one ordinal at a time): the controller's
// rolling update deletes each pod itself, with no Eviction API, so no PodDisruptionBudget is asked
// and no check of ours runs between two pods; a partition still leaves the deletion to it. With
// OnDelete the controller only re-creates the pods this tool evicts, one at a time, each waited for
// until Ready; the original updateStrategy is put back exactly once every pod runs the new template.
//
// Why the order is lowest ordinal first when a template is added (and not highest first, as a
// rolling update goes): a pod started before the template existed has no volume for it, and the
// controller's sync stops at the first such pod it meets, lowest ordinal first, on the failed
// update of its volumes (kubernetes/kubernetes#141876; pkg/controller/statefulset processReplica,
// in both OrderedReady and Parallel), before it re-creates any pod above it. An evicted pod above
// an old one would never come back; one below every old pod always does.
import type { ClaimTemplate, StatefulSet, StatefulSetSpec } from "../api/types";
import type { ClaimEffect } from "./types";
import type { ClaimMount, KeptClaim, TemplateRoll, TemplateSetRequest } from "./roll-types";
import { ordinalStart, replicasOf, templateSize } from "./objects";

type PodTemplate = StatefulSetSpec["template"];
type Entry = { name: string; mountPath?: string; devicePath?: string; subPath?: string; readOnly?: boolean; [key: string]: unknown };
type Container = { name: string; volumeMounts?: Entry[]; volumeDevices?: Entry[]; [key: string]: unknown };
const lists = ["initContainers", "containers"] as const;
const kinds = ["volumeMounts", "volumeDevices"] as const;

const containersOf = (t: PodTemplate, list: (typeof lists)[number]) => (t.spec[list] as Container[] | undefined) ?? [];
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/** Where the pod template uses the volume `name` (a claim template's name is its volume's). */
export function claimMounts(t: PodTemplate, name: string): ClaimMount[] {
  const out: ClaimMount[] = [];
  for (const list of lists)
    for (const c of containersOf(t, list))
      for (const kind of kinds)
        for (const m of c[kind] ?? []) {
          if (m.name !== name) continue;
          out.push({
            container: c.name,
            ...(list === "initContainers" ? { init: true as const } : {}),
            path: String(kind === "volumeMounts" ? m.mountPath : m.devicePath),
            ...(kind === "volumeDevices" ? { device: true as const } : {}),
            ...(m.subPath ? { subPath: m.subPath } : {}),
            ...(m.readOnly ? { readOnly: true } : {}),
          });
        }
  return out;
}

/** A mount in words: `container main at /data`, `init container setup at /data (subPath x, read-only)`. */
export function mountText(m: ClaimMount): string {
  const extra = [m.subPath ? `subPath ${m.subPath}` : "", m.readOnly ? "read-only" : "", m.device ? "raw block device" : ""].filter(Boolean).join(", ");
  return `${m.init ? "init container" : "container"} ${m.container} at ${m.path}${extra ? ` (${extra})` : ""}`;
}

const mountsText = (ms: readonly ClaimMount[]) => ms.map(mountText).join(", ");
const mountKey = (m: ClaimMount) => JSON.stringify([m.init ?? false, m.container, m.path, m.device ?? false, m.subPath ?? "", m.readOnly ?? false]);

/** The volumes the pod template may mount: its own volumes and the claim templates. */
function definedVolumes(sts: StatefulSet): Set<string> {
  return new Set([...(sts.spec.template.spec.volumes ?? []).map((v) => v.name), ...(sts.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name ?? "")]);
}

/** Every mount of the manifest's pod template that names a volume the manifest does not define. */
function undefinedMounts(wanted: StatefulSet): string[] {
  const defined = definedVolumes(wanted);
  const out: string[] = [];
  for (const list of lists)
    for (const c of containersOf(wanted.spec.template, list))
      for (const kind of kinds)
        for (const m of c[kind] ?? [])
          if (!defined.has(m.name))
            out.push(
              `${list === "initContainers" ? "init container" : "container"} ${c.name} of the manifest mounts "${m.name}", which the manifest defines neither as a claim template nor as a volume of the pod template: the server would refuse the StatefulSet after it was deleted; add the claim template, or remove the mount`,
            );
  return out;
}

/**
 * The live pod template with the added templates' mounts inserted (each where the manifest has it,
 * after the entry that precedes it there) and the removed templates' mounts taken out: nothing else
 * of the pod template changes (the rest of the manifest's is left for helm upgrade or the GitOps tool).
 */
function editedPodTemplate(live: PodTemplate, wanted: PodTemplate, added: ReadonlySet<string>, removed: ReadonlySet<string>): PodTemplate {
  const out = clone(live);
  for (const list of lists) {
    for (const c of containersOf(out, list)) {
      const theirs = containersOf(wanted, list).find((w) => w.name === c.name);
      for (const kind of kinds) {
        const had = c[kind] !== undefined;
        const mine = (c[kind] ?? []).filter((m) => !removed.has(m.name));
        const their = theirs?.[kind] ?? [];
        their.forEach((m, i) => {
          if (!added.has(m.name)) return;
          let at = 0;
          for (let j = i - 1; j >= 0; j--) {
            const k = mine.findIndex((x) => x.name === their[j]!.name && x.mountPath === their[j]!.mountPath && x.devicePath === their[j]!.devicePath);
            if (k >= 0) {
              at = k + 1;
              break;
            }
          }
          mine.splice(at, 0, clone(m));
        });
        if (mine.length || had) c[kind] = mine;
      }
    }
  }
  return out;
}

/** What set -f asks when the manifest adds or removes claim templates: the request, or why it is refused. */
export function templateSetChange(live: StatefulSet, wanted: StatefulSet, added: readonly string[], removed: readonly string[]): { request?: TemplateSetRequest; refusals: string[] } {
  const refusals = undefinedMounts(wanted);
  const liveVolumes = new Set((live.spec.template.spec.volumes ?? []).map((v) => v.name));
  const mounts: Record<string, ClaimMount[]> = {};
  for (const name of added) {
    const where = claimMounts(wanted.spec.template, name);
    mounts[name] = where;
    if (!where.length) {
      refusals.push(
        `the manifest adds claim template ${name} but no container of its pod template mounts it: nothing would use it; add its volumeMount to the pod template, or leave the template out`,
      );
      continue;
    }
    if (liveVolumes.has(name)) refusals.push(`the pod template in the cluster has a volume named ${name} already: a claim template of that name would replace it; rename the claim template`);
    for (const m of where) {
      const has = containersOf(live.spec.template, m.init ? "initContainers" : "containers").some((c) => c.name === m.container);
      if (!has)
        refusals.push(
          `the manifest mounts claim template ${name} in ${m.init ? "init container" : "container"} ${m.container}, which the pod template in the cluster does not have: this tool adds only the mount; roll out the new container first (helm upgrade with the claim templates as they are now), then run set -f again`,
        );
    }
  }
  const wantedVolumes = new Set((wanted.spec.template.spec.volumes ?? []).map((v) => v.name));
  for (const name of removed) {
    mounts[name] = claimMounts(live.spec.template, name);
    if (wantedVolumes.has(name))
      refusals.push(
        `the manifest replaces claim template ${name} with a volume of the pod template of the same name: the pods would lose the claim's data from that path; keep the claim template, or give the new volume another name`,
      );
  }
  // The claims that stay: where their pods mount them must not move (a changed path is another layout of the data).
  for (const t of wanted.spec.volumeClaimTemplates ?? []) {
    const name = t.metadata.name ?? "";
    if (added.includes(name)) continue;
    const before = claimMounts(live.spec.template, name);
    const after = claimMounts(wanted.spec.template, name);
    const key = (ms: ClaimMount[]) => ms.map(mountKey).sort().join("|");
    if (key(before) !== key(after))
      refusals.push(
        `the manifest changes where claim ${name} is mounted (${mountsText(before) || "nowhere"} -> ${mountsText(after) || "nowhere"}): set -f changes only the mounts of the claim templates it adds or removes; keep the mount as it is, and change it with helm upgrade or your GitOps tool afterwards (the pods roll once more)`,
      );
  }
  if (refusals.length) return { refusals };
  return {
    refusals,
    request: {
      added: added.map((n) => clone((wanted.spec.volumeClaimTemplates ?? []).find((t) => t.metadata.name === n)!)),
      removed: [...removed],
      podTemplate: editedPodTemplate(live.spec.template, wanted.spec.template, new Set(added), new Set(removed)),
      mounts,
      order: (wanted.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name ?? ""),
    },
  };
}

/** The claim templates after the change, in the manifest's order (a later helm upgrade compares the list as a whole). */
export function templatesAfter(kept: readonly ClaimTemplate[], set: TemplateSetRequest): ClaimTemplate[] {
  const order = set.order;
  const byName = new Map([...kept.filter((t) => !set.removed.includes(t.metadata.name ?? "")), ...set.added].map((t) => [t.metadata.name ?? "", t]));
  const named = order.filter((n) => byName.has(n)).map((n) => byName.get(n)!);
  // Kept templates the order does not name (it always names them all: the manifest's) go last.
  return [...named, ...[...byName.values()].filter((t) => !named.includes(t))];
}

/** The words of the request for templates added (`+logs`) and removed (`-cache`): what history and the journal record. */
export function templateSetWords(set: TemplateSetRequest): string[] {
  return [...set.added.map((t) => `+${t.metadata.name}`), ...set.removed.map((n) => `-${n}`)];
}

/** The pods in the order they restart (the header says why it is lowest first when a template is added). */
export function rollOrder(sts: StatefulSet, adds: boolean): { order: string[]; reason: string } {
  const name = sts.metadata.name ?? "";
  const ordinals = Array.from({ length: replicasOf(sts) }, (_, i) => ordinalStart(sts) + i);
  if (adds)
    return {
      order: ordinals.map((o) => `${name}-${o}`),
      reason:
        "lowest ordinal first: the StatefulSet controller stops at the first pod that lacks the new volume, lowest first, and would not re-create an evicted pod above it (kubernetes/kubernetes#141876)",
    };
  return { order: ordinals.reverse().map((o) => `${name}-${o}`), reason: "highest ordinal first, as a rolling update goes" };
}

/** The roll of a plan: templates added and removed, their mounts, the claims kept, the restart order. */
export function planRoll(sts: StatefulSet, set: TemplateSetRequest, claims: readonly ClaimEffect[], namespace: string, defaultClass: string | undefined): TemplateRoll {
  const { order, reason } = rollOrder(sts, set.added.length > 0);
  const kept = (claim: string): KeptClaim[] =>
    claims.filter((c) => c.template === claim).map((c) => ({ name: c.name, uid: c.uid, deleteCommand: `kubectl delete persistentvolumeclaim ${c.name} -n ${namespace}` }));
  return {
    added: set.added.map((t) => ({
      claim: t.metadata.name ?? "",
      template: t,
      ...(templateSize(t) ? { size: templateSize(t) } : {}),
      ...((t.spec.storageClassName ?? defaultClass) ? { storageClass: t.spec.storageClassName ?? `${defaultClass} (default)` } : {}),
      mounts: set.mounts[t.metadata.name ?? ""] ?? [],
    })),
    removed: set.removed.map((claim) => ({ claim, mounts: set.mounts[claim] ?? [], claims: kept(claim) })),
    order,
    orderReason: reason,
    updateStrategy: clone(sts.spec.updateStrategy ?? { type: "RollingUpdate", rollingUpdate: { partition: 0 } }),
  };
}

/** What is created: the desired object, but with updateStrategy OnDelete while its pods restart (the header says why). */
export function objectToCreate(desired: StatefulSet, roll: TemplateRoll | undefined): StatefulSet {
  if (!roll) return desired;
  return { ...desired, spec: { ...desired.spec, updateStrategy: { type: "OnDelete" } } };
}

/** Every pod restarts once: the lines a plan says it with, and its warning. */
export function rollWarning(roll: TemplateRoll, ref: string): string {
  const what = [
    roll.added.length ? `adds claim template(s) ${roll.added.map((a) => a.claim).join(", ")}` : "",
    roll.removed.length ? `removes claim template(s) ${roll.removed.map((r) => r.claim).join(", ")}` : "",
  ]
    .filter(Boolean)
    .join(" and ");
  const n = roll.order.length;
  return `the manifest ${what} with the pod template's mounts: ${n ? `every pod of ${ref} restarts once (${n} pod(s)), one at a time, ${roll.orderReason.split(":")[0]}, through the Eviction API` : `${ref} has no pods to restart`}; existing claims and their data are untouched`;
}
