import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { commandDefs, kubeFlagDefs } from "../../src/cli/flags";
import { helpWidth, wrap } from "../../src/cli/help";
import { parseArgs } from "../../src/cli/root";
import { distance, suggestionsFor } from "../../src/cli/scan";
import { UsageError } from "../../src/errors";
import { assertGolden } from "../fixtures/golden";

function text(args: string[]): string {
  const p = parseArgs(args);
  assert.equal(p.kind, "text", JSON.stringify(args));
  return p.kind === "text" ? p.text : "";
}

/** What stderr shows for a usage error: its own text, else main.ts's "error: MESSAGE (see ...)" line. */
function stderrOf(args: string[]): string {
  try {
    parseArgs(args);
  } catch (e) {
    assert.ok(e instanceof UsageError, String(e));
    return e.text ?? `error: ${e.message}\n`;
  }
  assert.fail(`${JSON.stringify(args)} parsed`);
}

/** Columns a line takes on a terminal: a tab to the next multiple of 8. */
function columns(line: string): number {
  let n = 0;
  for (const ch of line) n = ch === "\t" ? (Math.floor(n / 8) + 1) * 8 : n + 1;
  return n;
}

// Every help text there is: the root's, each command's (the hidden help too) and options.
const helps: [golden: string, args: string[]][] = [
  ["help-root.txt", ["--help"]],
  ...commandDefs.map((c): [string, string[]] => [`help-${c.name}.txt`, [c.name, "--help"]]),
  ["options.txt", ["options"]],
];

describe("help, as kubectl prints it", () => {
  for (const [golden, args] of helps) {
    test(`${args.join(" ")}: golden ${golden}, every line within ${helpWidth} columns`, () => {
      const t = text(args);
      assertGolden(golden, t);
      for (const line of t.split("\n")) assert.ok(columns(line) <= helpWidth, `${columns(line)} columns: ${line}`);
      assert.ok(t.endsWith("\n") && !t.endsWith("\n\n"));
    });
  }

  test("-h, help COMMAND and --help print the same; no arguments and help alone print the root's", () => {
    assert.equal(text(["set", "-h"]), text(["set", "--help"]));
    assert.equal(text(["help", "set"]), text(["set", "--help"]));
    assert.equal(text(["set", "db", "data=2Gi", "-n", "prod", "--help"]), text(["set", "--help"]));
    assert.equal(text([]), text(["--help"]));
    assert.equal(text(["help"]), text(["--help"]));
    assert.equal(text(["options", "--help"]), text(["options"]));
  });

  test("each command's help: summary, description, Examples, its own Options, Usage, then where the global options are", () => {
    for (const c of commandDefs.filter((d) => !d.hidden && d.name !== "options")) {
      const t = text([c.name, "--help"]);
      assert.ok(t.startsWith(`${c.describe}\n\n`), c.name);
      const at = ["Examples:\n", ...(c.flags.length ? ["Options:\n"] : []), "Usage:\n  kubectl appstorage"].map((h) => t.indexOf(h));
      assert.deepEqual(
        at.map((i) => i > 0),
        at.map(() => true),
        `${c.name}: ${at}`,
      );
      assert.deepEqual(
        [...at].sort((a, b) => a - b),
        at,
        `${c.name}: sections in kubectl's order`,
      );
      // kubectl's line, wrapped at 100 columns as every help line is.
      assert.ok(t.endsWith('Use "kubectl appstorage options" for a list of global command-line options (applies to all\ncommands).\n'), c.name);
      assert.match(t, /\nUsage:\n {2}kubectl appstorage \S+.* \[options\]\n/, c.name);
      for (const f of kubeFlagDefs) assert.ok(!t.includes(`--${f.name}=`), `${c.name} --help repeats --${f.name}`);
    }
  });

  test("options prints the 19 global flags once, in kubectl's form, sorted by name", () => {
    const t = text(["options"]);
    assert.ok(t.startsWith("The following options can be passed to any command:\n\n"));
    const flags = [...t.matchAll(/^ {4}(?:-\w, )?--([\w-]+)=/gm)].map((m) => m[1]!);
    assert.equal(flags.length, kubeFlagDefs.length);
    assert.deepEqual(flags, [...kubeFlagDefs.map((f) => f.name)].sort());
    assert.match(t, /^ {4}-n, --namespace='':\n\tIf present, the namespace scope for this CLI request\n$/m);
    assert.match(t, /^ {4}--insecure-skip-tls-verify=false:$/m);
    assert.match(t, /^ {4}--as-group=\[\]:$/m);
    assert.match(t, /^ {4}-v, --v=0:$/m);
  });

  test("the root's help lists the commands by group, without options and help", () => {
    const t = text(["--help"]);
    assert.match(t, /^Basic Commands:\n {2}show {10}Show claim templates/m);
    assert.ok(!/^ {2}options /m.test(t) && !/^ {2}help /m.test(t));
    assert.match(t, /Use "kubectl appstorage <command> --help" for more information about a given command\.\n/);
  });

  test("wrap fills lines up to the width; a longer word stands alone", () => {
    assert.deepEqual(wrap("aa bb cc dd", 5), ["aa bb", "cc dd"]);
    assert.deepEqual(wrap("a verylongword b", 4), ["a", "verylongword", "b"]);
    assert.deepEqual(wrap("one\ntwo", 80), ["one", "two"]);
  });
});

