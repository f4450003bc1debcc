// pause-owner and resume-owner (--pause-owner): a JSON merge patch of the Argo CD Application or Flux
// Kustomization/HelmRelease that manages the StatefulSet, which stops it from writing the object
// while it is changed, and the patch that puts back exactly what was read before. The journal
// holds both (saved before the pause), so a rerun after a kill resumes it; a run that stops on its
// own resumes it at once (Lease.run's onStop). Both are safe to repeat.
import { customObjectsPath } from "../kube/paths";
import { mergePatchCustomObject } from "../kube/write";
import { patchCommand } from "../plan/owner";
import type { OwnerPause } from "../plan/owner-types";
import type { ApplyContext } from "./context";
import type { Lease } from "./lease";

const where = (p: OwnerPause) => `${p.ref.kind.toLowerCase()}.${p.ref.group}/${p.ref.name} in namespace ${p.ref.namespace}`;
const path = (p: OwnerPause) => customObjectsPath(p.ref.group, p.ref.version, p.ref.resource, p.ref.namespace, p.ref.name);

export async function pauseOwner(pause: OwnerPause, ctx: ApplyContext, lease: Lease): Promise<void> {
  await mergePatchCustomObject(ctx.client, path(pause), pause.pause);
  await lease.saveOwner(true);
  ctx.progress.say(`paused ${where(pause)} (${pause.what}); ${pause.keep ? "it stays paused when this run is done (a stop resumes it at once)" : "it is resumed when this run ends"}`);
}

/** After the last write: put back as read; an operator's switch (keep) is left for the user, with the command. */
export async function resumeOwner(pause: OwnerPause, ctx: ApplyContext, lease: Lease): Promise<void> {
  if (pause.keep) {
    ctx.progress.warn(`left ${where(pause)} paused (${pause.what}): change its storage to what this run set, then resume it with: ${patchCommand(pause.ref, pause.resume)}`);
    return;
  }
  await mergePatchCustomObject(ctx.client, path(pause), pause.resume);
  await lease.saveOwner(false);
  ctx.progress.say(`resumed ${where(pause)}: ${JSON.stringify(pause.resume)}`);
}

/** After a stop (an operator's too: nothing of this run is left for it to fight, or the rerun finishes it): resumed at once, or (when that fails too) said how, and the rerun resumes it. */
export async function resumeOwnerAfterStop(pause: OwnerPause, ctx: ApplyContext, lease: Lease): Promise<void> {
  try {
    await resumeOwner(pause, ctx, lease);
  } catch (e) {
    ctx.progress.warn(
      `could not resume ${where(pause)} (${(e as Error).message.split("\n")[0]}): it stays paused; the same command run again resumes it, or by hand: kubectl patch ${pause.ref.resource}.${pause.ref.group} ${pause.ref.name} -n ${pause.ref.namespace} --type merge -p '${JSON.stringify(pause.resume)}'`,
    );
  }
}
