// The command line: yargs turns argv into one plain ParsedCommand value (kubectx's
// parseArgs -> Op), which tests compare and main.ts dispatches. Here words become typed values
// (a duration, a number, a dry-run mode); the rules between them are each command's Validate step
// (src/commands/*.ts, beside its run). Nothing here does I/O.
import yargs, { type Argv, type Options } from "yargs";
import type { DryRun } from "../api/types";
import type { CompleteOptions } from "../commands/completion";
import type { DiffOptions } from "../commands/diff";
import type { HistoryOptions } from "../commands/history";
import type { RbacOptions } from "../commands/rbac";
import type { SetOptions } from "../commands/set";
import type { ShowOptions } from "../commands/show";
import type { UndoOptions } from "../commands/undo";
import type { ExistingClaimFlags } from "../commands/change-options";
import { completionScript } from "./completion";
import { UsageError } from "../errors";
import { allValues, commandDefs, commandName, completionShells, dryRunValues, durationFlag, type FlagDef, kubeFlagDefs, kubeFlags, lastValue, valueShorts, type CommandDef } from "./flags";

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
    | ({ kind: "history" } & HistoryOptions)
    | ({ kind: "undo" } & UndoOptions)
    | ({ kind: "diff" } & DiffOptions)
    | ({ kind: "set" } & SetOptions)
  );

/** A table entry as a yargs option. Values are checked after parsing (last one wins first). */
function yargsOption(f: FlagDef): Options {
  return {
    type: f.type === "boolean" ? "boolean" : f.type === "int" ? "number" : "string",
    describe: f.describe,
    ...(f.short && f.short !== f.name ? { alias: f.short } : {}),
    ...(f.default !== undefined ? { default: f.default } : {}),
    ...(f.group ? { group: f.group } : {}),
  };
}

function withFlags<T>(y: Argv<T>, flags: readonly FlagDef[]): Argv<T> {
  for (const f of flags) y = y.option(f.name, yargsOption(f)) as Argv<T>;
  return y;
}

function usageOf(c: CommandDef): string {
  return [c.name, ...c.positionals.map((p) => (p.required ? `<${p.name}${p.variadic ? ".." : ""}>` : `[${p.name}${p.variadic ? ".." : ""}]`))].join(" ");
}

function parser(): Argv {
  let y = withFlags(yargs(), kubeFlagDefs)
    .scriptName(commandName)
    .usage(`${commandName}: change a StatefulSet's volume claim templates safely\n\nUsage: ${commandName} <command> [flags]`)
    // kubectl's repeated flags: the last one wins (kubeFlags and the commands take the last value).
    .parserConfiguration({ "duplicate-arguments-array": true });
  for (const c of commandDefs) {
    y = y.command(usageOf(c), c.describe, (sub) => {
      let b = withFlags(sub, c.flags);
      for (const p of c.positionals) {
        b = b.positional(p.name, { type: "string", describe: p.describe, ...(p.variadic ? { array: true } : {}), ...(p.choices ? { choices: p.choices } : {}) });
      }
      for (const [cmd, what] of c.examples) b = b.example(cmd, what);
      return b;
    });
  }
  for (const c of commandDefs.filter((d) => d.name !== "completion")) y = y.example(c.examples[0]![0], c.examples[0]![1]);
  return y
    .version(typeof __VERSION__ === "string" ? __VERSION__ : "dev")
    .help()
    .alias("help", "h")
    .strict()
    .demandCommand(1, "no command given: use show, diff or set")
    .wrap(null)
    .exitProcess(false);
}

/** The words of set and diff: with -l the first word is a directive (a name never contains "="), else it is the StatefulSet. */
function words(flag: (name: string) => unknown, argv: Record<string, unknown>): { name?: string; directives: string[] } {
  const all = [flag("statefulset"), ...((argv["directives"] as unknown[] | undefined) ?? [])].filter((w) => w !== undefined).map(String);
  if (flag("selector") !== undefined || all.length === 0) return { directives: all };
  return { name: all[0]!, directives: all.slice(1) };
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

function friendly(message: string, args: readonly string[]): string {
  const command = args.find((a) => a === "set" || a === "diff");
  if (command && /^(Not enough non-option arguments|Missing required argument)/.test(message)) {
    return `${command} needs a StatefulSet name and at least one CLAIM=SIZE[,CLASS] directive, for example: ${commandName} ${command} postgresql-k8s pgdata=2Gi`;
  }
  return message;
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

function completionShell(value: unknown): (typeof completionShells)[number] {
  const v = lastValue(value);
  if (!(completionShells as readonly unknown[]).includes(v)) throw new UsageError(`invalid shell "${String(v)}": must be one of ${completionShells.join(", ")}`);
  return v as (typeof completionShells)[number];
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

/** Parses argv (without node and script). Help and version come back as text to print. */
export function parseArgs(argv: readonly string[]): ParsedCommand {
  // Words being completed are not a command line yet: yargs would refuse half-typed ones.
  if (argv[0] === "__complete" || argv[0] === "__completeNoDesc") return { kind: "complete", words: argv.slice(1), descriptions: argv[0] === "__complete" };
  // No arguments: the help, as kubectl plugins (and kubectl itself) answer.
  if (argv.length === 0) return parseNormalized(["--help"]);
  const { args, notices } = normalizeDryRun(splitAttachedShorts(argv, valueShorts(argv.find((a) => commandDefs.some((c) => c.name === a)))));
  const parsed = parseNormalized(args);
  return notices.length ? { ...parsed, notices } : parsed;
}

function parseNormalized(args: readonly string[]): ParsedCommand {
  let failure: string | undefined;
  let text = "";
  const argv = parser()
    .fail((msg, err) => {
      failure = msg ?? err?.message ?? "invalid command line";
    })
    .parseSync([...args], {}, (_err, _argv, out) => {
      text = out;
    }) as Record<string, unknown>;
  if (failure) throw new UsageError(friendly(failure.split("\n")[0]!.replace(/^Error: /, ""), args));
  if (text) return { kind: "text", text: text.endsWith("\n") ? text : `${text}\n` };
  const flag = (name: string) => lastValue(argv[name]);
  const command = (argv["_"] as string[])[0];
  if (command === "completion") return { kind: "text", text: completionScript(completionShell(argv["shell"])) };
  const get = (name: string) => argv[name];
  const target = { flags: kubeFlags(get), ...optional("selector", flag("selector")), allNamespaces: flag("all-namespaces") === true };
  const output = optional("output", flag("output"));
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
    case "show":
      return { kind: "show", ...target, ...optional("name", flag("statefulset")), ...output };
    case "rbac":
      return { kind: "rbac", flags: target.flags, ...output };
    case "history":
      return { kind: "history", flags: target.flags, name: String(flag("statefulset")), ...output };
    case "undo": {
      const to = flag("to-revision");
      return { kind: "undo", ...target, ...optional("name", flag("statefulset")), ...(to !== undefined ? { toRevision: Number(to) } : {}), ...change() };
    }
    case "diff":
      return { kind: "diff", ...target, ...words(flag, argv), ...filenames(), ...templateMetadata(), ...output, ...existingFlags(flag) };
    case "set":
      return {
        kind: "set",
        ...target,
        ...words(flag, argv),
        ...filenames(),
        ...templateMetadata(),
        ...optional("planFile", flag("plan")),
        ...change(),
        ...existingFlags(flag),
        ...(flag("pause-owner") === true ? { pauseOwner: true } : {}),
      };
  }
  throw new UsageError(`unknown command "${String(command)}": use show, diff or set`);
}
