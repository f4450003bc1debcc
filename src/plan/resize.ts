// What happens to the claims that already exist, when asked (--resize-existing, --vac-existing,
// --wait-resize, --restart-pods): which grow, which get another volume attributes class, which
// are followed until resized, and every reason to refuse before anything changes. Pure.
//
// The work is decided from the claims' actual requests, never from the template: after a crash
// the template may already have the new size while claims do not (RabbitMQ cluster-operator
// #782), so a rerun must still grow them.
import type { PersistentVolumeClaim, Pod, StatefulSet } from "../api/types";
import { existingClaimsFlags, finishCommand } from "./journal";
import { byName, isReady, templateSize } from "./objects";
import { compareQuantities, formatBytes, bytesOf, lessQuantity, parseQuantity, tryParseQuantity } from "./quantity";
import { checkQuotas, type Growth, quotaRefusal, storagePerClass } from "./quota";
import type { ClaimEffect, Journal, Observed, Plan, PlanRequest, Refusal, Step } from "./types";
import type { ExistingClaim, ExistingClaimsOptions, ExistingClaimsPlan, ResizeState } from "./existing-claims-types";
import { statefulSetRef } from "../refs";
import { patchIsEmpty, planRelabel } from "./relabel";

const isTrue = (c: PersistentVolumeClaim, type: string) => c.status?.conditions?.some((x) => x.type === type && x.status === "True") === true;

export function resizeState(c: PersistentVolumeClaim): ResizeState {
  const allocated = c.status?.allocatedResourceStatuses?.["storage"];
  if (allocated?.endsWith("Infeasible")) return "infeasible";
  if (isTrue(c, "FileSystemResizePending") || allocated === "NodeResizePending") return "filesystem-resize-pending";
  if (isTrue(c, "Resizing") || allocated === "ControllerResizeInProgress" || allocated === "NodeResizeInProgress") return "resizing";
  if (c.status?.phase === "Bound" && lessQuantity(c.status?.capacity?.["storage"], c.spec.resources?.requests?.["storage"])) return "requested";
  return "none";
}

/**
 * Whether the pod of claims that wait for a restart (FileSystemResizePending) is coming up
 * already, so that evicting it would restart it twice: it is gone (its StatefulSet re-creates
 * it), terminating, or not Ready yet and created at or after every one of these claims began to
 * wait: its start mounts them, which finishes their resize. An earlier run stopped right after
 * evicting it leaves it so. A pod that is not Ready and older than that (crashing on a full
 * disk, say) is not coming up: a restart is what finishes its resize.
 */
export function podComingUp(pod: Pod | undefined, claims: readonly PersistentVolumeClaim[]): boolean {
  if (!pod || pod.metadata.deletionTimestamp) return true;
  if (isReady(pod)) return false;
  const created = Date.parse(pod.metadata.creationTimestamp ?? "");
  const waitingSince = claims.map((c) => Date.parse(c.status?.conditions?.find((x) => x.type === "FileSystemResizePending" && x.status === "True")?.lastTransitionTime ?? ""));
  return !Number.isNaN(created) && waitingSince.length > 0 && waitingSince.every((t) => !Number.isNaN(t) && created >= t);
}

/** Claims whose resize waits for their pod to restart, highest ordinal first: the restart order. */
export function restartOrder<T extends { ordinal: number; pod?: string; leftover: boolean }>(claims: readonly T[]): T[] {
  return claims.filter((c) => c.pod && !c.leftover).sort((a, b) => b.ordinal - a.ordinal);
}

/** An existing claim that a change of its template's size leaves as it is, smaller. */
export interface KeptSmaller {
  name: string;
  request: string;
  template: string;
  size: string;
  /** Its class lets --resize-existing grow it in place (unknown counts: the server decides); else only --migrate-existing makes it bigger. */
  expands: boolean;
}

/**
 * The existing claims a change of their template's size leaves smaller than the new size: the
 * StatefulSet controller reads a template only to create a claim, so without --resize-existing or
 * --migrate-existing each keeps its size. What the plan says in one line (src/output/plan.ts), on
 * the plain path and the -f path alike.
 */
export function claimsKeptSmaller(plan: Pick<Plan, "claims" | "changes" | "storageClasses" | "existing" | "migration">): KeptSmaller[] {
  if (plan.existing?.options.resize || plan.migration) return [];
  const expandable = new Map((plan.storageClasses ?? []).map((c) => [c.name, c.expandable]));
  return plan.changes.flatMap((change) => {
    const size = change.after.size;
    if (!size || size === change.before.size) return [];
    return plan.claims
      .filter((c) => c.template === change.claim && lessQuantity(c.request, size))
      .map((c) => ({ name: c.name, request: c.request!, template: change.claim, size, expands: expandable.get(c.storageClass ?? "") !== false }));
  });
}

