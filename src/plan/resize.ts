// What happens to the claims that already exist, when asked (--resize-existing, --vac-existing,
// --wait-resize, --restart-pods): which grow, which get another volume attributes class, which
// are followed until resized, and every reason to refuse before anything changes. Pure.
//
// The work is decided from the claims' actual requests, never from the template: after a crash
// the template may already have the new size while claims do not (RabbitMQ cluster-operator
// #782), so a rerun must still grow them.
import type { PersistentVolumeClaim, ResourceQuota } from "../kube/types";
import { templateSize } from "./desired";
import type { Journal } from "./journal";
import type { Observed, Plan, PlanRequest, Refusal, Step } from "./plan";
import { compareQuantities, formatQuantity, parseQuantity, type Quantity, toBytes } from "./quantity";

export interface ExistingOptions {
  /** --resize-existing: grow smaller claims, and set the attributes class a directive names. */
  resize: boolean;
  /** --vac-existing: set the attributes class a directive names on existing claims, no growth. */
  vac: boolean;
  /** --wait-resize: follow each claim until resized or FileSystemResizePending. */
  waitResize: boolean;
  /** --restart-pods: evict, one at a time, the pods of FileSystemResizePending claims. */
  restartPods: boolean;
}

/** What only this work needs to read: quotas and volume attributes classes. */
export interface ExistingObserved {
  /** undefined: they could not be read (quotaError says why); the server still enforces them. */
  resourceQuotas?: ResourceQuota[];
  quotaError?: string;
  /** Names of the VolumeAttributesClasses; undefined: not served (or not readable, see below). */
  volumeAttributesClasses?: string[];
  /** Why they could not be read (forbidden): the names are then left to the server. */
  volumeAttributesClassError?: string;
}

/** Where a claim's resize stands, from its status (conditions and allocatedResourceStatuses). */
export type ResizeState = "none" | "requested" | "resizing" | "filesystem-resize-pending" | "infeasible";

export interface ExistingClaim {
  name: string;
  template: string;
  ordinal: number;
  uid: string;
  resourceVersion?: string;
  pod?: string;
  leftover: boolean;
  phase?: string;
  request?: string;
  capacity?: string;
  storageClass?: string;
  volumeAttributesClass?: string;
  state: ResizeState;
  /** The patch of spec.resources.requests.storage this run sends. */
  grow?: { from: string; to: string };
  /** The patch of spec.volumeAttributesClassName this run sends. */
  setVolumeAttributesClass?: { from?: string; to: string };
  /** --wait-resize follows it: its request exceeds its capacity, or its attributes class is not applied yet. */
  follow: boolean;
  /** The attributes class to wait for, when one is being applied. */
  awaitVolumeAttributesClass?: string;
}

export interface QuotaCheck {
  quota: string;
  resource: string;
  hard: string;
  used: string;
  needed: string;
  left: string;
  fits: boolean;
}

export interface ExistingPlan {
  options: ExistingOptions;
  /** Every claim of the templates the directives name, with what happens to it. */
  claims: ExistingClaim[];
  /** Sum of what growing adds to requests.storage, as a quantity. */
  growth: string;
  quotas: QuotaCheck[];
}

/** The step order of a whole run; plan steps are always listed in this order. */
export const stepOrder: Step[] = ["write-journal", "grow-claims", "orphan-delete", "wait-gone", "create", "verify", "record", "remove-journal", "wait-resize", "restart-pods"];

const isTrue = (c: PersistentVolumeClaim, type: string) => c.status?.conditions?.some((x) => x.type === type && x.status === "True") === true;

function parsed(text: string | undefined): Quantity | undefined {
  if (text === undefined) return undefined;
  try {
    return parseQuantity(text);
  } catch {
    return undefined;
  }
}

const less = (a: string | undefined, b: string | undefined) => {
  const qa = parsed(a);
  const qb = parsed(b);
  return qa !== undefined && qb !== undefined && compareQuantities(qa, qb) < 0;
};

