// Executes the resize steps of a plan (--resize-existing, --vac-existing, --wait-resize): grows claims (before the StatefulSet is touched)
// and follows them until resized. Each claim is decided again from what it is now, never from
// the plan alone, so a rerun after any interruption continues where the last run stopped and
// never shrinks a claim that someone grew further meanwhile.
import { RefusedError, StopError } from "../errors";
import type { KubeClient } from "../kube/client";
import { isConflict, isNotFound, isUnknownOutcome } from "../kube/errors";
import { getClaim, waitClaims } from "../kube/read";
import type { PersistentVolumeClaim } from "../api/types";
import { patchClaim } from "../kube/write";
import { resizeState } from "../plan/resize";
import { lessQuantity } from "../plan/quantity";
import type { Plan } from "../plan/types";
import type { ExistingClaim, ExistingClaimsResult } from "../plan/existing-claims-types";
import { within } from "./deadline";
import type { Progress } from "./progress";
import { statefulSetRef } from "../refs";

/** The part of ApplyContext this module uses. */
export interface ClaimsContext {
  client: KubeClient;
  progress: Progress;
  signal: AbortSignal;
  timeoutMs: number;
}

const firstLine = (e: unknown) => (e as Error).message.split("\n")[0];

function targets(plan: Plan): ExistingClaim[] {
  return (plan.existing?.claims ?? []).filter((c) => c.grow || c.setVolumeAttributesClass);
}

/** What still has to be sent to this claim as it is now; nothing when it is done (or larger). */
function patchFor(c: ExistingClaim, current: PersistentVolumeClaim): { storage?: string; volumeAttributesClassName?: string } {
  const out: { storage?: string; volumeAttributesClassName?: string } = {};
  if (c.grow && lessQuantity(current.spec.resources?.requests?.["storage"], c.grow.to)) out.storage = c.grow.to;
  if (c.setVolumeAttributesClass && current.spec.volumeAttributesClassName !== c.setVolumeAttributesClass.to) out.volumeAttributesClassName = c.setVolumeAttributesClass.to;
  return out;
}

function describePatch(name: string, from: PersistentVolumeClaim | undefined, c: ExistingClaim, p: { storage?: string; volumeAttributesClassName?: string }): string {
  const parts: string[] = [];
  if (p.storage) parts.push(`${from?.spec.resources?.requests?.["storage"] ?? c.grow?.from} -> ${p.storage}`);
  if (p.volumeAttributesClassName)
    parts.push(
      `volume attributes class ${(from ?? { spec: { volumeAttributesClassName: c.setVolumeAttributesClass?.from } }).spec.volumeAttributesClassName ?? "<none>"} -> ${p.volumeAttributesClassName}`,
    );
  return `claim ${name}: ${parts.join(", ")}`;
}

function vacDropped(name: string, sent: string | undefined, got: PersistentVolumeClaim): StopError | undefined {
  if (sent === undefined || got.spec.volumeAttributesClassName === sent) return undefined;
  return new StopError(
    `the server ignored spec.volumeAttributesClassName of claim ${name}: its VolumeAttributesClass feature is off; nothing more was changed: drop vac= or enable the feature on the API server`,
  );
}

/**
 * Server dry run of every claim patch, before anything changes: admission (the class allows
 * expansion, quotas claim by claim) and validation (bound, never below capacity) answer now.
 */
export async function dryRunClaimPatches(client: KubeClient, plan: Plan, progress: Progress): Promise<void> {
  const ns = plan.target.namespace;
  const claims = targets(plan);
  for (const c of claims) {
    const p = { storage: c.grow?.to, volumeAttributesClassName: c.setVolumeAttributesClass?.to };
    let got: PersistentVolumeClaim;
    try {
      got = await patchClaim(client, ns, c.name, p, "server");
    } catch (e) {
      throw new RefusedError(`the server would refuse to change claim ${c.name}: ${firstLine(e)}; nothing was changed`);
    }
    const dropped = vacDropped(c.name, p.volumeAttributesClassName, got);
    if (dropped) throw dropped;
  }
  if (claims.length) progress.say(`server dry run: the server accepts the change of ${claims.length} existing claim(s)`);
}

/**
 * Grows each claim (and sets its attributes class) that still needs it, one patch each, guarded
 * by the resourceVersion it was read at: a conflict or an unknown outcome is read back and
 * decided again. Stops at the first refusal, naming what was already done.
 */
