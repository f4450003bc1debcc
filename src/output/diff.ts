// A unified diff of two objects as YAML, in kubectl diff's layout, coloured on request.
import { createTwoFilesPatch } from "diff";
import { toObjectYaml } from "./object-yaml";

// Plain ANSI codes: the caller already decided that colour is wanted (a TTY, no NO_COLOR).
const paint = (code: number, text: string) => `\u001b[${code}m${text}\u001b[0m`;

export function unifiedDiff(fromName: string, toName: string, before: unknown, after: unknown, color: boolean): string {
  const a = toObjectYaml(before);
  const b = toObjectYaml(after);
  if (a === b) return "";
  const patch = createTwoFilesPatch(fromName, toName, a, b, "", "", { context: 3 });
  // The diff package starts with an "Index:" line and a "===" rule; diff -u does not.
  const lines = patch.split("\n").filter((l, i) => !(i < 2 && (l.startsWith("Index:") || /^=+$/.test(l))));
  return `${lines
    .map((l) => l.replace(/^(---|\+\+\+) (\S+)\t$/, "$1 $2"))
    .map((l) => (!color ? l : l.startsWith("+") ? paint(32, l) : l.startsWith("-") ? paint(31, l) : l.startsWith("@@") ? paint(36, l) : l))
    .join("\n")
    .trimEnd()}\n`;
}
