// `rbac [-n NS] [-o yaml|json]`: prints the least-privilege Role (and its binding, the optional
// ClusterRole for storage classes, and the Role and ClusterRole --migrate-existing adds) for
// kubectl apply -f -. Reads nothing from the cluster.
import type { KubeFlags } from "../kube/client";
import { permissionTable } from "../plan/access";
import { printFlags } from "../output/print-flags";
import { rbacObjects, renderRbac } from "../output/rbac";
import { connectWith, type CommandDeps } from "./deps";

export interface RbacOptions {
  flags: KubeFlags;
  /** -o as given: none prints the commented YAML; yaml and json the objects as a List. */
  output?: string;
}

/** The Validate step: usage errors only. */
export function validateRbac(opts: RbacOptions): void {
  printFlags.rbac.validate(opts.output);
}

export async function runRbac(opts: RbacOptions, deps: CommandDeps): Promise<void> {
  validateRbac(opts);
  const printer = printFlags.rbac.toPrinter(opts.output);
  // -n, else the kubeconfig context's namespace, as kubectl create would use (no request is sent).
  const namespace = opts.flags.namespace ?? (await connectWith(deps, opts.flags)).namespace;
  const text = renderRbac(permissionTable(), namespace);
  printer.print(deps.streams.out, { text: () => text, data: () => rbacObjects(text) });
}