/** What the plan assembler hands over: the part of the plan this work builds on. */
export interface ExistingClaimsBase {
  mode: "fresh" | "resume";
  journal?: Journal;
  original: StatefulSet;
  desired: StatefulSet;
  claims: readonly ClaimEffect[];
}

export interface ExistingClaimsPart {
  existing?: ExistingClaimsPlan;
  refusals: Refusal[];
  warnings: string[];
  /** The steps this work adds to the plan. */
  steps: Step[];
}

const list = (names: string[]) => names.join(", ");

/** What a claim template's claims are to become: the size (--resize-existing) and the class (vac=). */
interface ClaimTarget {
  size?: string;
  vac?: string;
}

/** What the claims showed that stops the work, or that the quotas are charged: gathered claim by claim. */
interface ClaimFindings {
  notBound: string[];
  shrinks: string[];
  unreadable: string[];
  /** Claims that should grow, by a storage class that does not allow it. */
  noExpansion: Map<string, string[]>;
  growth: Growth[];
}

/**
 * The resize of existing claims (--resize-existing, --vac-existing): per-claim actions, refusals, warnings, steps. Without the flags
 * and without vac= it only checks that a journal left by an interrupted growth is not silently
 * dropped.
 */
export function planResize(base: ExistingClaimsBase, observed: Observed, request: PlanRequest): ExistingClaimsPart {
  const options = request.existing;
  const anyVac = request.directives.some((d) => d.volumeAttributesClass !== undefined);
  const refusals: Refusal[] = interruptedGrowthRefusals(base, request);
  const warnings: string[] = [];
  if (anyVac) {
    const vac = checkVolumeAttributesClasses(observed, request);
    refusals.push(...vac.refusals);
    warnings.push(...vac.warnings);
  }

  if (!options || (!options.resize && !options.vac && !options.relabel)) return { refusals, warnings, steps: [] };
  if (options.vac && !options.resize && !anyVac && !request.templates) {
    refusals.push({ message: `--vac-existing needs a directive that names a volume attributes class, for example ${request.directives[0]?.claim ?? "data"}=vac=fast-iops`, forceable: false });
  }
  const relabel = options.relabel ? planRelabel(base, observed.claims, coveredTemplates(request)) : undefined;

  const targets = options.resize || options.vac ? claimTargets(base, request, options) : new Map<string, ClaimTarget>();
  const { claims, findings } = examineClaims(base, observed, targets);
  refusals.push(...findingRefusals(findings, observed, options));
  if (observed.storageClassError && findings.growth.length) {
    warnings.push("storage classes could not be read, so whether the claims may grow is decided by the server's dry run of each claim patch, before any change");
  }
  const quota = quotaChecks(observed, findings.growth);
  refusals.push(...quota.refusals);
  warnings.push(...quota.warnings);
  const existing: ExistingClaimsPlan = { options, claims, growth: formatBytes(totalGrowth(findings.growth)), quotas: quota.checks, ...(relabel ? { relabel } : {}) };
  const relabels = relabel?.some((c) => !patchIsEmpty(c.patch)) ? (["label-claims"] as Step[]) : [];
  return { existing, refusals, warnings, steps: [...existingClaimsSteps(claims, options), ...relabels] };
}

/** A fresh run must not drop the growth an interrupted run began: refuse unless it asks for it again. */
function interruptedGrowthRefusals(base: ExistingClaimsBase, request: PlanRequest): Refusal[] {
  const journal = base.journal;
  const interrupted = journal?.existing;
  if (!interrupted || base.mode !== "fresh" || journal.step !== "growing") return [];
  const options = request.existing;
  const missing = (interrupted.options.resize && !options?.resize) || (interrupted.options.vac && !options?.vac && !options?.resize);
  if (!missing) return [];
  const ref = statefulSetRef(request.name);
  return [
    {
      message: `an interrupted run was changing the existing claims of ${ref} (${journal.request.join(" ")} ${existingClaimsFlags(interrupted.options)}); finish it with: ${finishCommand(journal)}`,
      forceable: false,
    },
  ];
}

/** Every vac= names a class the server serves; where the classes could not be read, the server decides. */
function checkVolumeAttributesClasses(observed: Observed, request: PlanRequest): { refusals: Refusal[]; warnings: string[] } {
  const refusals: Refusal[] = [];
  const warnings: string[] = [];
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
    if (!vacs.includes(d.volumeAttributesClass!)) {
      refusals.push({ message: `volume attributes class "${d.volumeAttributesClass}" not found; list the classes with: kubectl get volumeattributesclass`, forceable: false });
    }
  }
  return { refusals, warnings };
}

