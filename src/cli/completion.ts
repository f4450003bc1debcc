// Shell completion, the pure part: which word is being completed and what may stand there.
// kubectl (>= 1.26) completes `kubectl appstorage ...` by running kubectl_complete-appstorage
// with the words typed after the plugin name, the last one being the word under the cursor
// ("" when a new word starts), and reads cobra's __complete answer: one candidate a line
// ("value<TAB>description"), then ":<directive>". Commands, flags and positionals are read
// from the yargs help (src/cli/root.ts), so completion follows every flag added there.
// Cluster lookups (StatefulSet names, claim templates) are in src/commands/complete.ts.
import type { KubeFlags } from "../kube/client";
import type { StatefulSet } from "../kube/types";

/** cobra's ShellCompDirective bits; 0 lets the shell fall back to file names. */
export const Directive = { Default: 0, Error: 1, NoSpace: 2, NoFileComp: 4 } as const;

export interface Candidate {
  value: string;
  description?: string;
}

export interface Answer {
  candidates: Candidate[];
  directive: number;
}

export interface FlagSpec {
  long: string;
  short?: string;
  takesValue: boolean;
  description: string;
  /** Allowed values (from yargs choices, or a description that starts "a|b|c"). */
  values: string[];
}

export interface CommandSpec {
  name: string;
  description: string;
  /** Positional names in order, from the usage line; the last may be variadic ("directives"). */
  positionals: string[];
  flags: FlagSpec[];
  /** Allowed values per positional, from yargs choices. */
  choices: Record<string, string[]>;
}

/** The help text for the root (no command) or one command: parseArgs([command, "--help"]). */
export type HelpSource = (command?: string) => string;

/** What the word under the cursor needs: an answer now, or a lookup in the cluster first. */
export type CompletionRequest =
  | { kind: "answer"; answer: Answer }
  | { kind: "statefulsets"; flags: KubeFlags; prefix: string }
  | { kind: "claimTemplates"; flags: KubeFlags; statefulSet: string; prefix: string; given: string[] }
  | { kind: "namespaces"; flags: KubeFlags; prefix: string };

const flagLine = /^\s+(?:-(\w), )?\s*--([\w-]+)\s{2,}(.*?)\s{2}\[(string|boolean|array|number|count)\](.*)$/;
const choicesNote = /\[choices: ([^\]]*)\]/;

function choicesFrom(rest: string): string[] {
  const m = choicesNote.exec(rest);
  return m ? m[1]!.split(/,\s*/).map((c) => c.replace(/^"|"$/g, "")) : [];
}

/** "table|wide|json|yaml" or "none|client (print the plan)|server (...)" -> the words. */
function alternativesFrom(description: string): string[] {
  const m = /^([\w-]+(?: \([^)]*\))?(?:\|[\w-]+(?: \([^)]*\))?)+)/.exec(description);
  return m ? m[1]!.split("|").map((a) => a.replace(/ \(.*$/, "")) : [];
}

export function flagsFromHelp(help: string): FlagSpec[] {
  const flags: FlagSpec[] = [];
  for (const line of help.split("\n")) {
    const m = flagLine.exec(line);
    if (!m) continue;
    const [, short, long, description, type, rest] = m;
    const choices = choicesFrom(rest ?? "");
    flags.push({
      long: long!,
      ...(short ? { short } : {}),
      takesValue: type !== "boolean" && type !== "count",
      description: description!,
      values: choices.length ? choices : alternativesFrom(description!),
    });
  }
  return flags;
}

/** The commands of the root help: "  kubectl appstorage show [statefulset]   Show ...". */
export function commandsFromHelp(rootHelp: string, commandName: string): { name: string; description: string }[] {
  const section = rootHelp.split(/\n(?=\S)/).find((s) => s.startsWith("Commands:")) ?? "";
  const out: { name: string; description: string }[] = [];
  for (const line of section.split("\n").slice(1)) {
    const rest = line.trim();
    if (!rest.startsWith(`${commandName} `)) continue;
    const m = /^(\S+)(?:\s+[[<][^\s]*[\]>])*\s{2,}(.*)$/.exec(rest.slice(commandName.length + 1));
    if (m) out.push({ name: m[1]!, description: m[2]!.trim() });
  }
  return out;
}

export function commandFromHelp(name: string, description: string, help: string): CommandSpec {
  const usage = help.split("\n")[0] ?? "";
  const positionals = [...usage.matchAll(/[[<]([\w-]+)(?:\.\.)?[\]>]/g)].map((m) => m[1]!);
  const choices: Record<string, string[]> = {};
  for (const line of help.split("\n")) {
    const m = /^ {2}([\w-]+)\s{2,}.*?(\[choices: [^\]]*\])/.exec(line);
    if (m && positionals.includes(m[1]!)) choices[m[1]!] = choicesFrom(m[2]!);
  }
  return { name, description, positionals, flags: flagsFromHelp(help), choices };
}

function matching(values: readonly Candidate[], prefix: string): Candidate[] {
  return values.filter((c) => c.value.startsWith(prefix));
}

