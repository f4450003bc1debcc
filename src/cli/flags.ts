// The one declarative table of the command line: every command, its positionals, its flags and
// its examples. root.ts builds the yargs parser from it; completion.ts reads the same table, so
// a flag added here is parsed, documented in --help and completed without a second list.
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
  describe: string;
  default?: string | boolean | number;
  /** The values completion offers (each command's validate step checks what was given). */
  values?: readonly string[];
  /** What completion offers for the value when it is not a fixed list (templateLabel/templateAnnotation: CLAIM: then the template's keys). */
  complete?: "namespace" | "file" | "context" | "cluster" | "user" | "templateLabel" | "templateAnnotation";
  /** The value only ever comes attached (--dry-run=server); a bare flag takes no next word. */
  attachedValueOnly?: boolean;
  group?: string;
}

export interface PositionalDef {
  name: string;
  describe: string;
  required: boolean;
  variadic?: boolean;
  choices?: readonly string[];
  /** What completion looks up in the cluster for this positional. */
  complete?: "statefulset" | "claimTemplates";
}

export interface CommandDef {
  name: string;
  describe: string;
  positionals: PositionalDef[];
  flags: FlagDef[];
  examples: [command: string, description: string][];
}

const connection = "Connection (kubectl's global flags):";

/** kubectl's global flags that say where a command acts and as whom (`kubectl options`). */
export const kubeFlagDefs: FlagDef[] = [
  { name: "kubeconfig", type: "string", complete: "file", describe: "Path to the kubeconfig file to use for CLI requests (exactly this one file, which must exist)" },
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
  { name: "insecure-skip-tls-verify", type: "boolean", describe: "If true, the server's certificate will not be checked for validity. This will make your HTTPS connections insecure" },
  { name: "tls-server-name", type: "string", describe: "Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used" },
  { name: "as", type: "string", describe: "Username to impersonate for the operation. User could be a regular user or a service account in a namespace" },
  { name: "as-group", type: "stringArray", describe: "Group to impersonate for the operation, this flag can be repeated to specify multiple groups" },
  { name: "as-uid", type: "string", describe: "UID to impersonate for the operation" },
  {
    name: "request-timeout",
    type: "string",
    describe: "The length of time to wait before giving up on a single server request: a duration (1s, 2m, 1m30s) or a number of seconds; 0 means don't timeout requests (default 30s)",
  },
  { name: "v", short: "v", type: "int", default: 0, describe: "Number for the log level verbosity (6 and up: one line per request on stderr: method, URL, status, latency)" },
].map((f) => ({ ...f, group: connection }) as FlagDef);

/** yargs adds --help itself; completion offers it from here. */
export const helpFlagDef: FlagDef = { name: "help", short: "h", type: "boolean", describe: "Show help" };

const existingGroup = "Existing claims:";

/** --resize-existing, --vac-existing, --wait-resize, --restart-pods, --migrate-existing, --relabel-existing, --copy-image; diff has no --timeout to name. */
function existingClaimFlagDefs(command: "set" | "diff"): FlagDef[] {
  const bound = command === "set" ? " (bounded by --timeout)" : "";
  return [
    {
      name: "resize-existing",
      type: "boolean",
      describe: "Also grow every existing claim of the named templates that is smaller than the new size (and set its vac=), before the StatefulSet is swapped; never shrinks",
    },
    { name: "vac-existing", type: "boolean", describe: "Also set the volume attributes class (vac=NAME) of existing claims, without growing them" },
    {
      name: "wait-resize",
      type: "boolean",
      describe: `Afterwards, follow each claim until its capacity reaches its request or it waits for a pod restart (FileSystemResizePending that kubelet could not finish online)${bound}`,
    },
    {
      name: "restart-pods",
      type: "boolean",
      describe: "Then restart the pods of FileSystemResizePending claims through the Eviction API, one at a time, highest ordinal first (implies --wait-resize)",
    },
    {
      name: "migrate-existing",
      type: "boolean",
      describe:
        "Also move every existing claim of the named templates to a new volume of the new class and size, with its data, one replica at a time, highest ordinal first (copied while the pod runs, verified file by file; the old volume is kept with reclaim policy Retain)",
    },
    {
      name: "relabel-existing",
      type: "boolean",
      describe:
        "Also make the labels and annotations of the existing claims of the named templates (with -f: of every template) their template's: a patch of their metadata, no restart; keys the change drops from the template are dropped, the claims' other keys are kept",
    },
    {
      name: "copy-image",
      type: "string",
      describe: `With --migrate-existing: the image of the copy pods: ${copyImageNeeds} (default ${defaultCopyImage})`,
    },
  ].map((f) => ({ ...f, group: existingGroup }) as FlagDef);
}

