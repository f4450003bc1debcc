// The one declarative table of the command line: every command, its positionals, its flags, its
// help and its examples. scan.ts and root.ts parse with it, help.ts prints --help and `options`
// from it, completion.ts completes from it: a flag added here is parsed, documented and completed
// without a second list.
// The connection flags are kubectl's global flags (`kubectl options`), with kubectl's names,
// short forms and meaning; `kubeFlags` turns their values into the client's KubeFlags once.
import type { KubeFlags } from "../kube/kube-flags";
import type { DryRun } from "../api/types";
import { parseGoDuration, parseRequestTimeout } from "../duration";
import { UsageError } from "../errors";
import { type PrintFlags, printFlags } from "../output/print-flags";
import { copyImageNeeds, defaultCopyImage } from "../plan/migration-types";

export const commandName = "kubectl appstorage";

/** string: the last one given wins (as kubectl); stringArray: repeatable, every one kept. */
export type FlagType = "string" | "boolean" | "stringArray" | "int";

export interface FlagDef {
  name: string;
  short?: string;
  type: FlagType;
  /** One sentence or a few: --help wraps it, completion shows it on one line. */
  describe: string;
  default?: string | boolean | number;
  /** The default --help shows, when it is not the parser's (a default applied later, such as --request-timeout's 30s). */
  helpDefault?: string;
  /** The values completion offers (each command's validate step checks what was given). */
  values?: readonly string[];
  /** What completion offers for the value when it is not a fixed list (templateLabel/templateAnnotation: CLAIM: then the template's keys). */
  complete?: "namespace" | "file" | "context" | "cluster" | "user" | "templateLabel" | "templateAnnotation";
  /** The value only ever comes attached (--dry-run=server); a bare flag takes no next word. */
  attachedValueOnly?: boolean;
  /** Parsed, but neither in --help nor completed (the root's --version, kept for scripts). */
  hidden?: boolean;
}

export interface PositionalDef {
  name: string;
  describe: string;
  required: boolean;
  variadic?: boolean;
  /** The usage error when a required one is missing. */
  missing?: string;
  /** What completion looks up in the cluster for this positional. */
  complete?: "statefulset" | "claimTemplates" | "shell";
}

export interface CommandDef {
  name: string;
  /** What follows `kubectl appstorage NAME` on the Usage line (cobra's Use), without [options]. */
  usage: string;
  /** One line (cobra's Short): the first line of --help, the command list and completion. */
  describe: string;
  /** What --help prints under that line (cobra's Long): paragraphs, wrapped by the help. */
  long: string;
  positionals: PositionalDef[];
  flags: FlagDef[];
  /** Each example's command line (a long one continued with " \\\n") and what it does. */
  examples: [command: string, description: string][];
  /** The root help lists it under this heading (kubectl groups its commands); none: not listed (options, help). */
  group?: "Basic Commands:" | "Other Commands:";
  /** Neither listed, completed nor suggested (help). */
  hidden?: boolean;
}

/** kubectl's global flags that say where a command acts and as whom (`kubectl options`). */
export const kubeFlagDefs: FlagDef[] = [
  { name: "kubeconfig", type: "string", complete: "file", describe: "Path to the kubeconfig file to use for CLI requests (exactly this one file, which must exist)." },
  { name: "context", type: "string", complete: "context", describe: "The name of the kubeconfig context to use" },
  { name: "cluster", type: "string", complete: "cluster", describe: "The name of the kubeconfig cluster to use" },
  { name: "user", type: "string", complete: "user", describe: "The name of the kubeconfig user to use" },
  { name: "namespace", short: "n", type: "string", complete: "namespace", describe: "If present, the namespace scope for this CLI request" },
  { name: "server", short: "s", type: "string", describe: "The address and port of the Kubernetes API server" },
  { name: "token", type: "string", describe: "Bearer token for authentication to the API server" },
  { name: "username", type: "string", describe: "Username for basic authentication to the API server" },
  { name: "password", type: "string", describe: "Password for basic authentication to the API server" },
  { name: "certificate-authority", type: "string", complete: "file", describe: "Path to a cert file for the certificate authority" },
  { name: "client-certificate", type: "string", complete: "file", describe: "Path to a client certificate file for TLS" },
  { name: "client-key", type: "string", complete: "file", describe: "Path to a client key file for TLS" },
  {
    name: "insecure-skip-tls-verify",
    type: "boolean",
    default: false,
    describe: "If true, the server's certificate will not be checked for validity. This will make your HTTPS connections insecure",
  },
  {
    name: "tls-server-name",
    type: "string",
    describe: "Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used",
  },
  { name: "as", type: "string", describe: "Username to impersonate for the operation. User could be a regular user or a service account in a namespace." },
  { name: "as-group", type: "stringArray", describe: "Group to impersonate for the operation, this flag can be repeated to specify multiple groups." },
  { name: "as-uid", type: "string", describe: "UID to impersonate for the operation." },
  {
    name: "request-timeout",
    type: "string",
    helpDefault: "30s",
    describe:
      "The length of time to wait before giving up on a single server request. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h); a bare number is seconds. A value of zero means don't timeout requests.",
  },
  {
    name: "v",
    short: "v",
    type: "int",
    default: 0,
    describe: "Number for the log level verbosity; 6 and up: one line per request on stderr (method, URL, status, latency)",
  },
];

