// --migrate-existing as data: which existing claims move to a new volume of the new class and
// size, what stops the move before anything changes, and the objects the move creates (its
// claim of the new volume, the copy pods, the claim re-created on the new volume). Pure; the
// copy pods' script is in ./copy-script.ts, each claim's move as a state machine in ./move.ts, the
// work in src/apply/migrate.ts and src/apply/move.ts.
import { createHash } from "node:crypto";
import type { PersistentVolumeClaim, Pod, Taint, Toleration } from "../api/types";
import { statefulSetRef } from "../refs";
import { copyScript } from "./copy-script";
import type { ExistingClaimsBase } from "./resize";
import { journalLabel } from "./journal";
import { defaultStorageClass, templateSize } from "./objects";
import { selectedNodeAnnotation } from "./pending";
import { budgetBlocksMoves } from "./budgets";
import { volumeTopology } from "./classes";
import { compareQuantities, parseQuantity, sameQuantity } from "./quantity";
import type { Observed, PlanRequest, Refusal, Step } from "./types";
import { type CopyReport, copyImageNeeds, type Migration, type MigrationClaim, type MigrationPhase } from "./migration-types";

export type { CopyReport } from "./migration-types";

/** Labels of everything a move creates or keeps: its claim of the new volume, copy pods, the old volume. */
export const migrationLabels = {
  statefulSet: "appstorage.kubectl.io/statefulset",
  claim: "appstorage.kubectl.io/claim",
  namespace: "appstorage.kubectl.io/namespace",
  ordinal: "appstorage.kubectl.io/ordinal",
  retainedAt: "appstorage.kubectl.io/retained-at",
} as const;

export interface MigrationPart {
  migration?: Migration;
  refusals: Refusal[];
  warnings: string[];
  steps: Step[];
}

/**
 * A name as a label value: at most 63 characters, starting and ending with a letter or digit. A
 * longer claim name (a template and StatefulSet name of 63 characters each) keeps its start and
 * ends with a digest of the whole, so each claim still gets its own value; the whole name is kept
 * in an annotation where a person reads it (a kept old volume).
 */
export function labelValue(name: string): string {
  if (name.length <= 63) return name;
  const digest = createHash("sha256").update(name).digest("hex").slice(0, 10);
  return `${name.slice(0, 52).replace(/[^A-Za-z0-9]+$/, "")}-${digest}`;
}

/** Names of 253 characters at most: a long claim name keeps its end, which tells the ordinal. */
function bounded(prefix: string, name: string): string {
  const full = `${prefix}${name}`;
  return full.length <= 253 ? full : `${prefix}${name.slice(name.length - (253 - prefix.length))}`;
}

/** The tool's claim of the new volume while the data is copied to it. */
export const newVolumeClaimName = (claim: string) => bounded("appstorage-new-", claim);
/** The copy pod of one claim (one at a time: the first copy, then the final copy with the verification). */
export const copyPodName = (claim: string) => bounded("appstorage-copy-", claim);

/**
 * Plans the move of every existing claim of the named templates whose class or size differs
 * from its new template: highest ordinal first. Refused before anything changes: block volumes,
 * a ReadWriteOncePod claim without --yes, a new size smaller than the data.
 */