export async function growClaims(plan: Plan, ctx: ClaimsContext): Promise<ExistingClaimsResult["claims"]> {
  const { client, progress } = ctx;
  const ns = plan.target.namespace;
  const done: ExistingClaimsResult["claims"] = [];
  for (const c of targets(plan)) {
    let rv = c.resourceVersion;
    let current: PersistentVolumeClaim | undefined;
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1 || !rv) {
        current = await getClaim(client, ns, c.name);
        if (!current) throw stopped(plan, done, `claim ${c.name} no longer exists`);
        if (current.metadata.uid !== c.uid) throw stopped(plan, done, `claim ${c.name} was replaced (uid ${c.uid} -> ${current.metadata.uid})`);
        rv = current.metadata.resourceVersion;
      }
      // Until it is read back, the claim is as the plan saw it.
      const seen: PersistentVolumeClaim = current ?? {
        metadata: { name: c.name, uid: c.uid },
        spec: { resources: { requests: { storage: c.request ?? "" } }, ...(c.volumeAttributesClass ? { volumeAttributesClassName: c.volumeAttributesClass } : {}) },
        status: { phase: c.phase },
      };
      const p = patchFor(c, seen);
      if (p.storage === undefined && p.volumeAttributesClassName === undefined) {
        const request = seen.spec.resources?.requests?.["storage"];
        progress.say(`claim ${c.name} already requests ${request}${seen.spec.volumeAttributesClassName ? `, volume attributes class ${seen.spec.volumeAttributesClassName}` : ""}`);
        done.push({ name: c.name, uid: c.uid, request, volumeAttributesClass: seen.spec.volumeAttributesClassName, patched: false });
        break;
      }
      if (seen.status?.phase !== "Bound") throw stopped(plan, done, `claim ${c.name} is ${seen.status?.phase ?? "not bound"}, and only bound claims can grow`);
      try {
        const got = await patchClaim(client, ns, c.name, { resourceVersion: rv!, ...p });
        const dropped = vacDropped(c.name, p.volumeAttributesClassName, got);
        if (dropped) throw dropped;
        progress.say(`patched ${describePatch(c.name, current, c, p)}`);
        done.push({ name: c.name, uid: c.uid, request: got.spec.resources?.requests?.["storage"], volumeAttributesClass: got.spec.volumeAttributesClassName, patched: true });
        break;
      } catch (e) {
        if (e instanceof RefusedError || e instanceof StopError) throw e;
        if ((isConflict(e) || isUnknownOutcome(e)) && attempt < 5) {
          // Changed since read, or the answer was lost: read it again and decide again.
          continue;
        }
        if (isNotFound(e)) throw stopped(plan, done, `claim ${c.name} no longer exists`);
        throw stopped(plan, done, `could not change claim ${c.name}: ${firstLine(e)}`);
      }
    }
  }
  return done;
}

function stopped(plan: Plan, done: ExistingClaimsResult["claims"], why: string): RefusedError | StopError {
  const patched = done.filter((d) => d.patched).map((d) => d.name);
  const sts = plan.steps.includes("orphan-delete") ? `; ${statefulSetRef(plan.target.name)} is unchanged` : "";
  // Nothing patched yet: a refusal (nothing changed); else a stop that the same command finishes.
  return new (patched.length ? StopError : RefusedError)(
    `${why}; ${patched.length ? `patched so far: ${patched.join(", ")}` : "no claim was changed"}${sts}: fix the cause, then run the same command again to continue`,
  );
}

type Outcome = "done" | "filesystem-resize-pending" | "failed" | "waiting";

/**
 * FileSystemResizePending is what every claim reports between the resizer's part and kubelet's:
 * kubelet grows the file system of a mounted volume online at its next pod sync (seconds to a
 * minute and a half after), and only a driver that grows file systems at mount only refuses, which
 * kubelet records as NodeResizeError (seen on a real node, 1.37). So a claim waits for a restart
 * only once kubelet tried and failed, or when no pod of it runs for kubelet to try in (a leftover
 * claim above replicas): otherwise --restart-pods would restart pods kubelet is about to finish.
 */
function kubeletMayGrowOnline(c: ExistingClaim, current: PersistentVolumeClaim): boolean {
  const failed = current.status?.conditions?.some((x) => x.type === "NodeResizeError" && x.status === "True") === true;
  return !failed && c.pod !== undefined && !c.leftover;
}

