// kubectl's -o jsonpath=TEMPLATE and -o jsonpath-as-json=TEMPLATE: client-go's util/jsonpath as
// cli-runtime's JSONPathPrinter runs it (--allow-missing-template-keys=true, kubectl's default),
// with its parser, its walk over the object and Go's printing of what the walk finds.
// Not jsonpath-plus (already under @kubernetes/client-node): that is Goessner's JSONPath, a
// different dialect, with no {range}...{end} templates, no text between actions, and filters
// that are JavaScript expressions instead of Go's typed comparisons.

/** A template kubectl refuses, with kubectl's one-line message (printed after `error: `) and what it had written to stdout before (custom-columns prints the rows before the failing one). */
export class TemplateError extends Error {
  constructor(
    message: string,
    readonly output = "",
  ) {
    super(message);
  }
}

/** An engine error, with what client-go's function returns beside it: an existence filter still counts that. */
class Failure extends Error {
  returned: readonly unknown[] = [];
}
const fail = (message: string, returned: readonly unknown[]): Failure => Object.assign(new Failure(message), { returned });

/** Runs f; an error of class cls comes back as what onError makes of it: an error to throw, or the value to return. */
function recover<T, E extends Error>(f: () => T, cls: abstract new (...args: never[]) => E, onError: (err: E) => Error | T): T {
  try {
    return f();
  } catch (err) {
    const next = err instanceof cls ? onError(err) : err;
    if (next instanceof Error || !(err instanceof cls)) throw next;
    return next as T;
  }
}

/** A float literal of the template: Go keeps 1.0 a float64, and a float64 compares only with floats. */
class Float64 {
  constructor(readonly value: number) {}
}

/** What a range over a null element walks: Go's reflect.ValueOf(nil), printed `<no value>`, not `null`. */
const noValue = Symbol("no value");

type Param = { readonly known: boolean; readonly value: number; readonly derived: boolean };
// What the parser makes of a template: a list of text and actions, each action a list of these.
type Step = { kind: "field"; name: string } | { kind: "wildcard" } | { kind: "recursive" } | { kind: "array"; params: readonly [Param, Param, Param] } | { kind: "union"; lists: readonly Node[][] };
type Value = { kind: "text"; text: string } | { kind: "literal"; value: number | boolean | Float64 } | { kind: "identifier"; name: string };
type Node = Step | Value | { kind: "list"; nodes: Node[] } | { kind: "filter"; left: Node[]; right: Node[]; operator: string };