/** Every command takes -h; the help does not list it (kubectl's help hides it too), completion offers it. */
export const helpFlagDef: FlagDef = { name: "help", short: "h", type: "boolean", describe: "help for the command" };

/** The root's --version: not kubectl's (its `version` command is), kept for scripts that ask for the bare version. */
export const rootFlagDefs: FlagDef[] = [{ name: "version", type: "boolean", hidden: true, describe: "Print the version of kubectl appstorage" }];

/** --resize-existing, --vac-existing, --wait-resize, --restart-pods, --migrate-existing, --relabel-existing, --copy-image; diff has no --timeout to name. */
function existingClaimFlagDefs(command: "set" | "diff"): FlagDef[] {
  const bound = command === "set" ? " (bounded by --timeout)" : "";
  return [
    {
      name: "resize-existing",
      type: "boolean",
      default: false,
      describe:
        "Also grow every existing claim of the named templates that is smaller than the new size (and set its vac=), before the StatefulSet is swapped; never shrinks. Without it, existing claims keep their size.",
    },
    { name: "vac-existing", type: "boolean", default: false, describe: "Also set the volume attributes class (vac=NAME) of existing claims, without growing them" },
    {
      name: "wait-resize",
      type: "boolean",
      default: false,
      describe: `Afterwards, follow each claim until its capacity reaches its request or it waits for a pod restart (FileSystemResizePending that kubelet could not finish online)${bound}`,
    },
    {
      name: "restart-pods",
      type: "boolean",
      default: false,
      describe: "Then restart the pods of FileSystemResizePending claims through the Eviction API, one at a time, highest ordinal first (implies --wait-resize)",
    },
    {
      name: "migrate-existing",
      type: "boolean",
      default: false,
      describe:
        "Also move every existing claim of the named templates to a new volume of the new class and size, with its data, one replica at a time, highest ordinal first (copied while the pod runs, verified file by file; the old volume is kept with reclaim policy Retain)",
    },
    {
      name: "relabel-existing",
      type: "boolean",
      default: false,
      describe:
        "Also make the labels and annotations of the existing claims of the named templates (with -f: of every template) their template's: a patch of their metadata, no restart; keys the change drops from the template are dropped, the claims' other keys are kept",
    },
    {
      name: "copy-image",
      type: "string",
      // The default is pinned by digest, too long for a help line of 100 columns: the help names its
      // tag, and the plan prints it whole.
      describe: `With --migrate-existing: the image of the copy pods, by default ${defaultCopyImage.split("@")[0]} pinned by digest; ${copyImageNeeds}`,
    },
  ];
}

/** --template-label, --template-annotation and --overwrite of set and diff (as kubectl label and kubectl annotate). */
const templateMetadataFlagDefs: FlagDef[] = [
  {
    name: "template-label",
    type: "stringArray",
    complete: "templateLabel",
    describe: "Set (CLAIM:KEY=VALUE) or remove (CLAIM:KEY-) a label of claim template CLAIM, one per flag, repeatable; claims created from now on get it, existing claims with --relabel-existing",
  },
  {
    name: "template-annotation",
    type: "stringArray",
    complete: "templateAnnotation",
    describe: "Set (CLAIM:KEY=VALUE) or remove (CLAIM:KEY-) an annotation of claim template CLAIM, as --template-label",
  },
  { name: "overwrite", type: "boolean", default: false, describe: "Let --template-label and --template-annotation change a key that already has another value (as kubectl label --overwrite)" },
];

