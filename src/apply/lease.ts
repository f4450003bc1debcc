// The lock of one run on its StatefulSet: the journal's Secret, taken by creating (or replacing)
// it, renewed while the run works so that a second run knows this one is alive, and released at
// once when the run fails on its own (not killed) so that the rerun need not wait the lease out.
import { RefusedError, StopError } from "../errors";
import { leaseSeconds } from "../plan/journal";
import { statefulSetRef } from "../refs";
import type { Journal, JournalStep } from "../plan/types";
import type { Migration } from "../plan/migration-types";
import type { JournalStore } from "./journal-store";

/** A third of the lease: the longest a held journal goes without a write. */
export const renewAfterMs = (leaseSeconds * 1000) / 3;

export class Lease {
  private journal?: Journal;
  /** Only a run that holds the lock may write the journal again, even to release it. */
  private held = false;
  private renewal?: NodeJS.Timeout;
  private renewing = false;
  private saving: Promise<void> = Promise.resolve();

  constructor(
    readonly store: JournalStore,
    private readonly now: () => Date,
    private readonly holder: string,
  ) {}

  /** The step the journal records, once it is held. */
  get step(): JournalStep | undefined {
    return this.held ? this.journal?.step : undefined;
  }

  /** The journal as held (what a stop's "finish the move with" line is made from). */
  get record(): Journal | undefined {
    return this.held ? this.journal : undefined;
  }

  /** The moves of --migrate-existing as the journal holds them (a rerun's progress), once held. */
  get migration(): Migration | undefined {
    return this.held ? this.journal?.migration : undefined;
  }

  /** Records how far the moves got (the journal's step becomes migrating), and renews the lease. */
  saveMigration(migration: Migration): Promise<void> {
    if (!this.journal || !this.held) return Promise.resolve();
    this.journal = { ...this.journal, migration: structuredClone(migration) };
    return this.save("migrating");
  }

  /** Records whether the owner is paused now (--pause-owner), with the step reached. */
  saveOwner(paused: boolean): Promise<void> {
    if (!this.journal?.owner || !this.held) return Promise.resolve();
    this.journal = { ...this.journal, owner: { ...this.journal.owner, paused } };
    return this.save(this.journal.step);
  }

  private expiry(now: Date): string {
    return new Date(now.getTime() + leaseSeconds * 1000).toISOString();
  }

  async acquire(journal: Journal): Promise<void> {
    await this.store.acquire(journal);
    this.journal = journal;
    this.held = true;
    this.renewing = true;
    this.renewLater();
  }

  /**
   * The lease is renewed once a third of it has passed without a journal write (every write
   * renews it), so a renewal never follows a step's write at once.
   */
  private renewLater(): void {
    if (this.renewal) clearTimeout(this.renewal);
    this.renewal = setTimeout(() => void this.save(this.journal!.step).catch(() => undefined), renewAfterMs);
    this.renewal.unref();
  }

  /** Records the step reached (and renews the lease); saves are written one after another. */
  save(step: JournalStep): Promise<void> {
    if (!this.journal || !this.held) return Promise.resolve();
    const now = this.now();
    this.journal = { ...this.journal, step, updatedAt: now.toISOString(), holder: this.holder, leaseExpires: this.expiry(now) };
    const j = this.journal;
    if (this.renewing) this.renewLater();
    this.saving = this.saving.then(() => this.store.save(j));
    return this.saving;
  }

  /** Stops renewing and waits for the saves under way. */
  async stop(): Promise<void> {
    this.renewing = false;
    if (this.renewal) clearTimeout(this.renewal);
    this.renewal = undefined;
    await this.saving.catch(() => undefined);
  }

  /** The work is done (or was never started): the journal goes. */
  async remove(): Promise<void> {
    await this.stop();
    await this.store.remove();
    this.held = false;
  }

  /** The run failed on its own: keep the journal, but let the next run take it over at once. */
  async release(): Promise<void> {
    await this.stop();
    if (!this.journal || !this.held) return;
    const at = this.now().toISOString();
    await this.store.save({ ...this.journal, leaseExpires: at, updatedAt: at }).catch(() => undefined);
  }

  /**
   * Runs the steps in their order under the lease: after each, the journal records the step it
   * reached (`reached`), so a rerun starts there; a failure releases the lease at once, for the
   * rerun; renewal stops when the run ends. After Ctrl-C (`signal`) no further step starts. `onStop`
   * runs on any failure or Ctrl-C, before the release.
   */
  async run<S extends string>(
    steps: readonly S[],
    runners: Record<S, () => Promise<void>>,
    reached: Partial<Record<S, JournalStep>>,
    signal: AbortSignal,
    onStop?: () => Promise<void>,
  ): Promise<void> {
    try {
      for (const step of steps) {
        signal.throwIfAborted();
        await runners[step]();
        const after = reached[step];
        if (after) await this.save(after);
      }
    } catch (e) {
      const held = this.held;
      // What must not outlive the run (a paused owner) is put back before the lease is released.
      if (onStop) await onStop();
      await this.release();
      if (!signal.aborted) throw e;
      // Ctrl-C: the step under way finished (or its wait stopped); none started after it.
      const ref = statefulSetRef(this.store.name);
      if (!this.journal) throw new RefusedError(`interrupted (Ctrl-C) before anything was changed on ${ref}`);
      const where = held ? `the journal records step ${this.journal.step}` : "its templates are changed and its journal removed; what came after stopped";
      throw new StopError(`interrupted (Ctrl-C) while changing ${ref}: ${where}; run the same command again to finish`);
    } finally {
      await this.stop();
    }
  }
}