// Sticky scanners for client-go's token loops; a backslash keeps the next character in a field name (labels.app\.kubernetes\.io/name).
const fieldChars = /(?:\\[^]?|[^ \t\r\n.,[\]$@{}\\])*/uy;
const identifierChars = /[^ \t\r\n.,[\]$@{}]*/uy;
const numberChars = /[+-]?[.\p{Nd}]*/uy;
const escapeToken = /\\(?:([abfnrtv\\'"])|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([0-7]{3}))|([^\\])/suy;
const escapes: Readonly<Record<string, string>> = { a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\", "'": "'", '"': '"' };
const isDigit = (r: string): boolean => /^\p{Nd}$/u.test(r);
const isAlphaNumeric = (r: string): boolean => /^[_\p{L}\p{Nd}]$/u.test(r);
/** Go's strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
const isPrint = (r: string): boolean => /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(r);
const hex = (cp: number, digits: number): string => cp.toString(16).padStart(digits, "0");
const inInt64 = (digits: string): boolean => BigInt(digits) >= -(2n ** 63n) && BigInt(digits) < 2n ** 63n;

/** The engine's parser (client-go's jsonpath/parser.go), with its messages. */
class Parser {
  private pos = 0;
  constructor(private readonly input: string) {}
  parse(): Node[] {
    const root: Node[] = [];
    while (this.pos < this.input.length) {
      const open = this.input.indexOf("{", this.pos);
      const end = open < 0 ? this.input.length : open;
      if (end > this.pos) root.push({ kind: "text", text: this.input.slice(this.pos, end) });
      if (open < 0) break;
      this.pos = open + 1;
      const action: Node[] = [];
      root.push({ kind: "list", nodes: action });
      while (!this.input.startsWith("}", this.pos)) this.parseToken(action);
      this.pos++;
    }
    return root;
  }
  private scan(chars: RegExp): string {
    chars.lastIndex = this.pos;
    const text = chars.exec(this.input)?.[0] ?? "";
    this.pos += text.length;
    return text;
  }
  private parseToken(cur: Node[]): void {
    if (this.input.startsWith("[?(", this.pos)) return this.parseFilter(cur);
    const start = this.pos;
    if (this.input.startsWith("..", start)) {
      if (cur.at(-1)?.kind === "recursive") throw new TemplateError("invalid multiple recursive descent");
      cur.push({ kind: "recursive" });
      this.pos += 2;
      const cp = this.input.codePointAt(this.pos);
      return cp !== undefined && isAlphaNumeric(String.fromCodePoint(cp)) ? this.parseField(cur) : undefined;
    }
    const cp = this.input.codePointAt(start);
    if (cp === undefined || cp === 0x0a || cp === 0x0d) throw new TemplateError("unclosed action");
    const r = String.fromCodePoint(cp);
    this.pos += r.length;
    if (r === " " || r === "@" || r === "$") return;
    if (r === "[") return this.parseArray(cur, start);
    if (r === '"' || r === "'") return this.parseQuote(cur, start, r);
    if (r === ".") return this.parseField(cur);
    this.pos = start;
    if (r === "+" || r === "-" || isDigit(r)) return this.parseNumber(cur);
    if (!isAlphaNumeric(r)) throw new TemplateError(`unrecognized character in action: U+${hex(cp, 4).toUpperCase()}${isPrint(r) ? ` '${r}'` : ""}`);
    const name = this.scan(identifierChars);
    cur.push(name === "true" || name === "false" ? { kind: "literal", value: name === "true" } : { kind: "identifier", name });
  }
  private parseField(cur: Node[]): void {
    const name = this.scan(fieldChars);
    cur.push(name === "*" ? { kind: "wildcard" } : { kind: "field", name: name.replaceAll("\\", "") });
  }
  private parseNumber(cur: Node[]): void {
    const text = this.scan(numberChars);
    if (/^[+-]?[0-9]+$/.test(text) && inInt64(text)) cur.push({ kind: "literal", value: Number(text) });
    else if (/^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)$/.test(text) && Number.isFinite(Number(text))) cur.push({ kind: "literal", value: new Float64(Number(text)) });
    else throw new TemplateError(`cannot parse number ${text}`);
  }
  private parseArray(cur: Node[], start: number): void {
    const close = this.input.slice(start).search(/[\]\n]/);
    if (close < 0 || this.input[start + close] === "\n") throw new TemplateError("unterminated array");
    this.pos = start + close + 1;
    const text = this.input.slice(start + 1, start + close).replace(/^\*$/, ":");
    const parts = text.split(",");
    const key = /^'([^']*)'$/.exec(text);
    if (parts.length > 1) cur.push({ kind: "union", lists: parts.map((part) => parseInner(`[${part.replace(/^ +| +$/g, "")}]`)) });
    else if (key) cur.push(...parseInner(`.${key[1]}`));
    else cur.push({ kind: "array", params: sliceParams(text) });
  }
  private parseFilter(cur: Node[]): void {
    const start = this.pos + 3;
    let [begin, end, pair, i] = [false, false, "", start];
    for (; ; i++) {
      const r = this.input[i];
      if (r === undefined || r === "\n") throw new TemplateError("unterminated filter");
      if ((r === '"' || r === "'") && !begin) [begin, pair] = [true, r];
      else if (r === pair && this.input[i - 1] !== "\\") end = true;
      else if (r === ")" && begin === end) break;
    }
    if (this.input[i + 1] !== "]") throw new TemplateError("unclosed array expect ]");
    this.pos = i + 2;
    const text = this.input.slice(start, i);
    // Go's `.` matches all but \n (JavaScript's also stops at \r and the line separators).
    const m = /^([^!<>=]+)([!<>=]+)([^\n]+?)$/.exec(text);
    if (!m) cur.push({ kind: "filter", left: parseInner(text), right: [], operator: "exists" });
    else cur.push({ kind: "filter", left: parseInner(m[1]!), right: parseInner(m[3]!), operator: m[2]! });
  }
  private parseQuote(cur: Node[], start: number, quote: string): void {
    let i = start + 1;
    while (i < this.input.length && this.input[i] !== "\n" && (this.input[i] !== quote || this.input[i - 1] === "\\")) i++;
    if (this.input[i] !== quote) throw new TemplateError("unterminated quoted string");
    this.pos = i + 1;
    const text = unquote(this.input.slice(start + 1, i), quote);
    if (text === undefined) throw new TemplateError(`unquote string ${this.input.slice(start, i + 1)} error invalid syntax`);
    cur.push({ kind: "text", text });
  }
}

