// The completion scripts run in their shells against a stand-in plugin that logs the words it is
// asked about and answers what the test says (cobra's __complete protocol). fish's case runs where
// fish is installed and says it skipped elsewhere; PowerShell is not on this machine: its script is
// checked for what it must do.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { completionScript } from "../../src/cli/completion";

const dir = mkdtempSync(join(tmpdir(), "completion-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const bin = join(dir, "bin");
mkdirSync(bin);
const log = join(dir, "asked");
const answerFile = join(dir, "answer");
// The stand-in: each word it is given on a line of its own (an empty word shows as an empty line), then the answer.
writeFileSync(join(bin, "kubectl-appstorage"), `#!/bin/sh\nprintf '%s\\n' "$@" > '${log}'\ncat '${answerFile}'\n`);
chmodSync(join(bin, "kubectl-appstorage"), 0o755);
writeFileSync(join(dir, "xfile"), "");

const has = (shell: string) => spawnSync("sh", ["-c", `command -v ${shell}`]).status === 0;

/** Runs `script` in the shell with the stand-in first on PATH, in dir; returns stdout and what the plugin was asked. */
function run(shell: string, args: string[], answer: string): { out: string; asked: string[] } {
  writeFileSync(answerFile, answer);
  writeFileSync(log, "");
  const r = spawnSync(shell, args, { cwd: dir, encoding: "utf8", env: { PATH: `${bin}:/usr/bin:/bin`, HOME: dir } });
  assert.equal(r.status, 0, r.stderr);
  return { out: r.stdout, asked: readFileSync(log, "utf8").split("\n").slice(0, -1) };
}

describe("bash", () => {
  writeFileSync(join(dir, "completion.bash"), completionScript("bash"));
  const complete = (line: string, answer: string) =>
    run("bash", ["-c", `source completion.bash; COMP_LINE='${line}'; COMP_POINT=${line.length}; _kubectl_appstorage; printf '%s\\n' "\${COMPREPLY[@]}"`], answer);
  test("asks with the words typed and the one under the cursor, and offers what matches it", () => {
    const r = complete("kubectl-appstorage s", "show\nset\nsecret\n:4\n");
    assert.deepEqual(r.asked, ["__completeNoDesc", "s"]);
    assert.deepEqual(r.out.split("\n").filter(Boolean), ["show", "set", "secret"]);
  });
  test("a new word is an empty word", () => {
    assert.deepEqual(complete("kubectl-appstorage -n prod ", ":4\n").asked, ["__completeNoDesc", "-n", "prod", ""]);
  });
  test("a storage class after CLAIM=SIZE, replaces only what follows the =", () => {
    assert.deepEqual(complete("kubectl-appstorage set db data=2Gi,f", "data=2Gi,fast\ndata=2Gi,standard\n:4\n").out.split("\n").filter(Boolean), ["2Gi,fast"]);
  });
});

describe("fish", { skip: !has("fish") && "fish is not installed" }, () => {
  writeFileSync(join(dir, "completion.fish"), completionScript("fish"));
  const complete = (line: string, answer: string) => run("fish", ["-c", `source completion.fish; complete -C '${line}'`], answer);
  test("asks with the words typed and the one under the cursor; candidates keep their descriptions", () => {
    const r = complete("kubectl-appstorage s", "show\tShow claim templates\nset\tChange claim templates\n:4\n");
    assert.deepEqual(r.asked, ["__complete", "s"]);
    assert.deepEqual(r.out.split("\n").filter(Boolean).sort(), ["set\tChange claim templates", "show\tShow claim templates"]);
  });
  test("a new word is an empty word", () => {
    assert.deepEqual(complete("kubectl-appstorage set -n prod ", ":4\n").asked, ["__complete", "set", "-n", "prod", ""]);
  });
  test("no candidates: file names unless the plugin rules them out (:4), and none after an error (:1)", () => {
    assert.match(complete("kubectl-appstorage show --kubeconfig x", ":0\n").out, /^xfile$/m);
    assert.equal(complete("kubectl-appstorage show x", ":4\n").out, "");
    assert.match(complete("kubectl-appstorage show x", ":1\n").out, /^xfile$/m);
  });
  test("a value after --flag= is offered whole", () => {
    assert.deepEqual(complete("kubectl-appstorage show --output=j", "--output=json\n--output=jsonpath=\n:6\n").out.split("\n").filter(Boolean), ["--output=json", "--output=jsonpath="]);
  });
});

describe("powershell", () => {
  const script = completionScript("powershell");
  test("registers for kubectl-appstorage (and .exe) and asks the plugin's __complete with the words before the cursor", () => {
    assert.match(script, /Register-ArgumentCompleter -Native -CommandName 'kubectl-appstorage', 'kubectl-appstorage\.exe'/);
    assert.match(script, /& \$commandAst\.GetCommandName\(\) __complete @words/);
    assert.match(script, /StartOffset -lt \$cursorPosition/);
  });
  test("passes a new, empty word in a form every PowerShell hands to a program", () => assert.match(script, /\$words \+= '""'/));
  test("reads the directive: nothing after an error, no file names where ruled out, syntax characters escaped", () => {
    assert.match(script, /if \(\$directive -band 1\) \{ return \}/);
    assert.match(script, /if \(\$directive -band 4\) \{ '' \}/);
    assert.match(script, /-replace '\[\\s#@\$;,''\{\}\(\)"`\|<>&\]', '`\$0'/);
  });
});
