// Where journals live: a Secret in the StatefulSet's namespace (so another machine can finish
// the job, and the Secret's create is the lock) and a local 0600 file in a 0700 folder (a copy
// for the person who ran the command). Neither ever holds credentials: only the objects.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { RefusedError } from "../cli/errors";
import { createSecret, deleteSecret, getSecret, updateSecret } from "../kube/api";
import type { KubeClient } from "../kube/client";
import { isAlreadyExists, isConflict } from "../kube/errors";
import type { KubeObject } from "../kube/types";
import { type Journal, journalDataKey, journalSecretName, parseJournal } from "../plan/journal";

export function localJournalDir(env: Record<string, string | undefined>): string {
  const base = env["APPSTORAGE_STATE_DIR"] ?? join(env["XDG_STATE_HOME"] ?? join(homedir(), ".local", "state"), "kubectl-appstorage");
  return join(base, "journal");
}

export class JournalStore {
  private secret?: KubeObject;

  constructor(
    private readonly client: KubeClient,
    readonly namespace: string,
    readonly name: string,
    private readonly localDir: string,
  ) {}

  get secretName(): string {
    return journalSecretName(this.name);
  }

  get localPath(): string {
    return join(this.localDir, `${this.namespace}_${this.name}.json`);
  }

  async read(): Promise<Journal | undefined> {
    const secret = await getSecret(this.client, this.namespace, this.secretName);
    this.secret = secret;
    const data = secret?.data?.[journalDataKey];
    if (!secret || !data) return undefined;
    try {
      return parseJournal(Buffer.from(data, "base64").toString("utf8"));
    } catch (e) {
      throw new RefusedError(`the journal secret/${this.secretName} in namespace ${this.namespace} cannot be read (${(e as Error).message}); inspect it, and delete it if no change of statefulset.apps/${this.name} is pending`);
    }
  }

  private body(journal: Journal): KubeObject {
    return {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: this.secretName,
        namespace: this.namespace,
        labels: { "app.kubernetes.io/managed-by": "kubectl-appstorage" },
        annotations: { "appstorage.kubectl.io/statefulset": this.name },
        ...(this.secret?.metadata.resourceVersion ? { resourceVersion: this.secret.metadata.resourceVersion } : {}),
      },
      type: "appstorage.kubectl.io/journal",
      data: { [journalDataKey]: Buffer.from(JSON.stringify(journal)).toString("base64") },
    };
  }

  /**
   * Takes the lock by creating the journal, or by replacing the expired journal that read()
   * saw (the resourceVersion makes two runs racing for it fail one of them).
   */
  async acquire(journal: Journal): Promise<void> {
    try {
      this.secret = this.secret ? await updateSecret(this.client, this.namespace, this.body(journal)) : await createSecret(this.client, this.namespace, this.body(journal));
    } catch (e) {
      if (isAlreadyExists(e) || isConflict(e)) {
        throw new RefusedError(`another kubectl appstorage set started on statefulset.apps/${this.name} at the same moment; nothing was changed: wait for it to finish`);
      }
      throw e;
    }
    this.writeLocal(journal);
  }

  /** Saves progress; a conflict means another run took the lock over: stop. */
  async save(journal: Journal): Promise<void> {
    // Without the resourceVersion it read or wrote, an update would overwrite another run's lock.
    if (!this.secret?.metadata.resourceVersion) throw new Error("internal: journal saved before it was acquired");
    try {
      this.secret = await updateSecret(this.client, this.namespace, this.body(journal));
    } catch (e) {
      if (isConflict(e)) throw new RefusedError(`the journal of statefulset.apps/${this.name} was changed by another run; stopping so that only one run works on it`);
      throw e;
    }
    this.writeLocal(journal);
  }

  async remove(): Promise<void> {
    await deleteSecret(this.client, this.namespace, this.secretName, this.secret?.metadata.uid);
    this.secret = undefined;
    rmSync(this.localPath, { force: true });
  }

  private writeLocal(journal: Journal): void {
    mkdirSync(this.localDir, { recursive: true, mode: 0o700 });
    chmodSync(this.localDir, 0o700);
    writeFileSync(this.localPath, `${JSON.stringify(journal, null, 2)}\n`, { mode: 0o600 });
    chmodSync(this.localPath, 0o600);
  }
}
