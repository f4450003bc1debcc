// The command line: yargs turns argv into one plain ParsedCommand value (kubectx's
// parseArgs -> Op), which tests compare and main.ts dispatches. Nothing here does I/O.
import yargs, { type Argv } from "yargs";
import type { KubeFlags } from "../kube/client";
import { parseDuration, ConfigError } from "../kube/client";
import type { ExistingClaimsOptions as ExistingOptions } from "../plan/types";
import { completionScript, completionShells } from "./completion";
import { UsageError } from "../errors";
import { existingClaimFlags, existingClaimOptions } from "./existing-flags";

declare const __VERSION__: string;

export type DryRun = "none" | "client" | "server";
export type Output = "table" | "wide" | "json" | "yaml" | "name";

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
  | { kind: "undo"; flags: KubeFlags; name: string; toRevision?: number; dryRun: DryRun; yes: boolean; force: boolean; timeoutMs: number; output?: "json" | "yaml" | "name" }
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
      output?: "json" | "yaml" | "name";
      /** --resize-existing, --vac-existing, --wait-resize, --restart-pods; absent when none is given. */
      existing?: ExistingOptions;
    }
  );

export const commandName = "kubectl appstorage";

function kubeOptions(y: Argv): Argv {
  return y
    .option("kubeconfig", { type: "string", describe: "Path to the kubeconfig file to use", group: "Connection:" })
    .option("context", { type: "string", describe: "The name of the kubeconfig context to use", group: "Connection:" })
    .option("namespace", { alias: "n", type: "string", describe: "If present, the namespace scope for this request", group: "Connection:" })
    .option("request-timeout", {
      type: "string",
      describe: 'How long to wait for a single server request ("0" waits forever; 30s, 1m)',
      default: "30s",
      group: "Connection:",
    });
}

function kubeFlags(argv: Record<string, unknown>): KubeFlags {
  const flags: KubeFlags = {};
  if (typeof argv["kubeconfig"] === "string") flags.kubeconfig = argv["kubeconfig"];
  if (typeof argv["context"] === "string") flags.context = argv["context"];
  if (typeof argv["namespace"] === "string") {
    if (!argv["namespace"]) throw new UsageError("--namespace must not be empty");
    flags.namespace = argv["namespace"];
  }
  if (typeof argv["request-timeout"] === "string") {
    flags.requestTimeout = argv["request-timeout"];
    duration(flags.requestTimeout, "--request-timeout");
  }
  return flags;
}

function duration(text: string, flag: string): number {
  try {
    return parseDuration(text);
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(`invalid ${flag} "${text}": use a duration such as 30s or 5m`);
    throw e;
  }
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], flag: string): T {
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`invalid ${flag} "${String(value)}": must be one of ${allowed.join(", ")}`);
  }
  return value as T;
}