export function planMigration(base: ExistingClaimsBase, observed: Observed, request: PlanRequest): MigrationPart {
  const options = request.existing?.migrate;
  const refusals: Refusal[] = [];
  const warnings: string[] = [];
  // A run that was moving claims goes on from its journal, whatever this run's flags.
  if (base.mode === "resume" && base.journal?.migration) {
    const migration = options?.copyImageGiven ? { ...base.journal.migration, copyImage: options.copyImage } : base.journal.migration;
    return { migration, refusals, warnings, steps: ["write-journal", "migrate", "remove-journal"] };
  }
  if (!options) return { refusals, warnings, steps: [] };
  const ref = statefulSetRef(request.name);
  const named = new Set(request.directives.map((d) => d.claim));
  const templates = new Map((base.desired.spec.volumeClaimTemplates ?? []).map((t) => [t.metadata.name ?? "", t]));
  const claimsByName = new Map(observed.claims.map((c) => [c.metadata.name ?? "", c]));
  const defaultClass = defaultStorageClass(observed.storageClasses);
  const claims: MigrationClaim[] = [];
  const unreadNodes = new Set<string>();
  for (const effect of base.claims) {
    if (!named.has(effect.template)) continue;
    const claim = claimsByName.get(effect.name);
    const template = templates.get(effect.template);
    if (!claim || !template) continue;
    const to = { size: templateSize(template) ?? effect.request ?? "", storageClass: template.spec.storageClassName ?? defaultClass };
    if (claim.spec.storageClassName === to.storageClass && effect.request && sameQuantity(effect.request, to.size)) continue;
    if (claim.status?.phase !== "Bound" || !claim.spec.volumeName) {
      warnings.push(`claim ${effect.name} is ${claim.status?.phase ?? "not bound"}: it has no volume, so no data to move; it is left as it is`);
      continue;
    }
    const pod = effect.leftover ? undefined : effect.pod;
    const refusal = claimRefusal(claim, ref);
    if (refusal) {
      refusals.push(refusal);
      continue;
    }
    // Consent is the run's (the prompt, --yes or a reviewed plan): the plan says what it costs.
    if ((claim.spec.accessModes ?? []).includes("ReadWriteOncePod")) {
      warnings.push(`claim ${effect.name} is ReadWriteOncePod: no second pod may mount it while its pod runs, so its replica is down for the whole copy, not only the final one`);
    }
    // How much data a smaller volume must hold is measured by a pod (du) once the change is
    // confirmed, before anything else changes: kubelet's volume stats are not read (they need
    // nodes/proxy, which lets its holder run commands in any pod of the node).
    const shrinks = compareQuantities(parseQuantity(to.size), parseQuantity(claim.status?.capacity?.["storage"] ?? effect.request ?? to.size)) < 0;
    if (shrinks) {
      warnings.push(`claim ${effect.name} shrinks to ${to.size}: set measures its data with a pod once the change is confirmed, and refuses before anything else changes if it does not fit`);
    }
    const node = pod ? observed.podNodes?.[pod] : undefined;
    if (node && pod && !cordonCheck(node, pod, effect.name, observed, request, refusals, warnings)) continue;
    const taints = node ? observed.nodeTaints?.[node] : undefined;
    if (node && !taints && !unreadNodes.has(node)) {
      unreadNodes.add(node);
      warnings.push(
        `node ${node} could not be read (get nodes, cluster scope), so its taints are not known: the copy pods there tolerate no taint, and if it has any they cannot start (the move then stops and says so); kubectl appstorage rbac prints a ClusterRole that allows it`,
      );
    }
    const immediate = to.storageClass !== undefined && bindsAtOnce(observed.storageClasses, to.storageClass);
    const where = immediate ? volumeWhere(observed, claim.spec.volumeName) : undefined;
    if (immediate && where && !node) {
      refusals.push({
        message: `claim ${effect.name}'s volume can be used only where ${where}, and ${pod ? `its pod ${pod} does not run on a node` : "no pod mounts it"}: class ${to.storageClass} binds at once (volumeBindingMode Immediate), so its new volume could be made elsewhere, where no copy pod can mount both; start the claim's pod first, or choose a class with volumeBindingMode WaitForFirstConsumer`,
        forceable: false,
      });
      continue;
    }
    claims.push({
      claim: effect.name,
      template: effect.template,
      ordinal: effect.ordinal,
      uid: effect.uid,
      volume: claim.spec.volumeName,
      accessModes: claim.spec.accessModes ?? ["ReadWriteOnce"],
      ...(pod ? { pod } : {}),
      ...(node ? { node } : {}),
      ...(taints?.length ? { tolerations: tolerationsOf(taints) } : {}),
      from: { ...(effect.request ? { size: effect.request } : {}), ...(claim.spec.storageClassName ? { storageClass: claim.spec.storageClassName } : {}) },
      to: { size: to.size, ...(to.storageClass ? { storageClass: to.storageClass } : {}) },
      ...(shrinks ? { measure: true } : {}),
      offline: (claim.spec.accessModes ?? []).includes("ReadWriteOncePod"),
      // Only where the old volume is tied to a place (its PV's node affinity): a provisioner that
      // makes volumes anywhere may not read nodes at all (minikube's, under the role
      // system:persistent-volume-provisioner, then never provisions a claim that names one).
      ...(immediate && node && where ? { provisionOn: node } : {}),
      phase: "pending",
      ...(claim.metadata.labels ? { labels: claim.metadata.labels } : {}),
      ...carriedAnnotations(claim.metadata.annotations, template.metadata.annotations),
    });
  }
  claims.sort((a, b) => b.ordinal - a.ordinal || (a.claim < b.claim ? -1 : 1));
  if (!claims.length) return { refusals, warnings, steps: [] };
  budgetChecks(base, observed, request, refusals, warnings);
  return { migration: { copyImage: options.copyImage, claims }, refusals, warnings, steps: ["write-journal", "migrate", "remove-journal"] };
}

