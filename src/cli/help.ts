// --help as kubectl prints it (k8s.io/kubectl/pkg/util/templates, on cobra): the one-line summary
// and the description, Examples, the command's own Options, Usage, then where the global flags
// are (`kubectl appstorage options`, printed once, as `kubectl options`). Made from the table in
// flags.ts, as the parser and completion are; every line fits helpWidth columns (a tab counted as 8).
import { type CommandDef, commandDefs, commandName, type FlagDef, kubeFlagDefs } from "./flags";

/** The columns every help line fits in. */
export const helpWidth = 100;
/** kubectl indents a flag's description by one tab and wraps it 10 columns short of the limit. */
const flagTextWidth = helpWidth - 10;

/** Words filled into lines of at most `width` columns (go-wordwrap's rule: a longer word stands alone). */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const paragraph of text.split("\n")) {
    let line = "";
    for (const word of paragraph.split(/\s+/).filter(Boolean)) {
      if (line && line.length + 1 + word.length > width) {
        lines.push(line);
        line = word;
      } else line = line ? `${line} ${word}` : word;
    }
    lines.push(line);
  }
  return lines;
}

/** pflag's default as kubectl's help shows it: --flag='text', --flag=false, --flag=[]. */
function shownDefault(f: FlagDef): string {
  const d = f.helpDefault ?? f.default;
  if (f.type === "stringArray") return "[]";
  if (f.type === "string") return `'${d ?? ""}'`;
  return String(d ?? (f.type === "boolean" ? false : 0));
}

/** kubectl's flag entries: `    -o, --output='':` then the description, a tab in, each followed by a blank line; sorted by name as pflag does. */
export function flagUsages(flags: readonly FlagDef[]): string {
  return [...flags]
    .filter((f) => !f.hidden)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(
      (f) =>
        `    ${f.short ? `-${f.short}, ` : ""}--${f.name}=${shownDefault(f)}:\n${wrap(f.describe, flagTextWidth)
          .map((l) => `\t${l}`)
          .join("\n")}\n`,
    )
    .join("\n");
}

/** Examples: each one's description as a comment, then its command line(s), two spaces in. */
function examples(c: CommandDef): string {
  const each = c.examples.map(([command, what]) => [...wrap(what, helpWidth - 4).map((l) => `  # ${l}`), ...command.split("\n").map((l) => `  ${l}`)].join("\n"));
  return each.length ? `Examples:\n${each.join("\n\n")}\n\n` : "";
}

/** The summary, then the description's paragraphs. */
function description(c: { describe: string; long: string }): string {
  const long =
    c.long === c.describe
      ? ""
      : `\n\n${c.long
          .split("\n\n")
          .map((p) => wrap(p, helpWidth).join("\n"))
          .join("\n\n")}`;
  return `${c.describe}${long}\n\n`;
}

/**
 * kubectl's last line, wrapped as every help line is: with "kubectl appstorage" for "kubectl" it
 * is 101 columns long.
 */
const optionsTip = `${wrap(`Use "${commandName} options" for a list of global command-line options (applies to all commands).`, helpWidth).join("\n")}\n`;

/** `kubectl appstorage COMMAND --help`. */
export function commandHelp(c: CommandDef): string {
  if (c.name === "options") return optionsText();
  const options = c.flags.filter((f) => !f.hidden).length ? `Options:\n${flagUsages(c.flags).trimEnd()}\n\n` : "";
  const usage = `Usage:\n  ${[commandName, c.name, c.usage, "[options]"].filter(Boolean).join(" ")}\n\n`;
  return `${description(c)}${examples(c)}${options}${usage}${optionsTip}`;
}

/** The root's own help: the commands by group, as kubectl's root help lists its own. */
export function rootHelp(): string {
  const width = Math.max(11, ...commandDefs.map((c) => c.name.length));
  const groups = (["Basic Commands:", "Other Commands:"] as const).map(
    (g) =>
      `${g}\n${commandDefs
        .filter((c) => c.group === g)
        .map((c) => `  ${c.name.padEnd(width)}   ${c.describe}`)
        .join("\n")}`,
  );
  const root = {
    describe: `${commandName} changes the volume claim templates of a StatefulSet safely.`,
    long: "The API server refuses any change to a StatefulSet's volumeClaimTemplates. This plugin deletes the StatefulSet with propagationPolicy=Orphan, waits until it is gone and creates it again with the new claim templates: pods keep running, claims keep their data. An interrupted change is finished by running the same command again.",
  };
  const example: CommandDef = { ...commandDefs[0]!, examples: ["show", "diff", "set"].map((n) => commandDefs.find((c) => c.name === n)!.examples[0]!) };
  const usage = `Usage:\n  ${commandName} [command] [options]\n\n`;
  return `${description(root)}${examples(example)}${groups.join("\n\n")}\n\n${usage}Use "${commandName} <command> --help" for more information about a given command.\n${optionsTip}`;
}

/** `kubectl appstorage options`: the global flags, once, as `kubectl options` prints them. */
export function optionsText(): string {
  return `The following options can be passed to any command:\n\n${flagUsages(kubeFlagDefs).trimEnd()}\n`;
}