function parser(): Argv {
  return kubeOptions(yargs())
    .scriptName(commandName)
    .usage(`${commandName}: change a StatefulSet's volume claim templates safely\n\nUsage: ${commandName} <command> [flags]`)
    .command("show [statefulset]", "Show claim templates and every claim per ordinal", (y) =>
      y
        .positional("statefulset", { type: "string", describe: "StatefulSet name (default: all in the namespace)" })
        .option("all-namespaces", { alias: "A", type: "boolean", default: false, describe: "List StatefulSets in every namespace" })
        .option("selector", { alias: "l", type: "string", describe: "Label selector for StatefulSets" })
        .option("output", { alias: "o", type: "string", default: "table", describe: "table|wide|json|yaml" }),
    )
    .command("diff [statefulset] [directives..]", "Show what set would change (exit 0: none, 1: changes, >1: error)", (y) =>
      selectorOptions(existingClaimOptions(y))
        .positional("statefulset", { type: "string", describe: "StatefulSet name (or -l SELECTOR)" })
        .positional("directives", { type: "string", array: true, describe: "CLAIM=SIZE[,CLASS] ..." })
        .option("output", { alias: "o", type: "string", describe: "json|yaml: print the plan as data (for set --plan)" }),
    )
    .command("set [statefulset] [directives..]", "Change claim templates: orphan-delete and re-create, pods keep running", (y) =>
      selectorOptions(existingClaimOptions(y))
        .positional("statefulset", { type: "string", describe: "StatefulSet name (or -l SELECTOR, or --plan FILE)" })
        .positional("directives", { type: "string", array: true, describe: "CLAIM=SIZE[,CLASS] ..., e.g. pgdata=2Gi or pgdata=2Gi,fast-ssd" })
        .option("plan", { type: "string", describe: "Apply exactly this reviewed plan (from diff -o json); refused if the cluster moved on" })
        .option("dry-run", { type: "string", default: "none", describe: "none|client (print the plan)|server (let the server validate, persist nothing)" })
        .option("yes", { alias: "y", type: "boolean", default: false, describe: "Do not ask for confirmation" })
        .option("force", { type: "boolean", default: false, describe: "Proceed past warnings that are not data-safety refusals (rollout in progress, controller owner)" })
        .option("timeout", { type: "string", default: "5m", describe: "How long to wait for each step (deletion, adoption)" })
        .option("output", { alias: "o", type: "string", describe: "json|yaml|name" }),
    )
    .command("history <statefulset>", "List the recorded revisions of the claim templates, oldest first", (y) =>
      y.positional("statefulset", { type: "string", describe: "StatefulSet name" }).option("output", { alias: "o", type: "string", describe: "json|yaml" }),
    )
    .command("undo <statefulset>", "Put the claim templates back as they were one change earlier (existing claims keep their size)", (y) =>
      y
        .positional("statefulset", { type: "string", describe: "StatefulSet name" })
        .option("to-revision", { type: "number", describe: "The revision to go back to (see history); default: the one before the current" })
        .option("dry-run", { type: "string", default: "none", describe: "none|client (print the plan)|server (let the server validate, persist nothing)" })
        .option("yes", { alias: "y", type: "boolean", default: false, describe: "Do not ask for confirmation" })
        .option("force", { type: "boolean", default: false, describe: "Proceed past warnings that are not data-safety refusals" })
        .option("timeout", { type: "string", default: "5m", describe: "How long to wait for each step (deletion, adoption)" })
        .option("output", { alias: "o", type: "string", describe: "json|yaml|name" }),
    )
    .command("rbac", "Print the least-privilege Role this tool needs in a namespace (for kubectl apply -f -)", (y) => y)
    .command("completion <shell>", "Print a bash or zsh completion script (for kubectl appstorage <TAB>, see the README: Completion)", (y) =>
      y.positional("shell", { type: "string", choices: completionShells, describe: "bash or zsh" }),
    )
    .example(`${commandName} show postgresql-k8s`, "Claims per ordinal and their drift from the template")
    .example(`${commandName} diff postgresql-k8s pgdata=2Gi`, "What would change")
    .example(`${commandName} set postgresql-k8s pgdata=2Gi`, "New ordinals get 2Gi; running pods are not restarted")
    .version(typeof __VERSION__ === "string" ? __VERSION__ : "dev")
    .help()
    .alias("help", "h")
    .strict()
    .demandCommand(1, "no command given: use show, diff or set")
    .wrap(null)
    .exitProcess(false);
}

function selectorOptions<T>(y: Argv<T>): Argv<T> {
  return y
    .option("selector", { alias: "l", type: "string", describe: "Every StatefulSet this label selector matches, instead of a name" })
    .option("all-namespaces", { alias: "A", type: "boolean", default: false, describe: "With -l: in every namespace" }) as Argv<T>;
}

/**
 * The targets of set and diff: a name and directives, or (-l) directives alone (a name never
 * contains "=", so with -l the first word is a directive), or (set --plan) nothing.
 */
function targets(argv: Record<string, unknown>, command: "set" | "diff"): { name?: string; selector?: string; allNamespaces: boolean; planFile?: string; directives: string[] } {
  const words = [argv["statefulset"], ...((argv["directives"] as unknown[] | undefined) ?? [])].filter((w) => w !== undefined).map(String);
  const selector = typeof argv["selector"] === "string" ? argv["selector"] : undefined;
  const planFile = typeof argv["plan"] === "string" ? argv["plan"] : undefined;
  const allNamespaces = argv["all-namespaces"] === true;
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
  if (allNamespaces) throw new UsageError(`-A selects in every namespace and needs -l SELECTOR; for one StatefulSet use -n NAMESPACE`);
  if (words.length < 2) throw new UsageError(`${command} needs a StatefulSet name and at least one CLAIM=SIZE[,CLASS] directive, ${example}`);
  return { name: words[0]!, allNamespaces, directives: words.slice(1) };
}