const statefulSet = (required: boolean, describe: string): PositionalDef => ({
  name: "statefulset",
  describe,
  required,
  complete: "statefulset",
  ...(required ? { missing: "a StatefulSet name" } : {}),
});
const directives = (describe: string): PositionalDef => ({ name: "directives", describe, required: false, variadic: true, complete: "claimTemplates" });

/** -f of set and diff: the StatefulSets and their claim templates of a rendered manifest (helm template, kustomize build). */
const filenameFlagDef: FlagDef = {
  name: "filename",
  short: "f",
  type: "stringArray",
  complete: "file",
  describe:
    "Make the claim templates of every StatefulSet in this manifest (YAML or JSON, one or many documents; - for standard input; repeatable) equal to the manifest's: size, class, vac, labels, annotations, access modes; nothing else of the object changes",
};

/** -l and -A of set, diff and undo: every StatefulSet a selector matches, instead of one by name. */
const selectorFlagDefs: FlagDef[] = [
  { name: "selector", short: "l", type: "string", describe: "Every StatefulSet this label selector matches, instead of a name (all planned first; one refused: nothing changes)" },
  { name: "all-namespaces", short: "A", type: "boolean", default: false, describe: "With -l: in every namespace" },
];

/** -o of a command, from its PrintFlags: the help and completion come from the formats it allows. */
const outputFlagDef = (p: PrintFlags): FlagDef => ({ name: "output", short: "o", type: "string", values: p.completions(), describe: p.describe() });
/** kubectl's --dry-run values: exactly the DryRun type every layer uses. */
export const dryRunValues = ["none", "client", "server"] as const satisfies readonly DryRun[];
export const completionShells = ["bash", "zsh", "fish", "powershell"] as const;

/** What set and undo share: how a change is tried and confirmed (and, in waitFlagDefs, how long it waits and what it prints). */
const confirmFlagDefs: FlagDef[] = [
  {
    name: "dry-run",
    type: "string",
    default: "none",
    values: dryRunValues,
    attachedValueOnly: true,
    describe: 'Must be "none", "server", or "client". client prints the plan; server lets the server validate every write, persisting nothing. A bare --dry-run means client.',
  },
  { name: "yes", short: "y", type: "boolean", default: false, describe: "Do not ask for confirmation" },
];
const waitFlagDefs = (command: "set" | "undo"): FlagDef[] => [
  {
    name: "parallel",
    type: "int",
    default: 4,
    describe: "With -l (or a plan of several): how many StatefulSets change at once, each with its own journal; a failure lets those under way finish and starts no other",
  },
  { name: "timeout", type: "string", default: "5m", describe: "How long to wait for each step (deletion, adoption): a duration such as 90s, 5m or 1m30s" },
  outputFlagDef(printFlags[command]),
];

const directiveHelp =
  "A directive names a claim template and what it becomes: CLAIM=SIZE (pgdata=2Gi), CLAIM=SIZE,CLASS (pgdata=2Gi,fast-ssd), CLAIM=CLASS, and ,vac=NAME for a volume attributes class. A size is a Kubernetes quantity (2Gi, 500M); one below 1Mi needs its unit.";