/** Unions, quoted keys and filters parse their parts as actions of their own, as client-go does. */
function parseInner(text: string): Node[] {
  return (new Parser(`{${text}}`).parse()[0] as { nodes: Node[] }).nodes;
}

function sliceParams(text: string): [Param, Param, Param] {
  const m = /^(-?[0-9]*)(:-?[0-9]*)?(:-?[0-9]*)?$/.exec(text);
  if (!m) throw new TemplateError(`invalid array index ${text}`);
  const [from, to, step] = [m[1], m[2]?.slice(1), m[3]?.slice(1)].map((digits): Param => {
    if (!digits) return { known: false, value: 0, derived: false };
    if (!/^-?[0-9]+$/.test(digits) || !inInt64(digits)) throw new TemplateError(`array index ${digits} is not a number`);
    return { known: true, value: Number(digits), derived: false };
  }) as [Param, Param, Param];
  // [n] is [n:n+1], derived: [-1] becomes [len-1:len], not [len-1:0].
  return [from, m[2] === undefined ? { known: true, value: from.value + 1, derived: true } : to, step];
}

/** Go's strconv.UnquoteChar over the body; undefined where Go says "invalid syntax". */
function unquote(body: string, quote: string): string | undefined {
  let out = "";
  for (let i = 0; i < body.length; i = escapeToken.lastIndex) {
    escapeToken.lastIndex = i;
    const m = escapeToken.exec(body);
    if (!m || m[6] === quote || ((m[1] === "'" || m[1] === '"') && m[1] !== quote)) return undefined;
    const [, named, x, u4, u8, octal, plain] = m;
    const v = Number.parseInt(x ?? u4 ?? u8 ?? octal ?? "0", octal ? 8 : 16);
    if ((octal && v > 255) || ((u4 || u8) && (v > 0x10ffff || (v >= 0xd800 && v < 0xe000)))) return undefined;
    // \x and octal escapes make single bytes: above 0x7f they are not UTF-8, and kubectl's output reads as U+FFFD.
    if (x || octal) out += v < 0x80 ? String.fromCharCode(v) : "\uFFFD";
    else out += plain ?? (named ? escapes[named] : String.fromCodePoint(v));
  }
  return out;
}

type JsonObject = Record<string, unknown>;
const isMap = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Float64);
const isGoInt = (v: number): boolean => Number.isInteger(v) && Math.abs(v) < 2 ** 63;

/** Go orders strings by their UTF-8 bytes, that is by code point (UTF-16 units differ above U+FFFF). */
function byCodePoint(a: string, b: string): number {
  for (let i = 0; i < a.length && i < b.length; i += a.codePointAt(i)! > 0xffff ? 2 : 1) {
    if (a.codePointAt(i) !== b.codePointAt(i)) return a.codePointAt(i)! - b.codePointAt(i)!;
  }
  return a.length - b.length;
}

