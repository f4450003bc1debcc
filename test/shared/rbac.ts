// Grants for the tests that run the plugin as a user with only some permissions
// (harness.userKubeconfig makes the user, with none).
import type { TestContext } from "node:test";
import { apply, kubectlTry } from "./harness";

/** One rule of a Role or ClusterRole. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** Grants `user` the `rules` in the namespace: a Role and a RoleBinding, both named `name`. */
export function grantRole(ns: string, user: string, name: string, rules: PolicyRule[]): void {
  bind(ns, user, "Role", name, rules);
}

/**
 * Grants `user` `verbs` on storage classes (cluster scope, as a cluster admin grants with the
 * optional ClusterRole `rbac` prints): a ClusterRole and a ClusterRoleBinding sc-NS, deleted when
 * the test ends.
 */
export function grantStorageClasses(t: TestContext, ns: string, user: string, verbs: string[]): void {
  const name = `sc-${ns}`;
  bind(ns, user, "ClusterRole", name, [{ apiGroups: ["storage.k8s.io"], resources: ["storageclasses"], verbs }]);
  t.after(() => {
    kubectlTry(["delete", "clusterrolebinding", name]);
    kubectlTry(["delete", "clusterrole", name]);
  });
}

/** A Role or ClusterRole `name` with `rules`, and its binding of the same name to `user`. */
function bind(ns: string, user: string, kind: "Role" | "ClusterRole", name: string, rules: PolicyRule[]): void {
  apply({ apiVersion: "rbac.authorization.k8s.io/v1", kind, metadata: { name }, rules }, ns);
  apply(
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: `${kind}Binding`,
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind, name },
      subjects: [{ kind: "User", name: user }],
    },
    ns,
  );
}
