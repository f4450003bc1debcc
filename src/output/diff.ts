// A unified diff of two objects as YAML, in kubectl diff's layout, coloured on request.
import { formatPatch, structuredPatch, type StructuredPatchHunk } from "diff";
import { toObjectYamlPair } from "./object-yaml";

// Plain ANSI codes: the caller already decided that colour is wanted (a TTY, no NO_COLOR).
const paint = (code: number, text: string) => `\u001b[${code}m${text}\u001b[0m`;
const context = 3;

/**
 * The hunks of diff -u between two texts. Lines the two share at the start and at the end (all of
 * a StatefulSet but its claim templates) are set aside first, as GNU diff does. When what is left
 * of the one shares no line with what is left of the other, it is one hunk: the old lines out,
 * the new lines in, with their context; otherwise the diff package compares what is left. Either
 * way at a fraction of the diff package's time on the whole texts, over a hundred StatefulSets.
 */
export function unifiedHunks(a: string, b: string): StructuredPatchHunk[] {
  if (a === b) return [];
  const x = a.split("\n");
  const y = b.split("\n");
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (tail < x.length - head && tail < y.length - head && x[x.length - 1 - tail] === y[y.length - 1 - tail]) tail++;
  const whole = a.endsWith("\n") && b.endsWith("\n");
  const removed = x.slice(head, x.length - tail);
  const added = y.slice(head, y.length - tail);
  const kept = new Set(removed);
  if (whole && !added.some((l) => kept.has(l))) {
    // The final "" of each split is shared, so it is in the tail: every line here is a real line.
    const before = x.slice(Math.max(0, head - context), head);
    const after = x.slice(x.length - tail, Math.min(x.length - 1, x.length - tail + context));
    const start = head - before.length + 1;
    const lines = [...before.map((l) => ` ${l}`), ...removed.map((l) => `-${l}`), ...added.map((l) => `+${l}`), ...after.map((l) => ` ${l}`)];
    return [{ oldStart: start, oldLines: before.length + removed.length + after.length, newStart: start, newLines: before.length + added.length + after.length, lines }];
  }
  const skip = Math.max(0, head - context);
  const skipEnd = Math.max(0, tail - context);
  const middle = (lines: string[]) => lines.slice(skip, lines.length - skipEnd).join("\n") + (skipEnd > 0 ? "\n" : "");
  const patch = structuredPatch("", "", middle(x), middle(y), "", "", { context });
  return patch.hunks.map((h) => ({ ...h, oldStart: h.oldStart + skip, newStart: h.newStart + skip }));
}

export function unifiedDiff(fromName: string, toName: string, before: unknown, after: unknown, color: boolean): string {
  const [a, b] = toObjectYamlPair(before, after);
  if (a === b) return "";
  const patch = formatPatch(
    { oldFileName: fromName, newFileName: toName, oldHeader: undefined, newHeader: undefined, hunks: unifiedHunks(a, b) },
    { includeIndex: false, includeUnderline: false, includeFileHeaders: true },
  );
  return `${patch
    .trimEnd()
    .split("\n")
    .map((l) => (!color ? l : l.startsWith("+") ? paint(32, l) : l.startsWith("-") ? paint(31, l) : l.startsWith("@@") ? paint(36, l) : l))
    .join("\n")}\n`;
}
