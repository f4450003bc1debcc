// Where journals live: a Secret in the StatefulSet's namespace (so another machine can finish
// the job, and the Secret's create is the lock) and a local 0600 file in a 0700 folder (a copy
// for the person who ran the command). Neither ever holds credentials: only the objects.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { RefusedError } from "../errors";
import { describeHolder } from "./holder";
import { createSecret, deleteSecret, getSecret, updateSecret } from "../kube/api";
import type { KubeClient } from "../kube/client";
import { isAlreadyExists, isConflict, isUnknownOutcome } from "../kube/errors";
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
      this.secret = await this.writeOrReadBack(journal, () =>
        this.secret ? updateSecret(this.client, this.namespace, this.body(journal)) : createSecret(this.client, this.namespace, this.body(journal)),
      );
    } catch (e) {
      if (isAlreadyExists(e) || isConflict(e)) {
        // Name the run that got the lock, so the user knows whom to wait for.
        const other = await this.read().catch(() => undefined);
        const who = other ? ` (${other.by}, ${describeHolder(other.holder)}, started ${other.startedAt})` : "";
        throw new RefusedError(`another kubectl appstorage set${who} started on statefulset.apps/${this.name} at the same moment; nothing was changed: wait for it to finish`);
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
      this.secret = await this.writeOrReadBack(journal, () => updateSecret(this.client, this.namespace, this.body(journal)));
    } catch (e) {
      if (isConflict(e)) throw new RefusedError(`the journal of statefulset.apps/${this.name} was changed by another run; stopping so that only one run works on it`);
      throw e;
    }
    this.writeLocal(journal);
  }

  /**
   * Writes the journal; when the outcome is unknown, reads it back: our own content means the
   * write happened; otherwise the write is tried once more against what is there now (its
   * resourceVersion keeps that safe: another run's change makes it fail with a conflict).
   */
  private async writeOrReadBack(journal: Journal, write: () => Promise<KubeObject>): Promise<KubeObject> {
    try {
      return await write();
    } catch (e) {
      if (!isUnknownOutcome(e)) throw e;
      const current = await getSecret(this.client, this.namespace, this.secretName);
      const data = current?.data?.[journalDataKey];
      const written = data ? (JSON.parse(Buffer.from(data, "base64").toString("utf8")) as Journal) : undefined;
      if (current && written?.holder === journal.holder && written.updatedAt === journal.updatedAt) return current;
      const ours = !current ? this.secret === undefined : written?.holder === journal.holder;
      if (!ours) throw new RefusedError(`the journal of statefulset.apps/${this.name} is held by another run (${written?.by ?? "unknown"}); stopping so that only one run works on it`);
      this.secret = current;
      return write();
    }
  }

  async remove(): Promise<void> {
    try {
      await deleteSecret(this.client, this.namespace, this.secretName, this.secret?.metadata.uid);
    } catch (e) {
      if (!isUnknownOutcome(e)) throw e;
      if (await getSecret(this.client, this.namespace, this.secretName).catch(() => undefined)) await deleteSecret(this.client, this.namespace, this.secretName, this.secret?.metadata.uid);
    }
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
