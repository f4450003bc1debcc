// Where journals are written: a Secret in the StatefulSet's namespace (so another machine can
// finish the job, and writing the Secret is the lock) and a local 0600 file in a 0700 folder (a
// copy for the person who ran the command). Neither ever holds credentials: only the objects.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { RefusedError, StopError } from "../errors";
import type { KubeClient } from "../kube/client";
import { isAlreadyExists, isConflict, isUnknownOutcome } from "../kube/errors";
import { getSecret } from "../kube/read";
import type { KubeObject } from "../api/types";
import { createSecret, deleteSecret, updateSecret } from "../kube/write";
import { decodeJournalSecret, journalSecret, journalSecretName } from "../plan/journal";
import type { Journal, JournalSecretRef } from "../plan/types";
import { describeHolder } from "../lock-holder";
import { statefulSetRef } from "../refs";

/** Another run holds the journal now: this run stops at once and changes nothing more (a move does not wind down either). */
export class JournalTakenError extends StopError {}

export function localJournalDir(env: Record<string, string | undefined>): string {
  const base = env["APPSTORAGE_STATE_DIR"] ?? join(env["XDG_STATE_HOME"] ?? join(homedir(), ".local", "state"), "kubectl-appstorage");
  return join(base, "journal");
}

export class JournalStore {
  /** The journal's Secret as last read or written; undefined while there is none. */
  private secret?: JournalSecretRef;

  /** `found`: the Secret the plan was made against, if one existed; it is replaced only at that version. */
  constructor(
    private readonly client: KubeClient,
    readonly namespace: string,
    readonly name: string,
    private readonly localDir: string,
    found?: JournalSecretRef,
  ) {
    this.secret = found;
  }

  get secretName(): string {
    return journalSecretName(this.name);
  }

  get localPath(): string {
    return join(this.localDir, `${this.namespace}_${this.name}.json`);
  }

  private remember(written: KubeObject): JournalSecretRef {
    return { uid: written.metadata.uid ?? "", resourceVersion: written.metadata.resourceVersion ?? "" };
  }

  /**
   * Takes the lock by creating the journal, or by replacing the journal the plan saw (its
   * resourceVersion makes two runs racing for it fail one of them). Nothing is changed yet.
   */
  async acquire(journal: Journal): Promise<void> {
    const refuse = (why: string) => new RefusedError(why);
    try {
      const written = await this.writeOrReadBack(journal, refuse, () =>
        this.secret ? updateSecret(this.client, this.namespace, journalSecret(journal, this.secret.resourceVersion)) : createSecret(this.client, this.namespace, journalSecret(journal)),
      );
      this.secret = this.remember(written);
    } catch (e) {
      if (isAlreadyExists(e) || isConflict(e)) {
        // Name the run that got the lock, so the user knows whom to wait for.
        const other = await this.readOther();
        const who = other ? ` (${other.by}, ${describeHolder(other.holder)}, started ${other.startedAt})` : "";
        throw new RefusedError(`another kubectl appstorage set${who} started on ${statefulSetRef(this.name)} at the same moment; nothing was changed: wait for it to finish`);
      }
      throw e;
    }
    this.writeLocal(journal);
  }

  /** The journal another run wrote, when it can be read at all (only to name that run). */
  private async readOther(): Promise<Journal | undefined> {
    try {
      const current = await getSecret(this.client, this.namespace, this.secretName);
      return current ? decodeJournalSecret(current) : undefined;
    } catch {
      return undefined;
    }
  }

  /** Saves progress; a conflict means another run took the lock over: stop. */
  async save(journal: Journal): Promise<void> {
    // Without the resourceVersion it read or wrote, an update would overwrite another run's lock.
    if (!this.secret?.resourceVersion) throw new Error("internal: journal saved before it was acquired");
    const stop = (why: string) => new JournalTakenError(why);
    try {
      const written = await this.writeOrReadBack(journal, stop, () => updateSecret(this.client, this.namespace, journalSecret(journal, this.secret?.resourceVersion)));
      this.secret = this.remember(written);
    } catch (e) {
      if (isConflict(e)) throw new JournalTakenError(`the journal of ${statefulSetRef(this.name)} was changed by another run; stopping so that only one run works on it`);
      throw e;
    }
    this.writeLocal(journal);
  }

  /**
   * Writes the journal; when the outcome is unknown, reads it back: our own content means the
   * write happened; otherwise the write is tried once more against what is there now (its
   * resourceVersion keeps that safe: another run's change makes it fail with a conflict).
   */
  private async writeOrReadBack(journal: Journal, fail: (why: string) => Error, write: () => Promise<KubeObject>): Promise<KubeObject> {
    try {
      return await write();
    } catch (e) {
      if (!isUnknownOutcome(e)) throw e;
      const current = await getSecret(this.client, this.namespace, this.secretName);
      const written = current ? decodeJournalSecret(current) : undefined;
      if (current && written?.holder === journal.holder && written.updatedAt === journal.updatedAt) return current;
      const ours = !current ? this.secret === undefined : written?.holder === journal.holder;
      if (!ours) throw fail(`the journal of ${statefulSetRef(this.name)} is held by another run (${written?.by ?? "unknown"}); stopping so that only one run works on it`);
      this.secret = current ? this.remember(current) : undefined;
      return write();
    }
  }

  /** Removes the journal (NotFound: already removed) and the local copy. */
  async remove(): Promise<void> {
    try {
      await deleteSecret(this.client, this.namespace, this.secretName, this.secret?.uid);
    } catch (e) {
      if (!isUnknownOutcome(e)) throw e;
      if (await getSecret(this.client, this.namespace, this.secretName).catch(() => undefined)) await deleteSecret(this.client, this.namespace, this.secretName, this.secret?.uid);
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