function answer(candidates: Candidate[], directive: number = Directive.NoFileComp): CompletionRequest {
  return { kind: "answer", answer: { candidates, directive } };
}

function findFlag(flags: readonly FlagSpec[], word: string): { flag: FlagSpec; inline?: string } | undefined {
  if (word.startsWith("--")) {
    const eq = word.indexOf("=");
    const long = word.slice(2, eq < 0 ? undefined : eq);
    const flag = flags.find((f) => f.long === long);
    return flag ? { flag, ...(eq >= 0 ? { inline: word.slice(eq + 1) } : {}) } : undefined;
  }
  const flag = flags.find((f) => f.short === word[1]);
  if (!flag) return undefined;
  return word.length > 2 && flag.takesValue ? { flag, inline: word.slice(2).replace(/^=/, "") } : { flag };
}

function kubeFlags(values: ReadonlyMap<string, string>): KubeFlags {
  const flags: KubeFlags = {};
  const kubeconfig = values.get("kubeconfig");
  const context = values.get("context");
  const namespace = values.get("namespace");
  const requestTimeout = values.get("request-timeout");
  if (kubeconfig) flags.kubeconfig = kubeconfig;
  if (context) flags.context = context;
  if (namespace) flags.namespace = namespace;
  if (requestTimeout) flags.requestTimeout = requestTimeout;
  return flags;
}

function flagValues(flag: FlagSpec, prefix: string, shown: string, values: ReadonlyMap<string, string>): CompletionRequest {
  if (flag.long === "namespace") return { kind: "namespaces", flags: kubeFlags(values), prefix };
  if (flag.long === "kubeconfig") return answer([], Directive.Default); // file names
  const candidates = flag.values.map((v) => ({ value: shown + v }));
  return answer(matching(candidates, shown + prefix));
}

/**
 * words: what was typed after `kubectl appstorage`, the word under the cursor last.
 * help: the yargs help of the root and of each command (parseArgs([command, "--help"])).
 */
export function completionRequest(words: readonly string[], help: HelpSource, commandName: string): CompletionRequest {
  const toComplete = words.at(-1) ?? "";
  const rootHelp = help();
  const commands = commandsFromHelp(rootHelp, commandName);
  const rootFlags = flagsFromHelp(rootHelp);
  let command: CommandSpec | undefined;
  const positionals: string[] = [];
  const values = new Map<string, string>();
  const seen = new Set<string>();
  let pending: FlagSpec | undefined;

  for (const word of words.slice(0, -1)) {
    if (pending) {
      values.set(pending.long, word);
      pending = undefined;
    } else if (word.startsWith("-") && word.length > 1 && word !== "--") {
      const found = findFlag(command?.flags ?? rootFlags, word);
      if (!found) continue;
      seen.add(found.flag.long);
      if (!found.flag.takesValue) continue;
      if (found.inline !== undefined) values.set(found.flag.long, found.inline);
      else pending = found.flag;
    } else if (!command) {
      const known = commands.find((c) => c.name === word);
      if (!known) return answer([]); // an unknown command: nothing sensible to offer
      command = commandFromHelp(known.name, known.description, help(known.name));
    } else {
      positionals.push(word);
    }
  }

  const flags = command?.flags ?? rootFlags;
  if (pending) return flagValues(pending, toComplete, "", values);
  if (toComplete.startsWith("-")) {
    const found = toComplete.startsWith("--") && toComplete.includes("=") ? findFlag(flags, toComplete) : undefined;
    if (found?.flag.takesValue) return flagValues(found.flag, found.inline ?? "", `--${found.flag.long}=`, values);
    const offered = flags.filter((f) => !seen.has(f.long) && f.long !== "version");
    const candidates = offered.flatMap((f) => [
      { value: `--${f.long}`, description: f.description },
      ...(f.short && !toComplete.startsWith("--") ? [{ value: `-${f.short}`, description: f.description }] : []),
    ]);
    return answer(matching(candidates, toComplete));
  }
  if (!command) return answer(matching(commands.map((c) => ({ value: c.name, description: c.description })), toComplete));

  const slot = command.positionals[Math.min(positionals.length, command.positionals.length - 1)];
  if (slot === undefined || (positionals.length >= command.positionals.length && slot !== "directives")) return answer([]);
  const choices = command.choices[slot];
  if (choices) return answer(matching(choices.map((value) => ({ value })), toComplete));
  if (slot === "statefulset") return { kind: "statefulsets", flags: kubeFlags(values), prefix: toComplete };
  if (slot === "directives") {
    return {
      kind: "claimTemplates",
      flags: kubeFlags(values),
      statefulSet: positionals[0]!,
      prefix: toComplete,
      given: positionals.slice(1).map((d) => d.split("=")[0]!),
    };
  }
  return answer([]);
}

