import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseArgs } from "../../src/cli/root";

describe("parseArgs", () => {
  test("set with every flag", () => {
    assert.deepEqual(
      parseArgs(["set", "db", "pgdata=2Gi", "logs=1Gi,fast", "-n", "prod", "--context", "c1", "--kubeconfig", "/k", "--dry-run=server", "--yes", "--force", "--timeout", "90s", "-o", "json", "--request-timeout", "10s"]),
      {
        kind: "set",
        flags: { kubeconfig: "/k", context: "c1", namespace: "prod", requestTimeout: "10s" },
        name: "db",
        allNamespaces: false,
        directives: ["pgdata=2Gi", "logs=1Gi,fast"],
        dryRun: "server",
        yes: true,
        force: true,
        timeoutMs: 90_000,
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
      flags: { requestTimeout: "30s" },
      selector: "app=db",
      allNamespaces: true,
      directives: ["data=2Gi", "logs=1Gi"],
      dryRun: "none",
      yes: false,
      force: false,
      timeoutMs: 300_000,
    });
    assert.deepEqual(parseArgs(["diff", "-l", "tier=db", "data=2Gi"]), { kind: "diff", flags: { requestTimeout: "30s" }, selector: "tier=db", allNamespaces: false, directives: ["data=2Gi"] });
    const p = parseArgs(["set", "--plan", "plan.json", "--yes"]);
    assert.equal(p.kind === "set" && p.planFile, "plan.json");
    assert.throws(() => parseArgs(["set", "db", "data=2Gi", "--plan", "p.json"]), /--plan FILE applies the plan as it is/);
    assert.throws(() => parseArgs(["set", "-l", "app=db"]), /set -l needs at least one CLAIM=SIZE/);
    assert.throws(() => parseArgs(["set", "db", "data=2Gi", "-A"]), /-A selects in every namespace and needs -l SELECTOR/);
  });
  test("history and undo", () => {
    assert.deepEqual(parseArgs(["history", "db", "-o", "yaml"]), { kind: "history", flags: { requestTimeout: "30s" }, name: "db", output: "yaml" });
    assert.deepEqual(parseArgs(["undo", "db", "--to-revision", "2", "--yes"]), { kind: "undo", flags: { requestTimeout: "30s" }, name: "db", toRevision: 2, dryRun: "none", yes: true, force: false, timeoutMs: 300_000 });
    assert.equal((parseArgs(["undo", "db", "--dry-run"]) as { dryRun: string }).dryRun, "client");
    assert.throws(() => parseArgs(["undo", "db", "--to-revision", "0"]), /invalid --to-revision "0"/);
  });
  test("--dry-run=VALUE carries no warning", () => {
    const p = parseArgs(["set", "db", "pgdata=2Gi", "--dry-run=server"]);
    assert.equal(p.kind === "set" && p.dryRun, "server");
    assert.equal(p.notices, undefined);
  });
  test("diff", () => assert.deepEqual(parseArgs(["diff", "db", "pgdata=2Gi"]), { kind: "diff", flags: { requestTimeout: "30s" }, name: "db", allNamespaces: false, directives: ["pgdata=2Gi"] }));
  test("show -A -o wide", () => assert.deepEqual(parseArgs(["show", "-A", "-o", "wide"]), { kind: "show", flags: { requestTimeout: "30s" }, allNamespaces: true, output: "wide" }));
  test("help is text that names the three commands and the connection flags", () => {
    const p = parseArgs(["--help"]);
    assert.equal(p.kind, "text");
    if (p.kind !== "text") return;
    for (const word of ["kubectl appstorage show", "kubectl appstorage diff", "kubectl appstorage set", "--kubeconfig", "--context", "--namespace"]) assert.ok(p.text.includes(word), word);
  });

  const refused: [string[], RegExp][] = [
    [[], /no command given/],
    [["frobnicate"], /Unknown argument|unknown command/],
    [["set", "db"], /set needs a StatefulSet name and at least one CLAIM=SIZE/],
    [["set"], /set needs a StatefulSet name/],
    [["set", "db", "pgdata=2Gi", "--dry-run=maybe"], /Invalid dry-run value \(maybe\)\. Must be "none", "server", or "client"\.$/],
    [["set", "db", "pgdata=2Gi", "--dry-run="], /Invalid dry-run value \(\)\. Must be "none", "server", or "client"\.$/],
    [["set", "db", "pgdata=2Gi", "--bogus"], /Unknown argument/],
    [["set", "db", "pgdata=2Gi", "-o", "xml"], /invalid --output "xml"/],
    [["set", "db", "pgdata=2Gi", "--timeout", "soon"], /invalid --timeout "soon"/],
    [["set", "db", "pgdata=2Gi", "--request-timeout", "x"], /invalid --request-timeout/],
    [["diff", "db", "pgdata=2Gi", "-o", "wide"], /invalid --output "wide"/],
    [["show", "-o", "xml"], /invalid --output/],
  ];
  for (const [args, why] of refused) test(`refuses ${JSON.stringify(args)}`, () => assert.throws(() => parseArgs(args), why));
});