/**
 * A replica on a cordoned node could not start there again once its claim moves: refused, or
 * with --force said as a warning. Returns whether the claim moves.
 */
function cordonCheck(node: string, pod: string, claim: string, observed: Observed, request: PlanRequest, refusals: Refusal[], warnings: string[]): boolean {
  if (!observed.cordonedNodes?.includes(node)) return true;
  const message = `node ${node}, where ${pod} runs, is cordoned: moving claim ${claim} restarts ${pod}, which could then not start on that node again (and the new volume is made where that node is); uncordon it first (kubectl uncordon ${node}), or pass --force to move it anyway`;
  if (request.force) warnings.push(`forced past: ${message}`);
  else refusals.push({ message, forceable: true });
  return request.force === true;
}

/** A move stops a replica by eviction once its StatefulSet is gone: a budget that then allows none would hold every move. */
function budgetChecks(base: ExistingClaimsBase, observed: Observed, request: PlanRequest, refusals: Refusal[], warnings: string[]): void {
  const podLabels = (base.desired.spec.template.metadata?.labels ?? {}) as Record<string, string>;
  for (const pdb of observed.disruptionBudgets ?? []) {
    const message = budgetBlocksMoves(pdb, podLabels, base.desired.spec.replicas ?? 1, statefulSetRef(request.name));
    if (!message) continue;
    if (request.force) warnings.push(`forced past: ${message}`);
    else refusals.push({ message, forceable: true });
  }
}

/** Why one claim cannot move, or undefined. */
function claimRefusal(claim: PersistentVolumeClaim, ref: string): Refusal | undefined {
  if (claim.spec.volumeMode !== "Block") return undefined;
  return {
    message: `claim ${claim.metadata.name ?? ""} of ${ref} is a block volume (volumeMode Block): --migrate-existing copies files and does not support block volumes yet`,
    forceable: false,
  };
}

/**
 * The tolerations of a copy pod: exactly the taints of the replica's node (which its replica
 * tolerates, or it would not run there), each by key, value and effect; never a blanket one.
 */
export function tolerationsOf(taints: readonly Taint[]): Toleration[] {
  return taints.map((t) => ({ key: t.key, operator: t.value ? "Equal" : "Exists", ...(t.value ? { value: t.value } : {}), effect: t.effect }));
}

const managedBy = { [journalLabel.key]: journalLabel.value };

