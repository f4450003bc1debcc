// The journals of interrupted changes, as Secrets decoded: the client reads Secrets, the plan's
// journal module decodes them, and this says what to do with one that cannot be read.
import { RefusedError } from "../errors";
import type { KubeClient } from "../kube/client";
import { getSecret, listSecrets, type SecretObject } from "../kube/read";
import type { KubeObject } from "../api/types";
import { decodeJournalSecret, journalLabel, journalSecretName } from "../plan/journal";
import type { Journal, JournalSecretRef } from "../plan/types";
import { statefulSetRef } from "../refs";

const refOf = (secret: SecretObject): JournalSecretRef => ({ uid: secret.metadata.uid ?? "", resourceVersion: secret.metadata.resourceVersion ?? "" });

function journalOf(secret: SecretObject, statefulSet: string): Journal | undefined {
  try {
    return decodeJournalSecret(secret);
  } catch (e) {
    throw new RefusedError(
      `the journal secret/${secret.metadata.name} in namespace ${secret.metadata.namespace} cannot be read (${(e as Error).message}); inspect it, and delete it if no change of ${statefulSetRef(statefulSet)} is pending`,
    );
  }
}

/** The journal of one StatefulSet, and its Secret's version (against which the lock is taken). */
export async function readJournal(client: KubeClient, ns: string, statefulSet: string): Promise<{ journal?: Journal; secret?: JournalSecretRef }> {
  const secret = await getSecret(client, ns, journalSecretName(statefulSet));
  if (!secret) return {};
  const journal = journalOf(secret, statefulSet);
  return journal ? { journal, secret: refOf(secret) } : { secret: refOf(secret) };
}

/** Every journal in a namespace (or all), with its Secret's version; a Secret that holds no readable journal is reported to `unreadable`. */
export async function listJournals(client: KubeClient, ns: string | undefined, unreadable: (secret: KubeObject) => void): Promise<{ journal: Journal; secret: JournalSecretRef }[]> {
  const secrets = await listSecrets(client, ns, `${journalLabel.key}=${journalLabel.value}`);
  return secrets.flatMap((s) => {
    try {
      const journal = decodeJournalSecret(s);
      return journal ? [{ journal, secret: refOf(s) }] : [];
    } catch {
      unreadable(s);
      return [];
    }
  });
}
