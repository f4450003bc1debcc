// The one owner of -o, as kubectl's genericclioptions.PrintFlags: every format this tool prints is
// listed here once, each command's PrintFlags names the ones it allows, the -o help and the
// completion are made from that list, and toPrinter() hands out the one printer a command prints
// through. A new format is one entry in `formats` and its name in the commands that allow it.
import { UsageError } from "../errors";
import type { Writable } from "../streams";

// The printers' modules are loaded when their format is chosen: the argument parser (src/cli)
// reads this list for --help and completion, and must not carry YAML or a template engine.
const yaml = (): typeof import("./yaml") => require("./yaml");
const jsonpath = (): typeof import("./jsonpath") => require("./jsonpath");
const customColumns = (): typeof import("./custom-columns") => require("./custom-columns");

/** Writes what a template printed before it failed (kubectl does too), then fails with its one-line message. */
function printed(out: Writable, render: () => string): void {
  try {
    out.write(render());
  } catch (e) {
    if (e instanceof jsonpath().TemplateError && e.output) out.write(e.output);
    throw e;
  }
}

/** The objects custom-columns prints a row each: a command's own rows, else a list's items, else the object itself. */
function rowsOf(p: Printable): readonly unknown[] {
  if (p.rows) return p.rows();
  const data = p.data() as { items?: unknown };
  return Array.isArray(data?.items) ? data.items : [data];
}

/** What a command hands the printer: each form made only when the chosen format asks for it. */
export interface Printable {
  /** The data -o json|yaml prints (a sealed plan list costs a digest per plan: made on demand). */
  data: () => unknown;
  /** What a person reads: no -o, -o table, or (wide) -o wide. */
  text: (wide: boolean) => string;
  /** What -o name prints; only commands that allow -o name give it. */
  name?: () => string;
  /** The objects -o custom-columns prints a row each, when they are not `data().items`. */
  rows?: () => readonly unknown[];
}

export interface Printer {
  /** No -o, table or wide: a person reads it, so a run prints each StatefulSet as it is done, not all at the end. */
  readonly human: boolean;
  print(out: Writable, p: Printable): void;
}

/** A format: its name as -o takes it, how it prints, and (for a format with an argument) what follows "=". */
interface Format {
  human: boolean;
  /** `-o NAME=ARG`: the argument's name in the help (TEMPLATE, SPEC); absent for a plain format. */
  argument?: string;
  /** The printer, from the argument (checked here: a bad template is a usage error before anything is read). */
  printer: (argument: string, options: PrinterOptions) => (out: Writable, p: Printable) => void;
}

const formats = {
  table: { human: true, printer: () => (out, p) => out.write(p.text(false)) },
  wide: { human: true, printer: () => (out, p) => out.write(p.text(true)) },
  json: { human: false, printer: () => (out, p) => out.write(yaml().toJson(p.data())) },
  yaml: { human: false, printer: () => (out, p) => out.write(yaml().toYaml(p.data())) },
  name: { human: false, printer: () => (out, p) => out.write(p.name!()) },
  // kubectl's template formats: the template is parsed when the printer is made, so a bad one
  // fails before anything is read (kubectl's messages: src/output/jsonpath.ts).
  jsonpath: {
    human: false,
    argument: "TEMPLATE",
    printer: (template) => {
      const t = jsonpath().parseJsonPath(template);
      return (out, p) => printed(out, () => t.execute(p.data()));
    },
  },
  "jsonpath-as-json": {
    human: false,
    argument: "TEMPLATE",
    printer: (template) => {
      const t = jsonpath().parseJsonPath(template);
      return (out, p) => printed(out, () => t.execute(p.data(), { asJson: true }));
    },
  },
  "custom-columns": {
    human: false,
    argument: "SPEC",
    printer: (spec, options) => {
      const c = customColumns().parseCustomColumns(spec);
      return (out, p) => printed(out, () => c.render(rowsOf(p), options));
    },
  },
} satisfies Record<string, Format>;

export type FormatName = keyof typeof formats;

/** What a command's flags change in how a format prints: --no-headers (kubectl's: tables and custom-columns). */
export interface PrinterOptions {
  noHeaders?: boolean;
}

export class PrintFlags {
  /**
   * @param allowed the formats this command prints, in the order its help lists them
   * @param humanDefault what no -o prints: "table" for a command whose -o table is the default
   */
  constructor(
    readonly allowed: readonly FormatName[],
    private readonly humanDefault: FormatName = "table",
  ) {}

  /** -o's values as completion offers them: a plain format, or NAME= for one that takes an argument. */
  completions(): string[] {
    return this.allowed.map((f) => ((formats[f] as Format).argument ? `${f}=` : f));
  }

  /** The help of -o, from the same list. */
  describe(): string {
    return `Output format. One of: (${this.allowed.map((f) => ((formats[f] as Format).argument ? `${f}=${(formats[f] as Format).argument}` : f)).join(", ")})`;
  }

  /** The value's format, or a usage error that lists the allowed ones. Pure: for a command's validate step. */
  validate(value: string | undefined): void {
    this.toPrinter(value);
  }

  /** The printer of -o VALUE (undefined: no -o given). */
  toPrinter(value: string | undefined, options: PrinterOptions = {}): Printer {
    if (value === undefined) return this.make(this.humanDefault, "", options);
    const at = value.indexOf("=");
    const name = at < 0 ? value : value.slice(0, at);
    const format = (this.allowed as readonly string[]).includes(name) ? (formats[name as FormatName] as Format) : undefined;
    if (!format || at >= 0 !== (format.argument !== undefined)) {
      throw new UsageError(`invalid --output "${value}": must be one of ${this.completions().join(", ")}`);
    }
    return this.make(name as FormatName, at < 0 ? "" : value.slice(at + 1), options);
  }

  private make(name: FormatName, argument: string, options: PrinterOptions): Printer {
    const format = formats[name] as Format;
    return { human: format.human, print: format.printer(argument, options) };
  }
}

/** Each command's formats: the one list its -o help, completion, validation and printer come from. */
export const printFlags = {
  show: new PrintFlags(["table", "wide", "json", "yaml", "jsonpath", "jsonpath-as-json", "custom-columns"]),
  history: new PrintFlags(["json", "yaml", "jsonpath", "jsonpath-as-json", "custom-columns"]),
  diff: new PrintFlags(["json", "yaml"]),
  set: new PrintFlags(["json", "yaml", "name"]),
  undo: new PrintFlags(["json", "yaml", "name"]),
  rbac: new PrintFlags(["yaml", "json"]),
  version: new PrintFlags(["json", "yaml"]),
} as const;