/** StatefulSet names, each described by its claim templates. */
export function statefulSetAnswer(statefulSets: readonly StatefulSet[], prefix: string): Answer {
  const candidates = statefulSets.map((s) => {
    const templates = (s.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name).filter(Boolean);
    return { value: s.metadata.name ?? "", description: templates.length ? `claim templates: ${templates.join(", ")}` : "no claim templates" };
  });
  return { candidates: matching(candidates, prefix).sort((a, b) => a.value.localeCompare(b.value)), directive: Directive.NoFileComp };
}

/** "NAME=" for each claim template not named yet; no space after it, the size comes next. */
export function claimTemplateAnswer(statefulSet: StatefulSet | undefined, prefix: string, given: readonly string[]): Answer {
  if (!statefulSet || prefix.includes("=")) return { candidates: [], directive: Directive.NoFileComp };
  const candidates = (statefulSet.spec.volumeClaimTemplates ?? [])
    .filter((t) => t.metadata.name && !given.includes(t.metadata.name))
    .map((t) => {
      const size = t.spec.resources?.requests?.["storage"];
      const described = [size, t.spec.storageClassName].filter(Boolean).join(", ");
      return { value: `${t.metadata.name}=`, ...(described ? { description: `now ${described}` } : {}) };
    });
  return { candidates: matching(candidates, prefix), directive: Directive.NoSpace | Directive.NoFileComp };
}

export function namespaceAnswer(names: readonly string[], prefix: string): Answer {
  return { candidates: matching([...names].sort().map((value) => ({ value })), prefix), directive: Directive.NoFileComp };
}

/** cobra's __complete output; __completeNoDesc drops the descriptions. */
export function formatAnswer(a: Answer, descriptions: boolean): string {
  const lines = a.candidates.map((c) => (descriptions && c.description ? `${c.value}\t${c.description.replace(/\s+/g, " ")}` : c.value));
  return [...lines, `:${a.directive}`, ""].join("\n");
}

const bashScript = `# bash completion for kubectl-appstorage: source <(kubectl-appstorage completion bash)
# This completes the binary run by its own name. \`kubectl appstorage <TAB>\` is completed by
# kubectl's completion, which runs the kubectl_complete-appstorage executable (see the README).
_kubectl_appstorage() {
  local line="\${COMP_LINE:0:COMP_POINT}" cur out directive c
  local -a words lines
  read -ra words <<<"$line"
  # read drops a trailing empty word: a line that ends in a space starts a new word.
  [[ "$line" =~ [[:space:]]$ ]] && words+=("")
  cur="\${words[\${#words[@]}-1]}"
  mapfile -t lines < <("\${words[0]}" __completeNoDesc "\${words[@]:1}" 2>/dev/null)
  (( \${#lines[@]} )) || return
  directive="\${lines[\${#lines[@]}-1]#:}"
  unset 'lines[\${#lines[@]}-1]'
  (( directive & 1 )) && return
  (( directive & 2 )) && compopt -o nospace 2>/dev/null
  (( directive & 4 )) && compopt +o default 2>/dev/null
  COMPREPLY=()
  for c in "\${lines[@]}"; do [[ -n "$c" && "$c" == "$cur"* ]] && COMPREPLY+=("$c"); done
  # bash replaces only the part after the last = or : (COMP_WORDBREAKS); drop what precedes it.
  if [[ "$cur" == *[=:]* ]]; then
    local head="\${cur%"\${cur##*[=:]}"}"
    COMPREPLY=("\${COMPREPLY[@]#"$head"}")
  fi
}
complete -o default -F _kubectl_appstorage kubectl-appstorage
`;

const zshScript = `#compdef kubectl-appstorage
# zsh completion for kubectl-appstorage: source <(kubectl-appstorage completion zsh), after compinit.
# This completes the binary run by its own name. \`kubectl appstorage <TAB>\` is completed by
# kubectl's completion, which runs the kubectl_complete-appstorage executable (see the README).
_kubectl_appstorage() {
  local -a lines candidates
  local directive line value description
  lines=("\${(@f)$("\${words[1]}" __complete "\${(@)words[2,CURRENT-1]}" "\${words[CURRENT]}" 2>/dev/null)}")
  directive="\${lines[-1]#:}"
  lines=("\${(@)lines[1,-2]}")
  (( directive & 1 )) && return 1
  for line in "\${lines[@]}"; do
    [[ -z "$line" ]] && continue
    value="\${line%%$'\\t'*}"
    description=""
    [[ "$line" == *$'\\t'* ]] && description="\${line#*$'\\t'}"
    candidates+=("\${value//:/\\\\:}\${description:+:$description}")
  done
  if (( \${#candidates} )); then
    if (( directive & 2 )); then _describe -t values completions candidates -S ''; else _describe -t values completions candidates; fi
    return
  fi
  (( directive & 4 )) || _files
}
compdef _kubectl_appstorage kubectl-appstorage
`;

export const completionShells = ["bash", "zsh"] as const;
export type CompletionShell = (typeof completionShells)[number];

export function completionScript(shell: CompletionShell): string {
  return shell === "bash" ? bashScript : zshScript;
}
