// Label selectors as the API server reads them (`a=b`, `a==b`, `a!=b`, `a`, `!a`, `a in (x,y)`,
// `a notin (x,y)`), to match the journal of a StatefulSet that an interrupted run deleted: the
// server cannot select an object that is gone, so its saved labels are matched here. Pure.

type Requirement = (labels: Record<string, string>) => boolean;

export class SelectorError extends Error {}

function requirements(selector: string): Requirement[] {
  // Split on commas outside parentheses.
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of selector) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      parts.push(current);
      current = "";
    } else current += ch;
  }
  parts.push(current);
  return parts
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p): Requirement => {
      let m = /^([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(p);
      if (m) {
        const key = m[1]!;
        const values = m[3]!.split(",").map((v) => v.trim());
        return m[2] === "in" ? (l) => key in l && values.includes(l[key]!) : (l) => !(key in l) || !values.includes(l[key]!);
      }
      m = /^([^\s!=]+)\s*(==|=|!=)\s*([^\s,]*)$/.exec(p);
      if (m) {
        const [, key, op, value] = m as unknown as [string, string, string, string];
        return op === "!=" ? (l) => l[key] !== value : (l) => l[key] === value;
      }
      m = /^(!?)([^\s!=()]+)$/.exec(p);
      if (m) return m[1] ? (l) => !(m![2]! in l) : (l) => m![2]! in l;
      throw new SelectorError(`unable to parse requirement "${p}" of label selector "${selector}"`);
    });
}

export function matchesSelector(labels: Record<string, string> | undefined, selector: string): boolean {
  return requirements(selector).every((r) => r(labels ?? {}));
}