/**
 * Annotations the volume controllers and the scheduler write on a claim (bind-completed,
 * bound-by-controller, storage-provisioner, selected-node, storage-resizer): they describe the old
 * volume's binding, and a new claim that carried them would look bound, or provisioned by the old
 * class's provisioner, or placed on a node before its pod.
 */
const bindingAnnotation = /^(pv\.kubernetes\.io|volume\.beta\.kubernetes\.io|volume\.kubernetes\.io)\//;

/** The annotations a moved claim's new claims carry (MigrationClaim.annotations), none when empty. */
export function carriedAnnotations(own: Record<string, string> | undefined, template: Record<string, string> | undefined): { annotations?: Record<string, string> } {
  const kept = Object.entries(own ?? {}).filter(([key]) => !bindingAnnotation.test(key));
  const annotations = { ...Object.fromEntries(kept), ...(template ?? {}) };
  return Object.keys(annotations).length ? { annotations } : {};
}

/** The class exists and binds a claim at once (volumeBindingMode Immediate, the API's default). */
function bindsAtOnce(classes: Observed["storageClasses"], name: string): boolean {
  const cls = classes?.find((c) => c.metadata.name === name);
  return cls !== undefined && (cls.volumeBindingMode ?? "Immediate") === "Immediate";
}

/** Where a bound claim's volume can be used (its node affinity), when its volume was read and has one. */
function volumeWhere(observed: Observed, volume: string): string | undefined {
  const pv = observed.persistentVolumes?.find((v) => v.metadata.name === volume);
  return pv ? volumeTopology(pv) : undefined;
}

/**
 * The tool's claim of the new volume: the new class and size, the old claim's access modes and
 * annotations; for a class that binds at once, the replica's node as the selected node when its
 * old volume can be used only in some places.
 */
export function newVolumeClaim(m: MigrationClaim, ns: string, statefulSet: string): PersistentVolumeClaim {
  const annotations = { ...(m.annotations ?? {}), ...(m.provisionOn ? { [selectedNodeAnnotation]: m.provisionOn } : {}) };
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: newVolumeClaimName(m.claim),
      namespace: ns,
      labels: { ...managedBy, [migrationLabels.statefulSet]: labelValue(statefulSet), [migrationLabels.claim]: labelValue(m.claim) },
      ...(Object.keys(annotations).length ? { annotations } : {}),
    },
    spec: {
      accessModes: m.accessModes,
      volumeMode: "Filesystem",
      resources: { requests: { storage: m.to.size } },
      ...(m.to.storageClass ? { storageClassName: m.to.storageClass } : {}),
    },
  };
}

/** The claim re-created under its own name, bound to the new volume, with the labels and annotations it had. */
export function movedClaim(m: MigrationClaim, ns: string, volume: string): PersistentVolumeClaim {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: m.claim, namespace: ns, ...(m.labels ? { labels: m.labels } : {}), ...(m.annotations ? { annotations: m.annotations } : {}) },
    spec: {
      accessModes: m.accessModes,
      volumeMode: "Filesystem",
      resources: { requests: { storage: m.to.size } },
      ...(m.to.storageClass ? { storageClassName: m.to.storageClass } : {}),
      volumeName: volume,
    },
  };
}

export type CopyMode = "copy" | "sync" | "measure";

/** The pod that measures a claim's data before a shrink (only the claim mounted, read-only). */
export const measurePodName = (claim: string) => bounded("appstorage-measure-", claim);

/**
 * The final copy's start, as created: "wait" (started before its replica stops, so that its start is
 * not part of the replica's downtime; it reads nothing until the tool deletes it, which sends it
 * SIGTERM: the go) or "go" (it copies at once).
 */
export const startAnnotation = "appstorage.kubectl.io/start";
/** A waiting sync pod's grace period: deleted, it makes the final copy within it (longer than any copy). */
export const syncGraceSeconds = 86_400;

