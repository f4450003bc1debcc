// Reads everything a plan needs in a constant number of requests, all at once.
import { localJournalDir, JournalStore } from "../apply/journal-store";
import { getStatefulSet, listClaims, listPods, listStorageClasses, whoAmI } from "../kube/api";
import type { KubeClient } from "../kube/client";
import type { Observed } from "../plan/plan";

export async function observe(client: KubeClient, name: string, env: Record<string, string | undefined>, now: Date): Promise<{ observed: Observed; store: JournalStore }> {
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
  return { observed: { statefulSet, claims, pods, storageClasses, journal, user, now: now.toISOString() }, store };
}
