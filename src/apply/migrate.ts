// --migrate-existing, the plan's `migrate` step: each planned claim moved in turn, highest ordinal
// first (./move.ts runs one claim's move as src/plan/move.ts decides it, phase by phase, each
// phase saved in the journal), then the StatefulSet checked: every pod adopted and Ready.
import { StopError } from "../errors";
import { isAlreadyExists, isUnknownOutcome } from "../kube/errors";
import { getStatefulSet, waitPods, waitStatefulSetGone } from "../kube/read";
import type { StatefulSet } from "../api/types";
import { createStatefulSet } from "../kube/write";
import { controlledBy, isReady, labelSelector, ordinalStart, replicasOf, sameClaimTemplates } from "../plan/objects";
import type { Plan } from "../plan/types";
import type { Migration, MigrationResult } from "../plan/migration-types";
import { statefulSetRef } from "../refs";
import type { ApplyContext } from "./context";
import { bounded } from "./deadline";
import type { Lease } from "./lease";
import { type MoveContext, moveOf, runMove } from "./move";
import { finishCommand } from "../plan/finish";

export async function migrateClaims(plan: Plan, ctx: ApplyContext, lease: Lease): Promise<MigrationResult> {
  const migration: Migration = structuredClone(lease.migration ?? plan.migration!);
  const out: MigrationResult = { claims: [] };
  const journal = lease.record;
  // An owner this run paused (--pause-owner) is not what re-creates the StatefulSet: the stop's line then names no owner.
  const owner = plan.ownerPause ? undefined : plan.owner;
  const more: MoveContext = {
    ...(journal ? { finish: finishCommand({ ...journal, migration }) } : {}),
    ...(owner ? { owner: { what: `${owner.manager} (${owner.object})`, ...(owner.pauseCommands?.[0] ? { pause: owner.pauseCommands[0] } : {}) } } : {}),
    moves: migration.claims,
  };
  for (const m of migration.claims) {
    const move = moveOf(plan, ctx, m, migration.copyImage, () => lease.saveMigration(migration), more);
    await runMove(move);
    if (m.newVolume) move.result.newVolume = m.newVolume;
    if (m.verified) Object.assign(move.result, { files: m.verified.files, bytes: m.verified.bytes });
    out.claims.push(move.result);
  }
  // Every claim moved: the StatefulSet exists (a rerun after the last start finds it), every pod adopted and Ready.
  const sts = await ensureStatefulSet(plan, ctx);
  const members = Array.from({ length: replicasOf(sts) }, (_, i) => `${plan.target.name}-${ordinalStart(sts) + i}`);
  await bounded(ctx, `waiting for the pods of ${statefulSetRef(plan.target.name)} to be adopted and Ready`, (signal) =>
    waitPods(ctx.client, plan.target.namespace, labelSelector(sts), (pods) => members.every((p) => controlledBy(pods.get(p), sts.metadata.uid!) && isReady(pods.get(p))), signal),
  );
  ctx.progress.say(`verified: ${members.length} pod(s) Ready and controlled by ${statefulSetRef(plan.target.name)} (uid ${sts.metadata.uid}); ${out.claims.length} claim(s) on their new volumes`);
  return out;
}

/** The StatefulSet exists with the new templates: created from the plan when it is not. */
async function ensureStatefulSet(plan: Plan, ctx: ApplyContext): Promise<StatefulSet> {
  const { namespace: ns, name } = plan.target;
  const now = await getStatefulSet(ctx.client, ns, name);
  if (now && !now.metadata.deletionTimestamp) {
    // Someone else re-created it (a self-heal from an older manifest): the moved claims keep their volumes, claims made later follow its templates.
    if (!sameClaimTemplates(now.spec.volumeClaimTemplates, plan.desired.spec.volumeClaimTemplates))
      ctx.progress.warn(
        `${statefulSetRef(name)} was re-created by someone else (uid ${now.metadata.uid}) with other claim templates: the moved claims keep their new volumes, but claims it makes later follow its templates; give whatever applies it the new templates, then run the same command again`,
      );
    return now;
  }
  if (now) await bounded(ctx, `waiting for ${statefulSetRef(name)} to be deleted`, (signal) => waitStatefulSetGone(ctx.client, ns, name, now.metadata.uid!, signal));
  try {
    const created = await createStatefulSet(ctx.client, ns, plan.desired);
    ctx.progress.say(`created ${statefulSetRef(name)} again (uid ${created.metadata.uid})`);
    return created;
  } catch (e) {
    if (!isAlreadyExists(e) && !isUnknownOutcome(e)) {
      throw new StopError(
        `could not re-create ${statefulSetRef(name)}: ${(e as Error).message.split("\n")[0]}; its pods keep running without a controller and the journal is kept: fix the cause, then run the same command again`,
      );
    }
    const again = await getStatefulSet(ctx.client, ns, name);
    if (!again) throw e;
    return again;
  }
}