// Go ranges over a map in random order (kubectl's {.spec.*} and {..name} vary from run to run); sorted keys are one of its orders.
const sortedKeys = (m: JsonObject): string[] => Object.keys(m).sort(byCodePoint);

function children(v: unknown): unknown[] {
  if (Array.isArray(v)) return v;
  if (typeof v === "string") return Array.from(new TextEncoder().encode(v));
  return isMap(v) ? sortedKeys(v).map((k) => v[k]) : [];
}

/** Go's name for the type of a value: int64, float64, string, bool or map[string]interface {} (kubectl's unstructured objects). */
const goType = (v: unknown): string =>
  v instanceof Float64 ? "float64" : typeof v === "number" ? (isGoInt(v) ? "int64" : "float64") : typeof v === "boolean" ? "bool" : isMap(v) ? "map[string]interface {}" : typeof v;

function evalArray(input: readonly unknown[], [from, to, step]: readonly [Param, Param, Param]): unknown[] {
  const result: unknown[] = [];
  for (const value of input) {
    if (value === null || value === noValue) continue;
    if (!Array.isArray(value)) throw fail(`${goType(value)} is not array or slice`, input);
    const len = value.length;
    const start = !from.known ? 0 : from.value < 0 ? from.value + len : from.value;
    const end = !to.known ? len : to.value < 0 || (to.value === 0 && to.derived) ? to.value + len : to.value;
    // client-go returns here, dropping the values after an empty one: {.items[2,0].spec.containers[*]}.
    if (start === end) return result;
    if (start >= len || start < 0) throw fail(`array index out of bounds: index ${start}, length ${len}`, input);
    if (end > len || end < 0) throw fail(`array index out of bounds: index ${end - 1}, length ${len}`, input);
    if (start > end) throw fail(`starting index ${start} is greater than ending index ${end}`, input);
    if (step.known && step.value <= 0) throw fail("step must be > 0", input);
    for (let i = start; i < end; i += step.known ? step.value : 1) result.push(value[i]);
  }
  return result;
}

const evalRecursive = (input: readonly unknown[]): unknown[] =>
  input.flatMap((value) => {
    const below = children(value);
    return below.length === 0 ? [] : [value, ...evalRecursive(below)];
  });

/** Go's text/template comparisons: int with int, float with float (never int with float), and bools only for equality. */
function compare(operator: string, a: unknown, b: unknown): boolean {
  const [ka, kb] = [a, b].map(goType);
  if (![ka, kb].every((k) => k === "int64" || k === "float64" || k === "string" || k === "bool")) throw new Error("invalid type for comparison");
  if (ka !== kb) throw new Error("incompatible types for comparison");
  if (ka === "bool" && operator !== "==" && operator !== "!=") throw new Error("invalid type for comparison");
  const [x, y] = [a, b].map((v) => (v instanceof Float64 ? v.value : v));
  const order = x === y ? 0 : typeof x === "string" ? byCodePoint(x, y as string) : Number(x) - Number(y);
  return { "==": order === 0, "!=": order !== 0, "<": order < 0, "<=": order <= 0, ">": order > 0, ">=": order >= 0 }[operator] === true;
}

