// Shell completion, the pure part: which word is being completed and what may stand there.
// kubectl (>= 1.26) completes `kubectl appstorage ...` by running kubectl_complete-appstorage
// with the words typed after the plugin name, the last one being the word under the cursor
// ("" when a new word starts), and reads cobra's __complete answer: one candidate a line
// ("value<TAB>description"), then ":<directive>". Commands, flags and positionals come from
// the table in src/cli/flags.ts that also builds the parser, so completion follows every flag.
// Cluster lookups (StatefulSet names, claim templates) are in src/commands/completion.ts, the
// answers' rendering in src/output/completion.ts.
import type { CompletionRequest } from "../commands/completion";
import type { KubeFlags } from "../kube/kube-flags";
import { type Candidate, Directive, matching } from "../output/completion";
import { type CommandDef, commandDefs, completionShells, type FlagDef, helpFlagDef, kubeFlagDefs, kubeFlags } from "./flags";

function answer(candidates: Candidate[], directive: number = Directive.NoFileComp): CompletionRequest {
  return { kind: "answer", answer: { candidates, directive } };
}

const takesValue = (f: FlagDef) => f.type !== "boolean";

function findFlag(flags: readonly FlagDef[], word: string): { flag: FlagDef; inline?: string } | undefined {
  if (word.startsWith("--")) {
    const eq = word.indexOf("=");
    const long = word.slice(2, eq < 0 ? undefined : eq);
    const flag = flags.find((f) => f.name === long);
    return flag ? { flag, ...(eq >= 0 ? { inline: word.slice(eq + 1) } : {}) } : undefined;
  }
  const flag = flags.find((f) => f.short === word[1]);
  if (!flag) return undefined;
  return word.length > 2 && takesValue(flag) ? { flag, inline: word.slice(2).replace(/^=/, "") } : { flag };
}

/** The connection flags typed so far, read as the parser reads them (the last one wins). */
function flagsSoFar(values: ReadonlyMap<string, string[]>): KubeFlags {
  try {
    return kubeFlags((name) => values.get(name));
  } catch {
    return {}; // a half-typed value (-n "", --request-timeout x): complete as if not given
  }
}

function flagValues(flag: FlagDef, prefix: string, shown: string, values: ReadonlyMap<string, string[]>, statefulSet?: string): CompletionRequest {
  if (flag.complete === "namespace") return { kind: "namespaces", flags: flagsSoFar(values), prefix };
  if (flag.complete === "templateLabel" || flag.complete === "templateAnnotation") {
    // With -l there is no one StatefulSet to read the templates of.
    if (statefulSet === undefined || values.has("selector")) return answer([]);
    return { kind: "templateKeys", flags: flagsSoFar(values), statefulSet, which: flag.complete === "templateLabel" ? "label" : "annotation", prefix, shown };
  }
  if (flag.complete === "file") return answer([], Directive.Default); // file names
  if (flag.complete === "context" || flag.complete === "cluster" || flag.complete === "user") {
    return { kind: "kubeconfigNames", what: flag.complete, flags: flagsSoFar(values), prefix: shown + prefix };
  }
  const candidates = matching(
    (flag.values ?? []).map((v) => ({ value: shown + v })),
    shown + prefix,
  );
  // A value that takes an argument (-o jsonpath=): the shell must not add a space after it.
  return answer(candidates, candidates.some((c) => c.value.endsWith("=")) ? Directive.NoSpace | Directive.NoFileComp : Directive.NoFileComp);
}

/**
 * words: what was typed after `kubectl appstorage`, the word under the cursor last.
 * commands and globals: the command-line table (src/cli/flags.ts) that also builds the parser.
 */
