// `kubectl appstorage rbac`: the least-privilege Role this tool needs in a namespace, the optional
// ClusterRole for storage classes, and the Role and the ClusterRoles (one per cluster-scoped resource:
// persistentvolumes, nodes) --migrate-existing adds, each with a binding template, as YAML for
// `kubectl apply -f -`;
// and the README's permission table. Both are made from the one permission table (src/plan/access.ts).
import type { Permission } from "../plan/access";

const verbOrder = ["get", "list", "watch", "create", "update", "patch", "delete"];

interface Rule {
  group: string;
  resource: string;
  verbs: string[];
  /** verb -> who uses it */
  uses: Map<string, string[]>;
}

function rules(perms: readonly Permission[]): Rule[] {
  const byResource = new Map<string, Rule>();
  for (const perm of perms) {
    const resource = perm.subresource ? `${perm.resource}/${perm.subresource}` : perm.resource;
    const key = `${perm.group}/${resource}`;
    const rule: Rule = byResource.get(key) ?? { group: perm.group, resource, verbs: [], uses: new Map() };
    if (!rule.verbs.includes(perm.verb)) rule.verbs.push(perm.verb);
    rule.uses.set(perm.verb, [...(rule.uses.get(perm.verb) ?? []), `${perm.usedBy}${perm.optional ? " (optional)" : ""}`]);
    byResource.set(key, rule);
  }
  for (const r of byResource.values()) r.verbs.sort((a, b) => verbOrder.indexOf(a) - verbOrder.indexOf(b));
  return [...byResource.values()];
}

const q = (s: string) => JSON.stringify(s);

function rulesYaml(rs: readonly Rule[]): string {
  return rs
    .map(
      (r) => `${r.verbs.map((v) => `  # ${v}: ${r.uses.get(v)!.join("; ")}\n`).join("")}  - apiGroups: [${q(r.group)}]\n    resources: [${q(r.resource)}]\n    verbs: [${r.verbs.map(q).join(", ")}]\n`,
    )
    .join("");
}

/**
 * Why each verb of a ClusterRole is there, as annotations (rbac.appstorage.kubectl.io/VERB.RESOURCE):
 * they stay on the object a cluster admin applies and reads back, where comments do not.
 */
function whyAnnotations(rs: readonly Rule[]): string {
  const lines = rs.flatMap((r) =>
    r.verbs.map((v) => {
      const key = `rbac.appstorage.kubectl.io/${v}.${r.resource.replace("/", "-")}${r.group ? `.${r.group}` : ""}`;
      return `    ${key}: ${q(r.uses.get(v)!.join("; "))}\n`;
    }),
  );
  return `  annotations:\n${lines.join("")}`;
}

/** The header comment of each cluster-scoped role that --migrate-existing adds, by resource. */
const migrateClusterHeaders: Record<string, string> = {
  persistentvolumes: [
    "# Only for set --migrate-existing, at cluster scope (a cluster admin grants it): PersistentVolumes belong to no",
    "# namespace, so no Role can hold these. Each verb says why it is there (the annotations say it too). RBAC cannot",
    "# narrow them to the volumes of one namespace (a provisioner names them), so whoever holds this role may read",
    "# and patch every PersistentVolume of the cluster: bind it while claims move and delete the binding after.",
  ].join("\n"),
  nodes: [
    "# Optional, only for set --migrate-existing, at cluster scope (a cluster admin grants it): read-only, never",
    "# nodes/proxy (which would let its holder run commands in any pod of the node). Without it the copy pods",
    "# tolerate no taint, and a replica on a cordoned node is not refused up front.",
  ].join("\n"),
};