export function resizeState(c: PersistentVolumeClaim): ResizeState {
  const allocated = c.status?.allocatedResourceStatuses?.["storage"];
  if (allocated?.endsWith("Infeasible")) return "infeasible";
  if (isTrue(c, "FileSystemResizePending") || allocated === "NodeResizePending") return "filesystem-resize-pending";
  if (isTrue(c, "Resizing") || allocated === "ControllerResizeInProgress" || allocated === "NodeResizeInProgress") return "resizing";
  if (c.status?.phase === "Bound" && less(c.status?.capacity?.["storage"], c.spec.resources?.requests?.["storage"])) return "requested";
  return "none";
}

/** Bytes as Kubernetes would write them: binary suffixes where exact (`3Gi`), else decimal. */
export function formatBytes(bytes: bigint): string {
  return formatQuantity({ numerator: bytes, scale: 0, format: "BinarySI" });
}

function bytesOf(text: string | undefined): bigint | undefined {
  const q = parsed(text);
  return q === undefined ? undefined : toBytes(q);
}

export interface Growth {
  claim: string;
  storageClass?: string;
  /** What the quota charges for the claim now: the larger of its request and allocatedResources. */
  charged: string;
  to: string;
}

const storagePerClass = ".storageclass.storage.k8s.io/requests.storage";

/**
 * Whether every ResourceQuota of the namespace leaves room for the growth: `requests.storage`
 * counts every claim, `<class>.storageclass.storage.k8s.io/requests.storage` the claims of that
 * class. Exact byte arithmetic (BigInt). Quotas with scopes are left to the server.
 */
export function checkQuotas(quotas: readonly ResourceQuota[], growth: readonly Growth[]): { checks: QuotaCheck[]; warnings: string[] } {
  const checks: QuotaCheck[] = [];
  const warnings: string[] = [];
  const delta = (g: Growth) => {
    const d = (bytesOf(g.to) ?? 0n) - (bytesOf(g.charged) ?? 0n);
    return d > 0n ? d : 0n;
  };
  for (const q of [...quotas].sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""))) {
    const name = q.metadata.name ?? "";
    const hardAll = { ...(q.spec?.hard ?? {}), ...(q.status?.hard ?? {}) };
    const resources = Object.keys(hardAll).filter((r) => r === "requests.storage" || r.endsWith(storagePerClass)).sort();
    if (resources.length === 0) continue;
    if ((q.spec?.scopes?.length ?? 0) > 0 || q.spec?.scopeSelector) {
      warnings.push(`resourcequota "${name}" has scopes and is not checked here; the server enforces it when the claims grow`);
      continue;
    }
    for (const resource of resources) {
      const applies = resource === "requests.storage" ? () => true : (g: Growth) => `${g.storageClass ?? ""}${storagePerClass}` === resource;
      const needed = growth.filter(applies).reduce((sum, g) => sum + delta(g), 0n);
      if (needed === 0n) continue;
      const hard = bytesOf(hardAll[resource]);
      const usedText = q.status?.used?.[resource];
      if (usedText === undefined || hard === undefined) {
        warnings.push(`resourcequota "${name}" has not counted its ${resource} yet; the server checks it when the claims grow`);
        continue;
      }
      const used = bytesOf(usedText) ?? 0n;
      const left = hard > used ? hard - used : 0n;
      checks.push({ quota: name, resource, hard: formatBytes(hard), used: formatBytes(used), needed: formatBytes(needed), left: formatBytes(left), fits: needed <= left });
    }
  }
  return { checks, warnings };
}

function quotaRefusal(c: QuotaCheck, claims: number): Refusal {
  const raise = formatBytes((bytesOf(c.used) ?? 0n) + (bytesOf(c.needed) ?? 0n));
  return {
    message: `growing ${claims} claim(s) needs ${c.needed} more ${c.resource}, but resourcequota "${c.quota}" has ${c.left} left (used ${c.used} of ${c.hard}); nothing was changed: raise its ${c.resource} to at least ${raise}, or drop --resize-existing`,
    forceable: false,
  };
}

