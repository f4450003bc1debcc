// The command line: yargs turns argv into one plain ParsedCommand value (kubectx's
// parseArgs -> Op), which tests compare and main.ts dispatches. Nothing here does I/O.
import yargs, { type Argv, type Options } from "yargs";
import type { KubeFlags } from "../kube/client";
import type { ExistingClaimsOptions as ExistingOptions } from "../plan/existing-claims-types";
import type { DryRun } from "../api/types";
import { completionScript } from "./completion";
import { UsageError } from "../errors";
import { existingClaimFlags } from "./existing-claims-flags";
import {
  commandDefs,
  commandName,
  completionShells,
  diffOutputs,
  dryRunValues,
  durationFlag,
  type FlagDef,
  kubeFlagDefs,
  kubeFlags,
  lastValue,
  setOutputs,
  showOutputs,
  valueShorts,
  type CommandDef,
} from "./flags";

declare const __VERSION__: string;

export { commandName };
export type { DryRun } from "../api/types";
export type Output = (typeof showOutputs)[number] | "name";

/** What the command line itself warns about (deprecated forms), printed on stderr before the command runs. */
export interface Notices {
  notices?: string[];
}

export type ParsedCommand = Notices &
  (
    | { kind: "text"; text: string }
    /** The hidden `__complete WORDS...` (cobra's protocol; `__completeNoDesc` without descriptions). */
    | { kind: "complete"; words: string[]; descriptions: boolean }
    | { kind: "show"; flags: KubeFlags; name?: string; allNamespaces: boolean; selector?: string; output: Output }
    | { kind: "rbac"; flags: KubeFlags }
    | { kind: "history"; flags: KubeFlags; name: string; output?: "json" | "yaml" }
    | {
        kind: "undo";
        flags: KubeFlags;
        /** One StatefulSet by name, or (-l) every one the selector matches. */
        name?: string;
        selector?: string;
        allNamespaces: boolean;
        toRevision?: number;
        dryRun: DryRun;
        yes: boolean;
        force: boolean;
        timeoutMs: number;
        /** --parallel: how many StatefulSets change at once. */
        parallel: number;
        output?: "json" | "yaml" | "name";
      }
    | {
        kind: "diff";
        flags: KubeFlags;
        /** One StatefulSet by name, or (-l) every one the selector matches. */
        name?: string;
        selector?: string;
        allNamespaces: boolean;
        directives: string[];
        output?: "json" | "yaml";
        existing?: ExistingOptions;
      }
    | {
        kind: "set";
        flags: KubeFlags;
        name?: string;
        selector?: string;
        allNamespaces: boolean;
        /** --plan FILE: apply exactly this reviewed plan (no name, no directives). */
        planFile?: string;
        directives: string[];
        dryRun: DryRun;
        yes: boolean;
        force: boolean;
        timeoutMs: number;
        parallel: number;
        output?: "json" | "yaml" | "name";
        /** --resize-existing, --vac-existing, --wait-resize, --restart-pods; absent when none is given. */
        existing?: ExistingOptions;
      }
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

function oneOf<T extends string>(value: unknown, allowed: readonly T[], flag: string): T {
  const v = lastValue(value);
  if (typeof v !== "string" || !(allowed as readonly string[]).includes(v)) {
    throw new UsageError(`invalid ${flag} "${String(v)}": must be one of ${allowed.join(", ")}`);
  }
  return v as T;
}

function withExisting(argv: Record<string, unknown>): { existing?: ExistingOptions } {
  const existing = existingClaimFlags(argv);
  return existing ? { existing } : {};
}

/**
 * The targets of set and diff: a name and directives, or (-l) directives alone (a name never
 * contains "=", so with -l the first word is a directive), or (set --plan) nothing.
 */
function targets(
  flag: (name: string) => unknown,
  argv: Record<string, unknown>,
  command: "set" | "diff",
): { name?: string; selector?: string; allNamespaces: boolean; planFile?: string; directives: string[] } {
  const words = [flag("statefulset"), ...((argv["directives"] as unknown[] | undefined) ?? [])].filter((w) => w !== undefined).map(String);
  const selector = flag("selector") !== undefined ? String(flag("selector")) : undefined;
  const planFile = flag("plan") !== undefined ? String(flag("plan")) : undefined;
  const allNamespaces = flag("all-namespaces") === true;
  const example = `for example: ${commandName} ${command} postgresql-k8s pgdata=2Gi, or ${command} -l app=db pgdata=2Gi`;
  if (planFile !== undefined) {
    if (words.length || selector !== undefined || allNamespaces) throw new UsageError("--plan FILE applies the plan as it is: give no StatefulSet, directive, -l or -A with it");
    return { allNamespaces, planFile, directives: [] };
  }
  if (selector !== undefined) {
    if (selector === "") throw new UsageError("--selector must not be empty");
    if (words.length === 0) throw new UsageError(`${command} -l needs at least one CLAIM=SIZE[,CLASS] directive, ${example}`);
    return { selector, allNamespaces, directives: words };
  }
  if (allNamespaces) throw new UsageError("-A selects in every namespace and needs -l SELECTOR; for one StatefulSet use -n NAMESPACE");
  if (words.length < 2) throw new UsageError(`${command} needs a StatefulSet name and at least one CLAIM=SIZE[,CLASS] directive, ${example}`);
  return { name: words[0]!, allNamespaces, directives: words.slice(1) };
}

/** undo's StatefulSet: one by name, or (-l) every one the selector matches. */
function undoTargets(flag: (name: string) => unknown, toRevision: boolean): { name?: string; selector?: string; allNamespaces: boolean } {
  const name = flag("statefulset") !== undefined ? String(flag("statefulset")) : undefined;
  const selector = flag("selector") !== undefined ? String(flag("selector")) : undefined;
  const allNamespaces = flag("all-namespaces") === true;
  if (selector !== undefined) {
    if (selector === "") throw new UsageError("--selector must not be empty");
    if (name !== undefined) throw new UsageError(`undo takes a StatefulSet name or -l SELECTOR, not both`);
    if (toRevision) throw new UsageError("--to-revision names a revision of one StatefulSet: give its name instead of -l");
    return { selector, allNamespaces };
  }
  if (allNamespaces) throw new UsageError("-A selects in every namespace and needs -l SELECTOR; for one StatefulSet use -n NAMESPACE");
  if (name === undefined) throw new UsageError(`undo needs a StatefulSet name or -l SELECTOR, for example: ${commandName} undo postgresql-k8s`);
  return { name, allNamespaces };
}

function parallelFlag(value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) throw new UsageError(`invalid --parallel "${String(value)}": use a whole number of StatefulSets, 1 or more`);
  return value;
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
  let output = "";
  const argv = parser()
    .fail((msg, err) => {
      failure = msg ?? err?.message ?? "invalid command line";
    })
    .parseSync([...args], {}, (_err, _argv, out) => {
      output = out;
    }) as Record<string, unknown>;
  if (failure) throw new UsageError(friendly(failure.split("\n")[0]!.replace(/^Error: /, ""), args));
  if (output) return { kind: "text", text: output.endsWith("\n") ? output : `${output}\n` };
  const flag = (name: string) => lastValue(argv[name]);
  const command = (argv["_"] as string[])[0];
  if (command === "completion") return { kind: "text", text: completionScript(oneOf(argv["shell"], completionShells, "shell")) };
  const get = (name: string) => argv[name];
  if (command === "show") {
    return {
      kind: "show",
      flags: kubeFlags(get),
      ...(typeof flag("statefulset") === "string" ? { name: flag("statefulset") as string } : {}),
      allNamespaces: flag("all-namespaces") === true,
      ...(flag("selector") !== undefined ? { selector: String(flag("selector")) } : {}),
      output: oneOf(argv["output"], showOutputs, "--output"),
    };
  }
  if (command === "rbac") return { kind: "rbac", flags: kubeFlags(get) };
  if (command === "history") {
    return {
      kind: "history",
      flags: kubeFlags(get),
      name: String(flag("statefulset")),
      ...(argv["output"] !== undefined ? { output: oneOf(argv["output"], diffOutputs, "--output") } : {}),
    };
  }
  if (command === "undo") {
    const to = flag("to-revision");
    if (to !== undefined && (typeof to !== "number" || !Number.isInteger(to) || to < 1))
      throw new UsageError(`invalid --to-revision "${String(to)}": use a revision number from kubectl appstorage history`);
    return {
      kind: "undo",
      flags: kubeFlags(get),
      ...undoTargets(flag, to !== undefined),
      ...(to !== undefined ? { toRevision: to as number } : {}),
      dryRun: dryRunValue(argv["dry-run"]),
      yes: flag("yes") === true,
      force: flag("force") === true,
      timeoutMs: durationFlag(String(flag("timeout")), "--timeout"),
      parallel: parallelFlag(flag("parallel")),
      ...(argv["output"] !== undefined ? { output: oneOf(argv["output"], setOutputs, "--output") } : {}),
    };
  }
  if (command === "diff") {
    const { planFile: _none, ...target } = targets(flag, argv, "diff");
    return {
      kind: "diff",
      flags: kubeFlags(get),
      ...target,
      ...(argv["output"] !== undefined ? { output: oneOf(argv["output"], diffOutputs, "--output") } : {}),
      ...withExisting(argv),
    };
  }
  if (command === "set") {
    return {
      kind: "set",
      flags: kubeFlags(get),
      ...targets(flag, argv, "set"),
      dryRun: dryRunValue(argv["dry-run"]),
      yes: flag("yes") === true,
      force: flag("force") === true,
      timeoutMs: durationFlag(String(flag("timeout")), "--timeout"),
      parallel: parallelFlag(flag("parallel")),
      ...(argv["output"] !== undefined ? { output: oneOf(argv["output"], setOutputs, "--output") } : {}),
      ...withExisting(argv),
    };
  }
  throw new UsageError(`unknown command "${String(command)}": use show, diff or set`);
}
