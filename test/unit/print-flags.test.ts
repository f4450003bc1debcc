import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { commandDefs } from "../../src/cli/flags";
import { PrintFlags, printFlags, type Printable } from "../../src/output/print-flags";

/** What a printer writes for a printable. */
function printed(flags: PrintFlags, value: string | undefined, p: Printable): string {
  let out = "";
  flags.toPrinter(value).print({ write: (s: string) => (out += s) }, p);
  return out;
}

const report: Printable = {
  data: () => ({ apiVersion: "v1", kind: "List", items: [{ name: "db", replicas: 2 }, { name: "web" }] }),
  text: (wide) => (wide ? "WIDE\n" : "TABLE\n"),
  name: () => "statefulset.apps/db\n",
};

describe("PrintFlags: one list of formats per command", () => {
  test("each command's -o help and completion come from its PrintFlags", () => {
    for (const [command, flags] of Object.entries(printFlags)) {
      const output = commandDefs.find((c) => c.name === command)!.flags.find((f) => f.name === "output")!;
      assert.deepEqual(output.values, flags.completions(), command);
      assert.ok(output.describe.startsWith(flags.describe()), command);
    }
  });

  test("show and history take kubectl's template formats; the change commands do not", () => {
    for (const c of ["show", "history"] as const) assert.ok(printFlags[c].completions().includes("jsonpath=") && printFlags[c].completions().includes("custom-columns="), c);
    for (const c of ["set", "undo", "diff"] as const) assert.ok(!printFlags[c].completions().includes("jsonpath="), c);
  });

  const cases: [what: string, flags: PrintFlags, value: string | undefined, want: string | RegExp][] = [
    ["no -o: what a person reads", printFlags.show, undefined, "TABLE\n"],
    ["-o wide", printFlags.show, "wide", "WIDE\n"],
    ["-o json", printFlags.show, "json", /^\{\n {4}"apiVersion": "v1",/],
    ["-o yaml", printFlags.show, "yaml", /^apiVersion: v1\nkind: List\n/],
    ["-o name", printFlags.set, "name", "statefulset.apps/db\n"],
    ["-o jsonpath", printFlags.show, "jsonpath={.items[*].name}", "db web"],
    ["-o jsonpath-as-json", printFlags.show, "jsonpath-as-json={.items[0].name}", '[\n    "db"\n]\n'],
    ["-o custom-columns: a row per item, <none> for what is missing", printFlags.show, "custom-columns=NAME:.name,REPLICAS:.replicas", "NAME   REPLICAS\ndb     2\nweb    <none>\n"],
    ["rbac: no -o prints its own text", printFlags.rbac, undefined, "TABLE\n"],
  ];
  for (const [what, flags, value, want] of cases) {
    test(what, () => {
      const got = printed(flags, value, report);
      if (typeof want === "string") assert.equal(got, want);
      else assert.match(got, want);
    });
  }

  test("--no-headers: custom-columns without its header line, as kubectl", () => {
    let out = "";
    printFlags.show.toPrinter("custom-columns=NAME:.name,REPLICAS:.replicas", { noHeaders: true }).print({ write: (s: string) => (out += s) }, report);
    assert.equal(out, "db    2\nweb   <none>\n");
  });
  test("custom-columns prints the rows a command names (history: its revisions)", () => {
    const history: Printable = { ...report, rows: () => [{ revision: 1 }, { revision: 2 }] };
    assert.equal(printed(printFlags.history, "custom-columns=REV:.revision", history), "REV\n1\n2\n");
  });

  const refused: [flags: PrintFlags, value: string, why: RegExp][] = [
    [printFlags.show, "xml", /^invalid --output "xml": must be one of table, wide, json, yaml, jsonpath=, jsonpath-as-json=, custom-columns=$/],
    [printFlags.diff, "wide", /^invalid --output "wide": must be one of json, yaml$/],
    [printFlags.show, "jsonpath", /^invalid --output "jsonpath"/],
    [printFlags.show, "json=x", /^invalid --output "json=x"/],
    [printFlags.set, "jsonpath={.kind}", /^invalid --output "jsonpath=\{\.kind\}"/],
    [printFlags.show, "jsonpath={.items[", /^error parsing jsonpath \{\.items\[, unterminated array$/],
    [printFlags.show, "custom-columns=", /^custom-columns format specified but no custom columns given$/],
  ];
  for (const [flags, value, why] of refused)
    test(`refuses -o ${value} before anything is read`, () =>
      assert.throws(
        () => flags.validate(value),
        (e: Error) => why.test(e.message),
      ));
});
