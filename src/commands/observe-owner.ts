// Reads the Argo CD Application or Flux Kustomization/HelmRelease a StatefulSet's labels and
// annotations name (src/plan/owner.ts says which), for the plan to say whether it syncs on its own
// and how to pause it. Nothing is read for a StatefulSet that names none. What cannot be read is
// kept as why (forbidden, not served): the plan then prints the commands to pause it by hand.
import type { StatefulSet } from "../api/types";
import type { KubeClient } from "../kube/client";
import { isForbidden, isNotFound } from "../kube/errors";
import { findCustomObjects, getCustomObject } from "../kube/read";
import { argoDefaultNamespace, ownerLookups } from "../plan/owner";
import type { ObservedOwner, OwnerResourceRef } from "../plan/owner-types";

const firstLine = (e: unknown) => (e as Error).message.split("\n")[0]!;

async function readOwner(client: KubeClient, ref: OwnerResourceRef): Promise<ObservedOwner> {
  const get = async (ns: string): Promise<ObservedOwner> => {
    const object = await getCustomObject(client, ref.group, ref.version, ref.resource, ns, ref.name);
    return object ? { ref, object } : { ref };
  };
  try {
    if (ref.namespace !== undefined) return await get(ref.namespace);
    // An Application named by its instance alone lives in Argo CD's own namespace, which the
    // StatefulSet does not name: looked for by name in every namespace, else (a user who may not
    // list them at cluster scope) in Argo CD's default namespace.
    try {
      const found = await findCustomObjects(client, ref.group, ref.version, ref.resource, ref.name);
      const object = found.length === 1 ? found[0] : found.find((o) => o.metadata.namespace === argoDefaultNamespace);
      if (object) return { ref, object };
      return found.length ? { ref, error: `${found.length} ${ref.resource}.${ref.group} named ${ref.name}, in ${found.map((o) => o.metadata.namespace).join(", ")}` } : { ref };
    } catch (e) {
      if (!isForbidden(e)) throw e;
      return await get(argoDefaultNamespace);
    }
  } catch (e) {
    if (isForbidden(e) || isNotFound(e)) return { ref, error: firstLine(e) };
    throw e;
  }
}

/**
 * The owner objects of the StatefulSets in play (one, -l or -f), each read once however many
 * StatefulSets name it (an Application or a Kustomization usually applies several); by
 * namespace/name of the StatefulSet, none for a StatefulSet that names none.
 */
export async function observeOwnersOfMany(client: KubeClient, statefulSets: readonly StatefulSet[]): Promise<Map<string, ObservedOwner[]>> {
  const key = (r: OwnerResourceRef) => JSON.stringify([r.group, r.resource, r.namespace ?? "", r.name]);
  const reads = new Map<string, Promise<ObservedOwner>>();
  for (const s of statefulSets) for (const ref of ownerLookups(s)) if (!reads.has(key(ref))) reads.set(key(ref), readOwner(client, ref));
  const out = new Map<string, ObservedOwner[]>();
  for (const s of statefulSets) {
    const lookups = ownerLookups(s);
    if (lookups.length) out.set(`${s.metadata.namespace}/${s.metadata.name}`, await Promise.all(lookups.map((ref) => reads.get(key(ref))!)));
  }
  return out;
}
