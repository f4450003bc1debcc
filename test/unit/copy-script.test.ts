// The copy pods' script (src/plan/copy-script.ts), run here with busybox's sh and applets (the
// default copy image's userland) on two local directories: the first copy, then what changes
// while the "pod" still writes (contents of the same size in the same second, new, removed,
// renamed, chmod, chown, symlinks retargeted, a directory that became a file), the final copy,
// and the verification. Pure file work: no cluster is involved. Needs busybox (Debian's
// busybox-static, which .ci/run installs) and root (chown).
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { copyScript } from "../../src/plan/copy-script";

const busybox = ["/usr/bin/busybox", "/bin/busybox"].find((p) => existsSync(p));

/** A PATH of busybox's applets only, so the script meets the same tools as in the copy image. */
function appletPath(): string {
  assert.ok(busybox, "busybox is missing: apt-get install busybox-static (.ci/run does)");
  const dir = mkdtempSync(join(tmpdir(), "appstorage-bb-"));
  execFileSync(busybox!, ["--install", "-s", dir]);
  return dir;
}

interface Run {
  code: number;
  report: Record<string, unknown>;
  stderr: string;
}

function run(env: Record<string, string>, dirs: { src: string; dst: string; work: string }): Run {
  const out = join(dirs.work, "termination-log");
  rmSync(out, { force: true });
  const r = spawnSync(join(bin, "sh"), ["-c", copyScript], {
    env: { PATH: bin, SRC: dirs.src, DST: dirs.dst, OUT: out, TMPDIR: dirs.work, ...env },
    encoding: "utf8",
  });
  return { code: r.status ?? -1, report: existsSync(out) ? JSON.parse(readFileSync(out, "utf8")) : {}, stderr: r.stderr };
}

const bin = appletPath();
const root = process.getuid?.() === 0;

function fresh(): { src: string; dst: string; work: string } {
  const base = mkdtempSync(join(tmpdir(), "appstorage-copy-"));
  const dirs = { src: join(base, "src"), dst: join(base, "dst"), work: join(base, "work") };
  for (const d of Object.values(dirs)) mkdirSync(d);
  return dirs;
}

function populate(src: string): void {
  mkdirSync(join(src, "base/sub"), { recursive: true });
  mkdirSync(join(src, "lost+found"));
  writeFileSync(join(src, "lost+found/#123"), "the file system's own");
  writeFileSync(join(src, "base/a.dat"), "a".repeat(10_000));
  writeFileSync(join(src, "base/sub/b.dat"), "b".repeat(5000));
  writeFileSync(join(src, "same-size.txt"), "0123456789");
  writeFileSync(join(src, "empty"), "");
  writeFileSync(join(src, "gone.txt"), "to be removed");
  mkdirSync(join(src, "dir-to-file"));
  writeFileSync(join(src, "dir-to-file/x"), "x");
  mkdirSync(join(src, "rename-me"));
  writeFileSync(join(src, "rename-me/kept.txt"), "kept through a rename");
  symlinkSync("base/a.dat", join(src, "link"));
  chmodSync(join(src, "base/a.dat"), 0o640);
  if (root) chownSync(join(src, "base/sub/b.dat"), 1234, 5678);
  utimesSync(join(src, "base/sub"), new Date("2020-01-02T03:04:05Z"), new Date("2020-01-02T03:04:05Z"));
}

