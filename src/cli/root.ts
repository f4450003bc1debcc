// The command line: argv becomes one plain ParsedCommand value (kubectx's parseArgs -> Op), which
// tests compare and main.ts dispatches. scan.ts finds the command and refuses unknown commands and
// flags as cobra and kubectl do; help.ts prints --help; yargs reads the flags' values. Here words
// become typed values (a duration, a number, a dry-run mode); the rules between them are each
// command's Validate step (src/commands/*.ts, beside its run). Nothing here does I/O.
import yargs, { type Argv, type Options } from "yargs";
import type { DryRun } from "../api/types";
import type { CompleteOptions } from "../commands/completion";
import { completionRequest } from "./completion";
import type { DiffOptions } from "../commands/diff";
import type { HistoryOptions } from "../commands/history";
import type { RbacOptions } from "../commands/rbac";
import type { SetOptions } from "../commands/set";
import type { ShowOptions } from "../commands/show";
import type { UndoOptions } from "../commands/undo";
import type { VersionOptions } from "../commands/version";
import type { ExistingClaimFlags } from "../commands/change-options";
import { completionScript } from "./completion";
import { UsageError } from "../errors";
import { allValues, commandDefs, commandName, completionShells, dryRunValues, durationFlag, type FlagDef, kubeFlagDefs, kubeFlags, lastValue, valueShorts, type CommandDef } from "./flags";
import { commandHelp, optionsText, rootHelp } from "./help";
import { checkPositionals, type Scanned, scan, unknownCommand } from "./scan";

declare const __VERSION__: string;

export { commandName };
export type { DryRun } from "../api/types";

/** What the command line itself warns about (deprecated forms), printed on stderr before the command runs. */
export interface Notices {
  notices?: string[];
}

/** One value per command: its kind and the Options type its own file exports. */
export type ParsedCommand = Notices &
  (
    | { kind: "text"; text: string }
    | ({ kind: "complete" } & CompleteOptions)
    | ({ kind: "show" } & ShowOptions)
    | ({ kind: "rbac" } & RbacOptions)
    | ({ kind: "version" } & VersionOptions)
    | ({ kind: "history" } & HistoryOptions)
    | ({ kind: "undo" } & UndoOptions)
    | ({ kind: "diff" } & DiffOptions)
    | ({ kind: "set" } & SetOptions)
  );

/** A table entry as a yargs option. Values are checked after parsing (last one wins first). */
function yargsOption(f: FlagDef): Options {
  return {
    type: f.type === "boolean" ? "boolean" : f.type === "int" ? "number" : "string",
    ...(f.short && f.short !== f.name ? { alias: f.short } : {}),
    ...(f.default !== undefined ? { default: f.default } : {}),
  };
}

/**
 * The flags' values, by yargs from the command's own flags and the global ones. scan() has
 * already refused unknown commands and flags with kubectl's messages, and taken the positionals.
 */
function flagValues(command: CommandDef, args: readonly string[]): Record<string, unknown> {
  let failure: string | undefined;
  let y: Argv = yargs()
    // kubectl's repeated flags: the last one wins (kubeFlags and the commands take the last value);
    // --no-headers is a flag of its own, not the negation of a --headers.
    .parserConfiguration({ "duplicate-arguments-array": true, "boolean-negation": false })
    .help(false)
    .version(false)
    .exitProcess(false)
    .fail((msg, err) => {
      failure = msg ?? err?.message ?? "invalid command line";
    });
  for (const f of [...kubeFlagDefs, ...command.flags]) y = y.option(f.name, yargsOption(f));
  const argv = y.parseSync([...args]) as Record<string, unknown>;
  if (failure) throw new UsageError(failure.split("\n")[0]!.replace(/^Error: /, ""));
  return argv;
}

/** The words of set and diff: with -l every word is a directive (a name never contains "="), else the first is the StatefulSet. */
function words(selector: unknown, positionals: readonly string[]): { name?: string; directives: string[] } {
  if (selector !== undefined || positionals.length === 0) return { directives: [...positionals] };
  return { name: positionals[0]!, directives: positionals.slice(1) };
}

