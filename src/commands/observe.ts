// Reads everything a plan needs in a constant number of requests, all at once.
import { localJournalDir, JournalStore } from "../apply/journal-store";
import { RefusedError } from "../errors";
import { getStatefulSet, listClaims, listPods, listStorageClasses, namespaceExists, whoAmI } from "../kube/api";
import type { KubeClient } from "../kube/client";
import type { Observed } from "../plan/plan";
import type { CommandDeps } from "./deps";

export async function observe(client: KubeClient, name: string, deps: Pick<CommandDeps, "env" | "now" | "holderDead">): Promise<{ observed: Observed; store: JournalStore }> {
  const { env } = deps;
  const now = deps.now();
  const ns = client.namespace;
  const store = new JournalStore(client, ns, name, localJournalDir(env));
  const [statefulSet, claims, pods, storageClasses, journal, user] = await Promise.all([
    getStatefulSet(client, ns, name),
    listClaims(client, ns),
    listPods(client, ns),
    listStorageClasses(client),
    store.read(),
    whoAmI(client),
  ]);
  if (!statefulSet && !journal && !(await namespaceExists(client, ns))) {
    throw new RefusedError(`namespace "${ns}" not found; check -n, or list namespaces with: kubectl get namespaces`);
  }
  return { observed: { statefulSet, claims, pods, storageClasses, journal, holderGone: journal && deps.holderDead ? deps.holderDead(journal.holder) : false, user, now: now.toISOString() }, store };
}