export function renderRbac(perms: readonly Permission[], namespace: string): string {
  const name = "kubectl-appstorage";
  const base = perms.filter((x) => !x.feature);
  const namespaced = rules(base.filter((x) => x.scope === "namespace"));
  const cluster = rules(base.filter((x) => x.scope === "cluster"));
  const migrate = perms.filter((x) => x.feature === "migrate");
  const moving = `${name}-migrate`;
  const binding = (kind: "RoleBinding" | "ClusterRoleBinding", roleKind: "Role" | "ClusterRole", bound: string) =>
    `apiVersion: rbac.authorization.k8s.io/v1\nkind: ${kind}\nmetadata:\n  name: ${bound}\n${kind === "RoleBinding" ? `  namespace: ${namespace}\n` : ""}roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ${roleKind}\n  name: ${bound}\nsubjects:\n  # Replace with the user (or kind: Group) who changes storage here.\n  - apiGroup: rbac.authorization.k8s.io\n    kind: User\n    name: CHANGE-ME\n`;
  const clusterRole = (header: string, role: string, rs: readonly Rule[]) =>
    `${header}\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: ${role}\n${whyAnnotations(rs)}rules:\n${rulesYaml(rs)}`;
  const classes = `${name}-storage-classes`;
  // One ClusterRole per cluster-scoped resource --migrate-existing uses, named after it.
  const order = Object.keys(migrateClusterHeaders);
  const rank = (r: string) => (order.includes(r) ? order.indexOf(r) : order.length);
  const byResource = [...new Set(migrate.filter((x) => x.scope === "cluster").map((x) => x.resource))].sort((a, b) => rank(a) - rank(b));
  const migrateCluster = byResource.flatMap((resource) => {
    const role = `${name}-${resource}`;
    const header = migrateClusterHeaders[resource] ?? "# Only for set --migrate-existing, at cluster scope (a cluster admin grants it).";
    return [clusterRole(header, role, rules(migrate.filter((x) => x.scope === "cluster" && x.resource === resource))), `# Bind it.\n${binding("ClusterRoleBinding", "ClusterRole", role)}`];
  });
  return [
    `# The least privilege kubectl appstorage needs in namespace ${namespace}: show, diff, set (and its resume).\n# Each rule names the commands and steps that use it. Apply with: kubectl appstorage rbac -n ${namespace} | kubectl apply -f -\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\nrules:\n${rulesYaml(namespaced)}`,
    `# Bind the Role.\n${binding("RoleBinding", "Role", name)}`,
    clusterRole(
      "# Optional, at cluster scope (a cluster admin grants it): without it, a size-only change still works,\n# with a warning; a change of storage class needs --force, and show cannot tell default classes.",
      classes,
      cluster,
    ),
    `# Bind the optional ClusterRole.\n${binding("ClusterRoleBinding", "ClusterRole", classes)}`,
    `# Only for set --migrate-existing (copy pods, the claims re-created on new volumes), in addition to the Role above.\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: ${moving}\n  namespace: ${namespace}\nrules:\n${rulesYaml(rules(migrate.filter((x) => x.scope === "namespace")))}`,
    `# Bind it.\n${binding("RoleBinding", "Role", moving)}`,
    ...migrateCluster,
  ].join("---\n");
}

/** The README's permission table (between its permissions markers), one row per permission. */
export function permissionsMarkdown(perms: readonly Permission[]): string {
  const rows = perms.map((x) => {
    const what = `${x.verb} ${x.resource}${x.subresource ? `/${x.subresource}` : ""}${x.group ? `.${x.group}` : ""}`;
    return `| \`${what}\` | ${x.scope} | ${x.usedBy} | ${x.optional ? `optional: ${x.without ?? ""}` : "required"} |`;
  });
  return ["| permission | scope | used by | without it |", "| --- | --- | --- | --- |", ...rows].join("\n") + "\n";
}

/** The objects of the commented YAML, as one List (-o json|yaml): read back from the text, so both forms hold the same rules. */
export function rbacObjects(text: string): { apiVersion: "v1"; kind: "List"; items: unknown[] } {
  const { loadAll } = require("js-yaml") as typeof import("js-yaml");
  return { apiVersion: "v1", kind: "List", items: loadAll(text).filter((d) => d !== null && d !== undefined) };
}