export const commandDefs: CommandDef[] = [
  {
    name: "show",
    usage: "[STATEFULSET | -l SELECTOR] [-A]",
    describe: "Show claim templates and every claim per ordinal",
    long: "Lists each StatefulSet's claim templates (size, storage class, whether the class expands volumes, the revision of the templates), then every claim of each template with where it differs from its template. Ordinals with no claim yet, claims left by a scale-down, old volumes kept by --migrate-existing and interrupted changes are listed under the tables.\n\n-o wide adds the retention policy, access modes, volume modes, attributes classes, replicas, ordinals, requests, pods, claim conditions and volumes; -o json|yaml prints all of it as a StorageReport.",
    positionals: [statefulSet(false, "StatefulSet name (default: all in the namespace)")],
    flags: [
      { name: "all-namespaces", short: "A", type: "boolean", default: false, describe: "List StatefulSets in every namespace" },
      { name: "selector", short: "l", type: "string", describe: "Label selector for StatefulSets" },
      { name: "no-headers", type: "boolean", default: false, describe: "When using the default or custom-column output format, don't print headers (default print headers)." },
      {
        name: "show-labels",
        type: "boolean",
        default: false,
        describe: "When printing, show all labels as the last column: a claim template's on its row, a claim's on its (default hide labels column)",
      },
      outputFlagDef(printFlags.show),
    ],
    examples: [
      [`${commandName} show postgresql-k8s`, "Claim templates and every claim per ordinal, with drift from the template"],
      [`${commandName} show -A -o wide`, "Every StatefulSet in every namespace, with access modes, attributes classes and claim conditions"],
      [`${commandName} show -n prod -l app=db -o yaml`, "The StatefulSets labelled app=db in namespace prod, as YAML"],
    ],
    group: "Basic Commands:",
  },
  {
    name: "diff",
    usage: "(STATEFULSET | -l SELECTOR) CLAIM=SIZE[,CLASS][,vac=VAC]...",
    describe: "Show what set would change (exit 0: none, 1: changes, >1: error)",
    long: `Prints the StatefulSet as it is and as set would make it, as kubectl diff does (exit 0: no change, 1: changes, >1: an error), then on stderr what happens to each existing claim and to new ordinals. Nothing is changed. -o json|yaml prints the plan instead, for set --plan.\n\n${directiveHelp}`,
    positionals: [statefulSet(false, "StatefulSet name (or -l SELECTOR)"), directives("CLAIM=SIZE[,CLASS][,vac=VAC] ...")],
    flags: [
      ...selectorFlagDefs,
      filenameFlagDef,
      ...templateMetadataFlagDefs,
      ...existingClaimFlagDefs("diff"),
      { ...outputFlagDef(printFlags.diff), describe: `${printFlags.diff.describe()}: the plan as data, for set --plan` },
    ],
    examples: [
      [`${commandName} diff postgresql-k8s pgdata=2Gi`, "What set would change: new ordinals get 2Gi"],
      [`helm template db ./chart | ${commandName} diff -f -`, "What set -f would change to make the claim templates equal to a chart's (a failed helm upgrade's)"],
      [`${commandName} diff db --template-label data:tier=gold --relabel-existing`, "The template's new label, and each existing claim's"],
      [`${commandName} diff -l tier=db data=5Gi,fast-ssd -n prod -o json > plan.json`, "A plan for every StatefulSet labelled tier=db, to review, then apply with set --plan"],
    ],
    group: "Basic Commands:",
  },
  {
    name: "set",
    usage: "(STATEFULSET | -l SELECTOR) CLAIM=SIZE[,CLASS][,vac=VAC]...",
    describe: "Change claim templates: orphan-delete and re-create, pods keep running",
    long: `The API server refuses any change to a StatefulSet's volumeClaimTemplates. set deletes the StatefulSet with propagationPolicy=Orphan, waits until it is gone and creates it again with the new claim templates: its pods keep running and are adopted again, its claims keep their data. A journal saved first lets the same command, run again, finish an interrupted change.\n\nClaims created from now on (new ordinals, a scale-up) get the new templates. Existing claims keep their size and class unless --resize-existing grows them (where their class expands volumes) or --migrate-existing moves them to new volumes. set shows the plan and asks first; --dry-run=client only prints the plan, --yes does not ask.\n\n${directiveHelp}`,
    positionals: [statefulSet(false, "StatefulSet name (or -l SELECTOR, or --plan FILE)"), directives("CLAIM=SIZE[,CLASS][,vac=VAC] ..., e.g. pgdata=2Gi or pgdata=2Gi,fast-ssd")],
    flags: [
      ...selectorFlagDefs,
      filenameFlagDef,
      ...templateMetadataFlagDefs,
      { name: "plan", type: "string", complete: "file", describe: "Apply exactly this reviewed plan (from diff -o json); refused, before any change, if the cluster moved on since" },
      ...existingClaimFlagDefs("set"),
      ...confirmFlagDefs,
      { name: "force", type: "boolean", default: false, describe: "Proceed past warnings that are not data-safety refusals (rollout in progress, controller owner)" },
      {
        name: "pause-owner",
        type: "boolean",
        default: false,
        describe:
          "Pause the Argo CD Application, Flux Kustomization/HelmRelease or operator resource (Prometheus, OpenTelemetry, RabbitMQ, ECK) that manages the StatefulSet before the first write, and resume it after the last (or on any stop; a rerun after a kill resumes it)",
      },
      ...waitFlagDefs("set"),
    ],
    examples: [
      [`${commandName} set postgresql-k8s pgdata=2Gi`, "New ordinals get 2Gi; existing claims keep their size, running pods are not restarted (asks first)"],
      [`${commandName} set db pgdata=20Gi --resize-existing --wait-resize --yes`, "Also grow the existing claims and wait for them, without asking"],
      [
        `${commandName} set db --template-label data:tier=gold \\\n    --template-annotation data:backup- --relabel-existing`,
        "Label claim template data tier=gold and drop its annotation backup, on the existing claims too (--overwrite changes a key that has a value)",
      ],
      [
        `helm template db ./chart | ${commandName} set -f - --relabel-existing --yes`,
        "The claim templates of a chart's manifest, and their labels on the existing claims (then helm upgrade goes through)",
      ],
    ],
    group: "Basic Commands:",
  },
  {
    name: "history",
    usage: "STATEFULSET",
    describe: "List the recorded revisions of the claim templates, oldest first",
    long: "Each change of the claim templates by set or undo is recorded on the StatefulSet (the last 10 are kept): when, by whom, what changed and the claim templates it made. undo --to-revision goes back to one of them.",
    positionals: [statefulSet(true, "StatefulSet name")],
    flags: [outputFlagDef(printFlags.history)],
    examples: [
      [`${commandName} history postgresql-k8s`, "Every recorded change of its claim templates (the last 10 are kept)"],
      [`${commandName} history postgresql-k8s -o yaml`, "The same, with the full claim templates of each revision"],
    ],
    group: "Basic Commands:",
  },
  {
    name: "undo",
    usage: "(STATEFULSET | -l SELECTOR)",
    describe: "Put the claim templates back as they were one change earlier",
    long: "Re-creates the StatefulSet with the claim templates of the revision before the current one (or of --to-revision), as set does: orphan-delete and re-create, pods keep running. Existing claims keep their size. After an interrupted set, undo puts the original StatefulSet back.",
    positionals: [statefulSet(false, "StatefulSet name (or -l SELECTOR)")],
    flags: [
      ...selectorFlagDefs,
      { name: "to-revision", type: "int", describe: "The revision to go back to (see history); default: the one before the current" },
      ...confirmFlagDefs,
      { name: "force", type: "boolean", default: false, describe: "Proceed past warnings that are not data-safety refusals" },
      ...waitFlagDefs("undo"),
    ],
    examples: [
      [`${commandName} undo postgresql-k8s`, "Back one change; also puts back the original after an interrupted set"],
      [`${commandName} undo postgresql-k8s --to-revision=1 --dry-run=client`, "The plan to go back to revision 1, changing nothing"],
      [`${commandName} undo -l tier=db -n prod`, "Back one change for every StatefulSet labelled tier=db (all planned first; one refused: nothing changes)"],
    ],
    group: "Basic Commands:",
  },
  {
    name: "rbac",
    usage: "",
    describe: "Print the least-privilege Role this tool needs in a namespace",
    long: "Prints, for kubectl apply -f -, the Role this tool needs in a namespace, the optional ClusterRole for storage classes and those --migrate-existing adds, each with a binding to fill in, every rule commented with the commands that use it. Nothing is read from the cluster.",
    positionals: [],
    flags: [outputFlagDef(printFlags.rbac)],
    examples: [
      [`${commandName} rbac -n team-a`, "The Role, the optional ClusterRole for storage classes and those --migrate-existing adds, each with a binding template, to review"],
      [`${commandName} rbac -n team-a | kubectl apply -f -`, "Create them (edit the subjects of the bindings first)"],
    ],
    group: "Other Commands:",
  },
  {
    name: "completion",
    usage: "SHELL",
    describe: "Print the shell completion code for bash, zsh, fish or powershell",
    long: "Prints a script that completes kubectl-appstorage, run by its own file name: commands, flags, StatefulSet names, claim templates, storage classes after CLAIM=SIZE, namespaces, contexts. kubectl appstorage <TAB> is completed by kubectl's own completion (kubectl 1.26 or newer), which runs kubectl_complete-appstorage from the plugin's folder (see the README, Completion).",
    positionals: [{ name: "shell", describe: "bash, zsh, fish or powershell", required: true, missing: "a shell: bash, zsh, fish or powershell", complete: "shell" }],
    flags: [],
    examples: [
      ["source <(kubectl-appstorage completion bash)", "Complete kubectl-appstorage in the current bash"],
      ['kubectl-appstorage completion zsh > "${fpath[1]}/_kubectl-appstorage"', "Install zsh completion"],
      ["kubectl-appstorage completion fish > ~/.config/fish/completions/kubectl-appstorage.fish", "Install fish completion"],
      ["kubectl-appstorage completion powershell | Out-String | Invoke-Expression", "Complete kubectl-appstorage in the current PowerShell"],
    ],
    group: "Other Commands:",
  },
  {
    name: "version",
    usage: "",
    describe: "Print the client and server version information",
    long: "Prints the version of kubectl appstorage and, when the cluster of the current context can be reached, of its API server, as kubectl version does.",
    positionals: [],
    flags: [{ name: "client", type: "boolean", default: false, describe: "If true, shows client version only (no server required)." }, outputFlagDef(printFlags.version)],
    examples: [
      [`${commandName} version`, "The client's version and the server's of the current context"],
      [`${commandName} version --client -o json`, "The client's version alone, as JSON"],
    ],
    group: "Other Commands:",
  },
  {
    name: "options",
    usage: "",
    describe: "Print the list of flags inherited by all commands",
    long: "Print the list of flags inherited by all commands",
    positionals: [],
    flags: [],
    examples: [[`${commandName} options`, "Print flags inherited by all commands"]],
  },
  {
    name: "help",
    usage: "[COMMAND]",
    describe: "Help about any command",
    long: "Help provides help for any command in the application.",
    positionals: [{ name: "command", describe: "a command", required: false }],
    flags: [],
    examples: [],
    hidden: true,
  },
];