/** client-go's walk (jsonpath.go), with its range state: {range} and {end} count as they are met. */
class Walker {
  private readonly range = { begin: 0, depth: 0, end: 0, lastEnd: -1 };
  constructor(private readonly nodes: readonly Node[]) {}
  findResults(data: unknown, from = 0): unknown[][] {
    const full: unknown[][] = [];
    const range = this.range;
    for (let i = from; i < this.nodes.length; i++) {
      const results = this.walk([data], this.nodes[i]!);
      if (range.end > 0 && range.end <= range.depth) {
        range.end--;
        range.lastEnd = i;
        break;
      }
      if (range.begin === 0) full.push(results);
      else {
        range.begin--;
        range.depth++;
        // An empty range still walks its body once, so that its {end} is met.
        if (results.length === 0) this.findResults(noValue, i + 1);
        for (const value of results) full.push(...this.findResults(value ?? noValue, i + 1));
        range.depth--;
        if (range.lastEnd > i) i = range.lastEnd;
      }
    }
    return full;
  }
  private walk(input: readonly unknown[], node: Node): unknown[] {
    if (node.kind === "list") return node.nodes.reduce<unknown[]>((cur, n) => this.walk(cur, n), [...input]);
    if (node.kind === "text") return [node.text];
    if (node.kind === "field") return input.filter((v) => isMap(v) && Object.hasOwn(v, node.name)).map((v) => (v as JsonObject)[node.name]);
    if (node.kind === "wildcard") return input.flatMap(children);
    if (node.kind === "recursive") return evalRecursive(input);
    if (node.kind === "array") return evalArray(input, node.params);
    if (node.kind === "union") return node.lists.flatMap((nodes) => this.walkList(input, nodes, (err) => fail(err.message, input)));
    if (node.kind === "literal") return input.map(() => node.value);
    if (node.kind === "filter") return this.evalFilter(input, node);
    if (node.name === "range") this.range.begin++;
    else if (node.name !== "end") throw fail(`unrecognized identifier ${node.name}`, input);
    else if (this.range.depth === 0) throw fail("not in range, nothing to end", []);
    else this.range.end++;
    return node.name === "range" ? [...input] : [];
  }
  private walkList(input: readonly unknown[], nodes: Node[], onFailure: (err: Failure) => Error | unknown[]): unknown[] {
    return recover(() => this.walk(input, { kind: "list", nodes }), Failure, onFailure);
  }
  private evalFilter(input: readonly unknown[], node: Extract<Node, { kind: "filter" }>): unknown[] {
    const results: unknown[] = [];
    const failed = (err: Error) => fail(err.message, results);
    const operand = (item: unknown, nodes: Node[]): unknown[] => {
      const found = this.walkList([item], nodes, (err) => fail(err.message, input));
      if (found.length > 1) throw fail("can only compare one element at a time", input);
      return found;
    };
    for (const value of input) {
      if (!Array.isArray(value)) throw fail(`${formatValue(value)} is not array or slice and cannot be filtered`, input);
      for (const item of value) {
        if (node.operator === "exists") {
          if (this.walkList([item], node.left, (err) => [...err.returned]).length > 0) results.push(item);
          continue;
        }
        const [left] = operand(item, node.left);
        const [right] = left === undefined ? [] : operand(item, node.right);
        if (right === undefined) continue;
        if (!["<", ">", "==", "!=", "<=", ">="].includes(node.operator)) throw fail(`unrecognized filter operator ${node.operator}`, results);
        if (recover(() => compare(node.operator, left, right), Error, failed)) results.push(item);
      }
    }
    return results;
  }
}

/** Go's %v of a float64: %g with the shortest digits, so an exponent (of two digits at least) below -4 and from 6 up. */
function goFloat(x: number): string {
  const [mantissa, e] = x.toExponential().split("e") as [string, string];
  return Number(e) < -4 || Number(e) >= 6 ? `${mantissa}e${e[0]}${e.slice(1).padStart(2, "0")}` : String(x);
}

/** A value as Go's fmt.Sprint prints it (JSON integers are int64, other numbers float64), as custom-columns prints its cells. */
export function formatValue(v: unknown): string {
  if (typeof v === "string") return v;
  if (typeof v === "number") return isGoInt(v) ? BigInt(v).toString() : goFloat(v);
  if (typeof v === "boolean") return String(v);
  if (v instanceof Float64) return goFloat(v.value);
  if (v === noValue) return "<invalid reflect.Value>";
  if (Array.isArray(v)) return `[${v.map(formatValue).join(" ")}]`;
  const entries = isMap(v) ? sortedKeys(v).map((k) => `${k}:${formatValue(v[k])}`) : undefined;
  return entries ? `map[${entries.join(" ")}]` : "<nil>";
}

