// Kubernetes objects as kubectl diff writes them, fast enough for `diff -l` over a hundred
// StatefulSets. The output is js-yaml's dump with the options below, byte for byte
// (test/unit/object-yaml.test.ts compares the two on real objects and on random ones): the
// structure is laid out here, and every scalar that is not a plain word goes to js-yaml itself,
// so every quoting rule stays js-yaml's. In a CPU profile of `diff -l` over a hundred
// StatefulSets (node --cpu-prof, dist/appstorage.cjs) the yaml package took about 230 ms of 750,
// js-yaml's dump about 70 ms, and this about 16 ms.
import { dump, type DumpOptions } from "js-yaml";

/** As kubectl diff (sigs.k8s.io/yaml): keys sorted, a list not indented under its key, no folding. */
export const objectYamlOptions: DumpOptions = { lineWidth: -1, noRefs: true, sortKeys: true, noArrayIndent: true, quotingType: '"' };

// A word that js-yaml leaves plain: a letter first, then letters, digits and `._/-:`, never a
// colon last, and not one of the words YAML reads as a boolean or null.
const plainWord = /^[A-Za-z](?:[A-Za-z0-9._/:-]*[A-Za-z0-9._/-])?$/;
const readAsOther = new Set([
  "y",
  "Y",
  "yes",
  "Yes",
  "YES",
  "n",
  "N",
  "no",
  "No",
  "NO",
  "true",
  "True",
  "TRUE",
  "false",
  "False",
  "FALSE",
  "on",
  "On",
  "ON",
  "off",
  "Off",
  "OFF",
  "null",
  "Null",
  "NULL",
]);

const indent = (level: number) => "\n" + "  ".repeat(level);

/** Scalars js-yaml decides, each asked once per run: most strings of a namespace repeat. */
const scalars = new Map<string, string>();
const keys = new Map<string, string>();

function scalar(s: string, level: number): string {
  if (plainWord.test(s) && !readAsOther.has(s)) return s;
  let text = scalars.get(s);
  if (text === undefined) {
    text = dump(s, objectYamlOptions).slice(0, -1);
    scalars.set(s, text);
  }
  // A literal block's lines are indented by two spaces per level (at least one level); js-yaml
  // made them for level 0, that is with two.
  if (text[0] !== "|" || level <= 1) return text;
  const lines = text.split("\n");
  const pad = "  ".repeat(level);
  return [lines[0], ...lines.slice(1).map((l) => (l.length ? pad + l.slice(2) : l))].join("\n");
}

function key(k: string): string {
  if (plainWord.test(k) && !readAsOther.has(k)) return k;
  let text = keys.get(k);
  if (text === undefined) {
    const pair = dump({ [k]: null }, objectYamlOptions);
    text = pair.slice(0, pair.lastIndexOf(": null"));
    keys.set(k, text);
  }
  return text;
}

/** What js-yaml's writeNode leaves in state.dump for this value (block style, flow level -1). */
function node(value: unknown, level: number, compact: boolean, inSequence: boolean): string | undefined {
  if (value === null) return "null";
  switch (typeof value) {
    case "undefined":
      return undefined;
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return scalar(value, level);
    case "number":
      return Number.isInteger(value) && !Object.is(value, -0) ? String(value) : dump(value, objectYamlOptions).slice(0, -1);
    case "object":
      break;
    default:
      throw new TypeError(`cannot write a ${typeof value} as YAML`);
  }
  if (Array.isArray(value)) {
    // noArrayIndent: a list under a key is written one level up, its dashes under the key.
    const at = !inSequence && level > 0 ? level - 1 : level;
    let out = "";
    for (const item of value) {
      const text = node(item === undefined ? null : item, at + 1, true, true)!;
      if (!compact || out !== "") out += indent(at);
      out += (text[0] === "\n" ? "-" : "- ") + text;
    }
    return out || "[]";
  }
  let out = "";
  for (const k of Object.keys(value).sort()) {
    const text = node((value as Record<string, unknown>)[k], level + 1, false, false);
    if (text === undefined) continue;
    if (!compact || out !== "") out += indent(level);
    out += key(k) + (text[0] === "\n" ? ":" : ": ") + text;
  }
  return out || "{}";
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * node() of two values at once: a part the two share (the same object, as a plan's original and
 * desired share all that a change leaves alone) is written once, for both.
 */
function pair(a: unknown, b: unknown, level: number, compact: boolean, inSequence: boolean): [string | undefined, string | undefined] {
  if (a === b) {
    const text = node(a, level, compact, inSequence);
    return [text, text];
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.length > 0) {
    const at = !inSequence && level > 0 ? level - 1 : level;
    let outA = "";
    let outB = "";
    for (let i = 0; i < a.length; i++) {
      const [ta, tb] = pair(a[i] === undefined ? null : a[i], b[i] === undefined ? null : b[i], at + 1, true, true);
      if (!compact || outA !== "") outA += indent(at);
      if (!compact || outB !== "") outB += indent(at);
      outA += (ta![0] === "\n" ? "-" : "- ") + ta;
      outB += (tb![0] === "\n" ? "-" : "- ") + tb;
    }
    return [outA, outB];
  }
  if (isMap(a) && isMap(b)) {
    let outA = "";
    let outB = "";
    for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      const [ta, tb] = pair(a[k], b[k], level + 1, false, false);
      if (ta !== undefined) {
        if (!compact || outA !== "") outA += indent(level);
        outA += key(k) + (ta[0] === "\n" ? ":" : ": ") + ta;
      }
      if (tb !== undefined) {
        if (!compact || outB !== "") outB += indent(level);
        outB += key(k) + (tb[0] === "\n" ? ":" : ": ") + tb;
      }
    }
    return [outA || "{}", outB || "{}"];
  }
  return [node(a, level, compact, inSequence), node(b, level, compact, inSequence)];
}

/** Two values as toObjectYaml writes each, what they share written once. */
export function toObjectYamlPair(a: unknown, b: unknown): [string, string] {
  const [ta, tb] = pair(a, b, 0, true, false);
  return [ta === undefined ? "" : `${ta}\n`, tb === undefined ? "" : `${tb}\n`];
}

/** A JSON value (an object read from the API server) as YAML, exactly as dump(value, objectYamlOptions). */
export function toObjectYaml(value: unknown): string {
  const text = node(value, 0, true, false);
  return text === undefined ? "" : `${text}\n`;
}
