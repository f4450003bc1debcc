// Which command a command line names and whether each of its flags is one that command takes,
// before any value is typed: cobra's Find and pflag's parse, with their messages and cobra's
// "Did you mean this?" (Levenshtein distance <= 2, or a prefix). From the same table as the
// parser, the help and completion (flags.ts). Pure.
import { UsageError } from "../errors";
import { type CommandDef, commandDefs, commandName, type FlagDef, helpFlagDef, kubeFlagDefs, rootFlagDefs } from "./flags";

export interface Scanned {
  /** undefined: no command word (the root). */
  command?: CommandDef;
  /** The words that are neither flags nor their values, the command's name left out. */
  positionals: string[];
  /** -h or --help was given. */
  help: boolean;
  /** The root's hidden --version was given. */
  version: boolean;
}

/** cobra's ld(): the Levenshtein distance, here always ignoring case. */
export function distance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  let row = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const next = [i];
    for (let j = 1; j <= t.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (s[i - 1] === t[j - 1] ? 0 : 1));
    row = next;
  }
  return row[t.length]!;
}

/**
 * cobra's SuggestionsFor picks a name at most 2 edits away, or one that starts with what was
 * typed; of those, only the nearest are offered (a prefix counts as nearest): for "sho", show and
 * not set, which cobra would list too, and which changes the cluster.
 */
export function suggestionsFor(typed: string, names: readonly string[]): string[] {
  const ranked = names.map((name) => ({ name, rank: name.toLowerCase().startsWith(typed.toLowerCase()) ? 0 : distance(typed, name) })).filter((n) => n.rank <= 2);
  const nearest = Math.min(...ranked.map((n) => n.rank));
  return ranked.filter((n) => n.rank === nearest).map((n) => n.name);
}

function didYouMean(suggestions: readonly string[]): string {
  return suggestions.length ? `\n\nDid you mean this?\n${suggestions.map((s) => `\t${s}\n`).join("")}` : "";
}

/** cobra's own error for a word that names no command, printed as cobra prints it. */
export function unknownCommand(word: string): UsageError {
  const message = `unknown command "${word}" for "${commandName}"`;
  const names = commandDefs.filter((c) => !c.hidden).map((c) => c.name);
  return new UsageError(message, `Error: ${message}${didYouMean(suggestionsFor(word, names))}\nRun '${commandName} --help' for usage.\n`);
}

/** pflag's errors, as kubectl's FlagErrorFunc words them: with where to read the usage. */
function flagError(message: string, command: CommandDef | undefined, suggestions: readonly string[] = []): UsageError {
  const path = command ? `${commandName} ${command.name}` : commandName;
  const next = command?.name === "options" ? `Run '${path}' without flags.` : `See '${path} --help' for usage.`;
  return new UsageError(message, `error: ${message}${didYouMean(suggestions)}\n${next}\n`);
}

const takesValue = (f: FlagDef) => f.type !== "boolean";

/** cobra's Find: the first word that is not a flag or the value of a global flag. */
function commandWord(args: readonly string[]): number {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") return -1;
    if (!a.startsWith("-") || a === "-") return i;
    const flag = a.startsWith("--") ? kubeFlagDefs.find((f) => f.name === a.slice(2)) : a.length === 2 ? kubeFlagDefs.find((f) => f.short === a[1]) : undefined;
    if (flag && takesValue(flag)) i++;
  }
  return -1;
}

/** A long flag: its value is attached (--name=v), the next word, or (--dry-run) only ever attached. */
function longFlag(args: readonly string[], i: number, flags: readonly FlagDef[], command: CommandDef | undefined): { flag: FlagDef; next: number } {
  const word = args[i]!;
  const eq = word.indexOf("=");
  const name = word.slice(2, eq < 0 ? undefined : eq);
  const flag = flags.find((f) => f.name === name);
  if (!flag)
    throw flagError(
      `unknown flag: --${name}`,
      command,
      suggestionsFor(
        name,
        flags.map((f) => f.name),
      ).map((n) => `--${n}`),
    );
  if (eq >= 0 || !takesValue(flag) || flag.attachedValueOnly) return { flag, next: i + 1 };
  if (i + 1 >= args.length) throw flagError(`flag needs an argument: --${name}`, command);
  return { flag, next: i + 2 };
}

/** Short flags, combined as pflag takes them: -yA, -nprod, -o json, -o=json. */
function shortFlags(args: readonly string[], i: number, flags: readonly FlagDef[], command: CommandDef | undefined): { flags: FlagDef[]; next: number } {
  const word = args[i]!;
  const found: FlagDef[] = [];
  for (let at = 1; at < word.length; at++) {
    const flag = flags.find((f) => f.short === word[at]);
    if (!flag) throw flagError(`unknown shorthand flag: '${word[at]}' in ${word}`, command);
    found.push(flag);
    if (!takesValue(flag)) continue;
    if (at + 1 < word.length) return { flags: found, next: i + 1 };
    if (i + 1 >= args.length) throw flagError(`flag needs an argument: '${word[at]}' in ${word}`, command);
    return { flags: found, next: i + 2 };
  }
  return { flags: found, next: i + 1 };
}

/** The command, its positionals and whether help was asked; a usage error for an unknown command or flag. */
export function scan(args: readonly string[]): Scanned {
  const at = commandWord(args);
  const command = at < 0 ? undefined : commandDefs.find((c) => c.name === args[at]);
  if (at >= 0 && !command) throw unknownCommand(args[at]!);
  const flags = [...(command ? command.flags : rootFlagDefs), ...kubeFlagDefs, helpFlagDef];
  const scanned: Scanned = { ...(command ? { command } : {}), positionals: [], help: false, version: false };
  let i = 0;
  while (i < args.length) {
    const word = args[i]!;
    if (word === "--") {
      scanned.positionals.push(...args.slice(i + 1));
      break;
    }
    if (i === at || !word.startsWith("-") || word === "-") {
      if (i !== at) scanned.positionals.push(word);
      i++;
      continue;
    }
    const found = word.startsWith("--") ? longFlag(args, i, flags, command) : shortFlags(args, i, flags, command);
    for (const f of "flag" in found ? [found.flag] : found.flags) {
      if (f === helpFlagDef) scanned.help = true;
      if (f.name === "version" && !command) scanned.version = true;
    }
    i = found.next;
  }
  return scanned;
}

/** The positionals a command takes: a required one missing, or more than it takes, is a usage error (help is not checked). */
export function checkPositionals(command: CommandDef, positionals: readonly string[]): void {
  const defs = command.positionals;
  const missing = defs.find((p, n) => p.required && positionals.length <= n);
  if (missing) throw new UsageError(`${command.name} needs ${missing.missing ?? missing.name}`);
  if (defs.some((p) => p.variadic) || positionals.length <= defs.length) return;
  const extra = positionals.slice(defs.length).map((w) => `"${w}"`);
  throw new UsageError(`${command.name} accepts at most ${defs.length} argument(s), received ${positionals.length}: unexpected ${extra.join(" ")}`);
}