/** Go's encoding/json Marshal (compact) or MarshalIndent(v, "", "    "): keys sorted, <, > and & escaped. */
function goJson(v: unknown, indent = ""): string {
  // Written out, not JSON.stringify's: JavaScript lists integer-like keys ("10", "9") first, Go sorts them as strings.
  const marshal = (x: unknown, depth: string): string => {
    const inner = depth + indent;
    const [open, sep, colon, close] = indent ? [`\n${inner}`, `,\n${inner}`, ": ", `\n${depth}`] : ["", ",", ":", ""];
    if (Array.isArray(x)) return x.length === 0 ? "[]" : `[${open}${x.map((y) => marshal(y, inner)).join(sep)}${close}]`;
    if (!isMap(x)) return JSON.stringify(x instanceof Float64 ? x.value : x === noValue || x === undefined ? null : x);
    const entries = sortedKeys(x).map((k) => `${JSON.stringify(k)}${colon}${marshal(x[k], inner)}`);
    return entries.length === 0 ? "{}" : `{${open}${entries.join(sep)}${close}}`;
  };
  return marshal(v, "").replace(/[<>&\u2028\u2029]/g, (c) => `\\u${hex(c.charCodeAt(0), 4)}`);
}

function printResults(results: readonly unknown[], asJson: boolean): string {
  if (asJson) return `${goJson(results, "    ")}\n`;
  return results.map((v) => (isMap(v) || Array.isArray(v) ? goJson(v) : v === null ? "null" : v === noValue ? "<no value>" : formatValue(v))).join(" ");
}

/** Go's %q, as kubectl quotes the template: JSON's quoting but for \a, \v and \x01 (DEL and non-printing characters past ASCII stay as they are). */
const goQuote = (s: string): string => JSON.stringify(s).replace(/\\u00([01][0-9a-f])/g, (_, h: string) => (h === "07" ? "\\a" : h === "0b" ? "\\v" : `\\x${h}`));

export class JsonPathTemplate {
  constructor(
    readonly template: string,
    private readonly nodes: readonly Node[],
  ) {}
  /** What each top-level node (and each pass of a {range}) found, as client-go's FindResults, with its bare messages; formatValue prints them. */
  findResults(data: unknown): unknown[][] {
    const walk = () => new Walker(this.nodes).findResults(data ?? noValue);
    return recover(walk, Failure, (err) => new TemplateError(err.message));
  }
  /** The text kubectl writes to stdout for this object; data is the object as -o json prints it. */
  execute(data: unknown, opts: { asJson?: boolean } = {}): string {
    // kubectl goes on with the template and a dump of the object (Go's %#v) on further lines.
    const failed = (err: TemplateError) => new TemplateError(`error executing jsonpath ${goQuote(this.template)}: Error executing template: ${err.message}`);
    const results = recover(() => this.findResults(data), TemplateError, failed);
    return results.map((r) => printResults(r, opts.asJson === true)).join("");
  }
}

/** The engine's parse (client-go's jsonpath Parse), its bare messages, as custom-columns prints them. */
export function compileJsonPath(template: string): JsonPathTemplate {
  return new JsonPathTemplate(template, new Parser(template).parse());
}

/** -o jsonpath=TEMPLATE as kubectl's printer flags take it: "error parsing jsonpath ..." on a bad one. */
export function parseJsonPath(template: string): JsonPathTemplate {
  if (template === "") throw new TemplateError("template format specified but no template given");
  const failed = (err: TemplateError) => new TemplateError(`error parsing jsonpath ${template}, ${err.message}`);
  return recover(() => compileJsonPath(template), TemplateError, failed);
}