function outcome(c: ExistingClaim, current: PersistentVolumeClaim | undefined): { outcome: Outcome; text: string } {
  if (!current || current.metadata.uid !== c.uid) return { outcome: "failed", text: "no longer exists (or was replaced)" };
  const request = current.spec.resources?.requests?.["storage"];
  const capacity = current.status?.capacity?.["storage"];
  const state = resizeState(current);
  const vac = c.awaitVolumeAttributesClass ?? c.setVolumeAttributesClass?.to;
  const modify = current.status?.modifyVolumeStatus?.status;
  if (state === "infeasible") return { outcome: "failed", text: `the resize is infeasible (${current.status?.allocatedResourceStatuses?.["storage"]}); see kubectl describe pvc ${c.name}` };
  if (vac !== undefined && modify === "Infeasible") return { outcome: "failed", text: `volume attributes class ${vac} is infeasible for this volume; see kubectl describe pvc ${c.name}` };
  const sized = !lessQuantity(capacity, request);
  const vacDone = vac === undefined || current.status?.currentVolumeAttributesClassName === vac;
  if (sized && vacDone) return { outcome: "done", text: `resized: capacity ${capacity}${vac !== undefined ? `, volume attributes class ${vac}` : ""}` };
  if (state === "filesystem-resize-pending" && vacDone) {
    if (kubeletMayGrowOnline(c, current)) {
      return { outcome: "waiting", text: `capacity ${capacity} of ${request}, FileSystemResizePending: waiting for kubelet to grow the file system in the running pod` };
    }
    return { outcome: "filesystem-resize-pending", text: `FileSystemResizePending (capacity ${capacity} of ${request}): the file system grows when its pod restarts` };
  }
  const parts = [`capacity ${capacity ?? "<none>"} of ${request}`];
  if (state !== "none") parts.push(state === "requested" ? "waiting for the resizer" : state === "resizing" ? "resizing" : "FileSystemResizePending");
  if (!vacDone) parts.push(`volume attributes class ${current.status?.currentVolumeAttributesClassName ?? "<none>"} -> ${vac}${modify ? ` (${modify})` : ""}`);
  return { outcome: "waiting", text: parts.join(", ") };
}

/**
 * Follows every claim the plan touches until its capacity reaches its request (and its
 * attributes class is applied) or it waits for a pod restart (kubeletMayGrowOnline), printing each claim's
 * progress when it changes. Bounded by the timeout. Returns the claims as last seen.
 */
export async function waitResize(plan: Plan, ctx: ClaimsContext): Promise<Map<string, PersistentVolumeClaim>> {
  const { client, progress } = ctx;
  const ns = plan.target.namespace;
  const followed = (plan.existing?.claims ?? []).filter((c) => c.follow || c.grow || c.setVolumeAttributesClass);
  const said = new Map<string, string>();
  const last = new Map<string, { outcome: Outcome; text: string }>();
  progress.say(`following ${followed.length} claim(s) until resized (timeout ${ctx.timeoutMs / 1000}s)`);
  const timedOut = () => {
    const open = followed.filter((c) => last.get(c.name)?.outcome === "waiting").map((c) => `${c.name} (${last.get(c.name)!.text})`);
    return new StopError(
      `timed out after ${ctx.timeoutMs / 1000}s waiting for claim(s) ${open.join(", ")} to resize; the resize goes on in the background: check the volume's resizer (kubectl describe pvc -n ${ns}), then run kubectl appstorage show ${plan.target.name} -n ${ns}`,
    );
  };
  const claims: Map<string, PersistentVolumeClaim> = await within(ctx.signal, ctx.timeoutMs, timedOut, (signal) =>
    waitClaims(
      client,
      ns,
      (current) => {
        for (const c of followed) {
          const o = outcome(c, current.get(c.name));
          last.set(c.name, o);
          if (said.get(c.name) !== o.text) {
            said.set(c.name, o.text);
            progress.say(`claim ${c.name}: ${o.text}`);
          }
        }
        return followed.every((c) => last.get(c.name)!.outcome !== "waiting");
      },
      signal,
    ),
  );
  const failed = followed.filter((c) => last.get(c.name)?.outcome === "failed");
  if (failed.length) throw new StopError(`claim(s) ${failed.map((c) => `${c.name}: ${last.get(c.name)!.text}`).join("; ")}`);
  const pending = followed.filter((c) => last.get(c.name)?.outcome === "filesystem-resize-pending");
  if (pending.length && !plan.steps.includes("restart-pods")) {
    const pods = pending.filter((c) => c.pod && !c.leftover).map((c) => c.pod!);
    progress.warn(
      `claim(s) ${pending.map((c) => c.name).join(", ")} wait for a pod restart to finish the file system resize${pods.length ? `: run again with --restart-pods, or restart pod(s) ${[...new Set(pods)].join(", ")} yourself` : ""}`,
    );
  }
  return claims;
}

export function claimSummary(plan: Plan, grown: ExistingClaimsResult["claims"], seen: Map<string, PersistentVolumeClaim> | undefined): ExistingClaimsResult["claims"] {
  const byName = new Map(grown.map((g) => [g.name, g]));
  return (plan.existing?.claims ?? [])
    .filter((c) => byName.has(c.name) || seen?.has(c.name))
    .map((c) => {
      const now = seen?.get(c.name);
      const g = byName.get(c.name);
      const request = now?.spec.resources?.requests?.["storage"] ?? g?.request ?? c.request;
      const vac = now?.spec.volumeAttributesClassName ?? g?.volumeAttributesClass ?? c.volumeAttributesClass;
      return {
        name: c.name,
        uid: c.uid,
        ...(request ? { request } : {}),
        ...(now?.status?.capacity?.["storage"] ? { capacity: now.status.capacity["storage"] } : {}),
        ...(vac ? { volumeAttributesClass: vac } : {}),
        ...(now ? { state: resizeState(now) } : {}),
        patched: g?.patched ?? false,
      };
    });
}
