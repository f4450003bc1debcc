// The Options of the change commands (`set`, `diff`, `undo`), the flags they share written once,
// and the usage rules of their Validate steps, pure (kubectl's o.Validate()), each in one place.
// Each command's validate (beside its run) picks its rules from here. What the cluster says no to
// is not here: that is a refusal, decided by the plan. (The Options live here, not in set.ts,
// diff.ts and undo.ts, because their Complete step, complete-change.ts, takes all three.)
import { UsageError } from "../errors";
import type { DryRun } from "../api/types";
import type { KubeFlags } from "../kube/client";
import { defaultCopyImage } from "../plan/migration-types";
import type { ExistingClaimsOptions } from "../plan/existing-claims-types";
import type { PrintFlags } from "../output/print-flags";

const commandName = "kubectl appstorage";

/** Which StatefulSets: one by name, every one -l matches (-A: in every namespace), or (set) a reviewed plan file. */
export interface TargetOptions {
  flags: KubeFlags;
  name?: string;
  selector?: string;
  allNamespaces: boolean;
}

/** How a change runs and what it prints: the flags `set` and `undo` share. */
export interface ChangeFlags {
  dryRun: DryRun;
  /** Consent without a prompt: read by the run, never part of a plan. */
  yes: boolean;
  force: boolean;
  timeoutMs: number;
  /** How many StatefulSets change at once. */
  parallel: number;
  /** -o as given (the command's PrintFlags say which values). */
  output?: string;
}

/** --resize-existing, --vac-existing, --wait-resize, --restart-pods, --migrate-existing, --relabel-existing, --copy-image as given. */
export interface ExistingClaimFlags {
  resize: boolean;
  vac: boolean;
  waitResize: boolean;
  restartPods: boolean;
  migrate: boolean;
  relabel?: boolean;
  copyImage?: string;
}

/** --template-label, --template-annotation (CLAIM:KEY=VALUE or CLAIM:KEY-, each repeatable) and --overwrite as given. */
export interface TemplateMetadataFlags {
  templateLabels?: string[];
  templateAnnotations?: string[];
  overwrite?: boolean;
}

export interface SetOptions extends TargetOptions, ChangeFlags, TemplateMetadataFlags {
  /** -f FILE (repeatable; - for standard input): make the claim templates equal to the manifest's. */
  filenames?: string[];
  /** --plan FILE: apply exactly this reviewed plan (no name, no directives). */
  planFile?: string;
  directives: string[];
  /** The existing-claim flags; absent when none is given. */
  existing?: ExistingClaimFlags;
  /** --pause-owner: pause Argo CD or Flux around the change (src/plan/owner.ts). */
  pauseOwner?: boolean;
}

export interface DiffOptions extends TargetOptions, TemplateMetadataFlags {
  filenames?: string[];
  directives: string[];
  /** -o as given: none prints the diff; json and yaml the plan as data, for set --plan. */
  output?: string;
  existing?: ExistingClaimFlags;
}

export interface UndoOptions extends TargetOptions, ChangeFlags {
  toRevision?: number;
}

/** The existing-claim flags as the plan takes them (undefined: none given, existing claims are left alone), or a usage error. */
export function existingClaimsOptions(f: ExistingClaimFlags | undefined): ExistingClaimsOptions | undefined {
  if (!f) return undefined;
  const waitResize = f.waitResize || f.restartPods;
  const relabel = f.relabel === true;
  if (relabel && f.migrate)
    throw new UsageError("--migrate-existing re-creates the claims it moves and does not carry --relabel-existing's labels: drop --relabel-existing, and run set --relabel-existing after the move");
  if (f.copyImage !== undefined && !f.migrate) throw new UsageError("--copy-image is the image of the copy pods of --migrate-existing; add --migrate-existing, or drop --copy-image");
  if (f.migrate) {
    if (f.resize || f.vac || waitResize)
      throw new UsageError("--migrate-existing moves the existing claims to new volumes of the new size and class: drop --resize-existing, --vac-existing, --wait-resize and --restart-pods");
    if (f.copyImage !== undefined && f.copyImage.trim() === "") throw new UsageError("--copy-image needs an image, for example --copy-image docker.io/instrumentisto/rsync-ssh:alpine3.23-r3");
    return {
      resize: false,
      vac: false,
      waitResize: false,
      restartPods: false,
      migrate: { copyImage: f.copyImage ?? defaultCopyImage, ...(f.copyImage !== undefined ? { copyImageGiven: true } : {}) },
    };
  }
  if (!f.resize && !f.vac && !waitResize && !relabel) return undefined;
  if (!f.resize && !f.vac && waitResize)
    throw new UsageError(`--${f.restartPods ? "restart-pods" : "wait-resize"} works on the claims that --resize-existing or --vac-existing change; add one of them`);
  return { resize: f.resize, vac: f.vac, waitResize, restartPods: f.restartPods, ...(relabel ? { relabel } : {}) };
}

/** --overwrite goes with the flags it lets change a key; the flags' values are parsed with the directives. */
function validateTemplateMetadata(o: TemplateMetadataFlags): boolean {
  const given = (o.templateLabels?.length ?? 0) + (o.templateAnnotations?.length ?? 0) > 0;
  if (o.overwrite && !given) throw new UsageError("--overwrite lets --template-label and --template-annotation change a key that has a value; add one of them, or drop --overwrite");
  return given;
}