/**
 * What each copy pod may do beyond an unprivileged process, and no more (every other capability is
 * dropped). A copy that keeps everything (rsync -aHAXS --numeric-ids, as root) needs: CHOWN (every
 * entry's owner and group, by number), DAC_OVERRIDE (read every file and write into any directory
 * whatever their modes), FOWNER (modes, times, ACLs and xattrs of entries it does not own), FSETID
 * (keep setuid and setgid bits through a chown and a write), SETFCAP (file capabilities, the xattr
 * security.capability) and MKNOD (device nodes): all of them in the Pod Security Standards' baseline
 * profile. Measuring the data (du) only reads: DAC_OVERRIDE (DAC_READ_SEARCH would do, but baseline
 * does not allow adding it).
 * Not among them, so never kept: SYS_ADMIN, which trusted.* xattrs need (the copy cannot even see
 * them) and which security.* xattrs other than capabilities need where no security module decides
 * (setting one then fails, and so does the copy: loudly, never silently).
 */
export const copyCapabilities: Record<CopyMode, string[]> = {
  copy: ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "MKNOD", "SETFCAP"],
  sync: ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "MKNOD", "SETFCAP"],
  measure: ["DAC_OVERRIDE"],
};

/**
 * How a copy pod tells that its bytes keep moving: a readiness probe that sums what every process
 * of the pod has read and written (rchar and wchar of /proc/PID/io: files, pipes, everything the
 * copy and the verification read and write), itself left out, and is Ready only when the sum
 * changed since its last run, periodSeconds before. So the pod is Ready while bytes move, and not
 * Ready after a whole period without a byte (src/plan/move.ts stops a copy that stays so for
 * stallSeconds). Only the shell's builtins run (no process of its own to count). Where no
 * process's counters can be read at all, progress cannot be told: it says Ready (the copy is then
 * bounded by nothing but its end, as a copy with no stall).
 */
export const progressProbe = String.raw`s=0; n=0
for f in /proc/[0-9]*/io; do
  [ "$f" = "/proc/$$/io" ] && continue
  { while read -r k v; do case $k in rchar:|wchar:) s=$((s + v)); n=1;; esac; done < "$f"; } 2>/dev/null
done
[ "$n" = 1 ] || exit 0
last=; { read -r last < /tmp/.appstorage-progress; } 2>/dev/null
echo "$s" > /tmp/.appstorage-progress
[ "$s" != "$last" ]`;

/** The probe's period: a copy pod without a byte moved for this long is not Ready. */
export const progressPeriodSeconds = 10;

/**
 * A copy pod: the claim mounted read-only at /src, the new volume at /dst, on the node of the
 * claim's pod (a ReadWriteOnce volume can be mounted by two pods there), tolerating that node's
 * taints and no other, as root (to keep owners) but not privileged: every capability dropped but
 * those the copy needs (copyCapabilities), no privilege escalation, the runtime's default seccomp
 * profile, no service account token, a read-only root file system (its scratch space an emptyDir at
 * /tmp). It reports in its termination message (parseCopyReport). A sync pod created with `start`
 * "wait" waits for SIGTERM (its deletion) before it reads anything.
 */