describe("mistyped commands and flags, as cobra and kubectl answer them", () => {
  test("an unknown command: cobra's message, with Did you mean this?", () => {
    assert.equal(stderrOf(["sho"]), `Error: unknown command "sho" for "kubectl appstorage"\n\nDid you mean this?\n\tshow\n\nRun 'kubectl appstorage --help' for usage.\n`);
    assert.equal(stderrOf(["frobnicate"]), `Error: unknown command "frobnicate" for "kubectl appstorage"\nRun 'kubectl appstorage --help' for usage.\n`);
    assert.equal(stderrOf(["-n", "prod", "dif", "db"]), `Error: unknown command "dif" for "kubectl appstorage"\n\nDid you mean this?\n\tdiff\n\nRun 'kubectl appstorage --help' for usage.\n`);
    assert.match(stderrOf(["help", "sett"]), /^Error: unknown command "sett" for "kubectl appstorage"\n\nDid you mean this\?\n\tset\n/);
  });

  test("an unknown flag: one line that names it, then where the usage is", () => {
    assert.equal(stderrOf(["set", "db", "data=2Gi", "--bogus-flag"]), "error: unknown flag: --bogus-flag\nSee 'kubectl appstorage set --help' for usage.\n");
    assert.equal(stderrOf(["--bogus-flag"]), "error: unknown flag: --bogus-flag\nSee 'kubectl appstorage --help' for usage.\n");
    assert.equal(stderrOf(["show", "-x"]), "error: unknown shorthand flag: 'x' in -x\nSee 'kubectl appstorage show --help' for usage.\n");
    assert.equal(stderrOf(["options", "--bogus"]), "error: unknown flag: --bogus\nRun 'kubectl appstorage options' without flags.\n");
  });

  test("a mistyped flag: Did you mean this?", () => {
    assert.equal(stderrOf(["set", "db", "data=2Gi", "--dry-rn=client"]), "error: unknown flag: --dry-rn\n\nDid you mean this?\n\t--dry-run\n\nSee 'kubectl appstorage set --help' for usage.\n");
    assert.match(stderrOf(["show", "--namespac", "x"]), /Did you mean this\?\n\t--namespace\n/);
    assert.match(stderrOf(["show", "--show-label"]), /Did you mean this\?\n\t--show-labels\n/);
  });

  test("cobra's distance and rule: 2 edits or a prefix; only the nearest are offered", () => {
    assert.equal(distance("sho", "show"), 1);
    assert.equal(distance("sho", "set"), 2);
    assert.equal(distance("SHOW", "show"), 0);
    assert.equal(distance("", "abc"), 3);
    const names = commandDefs.filter((c) => !c.hidden).map((c) => c.name);
    assert.deepEqual(suggestionsFor("sho", names), ["show"]);
    assert.deepEqual(suggestionsFor("s", names), ["show", "set"]);
    assert.deepEqual(suggestionsFor("st", names), ["set"]);
    assert.deepEqual(suggestionsFor("udno", names), ["undo"]);
    assert.deepEqual(suggestionsFor("frobnicate", names), []);
  });

  test("flags anywhere, as pflag reads them: before the command, combined shorts, attached values, after --", () => {
    const p = parseArgs(["-n", "prod", "show", "db", "-Ao", "wide"]);
    assert.ok(p.kind === "show" && p.flags.namespace === "prod" && p.allNamespaces && p.output === "wide" && p.name === "db");
    const q = parseArgs(["set", "-y", "db", "--", "data=2Gi"]);
    assert.ok(q.kind === "set" && q.yes && q.name === "db");
    assert.deepEqual(q.kind === "set" && q.directives, ["data=2Gi"]);
  });
});

describe("version", () => {
  test("version [--client] [-o json|yaml] takes the connection flags", () => {
    assert.deepEqual(parseArgs(["version"]), { kind: "version", flags: {}, client: false });
    assert.deepEqual(parseArgs(["version", "--client", "-o", "json", "-n", "x"]), { kind: "version", flags: { namespace: "x" }, client: true, output: "json" });
  });
  test("the root's --version prints the bare version, for scripts", () => assert.equal(text(["--version"]), "test\n"));
});