const metadataGroup = "Claim template labels and annotations (as kubectl label and kubectl annotate):";

/** --template-label, --template-annotation and --overwrite of set and diff. */
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
].map((f) => ({ ...f, group: metadataGroup }) as FlagDef);

const statefulSet = (required: boolean, describe: string): PositionalDef => ({ name: "statefulset", describe, required, complete: "statefulset" });
const directives = (describe: string): PositionalDef => ({ name: "directives", describe, required: false, variadic: true, complete: "claimTemplates" });

/** -l and -A of set, diff and undo: every StatefulSet a selector matches, instead of one by name. */
/** -f of set and diff: the StatefulSets and their claim templates of a rendered manifest (helm template, kustomize build). */
const filenameFlagDef: FlagDef = {
  name: "filename",
  short: "f",
  type: "stringArray",
  complete: "file",
  describe:
    "Make the claim templates of every StatefulSet in this manifest (YAML or JSON, one or many documents; - for standard input; repeatable) equal to the manifest's: size, class, vac, labels, annotations, access modes; nothing else of the object changes",
};

const selectorFlagDefs: FlagDef[] = [
  { name: "selector", short: "l", type: "string", describe: "Every StatefulSet this label selector matches, instead of a name (all planned first; one refused: nothing changes)" },
  { name: "all-namespaces", short: "A", type: "boolean", default: false, describe: "With -l: in every namespace" },
];

/** -o of a command, from its PrintFlags: the help and completion come from the formats it allows. */
const outputFlagDef = (p: PrintFlags): FlagDef => ({ name: "output", short: "o", type: "string", values: p.completions(), describe: p.describe() });
/** kubectl's --dry-run values: exactly the DryRun type every layer uses. */
export const dryRunValues = ["none", "client", "server"] as const satisfies readonly DryRun[];
export const completionShells = ["bash", "zsh"] as const;