describe("copy script", () => {
  test("root is needed to keep owners", () => assert.ok(root, "run the unit tests as root (the copy pods run as root to keep every file's owner)"));

  test("copy, then changes while the pod still runs, then the final copy: both sides verify equal", () => {
    const dirs = fresh();
    populate(dirs.src);
    // Two seconds, so that what populate wrote is from before the first copy began (change times are compared to the second).
    execFileSync("sleep", ["2"]);
    writeFileSync(join(dirs.dst, "left-by-an-interrupted-copy"), "stale");
    const first = run({ MODE: "copy" }, dirs);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(typeof first.report["since"], "number");
    assert.ok(Number(first.report["bytes"]) > 0);
    assert.ok(!existsSync(join(dirs.dst, "left-by-an-interrupted-copy")), "the first copy starts from an empty volume");

    // What the pod writes after the first copy began (some in the very same second).
    writeFileSync(join(dirs.src, "same-size.txt"), "9876543210");
    writeFileSync(join(dirs.src, "new.txt"), "written during the copy");
    unlinkSync(join(dirs.src, "gone.txt"));
    renameSync(join(dirs.src, "rename-me"), join(dirs.src, "renamed"));
    chmodSync(join(dirs.src, "base/sub/b.dat"), 0o600);
    if (root) chownSync(join(dirs.src, "empty"), 42, 43);
    unlinkSync(join(dirs.src, "link"));
    symlinkSync("base/sub/b.dat", join(dirs.src, "link"));
    rmSync(join(dirs.src, "dir-to-file"), { recursive: true });
    writeFileSync(join(dirs.src, "dir-to-file"), "now a file");

    const sync = run({ MODE: "sync", SINCE: String(first.report["since"]) }, dirs);
    assert.equal(sync.code, 0, `${sync.stderr} ${JSON.stringify(sync.report)}`);
    assert.equal(sync.report["src"], sync.report["dst"]);
    assert.match(String(sync.report["src"]), /^[0-9a-f]{64}$/);
    // Regular files, lost+found left out: a.dat, b.dat, same-size, empty, new, dir-to-file, renamed/kept.
    assert.equal(sync.report["files"], 7);
    assert.equal(sync.report["bytes"], 10_000 + 5000 + 10 + 0 + 23 + 10 + 21);
    assert.equal(readFileSync(join(dirs.dst, "same-size.txt"), "utf8"), "9876543210");
    // While the pod was down only what changed was read again: an unchanged file's hashes came from the first copy.
    const reread = (side: string) =>
      readFileSync(join(dirs.work, `${side}.fresh`), "utf8")
        .trim()
        .split("\n")
        .sort();
    assert.deepEqual(reread("src"), ["./dir-to-file", "./empty", "./new.txt", "./renamed/kept.txt", "./same-size.txt", "./base/sub/b.dat"].sort());
    assert.deepEqual(reread("dst"), ["./dir-to-file", "./empty", "./new.txt", "./renamed/kept.txt", "./same-size.txt", "./base/sub/b.dat"].sort());
    assert.ok(!existsSync(join(dirs.dst, ".kubectl-appstorage-verify")), "the hashes' folder is gone from the new volume");
    assert.equal(readFileSync(join(dirs.dst, "renamed/kept.txt"), "utf8"), "kept through a rename");
    assert.ok(!existsSync(join(dirs.dst, "gone.txt")) && !existsSync(join(dirs.dst, "rename-me")));
  });

  test("a difference the final copy does not repair fails the verification, naming it", () => {
    const dirs = fresh();
    populate(dirs.src);
    const first = run({ MODE: "copy" }, dirs);
    assert.equal(first.code, 0, first.stderr);
    // The new volume corrupted behind the copy's back; the source did not change, so nothing is copied again.
    writeFileSync(join(dirs.dst, "base/a.dat"), "b".repeat(10_000));
    const sync = run({ MODE: "sync", SINCE: String(Number(first.report["since"]) + 3600) }, dirs);
    assert.equal(sync.code, 2);
    assert.notEqual(sync.report["src"], sync.report["dst"]);
    assert.match(String(sync.report["diff"]), /a\.dat/);
  });

  test("data that does not fit is refused before copying", (t) => {
    const dirs = fresh();
    // A real small file system as the new volume: a 64 KiB tmpfs (root may mount it).
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "appstorage-test", dirs.dst]);
    t.after(() => execFileSync("umount", [dirs.dst]));
    writeFileSync(join(dirs.src, "big"), "x".repeat(200_000));
    const r = run({ MODE: "copy" }, dirs);
    assert.equal(r.code, 1, r.stderr);
    assert.match(String(r.report["error"]), /^the data takes \d+ bytes and the new volume has \d+ bytes free: choose a larger size$/);
    assert.ok(!existsSync(join(dirs.dst, "big")));
  });

  test("sync without the first copy's time refuses", () => {
    const dirs = fresh();
    const r = run({ MODE: "sync" }, dirs);
    assert.equal(r.code, 1);
    assert.match(String(r.report["error"]), /SINCE is not set/);
  });
});
