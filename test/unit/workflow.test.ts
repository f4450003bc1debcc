// The release workflow (.github/workflows/release.yml) cannot run here (no GitHub Actions), so
// npm test checks it statically with actionlint (lab/tools/actionlint/build.sh builds the pinned
// release from the Go module proxy, once, into the cache): the syntax, the expressions and their
// contexts, job needs, the inputs of the actions it knows, and, through shellcheck, every run:
// script. actionlint runs shellcheck only when it finds it on PATH and silently skips those checks
// otherwise, so this test requires it (Debian package shellcheck; npm run setup installs it) and
// proves it is in use on a script with a finding of its own.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

const root = join(__dirname, "..", "..");
const workflow = join(root, ".github", "workflows", "release.yml");
// The first build takes about a minute; later runs find it in the cache.
const bin =
  execFileSync("bash", [join(root, "lab", "tools", "actionlint", "build.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], timeout: 600_000 })
    .trim()
    .split("\n")
    .pop() ?? "";
const actionlint = (file: string) => spawnSync(join(bin, "actionlint"), ["-no-color", file], { cwd: root, encoding: "utf8" });
const tmp = mkdtempSync(join(tmpdir(), "appstorage-workflow-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

test("shellcheck is on PATH, so actionlint checks the run: scripts too", () => {
  const r = spawnSync("shellcheck", ["--version"], { encoding: "utf8" });
  assert.equal(r.status, 0, "shellcheck is missing: apt-get install shellcheck (npm run setup does); without it actionlint skips every run: script");
});

test("actionlint finds nothing in the release workflow", () => {
  const r = actionlint(workflow);
  assert.equal(`${r.stdout}${r.stderr}`, "");
  assert.equal(r.status, 0);
});

test("actionlint fails a broken copy of the workflow (a job that needs a job that does not exist)", () => {
  const text = readFileSync(workflow, "utf8");
  assert.match(text, /^ {4}needs: test$/m);
  const broken = join(tmp, "release.yml");
  writeFileSync(broken, text.replace(/^ {4}needs: test$/m, "    needs: tests"));
  const r = actionlint(broken);
  assert.notEqual(r.status, 0);
  assert.match(r.stdout, /needs job "tests" which does not exist/);
});

test("actionlint reports shellcheck's findings in a copy with an unquoted expansion in a run: script", () => {
  const text = readFileSync(workflow, "utf8");
  const line = 'run: gh release create "$GITHUB_REF_NAME" dist/release/*';
  assert.ok(text.includes(line));
  const broken = join(tmp, "release-sc.yml");
  writeFileSync(broken, text.replace(line, "run: gh release create $GITHUB_REF_NAME dist/release/*"));
  const r = actionlint(broken);
  assert.notEqual(r.status, 0);
  assert.match(r.stdout, /SC2086/);
});