const list = (names: string[]) => names.join(", ");

/** What the journal keeps of this work, so a rerun knows an interrupted run was growing claims. */
export interface JournalExisting {
  options: ExistingOptions;
  claims: { name: string; uid: string; from?: string; to?: string; volumeAttributesClass?: string }[];
}

export function journalRecord(existing: ExistingPlan): JournalExisting {
  return {
    options: existing.options,
    claims: existing.claims
      .filter((c) => c.grow || c.setVolumeAttributesClass)
      .map((c) => ({ name: c.name, uid: c.uid, ...(c.grow ? { from: c.grow.from, to: c.grow.to } : {}), ...(c.setVolumeAttributesClass ? { volumeAttributesClass: c.setVolumeAttributesClass.to } : {}) })),
  };
}

function finishFlags(o: ExistingOptions): string {
  return [o.resize && "--resize-existing", o.vac && "--vac-existing"].filter(Boolean).join(" ");
}

/** The flags a journal's finish command needs: those of the run that was changing existing claims. */
export function journalFinishFlags(journal: Journal): string {
  return journal.existing ? ` ${finishFlags(journal.existing.options)}` : "";
}

/**
 * Adds the work on existing claims to a plan: per-claim actions, refusals, warnings, steps.
 * Without the flags and without vac= it only checks that a journal left by an interrupted
 * growth is not silently dropped.
 */