/** A flag's value as parsed: for a repeated flag yargs gives every value; kubectl takes the last. */
export function lastValue(value: unknown): unknown {
  return Array.isArray(value) ? value[value.length - 1] : value;
}

/** Every value of a repeatable flag (stringArray), in order. */
export function allValues(value: unknown): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}

function stringFlag(get: (name: string) => unknown, name: string): string | undefined {
  const v = lastValue(get(name));
  return v === undefined ? undefined : String(v);
}

/** Go's duration, or a usage error that says what to type. */
export function durationFlag(text: string, flag: string): number {
  const ms = parseGoDuration(text);
  if (ms === undefined || ms < 0) throw new UsageError(`invalid ${flag} "${text}": use a duration such as 30s, 5m or 1m30s`);
  return ms;
}

/**
 * The connection flags, from parsed values (yargs' argv, or the words completion has seen):
 * written once for both. Empty strings count as not given, as in kubectl, except -n "" which
 * kubectl also ignores but which is almost certainly a mistake here.
 */
export function kubeFlags(get: (name: string) => unknown): KubeFlags {
  const flags: KubeFlags = {};
  const text = (name: string) => {
    const v = stringFlag(get, name);
    return v ? v : undefined;
  };
  const set = <K extends keyof KubeFlags>(key: K, value: KubeFlags[K] | undefined) => {
    if (value !== undefined) flags[key] = value;
  };
  set("kubeconfig", text("kubeconfig"));
  set("context", text("context"));
  set("cluster", text("cluster"));
  set("user", text("user"));
  if (stringFlag(get, "namespace") === "") throw new UsageError("--namespace must not be empty");
  set("namespace", text("namespace"));
  set("server", text("server"));
  set("token", text("token"));
  set("username", text("username"));
  set("password", text("password"));
  set("certificateAuthority", text("certificate-authority"));
  set("clientCertificate", text("client-certificate"));
  set("clientKey", text("client-key"));
  if (lastValue(get("insecure-skip-tls-verify")) === true) flags.insecureSkipTlsVerify = true;
  set("tlsServerName", text("tls-server-name"));
  set("as", text("as"));
  const groups = allValues(get("as-group")).filter(Boolean);
  if (groups.length) flags.asGroups = groups;
  set("asUid", text("as-uid"));
  const timeout = text("request-timeout");
  if (timeout !== undefined) {
    const ms = parseRequestTimeout(timeout);
    if (ms === undefined) throw new UsageError(`invalid --request-timeout "${timeout}": use a duration such as 30s or 1m30s, a number of seconds, or 0 for none`);
    flags.requestTimeoutMs = ms;
  }
  const v = lastValue(get("v"));
  if (v !== undefined && v !== 0) {
    const level = Number(v);
    if (!Number.isInteger(level) || level < 0) throw new UsageError(Number.isNaN(level) ? "-v needs a log level, such as -v 6" : `invalid -v "${String(v)}": use a log level such as 6`);
    flags.verbosity = level;
  }
  return flags;
}

/** Short flags that take a value, for kubectl's attached forms (-owide, -nprod, -v6). */
export function valueShorts(command?: string): Set<string> {
  const defs = [...kubeFlagDefs, ...(commandDefs.find((c) => c.name === command)?.flags ?? commandDefs.flatMap((c) => c.flags))];
  return new Set(defs.filter((f) => f.short && f.type !== "boolean").map((f) => f.short!));
}