export function copyPod(m: MigrationClaim, ns: string, statefulSet: string, mode: CopyMode, image: string, start: "wait" | "go" = "go"): Pod {
  const sync = mode === "sync";
  const env = [
    { name: "MODE", value: mode },
    ...(m.copiedSince !== undefined ? [{ name: "SINCE", value: String(m.copiedSince) }] : []),
    ...(sync && start === "wait" ? [{ name: "WAIT", value: "sigterm" }] : []),
  ];
  const seccompProfile = { type: "RuntimeDefault" };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: mode === "measure" ? measurePodName(m.claim) : copyPodName(m.claim),
      namespace: ns,
      labels: { ...managedBy, [migrationLabels.statefulSet]: labelValue(statefulSet), [migrationLabels.claim]: labelValue(m.claim) },
      annotations: { "appstorage.kubectl.io/copy": mode, ...(sync ? { [startAnnotation]: start } : {}) },
    },
    spec: {
      restartPolicy: "Never",
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      ...(sync ? { terminationGracePeriodSeconds: syncGraceSeconds } : {}),
      ...(m.node
        ? { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name", operator: "In", values: [m.node] }] }] } } } }
        : {}),
      ...(m.tolerations?.length ? { tolerations: m.tolerations } : {}),
      securityContext: { runAsUser: 0, runAsGroup: 0, seccompProfile },
      containers: [
        {
          name: "copy",
          image,
          imagePullPolicy: "IfNotPresent",
          command: ["/bin/sh", "-c", copyScript],
          env,
          terminationMessagePolicy: "File",
          securityContext: {
            privileged: false,
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ["ALL"], add: copyCapabilities[mode] },
            seccompProfile,
          },
          // A copy's progress (progressProbe): a copy is bounded by it, not by --timeout. It keeps
          // its last count in /tmp, the emptyDir (the root file system is read-only).
          ...(mode === "measure"
            ? {}
            : {
                readinessProbe: {
                  exec: { command: ["/bin/sh", "-c", progressProbe] },
                  periodSeconds: progressPeriodSeconds,
                  timeoutSeconds: progressPeriodSeconds,
                  successThreshold: 1,
                  failureThreshold: 1,
                },
              }),
          volumeMounts: [{ name: "src", mountPath: "/src", readOnly: true }, ...(mode === "measure" ? [] : [{ name: "dst", mountPath: "/dst" }]), { name: "tmp", mountPath: "/tmp" }],
        },
      ],
      volumes: [
        { name: "src", persistentVolumeClaim: { claimName: m.claim, readOnly: true } },
        ...(mode === "measure" ? [] : [{ name: "dst", persistentVolumeClaim: { claimName: newVolumeClaimName(m.claim) } }]),
        { name: "tmp", emptyDir: {} },
      ],
    },
  };
}

/** The pods that prove, before anything changes, that the copy image starts on a replica's node. */
export const probePodPrefix = "appstorage-probe-";

/**
 * A pod that proves the copy image starts where a claim's copy pods will run, before anything
 * changes: the copy pod as it would be made (the same image, node, tolerations and security
 * settings, so the node, admission and the runtime answer as they will), but mounting no claim
 * and running only `exit 0` in the image's shell. One per node (generateName).
 */
export function probePod(m: MigrationClaim, ns: string, statefulSet: string, image: string): Pod {
  const body = copyPod(m, ns, statefulSet, "measure", image);
  const claims = new Set((body.spec?.volumes ?? []).filter((v) => v.persistentVolumeClaim).map((v) => v.name));
  const { name: _name, ...metadata } = body.metadata;
  const containers = (body.spec!["containers"] as Record<string, unknown>[]).map((c) => ({
    ...c,
    command: ["/bin/sh", "-c", "exit 0"],
    env: [],
    volumeMounts: ((c["volumeMounts"] as { name: string }[] | undefined) ?? []).filter((v) => !claims.has(v.name)),
  }));
  return {
    ...body,
    metadata: { ...metadata, generateName: probePodPrefix, annotations: { "appstorage.kubectl.io/copy": "probe" } },
    spec: { ...body.spec, containers, volumes: (body.spec?.volumes ?? []).filter((v) => !claims.has(v.name)) },
  };
}

/**
 * The claims whose copy pods are still to run (their move is before its final copy), one per node:
 * where the probe pods prove that the copy image starts, before the journal is written. A claim
 * whose replica does not run has no node ("": where the scheduler puts its copy pods).
 */
export function probeTargets(migration: Pick<Migration, "claims">): MigrationClaim[] {
  const byNode = new Map<string, MigrationClaim>();
  for (const m of migration.claims) if (["pending", "copied", "stopped"].includes(m.phase) && !byNode.has(m.node ?? "")) byNode.set(m.node ?? "", m);
  return [...byNode.values()];
}

