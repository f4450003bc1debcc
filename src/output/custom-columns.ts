// kubectl's -o custom-columns=HEADER:EXPR,... (kubectl's pkg/cmd/get/customcolumn.go): one
// jsonpath per column, a header line and a line per object, laid out by kubectl's tabwriter.
import { compileJsonPath, formatValue, type JsonPathTemplate, TemplateError } from "./jsonpath";

export interface CustomColumn {
  readonly header: string;
  /** The column's expression as kubectl's RelaxedJSONPathExpression completes it: `{.metadata.name}`. */
  readonly fieldSpec: string;
  readonly template: JsonPathTemplate;
}

// metadata.name, .metadata.name, {metadata.name} and {.metadata.name} all mean {.metadata.name}.
const relaxed = /^\{\.?([^{}]+)\}$|^\.?([^{}]+)$/;

function relaxedJsonPathExpression(expression: string): string {
  if (expression === "") return "";
  const m = relaxed.exec(expression);
  if (!m) throw new TemplateError("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'");
  return `{.${m[1] || m[2]}}`;
}

/** The spec of -o custom-columns=SPEC, checked as kubectl checks it: every column's form first, then the jsonpaths. */
export function parseCustomColumns(spec: string): CustomColumns {
  if (spec === "") throw new TemplateError("custom-columns format specified but no custom columns given");
  const columns = spec.split(",").map((part) => {
    const colon = part.indexOf(":");
    if (colon < 0) throw new TemplateError(`unexpected custom-columns spec: ${part}, expected <header>:<json-path-expr>`);
    return { header: part.slice(0, colon), fieldSpec: relaxedJsonPathExpression(part.slice(colon + 1)) };
  });
  // kubectl parses the jsonpaths only when it prints, after the header: a bad one here prints no header.
  return new CustomColumns(columns.map((c) => ({ ...c, template: compileJsonPath(c.fieldSpec) })));
}

// kubectl's terminal escaping of each value (not the headers): ESC and CR cannot rewrite the screen.
const escapeTerminal = (s: string): string => s.replaceAll("\x1b", "^[").replaceAll("\r", "\\r");

export class CustomColumns {
  constructor(readonly columns: readonly CustomColumn[]) {}

  /** The header line (not with --no-headers), then a line per object (kubectl's rows for a list are its items). */
  render(rows: readonly unknown[], options: { noHeaders?: boolean } = {}): string {
    const out = new TabWriter();
    if (!options.noHeaders) out.write(`${this.columns.map((c) => c.header).join("\t")}\n`);
    for (const row of rows) {
      let line: string;
      try {
        line = this.columns.map((c) => cell(c.template, row)).join("\t");
      } catch (err) {
        // kubectl has printed the rows before this one when it stops.
        throw err instanceof TemplateError ? new TemplateError(err.message, out.flush()) : err;
      }
      out.write(`${line}\n`);
    }
    return out.flush();
  }
}

function cell(template: JsonPathTemplate, row: unknown): string {
  const results = template.findResults(row);
  const values = results.length === 0 || results[0]!.length === 0 ? ["<none>"] : [];
  for (const result of results) for (const v of result) values.push(escapeTerminal(formatValue(v)));
  return values.join(",");
}

interface Cell {
  readonly text: string;
  /** In characters (code points), as Go's tabwriter counts runes. */
  readonly width: number;
}

/**
 * Go's text/tabwriter as kubectl sets it up (liggitt/tabwriter: minimum width 6, padding 3,
 * spaces, RememberWidths): a tab ends a cell, the last cell of a line is not padded, a column is
 * as wide as its widest cell in a block of lines that all have it, and never narrower than it
 * was before (a value with a newline in it ends the block); a form feed lays out all before it.
 */
class TabWriter {
  private lines: Cell[][] = [[]];
  private cell = "";
  private widths: number[] = [];
  private readonly remembered: number[] = [];
  private out = "";

  write(text: string): void {
    for (const ch of text) {
      if (ch !== "\t" && ch !== "\v" && ch !== "\n" && ch !== "\f") {
        this.cell += ch;
        continue;
      }
      const line = this.lines.at(-1)!;
      line.push({ text: this.cell, width: [...this.cell].length });
      this.cell = "";
      if (ch !== "\n" && ch !== "\f") continue;
      this.lines.push([]);
      // Go also flushes after a line of one cell: with remembered widths, that lays out nothing differently.
      if (ch === "\f") this.flush();
    }
  }

  /** Lays out what is buffered; returns all the text so far. */
  flush(): string {
    if (this.cell !== "") this.lines.at(-1)!.push({ text: this.cell, width: [...this.cell].length });
    this.cell = "";
    this.format(0, this.lines.length);
    this.lines = [[]];
    this.widths = [];
    return this.out;
  }

  private format(line0: number, line1: number): void {
    const column = this.widths.length;
    let start = line0;
    for (let row = line0; row < line1; row++) {
      if (column >= this.lines[row]!.length - 1) continue;
      // A block: the lines from here on that have a cell in this column, before their last one.
      this.writeLines(start, row);
      start = row;
      let width = 6;
      for (; row < line1 && column < this.lines[row]!.length - 1; row++) width = Math.max(width, this.lines[row]![column]!.width + 3);
      this.widths.push(this.remember(width));
      this.format(start, row);
      this.widths.pop();
      start = row;
    }
    this.writeLines(start, line1);
  }

  /** RememberWidths: a column is never narrower than it was before a flush. */
  private remember(width: number): number {
    const column = this.widths.length;
    if (this.remembered.length < column) this.remembered.push(...this.widths.slice(this.remembered.length));
    if (this.remembered.length === column) this.remembered.push(width);
    else if (this.remembered[column]! > width) return this.remembered[column]!;
    else this.remembered[column] = width;
    return width;
  }

  private writeLines(line0: number, line1: number): void {
    for (let i = line0; i < line1; i++) {
      this.lines[i]!.forEach((c, j) => {
        this.out += j < this.widths.length ? c.text + " ".repeat(this.widths[j]! - c.width) : c.text;
      });
      if (i + 1 < this.lines.length) this.out += "\n";
    }
  }
}
