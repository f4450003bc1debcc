// The copy pods' script (src/plan/copy-script.ts), run here with busybox's sh and applets (the
// default copy image's userland) on two local directories: the first copy, then what changes
// while the "pod" still writes (contents of the same size in the same second, new, removed,
// renamed, chmod, chown, symlinks retargeted, a directory that became a file), the final copy,
// and the verification. Pure file work: no cluster is involved. Needs busybox (Debian's
// busybox-static, which .ci/run installs) and root (chown).
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from "node:fs";
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

  // Large files with BIG_MIB=2 and BLOCK_MIB=1: a 5.5 MiB file is 6 blocks, the last one partial.
  const large = { BIG_MIB: "2", BLOCK_MIB: "1" };
  const mib = 1048576;
  const block = (fill: number, n = mib) => Buffer.alloc(n, fill);
  function largeFile(path: string): void {
    writeFileSync(path, Buffer.concat([block(1), block(2), block(3), block(4), block(5), block(6, mib / 2)]));
  }
  function rewrite(path: string, offset: number, data: Buffer): void {
    const fd = openSync(path, "r+");
    writeSync(fd, data, 0, data.length, offset);
    closeSync(fd);
  }
  const deltaLog = (dirs: { work: string }) => readFileSync(join(dirs.work, "delta.log"), "utf8").trim();
  /** A 5.5 MiB "segment" copied once (two seconds after it was written: change times are compared to the second). */
  function firstLargeCopy(): { dirs: ReturnType<typeof fresh>; since: number } {
    const dirs = fresh();
    largeFile(join(dirs.src, "segment"));
    execFileSync("sleep", ["2"]);
    const first = run({ MODE: "copy", ...large }, dirs);
    assert.equal(first.code, 0, first.stderr);
    return { dirs, since: Number(first.report["since"]) };
  }
  const syncLarge = (dirs: ReturnType<typeof fresh>, since: number) => run({ MODE: "sync", SINCE: String(since), ...large }, dirs);

  test("a large file that changed is brought up to date block by block: only the blocks that differ are written and read again", () => {
    const dirs = fresh();
    mkdirSync(join(dirs.src, "db"));
    largeFile(join(dirs.src, "db/segment"));
    writeFileSync(join(dirs.src, "small"), "small");
    chmodSync(join(dirs.src, "db/segment"), 0o600);
    execFileSync("sleep", ["2"]);
    const first = run({ MODE: "copy", ...large }, dirs);
    assert.equal(first.code, 0, first.stderr);
    // The new volume's blocks were kept by the first copy: 6 of them, path last.
    // (The folder is on the new volume until the final copy removes it.)
    const kept = readFileSync(join(dirs.dst, ".kubectl-appstorage-verify/dst.blocks"), "utf8").trim().split("\n");
    assert.equal(kept.length, 6);
    assert.ok(
      kept.every((l) => /^\d\|[0-9a-f]{64}\|\.\/db\/segment$/.test(l)),
      kept.join("\n"),
    );
    // While the pod runs: a write inside block 2, and the file grows past its last block into a seventh.
    rewrite(join(dirs.src, "db/segment"), 2 * mib + 100, Buffer.from("changed"));
    rewrite(join(dirs.src, "db/segment"), 5 * mib + mib / 2, block(7, mib));
    const sync = run({ MODE: "sync", SINCE: String(first.report["since"]), ...large }, dirs);
    assert.equal(sync.code, 0, `${sync.stderr} ${JSON.stringify(sync.report)}`);
    assert.equal(sync.report["src"], sync.report["dst"]);
    assert.deepEqual(readFileSync(join(dirs.dst, "db/segment")), readFileSync(join(dirs.src, "db/segment")));
    // Blocks 2, 5 (the old partial one, now whole) and 6 (new) were written; nothing else.
    assert.equal(deltaLog(dirs), "./db/segment|3");
    assert.equal(sync.report["blockFiles"], 1);
    assert.equal(sync.report["blocks"], 3);
    // Its hashes came from the block pass, not from reading it again: it is in neither side's list of files read again.
    for (const side of ["src", "dst"]) assert.ok(!readFileSync(join(dirs.work, `${side}.fresh`), "utf8").includes("segment"), side);
  });

  test("a large file changed on the new volume behind the copy's back is copied whole, and still verified", () => {
    const { dirs, since } = firstLargeCopy();
    // The new volume's copy changed (its change time with it): its kept block hashes no longer say what it holds.
    rewrite(join(dirs.dst, "segment"), 0, block(9, 10));
    rewrite(join(dirs.src, "segment"), 3 * mib, Buffer.from("changed"));
    const sync = syncLarge(dirs, since);
    assert.equal(sync.code, 0, `${sync.stderr} ${JSON.stringify(sync.report)}`);
    assert.equal(sync.report["src"], sync.report["dst"]);
    assert.equal(deltaLog(dirs), "");
    assert.deepEqual(readFileSync(join(dirs.dst, "segment")), readFileSync(join(dirs.src, "segment")));
  });

  test("a large file that became shorter is copied whole", () => {
    const { dirs, since } = firstLargeCopy();
    writeFileSync(join(dirs.src, "segment"), Buffer.concat([block(1), block(2), block(3)]));
    const sync = syncLarge(dirs, since);
    assert.equal(sync.code, 0, `${sync.stderr} ${JSON.stringify(sync.report)}`);
    assert.equal(sync.report["src"], sync.report["dst"]);
    assert.equal(deltaLog(dirs), "");
    assert.equal(statSync(join(dirs.dst, "segment")).size, 3 * mib);
  });

  test("a large file whose new-volume copy differs where the source did not change fails the verification, naming it", () => {
    const { dirs, since } = firstLargeCopy();
    // Corrupted behind the copy's back (its change time moves with it, so its kept hashes are not used).
    rewrite(join(dirs.dst, "segment"), mib + 5, Buffer.from("corrupt"));
    const sync = syncLarge(dirs, since + 3600);
    assert.equal(sync.code, 2, sync.stderr);
    assert.notEqual(sync.report["src"], sync.report["dst"]);
    assert.match(String(sync.report["diff"]), /segment/);
  });

  test("sync with WAIT reads nothing until SIGTERM (the pod deleted: its go), then copies and verifies", async () => {
    const dirs = fresh();
    writeFileSync(join(dirs.src, "a"), "a");
    const first = run({ MODE: "copy" }, dirs);
    assert.equal(first.code, 0, first.stderr);
    writeFileSync(join(dirs.src, "b"), "b");
    const out = join(dirs.work, "termination-log");
    rmSync(out, { force: true });
    const child = spawn(join(bin, "sh"), ["-c", copyScript], {
      env: { PATH: bin, SRC: dirs.src, DST: dirs.dst, OUT: out, TMPDIR: dirs.work, MODE: "sync", SINCE: String(first.report["since"]), WAIT: "sigterm" },
    });
    const ended = new Promise<number>((resolve) => child.on("close", (code) => resolve(code ?? -1)));
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(child.exitCode, null, "the sync ended before it was told to go");
    assert.ok(!existsSync(out));
    assert.ok(!existsSync(join(dirs.dst, "b")), "nothing copied before the go");
    child.kill("SIGTERM");
    assert.equal(await ended, 0);
    const report = JSON.parse(readFileSync(out, "utf8"));
    assert.equal(report.src, report.dst);
    assert.equal(readFileSync(join(dirs.dst, "b"), "utf8"), "b");
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