export function planExisting(plan: Plan, observed: Observed, request: PlanRequest): Plan {
  const options = request.existing;
  const refusals: Refusal[] = [];
  const warnings: string[] = [];
  const journal: Journal | undefined = plan.journal;
  const ref = `statefulset.apps/${request.name}`;
  const anyVac = request.directives.some((d) => d.volumeAttributesClass !== undefined);

  const interrupted = journal?.existing;
  if (interrupted && plan.mode === "fresh" && journal.step === "growing") {
    const missing = (interrupted.options.resize && !options?.resize) || (interrupted.options.vac && !options?.vac && !options?.resize);
    if (missing) {
      refusals.push({
        message: `an interrupted run was changing the existing claims of ${ref} (${journal.request.join(" ")} ${finishFlags(interrupted.options)}); finish it with: kubectl appstorage set ${request.name} ${journal.request.join(" ")} ${finishFlags(interrupted.options)} -n ${request.namespace}`,
        forceable: false,
      });
    }
  }

  if (anyVac) {
    const vacs = observed.existing?.volumeAttributesClasses;
    for (const d of request.directives.filter((x) => x.volumeAttributesClass !== undefined)) {
      if (vacs === undefined && observed.existing?.volumeAttributesClassError) {
        warnings.push(`volume attributes classes could not be read (${observed.existing.volumeAttributesClassError}); the server checks ${d.volumeAttributesClass}`);
        continue;
      }
      if (vacs === undefined) {
        refusals.push({
          message: `this server does not serve VolumeAttributesClass (storage.k8s.io), so claims cannot name one (${d.claim}=vac=${d.volumeAttributesClass}); it needs Kubernetes 1.34 or later, or the VolumeAttributesClass feature enabled: drop vac=`,
          forceable: false,
        });
        break;
      }
      if (!vacs!.includes(d.volumeAttributesClass!)) {
        refusals.push({ message: `volume attributes class "${d.volumeAttributesClass}" not found; list the classes with: kubectl get volumeattributesclass`, forceable: false });
      }
    }
  }

  if (!options || (!options.resize && !options.vac)) return merge(plan, undefined, refusals, warnings);
  if (options.vac && !options.resize && !anyVac) {
    refusals.push({ message: `--vac-existing needs a directive that names a volume attributes class, for example ${request.directives[0]?.claim ?? "data"}=vac=fast-iops`, forceable: false });
  }

  const templates = new Map((plan.desired.spec.volumeClaimTemplates ?? []).map((t) => [t.metadata.name ?? "", t]));
  const targets = new Map<string, { size?: string; vac?: string }>();
  for (const d of request.directives) {
    const t = templates.get(d.claim);
    if (!t) continue;
    targets.set(d.claim, {
      size: options.resize ? (d.size ?? templateSize(t)) : undefined,
      vac: options.resize || options.vac ? d.volumeAttributesClass : undefined,
    });
  }

  const raw = new Map(observed.claims.map((c) => [c.metadata.name, c]));
  const classes = new Map(observed.storageClasses.map((c) => [c.metadata.name, c]));
  const claims: ExistingClaim[] = [];
  const notBound: string[] = [];
  const shrinks: string[] = [];
  const unreadable: string[] = [];
  const noExpansion = new Map<string, string[]>();
  const growth: Growth[] = [];
  for (const effect of plan.claims) {
    const target = targets.get(effect.template);
    const c = raw.get(effect.name);
    if (!target || !c) continue;
    const request = c.spec.resources?.requests?.["storage"];
    const entry: ExistingClaim = {
      name: effect.name,
      template: effect.template,
      ordinal: effect.ordinal,
      uid: effect.uid,
      ...(c.metadata.resourceVersion ? { resourceVersion: c.metadata.resourceVersion } : {}),
      ...(effect.pod ? { pod: effect.pod } : {}),
      leftover: effect.leftover,
      phase: c.status?.phase,
      request,
      capacity: c.status?.capacity?.["storage"],
      storageClass: c.spec.storageClassName,
      volumeAttributesClass: c.spec.volumeAttributesClassName,
      state: resizeState(c),
      follow: false,
    };
    if (target.size !== undefined) {
      if (parsed(request) === undefined) unreadable.push(effect.name);
      else if (less(request, target.size)) entry.grow = { from: request!, to: target.size };
      else if (less(target.size, request)) shrinks.push(`${effect.name} (${request})`);
    }
    if (target.vac !== undefined && c.spec.volumeAttributesClassName !== target.vac) {
      entry.setVolumeAttributesClass = { ...(c.spec.volumeAttributesClassName ? { from: c.spec.volumeAttributesClassName } : {}), to: target.vac };
    }
    if (entry.grow || entry.setVolumeAttributesClass) {
      if (c.status?.phase !== "Bound") notBound.push(`${effect.name} (${c.status?.phase ?? "no phase"})`);
    }
    if (entry.grow) {
      const cls = c.spec.storageClassName ?? "";
      if (classes.get(cls)?.allowVolumeExpansion !== true) noExpansion.set(cls, [...(noExpansion.get(cls) ?? []), effect.name]);
      const allocated = c.status?.allocatedResources?.["storage"];
      growth.push({ claim: effect.name, storageClass: c.spec.storageClassName, charged: allocated && less(request, allocated) ? allocated : request!, to: entry.grow.to });
    }
    // Follow what is not finished: a request above the capacity (grown now or by an earlier
    // run), or an attributes class the driver has not applied yet.
    const finalRequest = entry.grow?.to ?? request;
    const capacity = c.status?.capacity?.["storage"];
    const sizePending = target.size !== undefined && c.status?.phase === "Bound" && less(capacity, finalRequest);
    const vacTarget = entry.setVolumeAttributesClass?.to ?? (target.vac !== undefined ? c.spec.volumeAttributesClassName : undefined);
    const vacPending = vacTarget !== undefined && c.status?.currentVolumeAttributesClassName !== vacTarget && c.status?.phase === "Bound";
    entry.follow = sizePending || vacPending || entry.state === "filesystem-resize-pending";
    if (vacPending) entry.awaitVolumeAttributesClass = vacTarget;
    claims.push(entry);
  }

  if (unreadable.length) refusals.push({ message: `claim(s) ${list(unreadable)} have no readable storage request; nothing was changed: inspect them with kubectl get pvc`, forceable: false });
  if (shrinks.length) {
    const largest = shrinks.map((s) => /\((.*)\)$/.exec(s)![1]!).sort((a, b) => compareQuantities(parseQuantity(b), parseQuantity(a)))[0];
    refusals.push({
      message: `claim(s) ${list(shrinks)} already request more than the new size; this tool never shrinks a claim; nothing was changed: ask for at least ${largest}, or drop --resize-existing`,
      forceable: false,
    });
  }
  if (notBound.length) {
    refusals.push({
      message: `claim(s) ${list(notBound)} are not Bound: only bound claims can grow or change volume attributes class; nothing was changed: wait until they are bound, or drop ${finishFlags(options)}`,
      forceable: false,
    });
  }
  for (const [cls, names] of [...noExpansion].sort(([a], [b]) => a.localeCompare(b))) {
    const why = cls === "" ? "have no storage class, so they cannot grow" : classes.has(cls) ? `have storage class "${cls}", which does not allow volume expansion` : `have storage class "${cls}", which does not exist, so they cannot grow`;
    const fix = cls !== "" && classes.has(cls) ? "drop --resize-existing or enable allowVolumeExpansion on the class" : "drop --resize-existing";
    refusals.push({ message: `claim(s) ${list(names)} ${why}; nothing was changed: ${fix}`, forceable: false });
  }

  let quotas: QuotaCheck[] = [];
  if (growth.length) {
    const existing = observed.existing;
    if (existing?.resourceQuotas) {
      const q = checkQuotas(existing.resourceQuotas, growth);
      quotas = q.checks;
      warnings.push(...q.warnings);
      for (const c of q.checks.filter((x) => !x.fits)) {
        const affected = growth.filter((g) => c.resource === "requests.storage" || `${g.storageClass ?? ""}${storagePerClass}` === c.resource).length;
        refusals.push(quotaRefusal(c, affected));
      }
    } else if (existing?.quotaError) {
      warnings.push(`resource quotas could not be read (${existing.quotaError}); the server checks them when the claims grow`);
    }
  }

  const total = growth.reduce((sum, g) => {
    const d = (bytesOf(g.to) ?? 0n) - (bytesOf(g.charged) ?? 0n);
    return sum + (d > 0n ? d : 0n);
  }, 0n);
  const plannedExisting: ExistingPlan = { options, claims, growth: formatBytes(total), quotas };
  return merge(plan, plannedExisting, refusals, warnings);
}

