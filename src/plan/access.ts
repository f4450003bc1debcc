// Every permission this tool uses, in one table: what each step of a plan writes (asked with
// SelfSubjectAccessReview before anything changes) and what each command reads. The preflight,
// `kubectl appstorage rbac` (a least-privilege Role) and the README's permission table are all
// made from this table, so they cannot disagree.
import type { AccessCheck } from "../api/types";
import { journalSecretName } from "./journal";
import { type Plan, recreateSteps, type Step, stepOrder } from "./types";

export interface StepAccess extends AccessCheck {
  /** A missing optional permission is a warning (the step degrades), never a refusal. */
  optional?: boolean;
}

/** One permission, and who uses it. */
export interface Permission {
  group: string;
  resource: string;
  subresource?: string;
  verb: string;
  /** Names the object (the StatefulSet, or its journal's Secret) in the access review. */
  named?: "statefulset" | "journal";
  /** cluster: storage classes and volume attributes classes, outside any namespace. */
  scope: "namespace" | "cluster";
  optional: boolean;
  /** The commands and steps that use it, and what happens without an optional one. */
  usedBy: string;
  without?: string;
  /** migrate: only --migrate-existing needs it (its moves, its reads, show's kept volumes); rbac prints it in a Role of its own, and its cluster-scoped rights in a ClusterRole per resource. */
  feature?: "migrate";
}

const p = (group: string, resource: string, verb: string, usedBy: string, more: Partial<Permission> = {}): Permission => ({
  group,
  resource,
  verb,
  usedBy,
  scope: "namespace",
  optional: false,
  ...more,
});

/** What the steps of `set` (and `undo`) write, step by step. */
const stepPermissions: Record<Step, Permission[]> = {
  // A new journal is a create; replacing one that exists, and every later save of progress, an update.
  "write-journal": [
    p("", "secrets", "create", "set: write-journal (a new journal)"),
    p("", "secrets", "update", "set: write-journal (progress; taking over an interrupted run's journal)", { named: "journal" }),
  ],
  // The owner's object is in its own namespace (argocd, flux-system): asked for it by name (requiredAccess), not part of the namespace's Role.
  "pause-owner": [],
  "grow-claims": [p("", "persistentvolumeclaims", "patch", "set --resize-existing/--vac-existing: grow-claims")],
  "label-claims": [p("", "persistentvolumeclaims", "patch", "set --relabel-existing: label-claims (their labels and annotations)")],
  "orphan-delete": [p("apps", "statefulsets", "delete", "set: orphan-delete", { named: "statefulset" })],
  "wait-gone": [p("apps", "statefulsets", "watch", "set: wait-gone")],
  create: [p("apps", "statefulsets", "create", "set: create")],
  verify: [p("", "pods", "list", "set: verify"), p("", "pods", "watch", "set: verify")],
  record: [p("events.k8s.io", "events", "create", "set: record", { optional: true, without: "the change is not recorded as an event" })],
  "roll-pods": [
    p("apps", "statefulsets", "list", "set -f adding or removing templates: roll-pods (the new revision)"),
    p("apps", "statefulsets", "watch", "set -f adding or removing templates: roll-pods"),
    p("", "pods", "create", "set -f adding or removing templates: roll-pods (evict)", { subresource: "eviction" }),
    p("", "pods", "list", "set -f adding or removing templates: roll-pods"),
    p("", "pods", "watch", "set -f adding or removing templates: roll-pods"),
    p("", "persistentvolumeclaims", "get", "set -f adding or removing templates: roll-pods (each pod's claims)"),
  ],
  "restore-strategy": [p("apps", "statefulsets", "patch", "set -f adding or removing templates: restore-strategy (its updateStrategy put back)", { named: "statefulset" })],
  // The copy pods, the tool's claim of each new volume, the eviction, the claim re-created on the
  // new volume; the old volume set to Retain and the new one bound to the claim (cluster scope).
  migrate: [
    p("", "persistentvolumeclaims", "create", "set --migrate-existing: a new volume, the claim on it", { feature: "migrate" }),
    p("", "persistentvolumeclaims", "delete", "set --migrate-existing: the moved claim (its data verified, its old volume Retain) and the tool's own", { feature: "migrate" }),
    p("", "persistentvolumeclaims", "get", "set --migrate-existing", { feature: "migrate" }),
    p("", "persistentvolumeclaims", "watch", "set --migrate-existing", { feature: "migrate" }),
    p("", "pods", "create", "set --migrate-existing: copy pods", { feature: "migrate" }),
    p("", "pods", "delete", "set --migrate-existing: its own copy pods, once done, and the final copy's to tell it to go", { feature: "migrate" }),
    p("", "pods", "get", "set --migrate-existing", { feature: "migrate" }),
    p("", "pods", "watch", "set --migrate-existing", { feature: "migrate" }),
    p("", "pods", "create", "set --migrate-existing: evict", { subresource: "eviction", feature: "migrate" }),
    p("apps", "statefulsets", "delete", "set --migrate-existing: orphan-delete while a claim moves", { named: "statefulset", feature: "migrate" }),
    p("apps", "statefulsets", "create", "set --migrate-existing: re-create after a claim moved", { feature: "migrate" }),
    p("", "persistentvolumes", "get", "set --migrate-existing: read each claim's old and new volume, before and after each change to them", { scope: "cluster", feature: "migrate" }),
    p(
      "",
      "persistentvolumes",
      "patch",
      "set --migrate-existing: set the old volume to reclaim policy Retain and label it before its claim is deleted (its data outlives the claim); hold the new volume (Retain) while its claims change, bind it to the claim re-created under its name (claimRef), then give it its class's reclaim policy back",
      { scope: "cluster", feature: "migrate" },
    ),
  ],
  "resume-owner": [],
  "remove-journal": [p("", "secrets", "delete", "set: remove-journal", { named: "journal" })],
  "wait-resize": [p("", "persistentvolumeclaims", "list", "set --wait-resize"), p("", "persistentvolumeclaims", "watch", "set --wait-resize")],
  "restart-pods": [
    p("", "pods", "create", "set --restart-pods: evict", { subresource: "eviction" }),
    p("", "pods", "list", "set --restart-pods"),
    p("", "pods", "watch", "set --restart-pods"),
    p("", "persistentvolumeclaims", "get", "set --restart-pods"),
  ],
};