/** The claim templates whose existing claims the work covers: those the directives name, or (set -f) every template of the manifest. */
export const coveredTemplates = (request: Pick<PlanRequest, "directives" | "templates">): string[] => request.templates ?? request.directives.map((d) => d.claim);

/**
 * Per covered claim template: the size its claims grow to and the class they get (the
 * directive's, else, for a template of a manifest, the template's own).
 */
function claimTargets(base: ExistingClaimsBase, request: PlanRequest, options: ExistingClaimsOptions): Map<string, ClaimTarget> {
  const templates = new Map((base.desired.spec.volumeClaimTemplates ?? []).map((t) => [t.metadata.name ?? "", t]));
  const targets = new Map<string, ClaimTarget>();
  for (const claim of coveredTemplates(request)) {
    const t = templates.get(claim);
    if (!t) continue;
    const d = request.directives.find((x) => x.claim === claim);
    const vac = d?.volumeAttributesClass ?? (request.templates ? t.spec.volumeAttributesClassName : undefined);
    targets.set(claim, {
      size: options.resize ? (d?.size ?? templateSize(t)) : undefined,
      vac: options.resize || options.vac ? vac : undefined,
    });
  }
  return targets;
}

/** What happens to each existing claim of the named templates, and what the claims showed on the way. */
function examineClaims(base: ExistingClaimsBase, observed: Observed, targets: Map<string, ClaimTarget>): { claims: ExistingClaim[]; findings: ClaimFindings } {
  const raw = new Map(observed.claims.map((c) => [c.metadata.name, c]));
  const classes = new Map(observed.storageClasses.map((c) => [c.metadata.name, c]));
  const findings: ClaimFindings = { notBound: [], shrinks: [], unreadable: [], noExpansion: new Map(), growth: [] };
  const claims: ExistingClaim[] = [];
  for (const effect of base.claims) {
    const target = targets.get(effect.template);
    const c = raw.get(effect.name);
    if (!target || !c) continue;
    const entry = existingClaim(effect, c, target, findings);
    if (entry.grow) {
      const cls = c.spec.storageClassName ?? "";
      // Without access to storage classes, the server's dry run of each patch decides (preflight).
      if (!observed.storageClassError && classes.get(cls)?.allowVolumeExpansion !== true) findings.noExpansion.set(cls, [...(findings.noExpansion.get(cls) ?? []), effect.name]);
    }
    claims.push(entry);
  }
  return { claims, findings };
}

/** One claim: whether it grows, gets another class, and is followed until done; its findings are noted. */
function existingClaim(effect: ClaimEffect, c: PersistentVolumeClaim, target: ClaimTarget, findings: ClaimFindings): ExistingClaim {
  const claimRequest = c.spec.resources?.requests?.["storage"];
  const entry: ExistingClaim = {
    name: effect.name,
    template: effect.template,
    ordinal: effect.ordinal,
    uid: effect.uid,
    ...(c.metadata.resourceVersion ? { resourceVersion: c.metadata.resourceVersion } : {}),
    ...(effect.pod ? { pod: effect.pod } : {}),
    leftover: effect.leftover,
    phase: c.status?.phase,
    request: claimRequest,
    capacity: c.status?.capacity?.["storage"],
    storageClass: c.spec.storageClassName,
    volumeAttributesClass: c.spec.volumeAttributesClassName,
    state: resizeState(c),
    follow: false,
  };
  if (target.size !== undefined) {
    if (tryParseQuantity(claimRequest) === undefined) findings.unreadable.push(effect.name);
    else if (lessQuantity(claimRequest, target.size)) entry.grow = { from: claimRequest!, to: target.size };
    else if (lessQuantity(target.size, claimRequest)) findings.shrinks.push(`${effect.name} (${claimRequest})`);
  }
  if (target.vac !== undefined && c.spec.volumeAttributesClassName !== target.vac) {
    entry.setVolumeAttributesClass = { ...(c.spec.volumeAttributesClassName ? { from: c.spec.volumeAttributesClassName } : {}), to: target.vac };
  }
  if ((entry.grow || entry.setVolumeAttributesClass) && c.status?.phase !== "Bound") findings.notBound.push(`${effect.name} (${c.status?.phase ?? "no phase"})`);
  if (entry.grow) {
    const allocated = c.status?.allocatedResources?.["storage"];
    findings.growth.push({ claim: effect.name, storageClass: c.spec.storageClassName, charged: allocated && lessQuantity(claimRequest, allocated) ? allocated : claimRequest!, to: entry.grow.to });
  }
  followUnfinished(entry, c, target);
  return entry;
}