/** The taints a claim's copy pods tolerate (its replica's node's, as planned), as a message says them. */
export const toleratedTaints = (m: Pick<MigrationClaim, "tolerations">): string => (m.tolerations?.length ? m.tolerations.map((t) => `${t.key}:${t.effect ?? ""}`).join(", ") : "none");

/**
 * Why a probe pod (probePod) shows that the copy image cannot run where the claim's copy pods
 * would, and what to do, as the one line that refuses the run: `trouble`, kubelet's or the
 * scheduler's reason it did not start; `failed`, why it did not run its shell. Nothing was changed.
 */
export function probeRefusal(
  image: string,
  m: Pick<MigrationClaim, "claim" | "node" | "tolerations">,
  ns: string,
  pod: string,
  end: { trouble: { reason: string; message?: string } } | { failed: string },
): string {
  const where = m.node ? `on node ${m.node}` : `where claim ${m.claim}'s copy pods would run`;
  if ("failed" in end)
    return `the copy image ${image} does not run its shell (/bin/sh) ${where}: ${end.failed}; the pod was removed and nothing was changed: pass --copy-image with an image that has sh (${copyImageNeeds})`;
  const { reason, message } = end.trouble;
  const advice = /Image/.test(reason)
    ? `pass --copy-image with an image the node can pull or already has (${copyImageNeeds})`
    : reason === "Unschedulable"
      ? `the copy pods must run ${where}, where the claim's replica runs, and tolerate only the taints that node had when the change was planned (${toleratedTaints(m)}): make room there (or lower the namespace's LimitRange defaults)`
      : `let the namespace's policies allow the copy pods (kubectl get events -n ${ns} --field-selector involvedObject.name=${pod})`;
  return `the copy image ${image} cannot start ${where}: ${reason}${message ? ` (${message})` : ""}; the pod was removed and nothing was changed: ${advice}, then run the same command again`;
}

/** The report of a finished copy pod (Succeeded or Failed), from its termination message. */
export function parseCopyReport(pod: Pod): CopyReport | undefined {
  const message = pod.status?.containerStatuses?.find((c) => c.name === "copy")?.state?.terminated?.message;
  if (!message) return undefined;
  try {
    return JSON.parse(message) as CopyReport;
  } catch {
    return { error: message.slice(0, 300) };
  }
}

/** A copy pod's end: Succeeded or Failed, or undefined while it runs. */
export const copyPodDone = (pod: Pod | undefined): boolean => pod?.status?.phase === "Succeeded" || pod?.status?.phase === "Failed";

/** The order a claim's move goes through its phases: a ReadWriteOncePod claim is stopped before its first copy. */
export function phaseOrder(m: Pick<MigrationClaim, "offline">): MigrationPhase[] {
  return m.offline ? ["pending", "stopped", "copied", "verified", "swapped", "done"] : ["pending", "copied", "stopped", "verified", "swapped", "done"];
}

/** The labels of a kept old volume: whose it was and when it was retained (the whole names: retainedAnnotations). */
export function retainedLabels(m: MigrationClaim, ns: string, statefulSet: string, now: Date): Record<string, string> {
  return {
    ...managedBy,
    [migrationLabels.namespace]: ns,
    [migrationLabels.statefulSet]: labelValue(statefulSet),
    [migrationLabels.claim]: labelValue(m.claim),
    [migrationLabels.ordinal]: String(m.ordinal),
    [migrationLabels.retainedAt]: now.toISOString().slice(0, 10),
  };
}

/** The whole claim and StatefulSet names of a kept old volume, which a label value may only abbreviate. */
export function retainedAnnotations(m: MigrationClaim, statefulSet: string): Record<string, string> {
  return { [migrationLabels.statefulSet]: statefulSet, [migrationLabels.claim]: m.claim };
}