/** What the commands read before they plan (not asked with access reviews: the reads themselves answer). */
const readPermissions: Permission[] = [
  p("apps", "statefulsets", "get", "diff, set: read the StatefulSet", { named: "statefulset" }),
  p("apps", "statefulsets", "list", "show"),
  p("", "pods", "list", "show, diff, set: the pods of each ordinal"),
  p("", "persistentvolumeclaims", "list", "show, diff, set: the claims of each ordinal"),
  p("", "secrets", "get", "diff, set: an interrupted change (journal)", { named: "journal" }),
  p("", "secrets", "list", "show: interrupted changes", { optional: true, without: "show does not list interrupted changes" }),
  p("", "resourcequotas", "list", "diff, set --resize-existing: quota check", { optional: true, without: "the server checks quotas when the claims grow" }),
  p("storage.k8s.io", "storageclasses", "list", "show, diff, set: default class, expansion, a named class", {
    scope: "cluster",
    optional: true,
    without: "a size-only change goes on with a warning; a named class needs --force",
  }),
  p("storage.k8s.io", "volumeattributesclasses", "list", "diff, set with vac=", { scope: "cluster", optional: true, without: "the server checks the class name" }),
  // Never nodes/proxy: it lets its holder run commands in any pod of the node (kubernetes#136550). How
  // much data a shrink must fit is measured by a pod once the change is confirmed.
  p("", "nodes", "get", "diff, set --migrate-existing: each replica's node: its taints (its copy pods tolerate exactly those), whether it is cordoned, why a move waits on it", {
    scope: "cluster",
    optional: true,
    without:
      "the copy pods tolerate no taint (on a tainted node they cannot start, and the move stops saying so); a replica on a cordoned node is not refused up front; a move that times out on a node says where to look",
    feature: "migrate",
  }),
  p("policy", "poddisruptionbudgets", "list", "diff, set --migrate-existing: a budget that would allow no eviction while the StatefulSet is orphan-deleted", {
    optional: true,
    without: "such a budget is found only when the move's eviction is refused",
    feature: "migrate",
  }),
  p("", "persistentvolumes", "list", "show: what each claim's volume is, and those kept by --migrate-existing; diff, set --migrate-existing: where each old volume can be used (its node affinity)", {
    scope: "cluster",
    optional: true,
    without: "show does not say what the volumes are nor list the kept ones; a move to a class that binds at once does not name the replica's node for its new volume",
    feature: "migrate",
  }),
];

