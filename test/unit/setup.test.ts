// scripts/setup's checks, which `npm run demo` and `npm test` run before anything is built: on a
// machine that lacks a prerequisite they must fail in seconds with one line that says what to do,
// not after a quarter of an hour of builds. Each case runs the real script (--check: nothing is
// installed or built) with a PATH that lacks one program: a folder of links to every program on
// this PATH but that one.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { accessSync, chmodSync, constants, copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { after, describe, test } from "node:test";

const root = resolve(__dirname, "..", "..");
const made: string[] = [];
after(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A PATH of one folder holding every program of this process's PATH (the first of each name) but `without`. */
function pathWithout(...without: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), "setup-path-"));
  made.push(dir);
  const seen = new Set(without);
  for (const folder of (process.env["PATH"] ?? "").split(delimiter).filter(Boolean)) {
    let names: string[];
    try {
      names = readdirSync(folder);
    } catch {
      continue;
    }
    for (const name of names) {
      if (seen.has(name)) continue;
      try {
        accessSync(join(folder, name), constants.X_OK);
      } catch {
        continue;
      }
      seen.add(name);
      symlinkSync(join(folder, name), join(dir, name));
    }
  }
  return dir;
}

function check(part: string, path?: string): { code: number; stderr: string; ms: number } {
  const started = performance.now();
  const env = { ...process.env, ...(path ? { PATH: path } : {}) };
  const r = spawnSync("bash", [join(root, "scripts", "setup"), "--check", part], { encoding: "utf8", env, stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
  return { code: r.status ?? -1, stderr: r.stderr, ms: performance.now() - started };
}

describe("scripts/setup --check", () => {
  test("passes on this machine, which has everything (npm test runs setup base first)", () => {
    for (const part of ["demo", "base", "node", "windows", "all"]) {
      const r = check(part);
      assert.deepEqual({ code: r.code, stderr: r.stderr }, { code: 0, stderr: `setup: ${part}: every prerequisite is there\n` });
    }
  });

  // What a machine may lack, and the one line that says so.
  const cases: { part: string; lacks: string[]; line: string }[] = [
    { part: "demo", lacks: ["go"], line: "setup: Go is missing: install Go 1.26.0 or newer (https://go.dev/dl/); it builds the control plane, the node and the test tools" },
    { part: "demo", lacks: ["kubectl"], line: "setup: kubectl is missing: install it (https://kubernetes.io/docs/tasks/tools/); the demo and the tests run it, and the plugin is found through it" },
    { part: "demo", lacks: ["openssl"], line: "setup: missing Debian packages; install them as root: apt-get install openssl" },
    { part: "demo", lacks: ["containerd", "runc"], line: "setup: missing Debian packages; install them as root: apt-get install containerd runc" },
    { part: "demo", lacks: ["mkfs.xfs", "gcc"], line: "setup: missing Debian packages; install them as root: apt-get install gcc xfsprogs" },
    { part: "base", lacks: ["qemu-aarch64", "debootstrap", "shellcheck"], line: "setup: missing Debian packages; install them as root: apt-get install shellcheck qemu-user debootstrap" },
  ];
  for (const c of cases) {
    test(`${c.part}, on a PATH without ${c.lacks.join(" and ")}: one line, in seconds`, () => {
      const r = check(c.part, pathWithout(...c.lacks));
      assert.deepEqual({ code: r.code, stderr: r.stderr }, { code: 1, stderr: `${c.line}\n` });
      assert.ok(r.ms < 5000, `the check took ${Math.round(r.ms)} ms`);
    });
  }

  test("not as root, and not --check: one line that says to run it as root and names the packages root would install", () => {
    // What it reads before it stops, in a folder any user may read; run as nobody when this is root.
    const copy = mkdtempSync(join(tmpdir(), "setup-copy-"));
    made.push(copy);
    chmodSync(copy, 0o755);
    mkdirSync(join(copy, "scripts"), { recursive: true });
    mkdirSync(join(copy, "lab", "controlplane", "versions"), { recursive: true });
    for (const f of [join("scripts", "setup"), join("lab", "controlplane", "build.sh")]) copyFileSync(join(root, f), join(copy, f));
    for (const f of readdirSync(join(root, "lab", "controlplane", "versions")).filter((f) => f.endsWith(".mod"))) {
      copyFileSync(join(root, "lab", "controlplane", "versions", f), join(copy, "lab", "controlplane", "versions", f));
    }
    const path = pathWithout("openssl");
    chmodSync(path, 0o755);
    const user = process.getuid?.() === 0 ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash"] : ["bash"];
    const started = performance.now();
    const r = spawnSync(user[0]!, [...user.slice(1), join(copy, "scripts", "setup"), "demo"], { encoding: "utf8", env: { ...process.env, PATH: path, HOME: copy }, timeout: 60_000 });
    assert.deepEqual(
      { code: r.status, stdout: r.stdout, stderr: r.stderr },
      {
        code: 1,
        stdout: "",
        stderr:
          "setup: demo needs root for the node (kubelet, containerd, the CSI driver's loop devices and mounts): run it as root; it installs the missing Debian packages then (apt-get install openssl)\n",
      },
    );
    assert.ok(performance.now() - started < 5000);
  });

  test("a part it does not know is a usage error", () => {
    const r = check("everything");
    assert.deepEqual({ code: r.code, stderr: r.stderr }, { code: 2, stderr: 'setup: unknown part "everything": give all, base, oldest, node, windows or demo\n' });
  });
});