/** The existing-claim flags as given, or nothing when none is. */
function existingFlags(flag: (name: string) => unknown): { existing?: ExistingClaimFlags } {
  const on = (name: string) => flag(name) === true;
  const image = flag("copy-image");
  const f: ExistingClaimFlags = {
    resize: on("resize-existing"),
    vac: on("vac-existing"),
    waitResize: on("wait-resize"),
    restartPods: on("restart-pods"),
    migrate: on("migrate-existing"),
    ...(on("relabel-existing") ? { relabel: true } : {}),
    ...(image !== undefined ? { copyImage: String(image) } : {}),
  };
  return f.resize || f.vac || f.waitResize || f.restartPods || f.migrate || f.relabel || f.copyImage !== undefined ? { existing: f } : {};
}

/** A string flag or positional, as an optional field: absent when not given. */
function optional<K extends string>(key: K, value: unknown): Partial<Record<K, string>> {
  return value !== undefined ? ({ [key]: String(value) } as Record<K, string>) : {};
}

export const bareDryRunNotice = "--dry-run is deprecated and can be replaced with --dry-run=client.";

/**
 * kubectl's --dry-run takes its value only as `--dry-run=VALUE`: a bare `--dry-run` means
 * client (deprecated, with kubectl's warning) and never consumes the next word, so
 * `--dry-run client` leaves `client` as an argument, as kubectl does. Without this, yargs read
 * a bare --dry-run as its default, none, and a "dry run" changed the cluster.
 */
function normalizeDryRun(args: readonly string[]): { args: string[]; notices: string[] } {
  const notices: string[] = [];
  const end = args.indexOf("--");
  const out = args.map((a, i) => {
    if (a !== "--dry-run" || (end >= 0 && i > end)) return a;
    if (notices.length === 0) notices.push(bareDryRunNotice);
    return "--dry-run=client";
  });
  return { args: out, notices };
}

/** kubectl completion's check of its one argument. */
function completionShell(value: string): (typeof completionShells)[number] {
  if (!(completionShells as readonly string[]).includes(value)) throw new UsageError(`Unsupported shell type "${value}": use one of ${completionShells.join(", ")}`);
  return value as (typeof completionShells)[number];
}

function dryRunValue(raw: unknown): DryRun {
  const value = lastValue(raw);
  if (typeof value !== "string" || !(dryRunValues as readonly string[]).includes(value)) {
    throw new UsageError(`Invalid dry-run value (${String(value)}). Must be "none", "server", or "client".`);
  }
  return value as DryRun;
}

/**
 * kubectl (pflag) accepts a short flag's value attached: -owide, -nprod, -v6, -o=json. yargs
 * would read -owide as -o -w -i -d -e; split them first. Only before "--".
 */
function splitAttachedShorts(args: readonly string[], shorts: ReadonlySet<string>): string[] {
  const out: string[] = [];
  let ended = false;
  for (const a of args) {
    if (a === "--") ended = true;
    if (!ended && /^-[^-]/.test(a) && a.length > 2 && shorts.has(a[1]!)) out.push(`-${a[1]}`, a.slice(a[2] === "=" ? 3 : 2));
    else out.push(a);
  }
  return out;
}

/** The version of this build (esbuild defines it; "dev" where it does not). */
const version = typeof __VERSION__ === "string" ? __VERSION__ : "dev";

/** Parses argv (without node and script). Help, `options` and the bare version come back as text to print. */
export function parseArgs(argv: readonly string[]): ParsedCommand {
  // Words being completed are not a command line yet: the parser would refuse half-typed ones.
  if (argv[0] === "__complete" || argv[0] === "__completeNoDesc") return { kind: "complete", request: completionRequest(argv.slice(1)), descriptions: argv[0] === "__complete" };
  // No arguments: the help, as kubectl plugins (and kubectl itself) answer.
  if (argv.length === 0) return { kind: "text", text: rootHelp() };
  const { args, notices } = normalizeDryRun(splitAttachedShorts(argv, valueShorts(argv.find((a) => commandDefs.some((c) => c.name === a)))));
  const parsed = fromWords(args, scan(args));
  return notices.length ? { ...parsed, notices } : parsed;
}