/** Every permission, reads first, then the steps in their order. */
export function permissionTable(): Permission[] {
  return [...readPermissions, ...stepOrder.flatMap((s) => stepPermissions[s])];
}

function check(perm: Permission, target: Plan["target"]): StepAccess {
  const name = perm.named === "statefulset" ? target.name : perm.named === "journal" ? journalSecretName(target.name) : undefined;
  return {
    verb: perm.verb,
    group: perm.group,
    resource: perm.resource,
    ...(perm.scope === "namespace" ? { namespace: target.namespace } : {}),
    ...(perm.subresource ? { subresource: perm.subresource } : {}),
    ...(name ? { name } : {}),
    ...(perm.optional ? { optional: true } : {}),
  };
}

type Target = Pick<Plan, "target" | "steps"> & { journal?: unknown; journalSecret?: unknown; ownerPause?: Plan["ownerPause"] };

/** Every permission the plan's steps use, checked before anything changes (get of the object first). */
export function requiredAccess(plan: Target): StepAccess[] {
  const checks: StepAccess[] = [check(readPermissions[0]!, plan.target)];
  const seen = new Set<string>(checks.map((c) => JSON.stringify(c)));
  const replaces = plan.journalSecret !== undefined || plan.journal !== undefined;
  for (const step of plan.steps) {
    for (const perm of stepPermissions[step]) {
      if (step === "write-journal" && perm.verb === "create" && replaces) continue;
      const c = check(perm, plan.target);
      const key = JSON.stringify(c);
      if (!seen.has(key)) checks.push(c);
      seen.add(key);
    }
  }
  // --pause-owner: the owner's object, where it is (patch pauses and resumes it).
  const owner = plan.ownerPause?.ref;
  if (owner && plan.steps.includes("pause-owner")) checks.push({ verb: "patch", group: owner.group, resource: owner.resource, namespace: owner.namespace, name: owner.name });
  return checks;
}

/** The checks of an ordinary fresh run, known from the namespace and name alone (asked while reading). */
export function freshRunAccess(namespace: string, name: string): StepAccess[] {
  return requiredAccess({ target: { namespace, name, uid: "", resourceVersion: "" }, steps: [...recreateSteps] });
}

/** What an optional permission's absence costs, for its warning. */
export function withoutText(c: AccessCheck): string {
  return permissionTable().find((x) => x.verb === c.verb && x.resource === c.resource && x.group === c.group && x.without)?.without ?? "that part is skipped";
}

/** How a check reads in a message: `delete statefulsets.apps "db" in namespace prod`. */
export function describeAccess(m: AccessCheck): string {
  return `${m.verb} ${m.resource}${m.subresource ? `/${m.subresource}` : ""}${m.group ? `.${m.group}` : ""}${m.name ? ` "${m.name}"` : ""}${m.namespace ? ` in namespace ${m.namespace}` : ""}`;
}

/** The kubectl command that asks the same question. */
export function canICommand(m: AccessCheck): string {
  return `kubectl auth can-i ${m.verb} ${m.resource}${m.group ? `.${m.group}` : ""}${m.name ? `/${m.name}` : ""}${m.subresource ? ` --subresource=${m.subresource}` : ""}${m.namespace ? ` -n ${m.namespace}` : ""}`;
}