/** What set and undo share: how a change is tried and confirmed (and, in waitFlagDefs, how long it waits and what it prints). */
const confirmFlagDefs: FlagDef[] = [
  {
    name: "dry-run",
    type: "string",
    default: "none",
    values: dryRunValues,
    attachedValueOnly: true,
    describe: "none|client (print the plan)|server (let the server validate, persist nothing); a bare --dry-run means client",
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

export const commandDefs: CommandDef[] = [
  {
    name: "show",
    describe: "Show claim templates and every claim per ordinal",
    positionals: [statefulSet(false, "StatefulSet name (default: all in the namespace)")],
    flags: [
      { name: "all-namespaces", short: "A", type: "boolean", default: false, describe: "List StatefulSets in every namespace" },
      { name: "selector", short: "l", type: "string", describe: "Label selector for StatefulSets" },
      outputFlagDef(printFlags.show),
    ],
    examples: [
      [`${commandName} show postgresql-k8s`, "Claim templates and every claim per ordinal, with drift from the template"],
      [`${commandName} show -A -owide`, "Every StatefulSet in every namespace, with access modes, attributes classes and claim conditions"],
      [`${commandName} show -n prod -l app=db -o yaml`, "The StatefulSets labelled app=db in namespace prod, as YAML"],
    ],
  },
  {
    name: "diff",
    describe: "Show what set would change (exit 0: none, 1: changes, >1: error)",
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
      [`helm template db ./chart | ${commandName} diff -f -`, "What set -f would change to make the claim templates equal to the chart's (a failed helm upgrade's)"],
      [`${commandName} diff db --template-label data:tier=gold --relabel-existing`, "The template's new label, and each existing claim's"],
      [`${commandName} diff -l tier=db data=5Gi,fast-ssd -n prod -o json > plan.json`, "A plan for every StatefulSet labelled tier=db, to review, then apply with set --plan"],
    ],
  },
  {
    name: "set",
    describe: "Change claim templates: orphan-delete and re-create, pods keep running",
    positionals: [statefulSet(false, "StatefulSet name (or -l SELECTOR, or --plan FILE)"), directives("CLAIM=SIZE[,CLASS][,vac=VAC] ..., e.g. pgdata=2Gi or pgdata=2Gi,fast-ssd")],
    flags: [
      ...selectorFlagDefs,
      filenameFlagDef,
      ...templateMetadataFlagDefs,
      { name: "plan", type: "string", complete: "file", describe: "Apply exactly this reviewed plan (from diff -o json); refused, before any change, if the cluster moved on since" },
      ...existingClaimFlagDefs("set"),
      ...confirmFlagDefs,
      { name: "force", type: "boolean", default: false, describe: "Proceed past warnings that are not data-safety refusals (rollout in progress, controller owner)" },
      ...waitFlagDefs("set"),
    ],
    examples: [
      [`${commandName} set postgresql-k8s pgdata=2Gi`, "New ordinals get 2Gi; running pods are not restarted (asks first)"],
      [`${commandName} set db pgdata=20Gi --resize-existing --wait-resize --yes`, "Also grow the existing claims and wait for them, without asking"],
      [
        `${commandName} set db --template-label data:tier=gold --template-annotation data:backup- --relabel-existing`,
        "Label claim template data tier=gold and drop its annotation backup, on the existing claims too (--overwrite changes a key that has a value)",
      ],
      [
        `helm template db ./chart | ${commandName} set -f - --relabel-existing --yes`,
        "The claim templates of a chart's manifest, and their labels on the existing claims (then helm upgrade goes through)",
      ],
    ],
  },
  {
    name: "history",
    describe: "List the recorded revisions of the claim templates, oldest first",
    positionals: [statefulSet(true, "StatefulSet name")],
    flags: [outputFlagDef(printFlags.history)],
    examples: [
      [`${commandName} history postgresql-k8s`, "Every recorded change of its claim templates (the last 10 are kept)"],
      [`${commandName} history postgresql-k8s -o yaml`, "The same, with the full claim templates of each revision"],
    ],
  },
  {
    name: "undo",
    describe: "Put the claim templates back as they were one change earlier (existing claims keep their size)",
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
  },
  {
    name: "rbac",
    describe: "Print the least-privilege Role this tool needs in a namespace (for kubectl apply -f -)",
    positionals: [],
    flags: [outputFlagDef(printFlags.rbac)],
    examples: [
      [`${commandName} rbac -n team-a`, "The Role, the optional ClusterRole for storage classes and those --migrate-existing adds, each with a binding template, to review"],
      [`${commandName} rbac -n team-a | kubectl apply -f -`, "Create them (edit the subjects of the bindings first)"],
    ],
  },
  {
    name: "completion",
    describe: "Print a bash or zsh completion script for the plugin run by its own file name (kubectl appstorage <TAB> goes through kubectl: see the README, Completion)",
    positionals: [{ name: "shell", describe: "bash or zsh", required: true, choices: completionShells }],
    flags: [],
    examples: [
      [`source <(kubectl-appstorage completion bash)`, "Complete kubectl-appstorage in the current bash"],
      [`kubectl-appstorage completion zsh > "\${fpath[1]}/_kubectl-appstorage"`, "Install zsh completion"],
    ],
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