function withExisting(argv: Record<string, unknown>): { existing?: ExistingOptions } {
  const existing = existingClaimFlags(argv);
  return existing ? { existing } : {};
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

const dryRunValues = ["none", "client", "server"] as const;

function dryRunValue(value: unknown): DryRun {
  if (typeof value !== "string" || !(dryRunValues as readonly string[]).includes(value)) {
    throw new UsageError(`Invalid dry-run value (${String(value)}). Must be "none", "server", or "client".`);
  }
  return value as DryRun;
}

/** Parses argv (without node and script). Help and version come back as text to print. */
export function parseArgs(argv: readonly string[]): ParsedCommand {
  // Words being completed are not a command line yet: yargs would refuse half-typed ones.
  if (argv[0] === "__complete" || argv[0] === "__completeNoDesc") return { kind: "complete", words: argv.slice(1), descriptions: argv[0] === "__complete" };
  const { args, notices } = normalizeDryRun(argv);
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
  const command = (argv["_"] as string[])[0];
  if (command === "completion") return { kind: "text", text: completionScript(oneOf(argv["shell"], completionShells, "shell")) };
  if (command === "show") {
    return {
      kind: "show",
      flags: kubeFlags(argv),
      ...(typeof argv["statefulset"] === "string" ? { name: argv["statefulset"] } : {}),
      allNamespaces: argv["all-namespaces"] === true,
      ...(typeof argv["selector"] === "string" ? { selector: argv["selector"] } : {}),
      output: oneOf(argv["output"], ["table", "wide", "json", "yaml"] as const, "--output"),
    };
  }
  if (command === "rbac") return { kind: "rbac", flags: kubeFlags(argv) };
  if (command === "history") {
    return {
      kind: "history",
      flags: kubeFlags(argv),
      name: String(argv["statefulset"]),
      ...(argv["output"] !== undefined ? { output: oneOf(argv["output"], ["json", "yaml"] as const, "--output") } : {}),
    };
  }
  if (command === "undo") {
    const to = argv["to-revision"];
    if (to !== undefined && (typeof to !== "number" || !Number.isInteger(to) || to < 1)) throw new UsageError(`invalid --to-revision "${String(to)}": use a revision number from kubectl appstorage history`);
    return {
      kind: "undo",
      flags: kubeFlags(argv),
      name: String(argv["statefulset"]),
      ...(to !== undefined ? { toRevision: to as number } : {}),
      dryRun: dryRunValue(argv["dry-run"]),
      yes: argv["yes"] === true,
      force: argv["force"] === true,
      timeoutMs: duration(String(argv["timeout"]), "--timeout"),
      ...(argv["output"] !== undefined ? { output: oneOf(argv["output"], ["json", "yaml", "name"] as const, "--output") } : {}),
    };
  }
  if (command === "diff") {
    const { planFile: _none, ...target } = targets(argv, "diff");
    return {
      kind: "diff",
      flags: kubeFlags(argv),
      ...target,
      ...(argv["output"] !== undefined ? { output: oneOf(argv["output"], ["json", "yaml"] as const, "--output") } : {}),
      ...withExisting(argv),
    };
  }
  if (command === "set") {
    return {
      kind: "set",
      flags: kubeFlags(argv),
      ...targets(argv, "set"),
      dryRun: dryRunValue(argv["dry-run"]),
      yes: argv["yes"] === true,
      force: argv["force"] === true,
      timeoutMs: duration(String(argv["timeout"]), "--timeout"),
      ...(argv["output"] !== undefined ? { output: oneOf(argv["output"], ["json", "yaml", "name"] as const, "--output") } : {}),
      ...withExisting(argv),
    };
  }
  throw new UsageError(`unknown command "${String(command)}": use show, diff or set`);
}