const mebibyte = 1024 * 1024;

/**
 * A size written without a unit is bytes to Kubernetes: below 1Mi it is a missing unit, not a
 * wish (pgdata=2 asks for 2 bytes, which the plan would only warn about as a shrink). With a unit
 * (2Ki, 500k) the plan's own rules apply.
 */
export function validateDirectiveSizes(directives: readonly string[]): void {
  for (const d of directives) {
    const eq = d.indexOf("=");
    if (eq < 0) continue;
    for (const item of d.slice(eq + 1).split(",")) {
      const bare = /^(?:size=)?([0-9]+(?:\.[0-9]+)?)$/.exec(item)?.[1];
      const bytes = Number(bare);
      if (bare !== undefined && bytes > 0 && bytes < mebibyte) throw new UsageError(`invalid size for ${d.slice(0, eq)}: ${bare} bytes: did you mean ${bare}Gi?`);
    }
  }
}

/** set and diff: a name and directives, or -l and directives, or (set) --plan FILE alone; --template-label and --template-annotation count as directives. */
export function validateChangeTargets(
  o: TargetOptions & TemplateMetadataFlags & { directives: readonly string[]; planFile?: string; filenames?: readonly string[]; pauseOwner?: boolean },
  command: "set" | "diff",
): void {
  const example = `for example: ${commandName} ${command} postgresql-k8s pgdata=2Gi, or ${command} -l app=db pgdata=2Gi`;
  validateDirectiveSizes(o.directives);
  const metadata = validateTemplateMetadata(o);
  if (o.filenames?.length) {
    if (metadata)
      throw new UsageError("-f FILE takes the claim templates' labels and annotations from the manifest: drop --template-label, --template-annotation and --overwrite, or edit the manifest");
    if (o.name !== undefined || o.directives.length || o.selector !== undefined || o.allNamespaces || o.planFile !== undefined)
      throw new UsageError(`-f FILE takes the StatefulSets and their claim templates from the manifest: give no StatefulSet, directive, -l, -A or --plan with it`);
    if (o.filenames.some((f) => f === "")) throw new UsageError("-f needs a file name, or - for standard input");
    if (o.filenames.filter((f) => f === "-").length > 1) throw new UsageError("-f - reads standard input once: give it one time");
    return;
  }
  if (o.planFile !== undefined) {
    if (o.pauseOwner) throw new UsageError("--plan FILE applies the plan as it was made: drop --pause-owner (a plan made by set --pause-owner --dry-run=client -o json pauses the owner)");
    if (o.name !== undefined || o.directives.length || metadata || o.selector !== undefined || o.allNamespaces)
      throw new UsageError("--plan FILE applies the plan as it is: give no StatefulSet, directive, --template-label, --template-annotation, -l or -A with it");
    return;
  }
  const changes = o.directives.length > 0 || metadata;
  if (o.selector !== undefined) {
    if (o.selector === "") throw new UsageError("--selector must not be empty");
    if (!changes) throw new UsageError(`${command} -l needs at least one CLAIM=SIZE[,CLASS] directive (or --template-label CLAIM:KEY=VALUE), ${example}`);
    return;
  }
  if (o.allNamespaces) throw new UsageError("-A selects in every namespace and needs -l SELECTOR; for one StatefulSet use -n NAMESPACE");
  if (o.name === undefined || !changes) throw new UsageError(`${command} needs a StatefulSet name and at least one CLAIM=SIZE[,CLASS] directive (or --template-label CLAIM:KEY=VALUE), ${example}`);
}

/** undo: one StatefulSet by name, or (-l) every one the selector matches. */
export function validateUndoTargets(o: TargetOptions & { toRevision?: number }): void {
  if (o.toRevision !== undefined && (!Number.isInteger(o.toRevision) || o.toRevision < 1))
    throw new UsageError(`invalid --to-revision "${String(o.toRevision)}": use a revision number from kubectl appstorage history`);
  if (o.selector !== undefined) {
    if (o.selector === "") throw new UsageError("--selector must not be empty");
    if (o.name !== undefined) throw new UsageError("undo takes a StatefulSet name or -l SELECTOR, not both");
    if (o.toRevision !== undefined) throw new UsageError("--to-revision names a revision of one StatefulSet: give its name instead of -l");
    return;
  }
  if (o.allNamespaces) throw new UsageError("-A selects in every namespace and needs -l SELECTOR; for one StatefulSet use -n NAMESPACE");
  if (o.name === undefined) throw new UsageError(`undo needs a StatefulSet name or -l SELECTOR, for example: ${commandName} undo postgresql-k8s`);
}

/** How set and undo run: at least one StatefulSet at a time, and an -o the command prints. */
export function validateChangeFlags(f: ChangeFlags, print: PrintFlags): void {
  if (!Number.isInteger(f.parallel) || f.parallel < 1) throw new UsageError(`invalid --parallel "${String(f.parallel)}": use a whole number of StatefulSets, 1 or more`);
  print.validate(f.output);
}
