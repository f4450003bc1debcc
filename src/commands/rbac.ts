// `rbac [-n NS]`: prints the least-privilege Role (and its binding, and the optional ClusterRole
// for storage classes) for kubectl apply -f -. Reads nothing from the cluster.
import type { ParsedCommand } from "../cli/root";
import { permissionTable } from "../plan/access";
import { renderRbac } from "../output/rbac";
import { connectWith, type CommandDeps } from "./deps";

export type RbacOptions = Extract<ParsedCommand, { kind: "rbac" }>;

export async function runRbac(opts: RbacOptions, deps: CommandDeps): Promise<void> {
  // -n, else the kubeconfig context's namespace, as kubectl create would use (no request is sent).
  const namespace = opts.flags.namespace ?? (await connectWith(deps, opts.flags)).namespace;
  deps.streams.out.write(renderRbac(permissionTable(), namespace));
}