/**
 * Follow what is not finished: a request above the capacity (grown now or by an earlier run), or
 * an attributes class the driver has not applied yet.
 */
function followUnfinished(entry: ExistingClaim, c: PersistentVolumeClaim, target: ClaimTarget): void {
  const finalRequest = entry.grow?.to ?? c.spec.resources?.requests?.["storage"];
  const capacity = c.status?.capacity?.["storage"];
  const sizePending = target.size !== undefined && c.status?.phase === "Bound" && lessQuantity(capacity, finalRequest);
  const vacTarget = entry.setVolumeAttributesClass?.to ?? (target.vac !== undefined ? c.spec.volumeAttributesClassName : undefined);
  const vacPending = vacTarget !== undefined && c.status?.currentVolumeAttributesClassName !== vacTarget && c.status?.phase === "Bound";
  entry.follow = sizePending || vacPending || entry.state === "filesystem-resize-pending";
  if (vacPending) entry.awaitVolumeAttributesClass = vacTarget;
}

/** The refusals the claims' findings call for, each saying what to do. */
function findingRefusals(findings: ClaimFindings, observed: Observed, options: ExistingClaimsOptions): Refusal[] {
  const { unreadable, shrinks, notBound, noExpansion } = findings;
  const refusals: Refusal[] = [];
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
      message: `claim(s) ${list(notBound)} are not Bound: only bound claims can grow or change volume attributes class; nothing was changed: wait until they are bound, or drop ${existingClaimsFlags(options)}`,
      forceable: false,
    });
  }
  const classes = new Set(observed.storageClasses.map((c) => c.metadata.name));
  for (const [cls, names] of [...noExpansion].sort(([a], [b]) => byName(a, b))) {
    const why =
      cls === ""
        ? "have no storage class, so they cannot grow"
        : classes.has(cls)
          ? `have storage class "${cls}", which does not allow volume expansion`
          : `have storage class "${cls}", which does not exist, so they cannot grow`;
    // Moving is the way to a bigger claim on a class that cannot expand; enabling expansion on the class helps
    // only where the provisioner can expand (hostPath provisioners, minikube's and local-path, cannot).
    const enable = cls !== "" && classes.has(cls) ? ", or enable allowVolumeExpansion on the class if its provisioner can expand volumes" : "";
    const fix = `use --migrate-existing for bigger claims (new volumes of the new size, the data copied), or drop --resize-existing${enable}`;
    refusals.push({ message: `claim(s) ${list(names)} ${why}; nothing was changed: ${fix}`, forceable: false });
  }
  return refusals;
}

/** The namespace's quotas against the growth; unread quotas are left to the server, with a warning. */
function quotaChecks(observed: Observed, growth: readonly Growth[]): { checks: ExistingClaimsPlan["quotas"]; refusals: Refusal[]; warnings: string[] } {
  const none = { checks: [], refusals: [], warnings: [] };
  if (!growth.length) return none;
  const existing = observed.existing;
  if (existing?.resourceQuotas) {
    const q = checkQuotas(existing.resourceQuotas, growth);
    const refusals = q.checks
      .filter((x) => !x.fits)
      .map((c) => quotaRefusal(c, growth.filter((g) => c.resource === "requests.storage" || `${g.storageClass ?? ""}${storagePerClass}` === c.resource).length));
    return { checks: q.checks, refusals, warnings: q.warnings };
  }
  if (existing?.quotaError) return { ...none, warnings: [`resource quotas could not be read (${existing.quotaError}); the server checks them when the claims grow`] };
  return none;
}

/** What growing adds to requests.storage: beyond what the quota charges each claim already. */
function totalGrowth(growth: readonly Growth[]): bigint {
  return growth.reduce((sum, g) => {
    const d = (bytesOf(g.to) ?? 0n) - (bytesOf(g.charged) ?? 0n);
    return sum + (d > 0n ? d : 0n);
  }, 0n);
}

function existingClaimsSteps(claims: readonly ExistingClaim[], options: ExistingClaimsOptions): Step[] {
  const steps: Step[] = [];
  if (claims.some((c) => c.grow || c.setVolumeAttributesClass)) steps.push("grow-claims");
  const followed = claims.some((c) => c.follow || c.grow || c.setVolumeAttributesClass);
  if ((options.waitResize || options.restartPods) && followed) steps.push("wait-resize");
  if (options.restartPods && followed) steps.push("restart-pods");
  return steps;
}