function merge(plan: Plan, existing: ExistingPlan | undefined, refusals: Refusal[], warnings: string[]): Plan {
  const out: Plan = { ...plan, refusals: [...plan.refusals, ...refusals], warnings: [...plan.warnings, ...warnings] };
  if (!existing) return out;
  out.existing = existing;
  const steps = new Set<Step>(plan.steps);
  if (existing.claims.some((c) => c.grow || c.setVolumeAttributesClass)) steps.add("grow-claims");
  const options = existing.options;
  const followed = existing.claims.some((c) => c.follow || c.grow || c.setVolumeAttributesClass);
  if ((options.waitResize || options.restartPods) && followed) steps.add("wait-resize");
  if (options.restartPods && followed) steps.add("restart-pods");
  out.steps = stepOrder.filter((s) => steps.has(s));
  if (out.steps.some((s) => s === "grow-claims" || s === "wait-resize" || s === "restart-pods")) out.noChange = false;
  return out;
}

/** Claims whose resize waits for their pod to restart, highest ordinal first: the restart order. */
export function restartOrder<T extends { ordinal: number; pod?: string; leftover: boolean }>(claims: readonly T[]): T[] {
  return claims.filter((c) => c.pod && !c.leftover).sort((a, b) => b.ordinal - a.ordinal);
}
