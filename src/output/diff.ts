// A unified diff of two objects as YAML, in kubectl diff's layout, coloured on request.
import { createTwoFilesPatch } from "diff";
import { styleText } from "node:util";
import { toYaml } from "./yaml";

export function unifiedDiff(fromName: string, toName: string, before: unknown, after: unknown, color: boolean): string {
  const a = toYaml(before);
  const b = toYaml(after);
  if (a === b) return "";
  const patch = createTwoFilesPatch(fromName, toName, a, b, "", "", { context: 3 });
  // The diff package starts with an "Index:" line and a "===" rule; diff -u does not.
  const lines = patch.split("\n").filter((l, i) => !(i < 2 && (l.startsWith("Index:") || /^=+$/.test(l))));
  return `${lines
    .map((l) => l.replace(/^(---|\+\+\+) (\S+)\t$/, "$1 $2"))
    .map((l) => (!color ? l : l.startsWith("+") ? styleText("green", l) : l.startsWith("-") ? styleText("red", l) : l.startsWith("@@") ? styleText("cyan", l) : l))
    .join("\n")
    .trimEnd()}\n`;
}