/** What the scanned words ask for: a text (help, options, the root's --version), or a command with its Options. */
function fromWords(args: readonly string[], scanned: Scanned): ParsedCommand {
  const { command, positionals } = scanned;
  if (!command) return { kind: "text", text: scanned.version && !scanned.help ? `${version}\n` : rootHelp() };
  if (scanned.help) return { kind: "text", text: commandHelp(command) };
  checkPositionals(command, positionals);
  if (command.name === "options") return { kind: "text", text: optionsText() };
  if (command.name === "help") {
    const topic = positionals[0];
    if (topic === undefined) return { kind: "text", text: rootHelp() };
    const about = commandDefs.find((c) => c.name === topic && !c.hidden);
    if (!about) throw unknownCommand(topic);
    return { kind: "text", text: commandHelp(about) };
  }
  if (command.name === "completion") return { kind: "text", text: completionScript(completionShell(positionals[0]!)) };
  return commandOptions(command.name, positionals, flagValues(command, args));
}

/** The command's Options, from its positionals and its flags' values: words become typed values here; the rules between them are the command's validate step. */
function commandOptions(command: string, positionals: readonly string[], argv: Record<string, unknown>): ParsedCommand {
  const flag = (name: string) => lastValue(argv[name]);
  const get = (name: string) => argv[name];
  const target = { flags: kubeFlags(get), ...optional("selector", flag("selector")), allNamespaces: flag("all-namespaces") === true };
  const output = optional("output", flag("output"));
  const name = optional("name", positionals[0]);
  const filenames = () => (argv["filename"] !== undefined ? { filenames: allValues(argv["filename"]) } : {});
  const templateMetadata = () => ({
    ...(argv["template-label"] !== undefined ? { templateLabels: allValues(argv["template-label"]) } : {}),
    ...(argv["template-annotation"] !== undefined ? { templateAnnotations: allValues(argv["template-annotation"]) } : {}),
    ...(flag("overwrite") === true ? { overwrite: true } : {}),
  });
  const change = () => ({
    dryRun: dryRunValue(argv["dry-run"]),
    yes: flag("yes") === true,
    force: flag("force") === true,
    timeoutMs: durationFlag(String(flag("timeout")), "--timeout"),
    parallel: Number(flag("parallel")),
    ...output,
  });
  switch (command) {
    case "show": {
      const table = { ...(flag("no-headers") === true ? { noHeaders: true } : {}), ...(flag("show-labels") === true ? { showLabels: true } : {}) };
      return { kind: "show", ...target, ...name, ...output, ...table };
    }
    case "rbac":
      return { kind: "rbac", flags: target.flags, ...output };
    case "version":
      return { kind: "version", flags: target.flags, client: flag("client") === true, ...output };
    case "history":
      return { kind: "history", flags: target.flags, name: positionals[0]!, ...output };
    case "undo": {
      const to = flag("to-revision");
      return { kind: "undo", ...target, ...name, ...(to !== undefined ? { toRevision: Number(to) } : {}), ...change() };
    }
    case "diff":
      return { kind: "diff", ...target, ...words(flag("selector"), positionals), ...filenames(), ...templateMetadata(), ...output, ...existingFlags(flag) };
    case "set":
      return {
        kind: "set",
        ...target,
        ...words(flag("selector"), positionals),
        ...filenames(),
        ...templateMetadata(),
        ...optional("planFile", flag("plan")),
        ...change(),
        ...existingFlags(flag),
        ...(flag("pause-owner") === true ? { pauseOwner: true } : {}),
      };
  }
  throw new UsageError(`${command} takes no options`);
}
