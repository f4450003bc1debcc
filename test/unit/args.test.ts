import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseArgs } from "../../src/cli/root";
import { commandLine } from "../fixtures/command-line";
import { runSet } from "../../src/commands/set";
import { UsageError } from "../../src/errors";

describe("parseArgs", () => {
  test("set with every flag", () => {
    assert.deepEqual(
      parseArgs([
        "set",
        "db",
        "pgdata=2Gi",
        "logs=1Gi,fast",
        "-n",
        "prod",
        "--context",
        "c1",
        "--kubeconfig",
        "/k",
        "--dry-run=server",
        "--yes",
        "--force",
        "--timeout",
        "90s",
        "-o",
        "json",
        "--request-timeout",
        "10s",
      ]),
      {
        kind: "set",
        flags: { kubeconfig: "/k", context: "c1", namespace: "prod", requestTimeoutMs: 10_000 },
        name: "db",
        allNamespaces: false,
        directives: ["pgdata=2Gi", "logs=1Gi,fast"],
        dryRun: "server",
        yes: true,
        force: true,
        timeoutMs: 90_000,
        parallel: 4,
        output: "json",
      },
    );
  });
  test("set defaults", () => {
    const p = parseArgs(["set", "db", "pgdata=2Gi"]);
    assert.equal(p.kind, "set");
    if (p.kind !== "set") return;
    assert.equal(p.dryRun, "none");
    assert.equal(p.yes, false);
    assert.equal(p.timeoutMs, 300_000);
    assert.equal(p.output, undefined);
  });
  test("a bare --dry-run is client, with kubectl's deprecation warning, wherever it stands", () => {
    for (const args of [
      ["set", "db", "pgdata=2Gi", "--dry-run", "--yes"],
      ["set", "db", "pgdata=2Gi", "--dry-run"],
      ["set", "--dry-run", "db", "pgdata=2Gi", "-y"],
    ]) {
      const p = parseArgs(args);
      assert.equal(p.kind, "set", JSON.stringify(args));
      if (p.kind !== "set") return;
      assert.equal(p.dryRun, "client", JSON.stringify(args));
      assert.deepEqual(p.directives, ["pgdata=2Gi"]);
      assert.deepEqual(p.notices, ["--dry-run is deprecated and can be replaced with --dry-run=client."]);
    }
  });
  test("as kubectl, a bare --dry-run never takes the next word as its value", () => {
    const p = parseArgs(["set", "db", "--dry-run", "server", "pgdata=2Gi"]);
    assert.equal(p.kind === "set" && p.dryRun, "client");
    assert.deepEqual(p.kind === "set" && p.directives, ["server", "pgdata=2Gi"]);
  });
  test("-l: every word is a directive; -A needs -l; --plan takes nothing else", () => {
    assert.deepEqual(parseArgs(["set", "-l", "app=db", "data=2Gi", "logs=1Gi", "-A"]), {
      kind: "set",
      flags: {},
      selector: "app=db",
      allNamespaces: true,
      directives: ["data=2Gi", "logs=1Gi"],
      dryRun: "none",
      yes: false,
      force: false,
      timeoutMs: 300_000,
      parallel: 4,
    });
    assert.deepEqual(parseArgs(["diff", "-l", "tier=db", "data=2Gi"]), { kind: "diff", flags: {}, selector: "tier=db", allNamespaces: false, directives: ["data=2Gi"] });
    const p = parseArgs(["set", "--plan", "plan.json", "--yes"]);
    assert.equal(p.kind === "set" && p.planFile, "plan.json");
    assert.throws(() => commandLine(["set", "db", "data=2Gi", "--plan", "p.json"]), /--plan FILE applies the plan as it is/);
    assert.throws(() => commandLine(["set", "-l", "app=db"]), /set -l needs at least one CLAIM=SIZE/);
    assert.throws(() => commandLine(["set", "db", "data=2Gi", "-A"]), /-A selects in every namespace and needs -l SELECTOR/);
  });
  test("history and undo", () => {
    assert.deepEqual(parseArgs(["history", "db", "-o", "yaml"]), { kind: "history", flags: {}, name: "db", output: "yaml" });
    assert.deepEqual(parseArgs(["undo", "db", "--to-revision", "2", "--yes"]), {
      kind: "undo",
      flags: {},
      name: "db",
      allNamespaces: false,
      toRevision: 2,
      dryRun: "none",
      yes: true,
      force: false,
      timeoutMs: 300_000,
      parallel: 4,
    });
    assert.deepEqual(parseArgs(["undo", "-l", "tier=db", "-A", "--parallel", "2"]), {
      kind: "undo",
      flags: {},
      selector: "tier=db",
      allNamespaces: true,
      dryRun: "none",
      yes: false,
      force: false,
      timeoutMs: 300_000,
      parallel: 2,
    });
    assert.throws(() => commandLine(["undo", "-l", "tier=db", "--to-revision", "2"]), /--to-revision names a revision of one StatefulSet/);
    assert.throws(() => commandLine(["undo", "db", "-l", "tier=db"]), /undo takes a StatefulSet name or -l SELECTOR, not both/);
    assert.throws(() => commandLine(["undo", "db", "-A"]), /-A selects in every namespace and needs -l SELECTOR/);
    assert.throws(() => commandLine(["undo"]), /undo needs a StatefulSet name or -l SELECTOR/);
    assert.throws(() => commandLine(["set", "-l", "a=b", "data=2Gi", "--parallel", "0"]), /invalid --parallel "0"/);
    assert.equal((parseArgs(["undo", "db", "--dry-run"]) as { dryRun: string }).dryRun, "client");
    assert.throws(() => commandLine(["undo", "db", "--to-revision", "0"]), /invalid --to-revision "0"/);
  });
  test("--dry-run=VALUE carries no warning", () => {
    const p = parseArgs(["set", "db", "pgdata=2Gi", "--dry-run=server"]);
    assert.equal(p.kind === "set" && p.dryRun, "server");
    assert.equal(p.notices, undefined);
  });
  test("diff", () => assert.deepEqual(parseArgs(["diff", "db", "pgdata=2Gi"]), { kind: "diff", flags: {}, name: "db", allNamespaces: false, directives: ["pgdata=2Gi"] }));
  test("show -A -o wide", () => assert.deepEqual(parseArgs(["show", "-A", "-o", "wide"]), { kind: "show", flags: {}, allNamespaces: true, output: "wide" }));
  test("help is text that names the commands, and says where the connection flags are (options)", () => {
    const p = parseArgs(["--help"]);
    assert.equal(p.kind, "text");
    if (p.kind !== "text") return;
    for (const word of ["  show ", "  diff ", "  set ", "  version ", 'Use "kubectl appstorage options"']) assert.ok(p.text.includes(word), word);
    for (const flag of ["--kubeconfig", "--context", "--namespace"]) assert.ok(!p.text.includes(flag), flag);
  });

  test("no arguments: the help, as kubectl plugins answer (exit 0)", () => {
    const p = parseArgs([]);
    assert.equal(p.kind, "text");
    assert.deepEqual(p, parseArgs(["--help"]));
  });
  test("kubectl's global flags, every one", () => {
    const p = parseArgs([
      "show",
      "--context",
      "c",
      "--cluster",
      "k",
      "--user",
      "u",
      "-s",
      "https://h:6443",
      "--token",
      "t",
      "--certificate-authority",
      "ca.crt",
      "--client-certificate",
      "c.crt",
      "--client-key",
      "c.key",
      "--insecure-skip-tls-verify",
      "--tls-server-name",
      "api",
      "--as",
      "bob",
      "--as-group",
      "g1",
      "--as-group",
      "g2",
      "--as-uid",
      "42",
      "-v",
      "6",
      "--username",
      "un",
      "--password",
      "pw",
    ]);
    assert.deepEqual(p.kind === "show" && p.flags, {
      context: "c",
      cluster: "k",
      user: "u",
      server: "https://h:6443",
      token: "t",
      certificateAuthority: "ca.crt",
      clientCertificate: "c.crt",
      clientKey: "c.key",
      insecureSkipTlsVerify: true,
      tlsServerName: "api",
      as: "bob",
      asGroups: ["g1", "g2"],
      asUid: "42",
      verbosity: 6,
      username: "un",
      password: "pw",
    });
  });
  test("repeated flags: the last one wins, as in kubectl", () => {
    const p = parseArgs(["diff", "db", "pgdata=2Gi", "-n", "a", "-n", "b", "--context", "x", "--context", "y", "-o", "yaml", "-o", "json"]);
    assert.equal(p.kind === "diff" && p.flags.namespace, "b");
    assert.equal(p.kind === "diff" && p.flags.context, "y");
    assert.equal(p.kind === "diff" && p.output, "json");
    const s = parseArgs(["set", "db", "pgdata=2Gi", "--yes", "--yes", "--timeout", "1m", "--timeout", "2m"]);
    assert.equal(s.kind === "set" && s.yes, true);
    assert.equal(s.kind === "set" && s.timeoutMs, 120_000);
  });
  test("attached short values: -owide, -ojson, -oyaml, -nprod, -v6, -o=json", () => {
    assert.equal((parseArgs(["show", "-owide"]) as { output: string }).output, "wide");
    assert.equal((parseArgs(["show", "-ojson"]) as { output: string }).output, "json");
    assert.equal((parseArgs(["show", "-oyaml"]) as { output: string }).output, "yaml");
    assert.equal((parseArgs(["show", "-o=json"]) as { output: string }).output, "json");
    const p = parseArgs(["show", "-nprod", "-v6"]);
    assert.deepEqual(p.kind === "show" && p.flags, { namespace: "prod", verbosity: 6 });
    assert.equal((parseArgs(["set", "db", "pgdata=2Gi", "-oname"]) as { output: string }).output, "name");
  });
  const durations: [string, number][] = [
    ["1m30s", 90_000],
    ["90s", 90_000],
    ["1h", 3_600_000],
    ["1.5h", 5_400_000],
    ["250ms", 250],
    ["0", 0],
    ["45", 45_000],
  ];
  for (const [text, ms] of durations) {
    test(`--request-timeout ${text} is ${ms} ms`, () => {
      const p = parseArgs(["show", "--request-timeout", text]);
      assert.equal(p.kind === "show" && p.flags.requestTimeoutMs, ms);
    });
  }
  test("--timeout takes Go durations (1m30s), not a bare number, as kubectl's --timeout", () => {
    assert.equal((parseArgs(["set", "db", "pgdata=2Gi", "--timeout", "1m30s"]) as { timeoutMs: number }).timeoutMs, 90_000);
    assert.throws(() => commandLine(["set", "db", "pgdata=2Gi", "--timeout", "90"]), /invalid --timeout "90"/);
  });
  test("every subcommand's help has two to four examples; diff's mentions no flag it lacks", () => {
    for (const command of ["show", "diff", "set", "history", "undo", "rbac", "completion", "version"]) {
      const p = parseArgs([command, "--help"]);
      const text = p.kind === "text" ? p.text : "";
      // Each example is a block: what it does as "  # " lines, then its command line(s).
      const blocks = text.slice(text.indexOf("Examples:\n") + "Examples:\n".length, text.search(/\n\n(Options|Usage):\n/)).split("\n\n");
      assert.ok(
        blocks.every((b) => /^ {2}# /.test(b) && /\n {2}\S/.test(b)),
        command,
      );
      assert.ok(blocks.length >= 2 && blocks.length <= 4, `${command}: ${blocks.length} examples`);
    }
    const diff = parseArgs(["diff", "--help"]);
    const text = diff.kind === "text" ? diff.text : "";
    for (const absent of ["--timeout ", "--timeout)", "--yes", "--dry-run", "--force"]) assert.ok(!text.includes(absent), `diff --help mentions ${absent}`);
  });

  const refused: [string[], RegExp][] = [
    [["frobnicate"], /: unknown command "frobnicate" for "kubectl appstorage"$/],
    [["set", "db"], /set needs a StatefulSet name and at least one CLAIM=SIZE/],
    [["set"], /set needs a StatefulSet name/],
    [["set", "db", "pgdata=2Gi", "--dry-run=maybe"], /Invalid dry-run value \(maybe\)\. Must be "none", "server", or "client"\.$/],
    [["set", "db", "pgdata=2Gi", "--dry-run="], /Invalid dry-run value \(\)\. Must be "none", "server", or "client"\.$/],
    [["set", "db", "pgdata=2Gi", "--bogus"], /: unknown flag: --bogus$/],
    [["set", "db", "pgdata=2Gi", "-x"], /: unknown shorthand flag: 'x' in -x$/],
    [["set", "db", "pgdata=2Gi", "--timeout"], /: flag needs an argument: --timeout$/],
    [["show", "-n"], /: flag needs an argument: 'n' in -n$/],
    [["show", "db", "web"], /show accepts at most 1 argument\(s\), received 2: unexpected "web"/],
    [["history"], /history needs a StatefulSet name/],
    [["rbac", "extra"], /rbac accepts at most 0 argument\(s\), received 1/],
    [["completion"], /completion needs a shell: bash, zsh, fish or powershell/],
    [["completion", "tcsh"], /Unsupported shell type "tcsh"/],
    [["set", "db", "data=2"], /: invalid size for data: 2 bytes: did you mean 2Gi\?$/],
    [["set", "db", "data=2,fast"], /: invalid size for data: 2 bytes: did you mean 2Gi\?$/],
    [["diff", "db", "logs=size=512"], /: invalid size for logs: 512 bytes: did you mean 512Gi\?$/],
    [["set", "-l", "app=db", "data=1.5"], /: invalid size for data: 1\.5 bytes: did you mean 1\.5Gi\?$/],
    [["--bogus"], /: unknown flag: --bogus$/],
    [["show", "--version"], /: unknown flag: --version$/],
    [["show", "--no-show-labels"], /: unknown flag: --no-show-labels$/],
    [["set", "db", "pgdata=2Gi", "-o", "xml"], /invalid --output "xml"/],
    [["set", "db", "pgdata=2Gi", "--timeout", "soon"], /invalid --timeout "soon"/],
    [["set", "db", "pgdata=2Gi", "--request-timeout", "x"], /invalid --request-timeout/],
    [["diff", "db", "pgdata=2Gi", "-o", "wide"], /invalid --output "wide"/],
    [["show", "-o", "xml"], /invalid --output/],
    [["show", "--request-timeout", "1x"], /invalid --request-timeout "1x"/],
    [["show", "-v", "x"], /-v needs a log level/],
    [["show", "-v", "1.5"], /invalid -v "1.5"/],
    [["show", "-n", ""], /--namespace must not be empty/],
  ];
  for (const [args, why] of refused) test(`refuses ${JSON.stringify(args)}`, () => assert.throws(() => commandLine(args), why));
  test("a size with a unit, or of 1Mi and more in bytes, goes on to the plan's rules", () => {
    for (const d of ["data=2Ki", "data=500k", "data=2Gi", "data=1048576", "data=fast", "data=2Gi,vac=gold"]) assert.doesNotThrow(() => commandLine(["set", "db", d]), d);
  });
  test("a size without its unit is refused before anything is read: set data=2 changes nothing", async () => {
    let connected = false;
    const p = parseArgs(["set", "db", "data=2", "--yes"]);
    assert.equal(p.kind, "set");
    if (p.kind !== "set") return;
    const sink = { write: () => true };
    const deps = {
      streams: { in: process.stdin, out: sink, errOut: sink },
      env: {},
      platform: "linux" as const,
      now: () => new Date(),
      connect: async () => ((connected = true), Promise.reject(new Error("no"))),
    };
    await assert.rejects(runSet(p, deps), (e: unknown) => e instanceof UsageError && e.message === "invalid size for data: 2 bytes: did you mean 2Gi?");
    assert.equal(connected, false);
  });
});
