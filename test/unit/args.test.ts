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
  test("diff", () => assert.deepEqual(parseArgs(["diff", "db", "pgdata=2Gi"]), { kind: "diff", flags: { requestTimeout: "30s" }, name: "db", directives: ["pgdata=2Gi"] }));
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
    [["set", "db", "pgdata=2Gi", "--dry-run=maybe"], /invalid --dry-run "maybe"/],
    [["set", "db", "pgdata=2Gi", "--bogus"], /Unknown argument/],
    [["set", "db", "pgdata=2Gi", "-o", "xml"], /invalid --output "xml"/],
    [["set", "db", "pgdata=2Gi", "--timeout", "soon"], /invalid --timeout "soon"/],
    [["set", "db", "pgdata=2Gi", "--request-timeout", "x"], /invalid --request-timeout/],
    [["diff", "db", "pgdata=2Gi", "-o", "wide"], /invalid --output "wide"/],
    [["show", "-o", "xml"], /invalid --output/],
  ];
  for (const [args, why] of refused) test(`refuses ${JSON.stringify(args)}`, () => assert.throws(() => parseArgs(args), why));
});