export function completionRequest(words: readonly string[], commands: readonly CommandDef[] = commandDefs, globals: readonly FlagDef[] = [...kubeFlagDefs, helpFlagDef]): CompletionRequest {
  const toComplete = words.at(-1) ?? "";
  let command: CommandDef | undefined;
  const positionals: string[] = [];
  const values = new Map<string, string[]>();
  const seen = new Set<string>();
  let pending: FlagDef | undefined;
  const flagsOf = (c?: CommandDef) => [...(c?.flags ?? []), ...globals];
  const remember = (f: FlagDef, v: string) => values.set(f.name, [...(values.get(f.name) ?? []), v]);

  for (const word of words.slice(0, -1)) {
    if (pending) {
      remember(pending, word);
      pending = undefined;
    } else if (word.startsWith("-") && word.length > 1 && word !== "--") {
      const found = findFlag(flagsOf(command), word);
      if (!found) continue;
      seen.add(found.flag.name);
      if (!takesValue(found.flag)) continue;
      if (found.inline !== undefined) remember(found.flag, found.inline);
      else if (!found.flag.attachedValueOnly) pending = found.flag;
    } else if (!command) {
      command = commands.find((c) => c.name === word);
      if (!command) return answer([]); // an unknown command: nothing sensible to offer
    } else {
      positionals.push(word);
    }
  }

  const flags = flagsOf(command);
  if (pending) return flagValues(pending, toComplete, "", values, positionals[0]);
  if (toComplete.startsWith("-")) {
    const found = toComplete.startsWith("--") && toComplete.includes("=") ? findFlag(flags, toComplete) : undefined;
    if (found && takesValue(found.flag)) return flagValues(found.flag, found.inline ?? "", `--${found.flag.name}=`, values, positionals[0]);
    // A repeatable flag may be given again; any other is offered once.
    const offered = flags.filter((f) => !f.hidden && (!seen.has(f.name) || f.type === "stringArray"));
    const candidates = offered.flatMap((f) => [
      { value: `--${f.name}`, description: f.describe },
      ...(f.short && f.short !== f.name && !toComplete.startsWith("--") ? [{ value: `-${f.short}`, description: f.describe }] : []),
    ]);
    return answer(matching(candidates, toComplete));
  }
  if (!command)
    return answer(
      matching(
        commands.filter((c) => !c.hidden).map((c) => ({ value: c.name, description: c.describe })),
        toComplete,
      ),
    );

  const slots = command.positionals;
  const slot = slots[Math.min(positionals.length, slots.length - 1)];
  if (slot === undefined || (positionals.length >= slots.length && !slot.variadic)) return answer([]);
  if (slot.complete === "shell")
    return answer(
      matching(
        completionShells.map((value) => ({ value })),
        toComplete,
      ),
    );
  if (slot.complete === "statefulset") return { kind: "statefulsets", flags: flagsSoFar(values), prefix: toComplete };
  if (slot.complete === "claimTemplates") {
    const head = classHead(toComplete);
    if (head !== undefined) return { kind: "storageClasses", flags: flagsSoFar(values), head, prefix: toComplete.slice(head.length) };
    return {
      kind: "claimTemplates",
      flags: flagsSoFar(values),
      statefulSet: positionals[0]!,
      prefix: toComplete,
      given: positionals.slice(1).map((d) => d.split("=")[0]!),
    };
  }
  return answer([]);
}

/**
 * A directive with a size and no class yet, typed up to a comma (data=2Gi, or data=2Gi,vac=gold,):
 * what precedes the class being typed. A word that is not a size, vac= or size= is a class already.
 */
function classHead(word: string): string | undefined {
  const eq = word.indexOf("=");
  const comma = word.lastIndexOf(",");
  if (eq < 0 || comma < eq) return undefined;
  const items = word.slice(eq + 1, comma).split(",");
  const size = (item: string) => /^(size=)?[+-]?[0-9.]/.test(item);
  const storageClass = (item: string) => !size(item) && !item.startsWith("vac=");
  if (!items.some(size) || items.some(storageClass)) return undefined;
  return word.slice(0, comma + 1);
}

export { completionScript, type CompletionShell } from "./completion-scripts";
