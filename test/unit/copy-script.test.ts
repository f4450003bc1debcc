// The copy pods' script (src/plan/copy-script.ts), run here with busybox's sh and applets (the
// default copy image's userland) and the machine's rsync (and getfattr, as the test node's copy
// image has them) on two local directories: the first copy, then what changes while the "pod"
// still writes (contents of the same size in the same second, new, removed, renamed, chmod, chown,
// symlinks retargeted, a directory that became a file), the final copy, and the verification; a
// tree of every kind of entry (hard links, a sparse file, xattrs, ACLs, setuid and sticky bits,
// nanosecond times, a dangling symlink, a fifo, a device node, names with a newline and a
// backslash, the root's own mode and owner) compared from outside. Pure file work: no cluster is
// involved. Needs busybox (Debian's busybox-static), rsync, acl and attr (scripts/setup installs
// them) and root (chown, mknod, mount).
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
import { describe, type TestContext, test } from "node:test";
import { copyScript } from "../../src/plan/copy-script";
import { assertSameTree, hostTree, makeExactTree, treeNames } from "../shared/tree";

const busybox = ["/usr/bin/busybox", "/bin/busybox"].find((p) => existsSync(p));

/** A PATH of busybox's applets, rsync and (unless `xattrs` is false) getfattr, so the script meets the same tools as in the copy image. */
function appletPath(xattrs = true): string {
  assert.ok(busybox, "busybox is missing: apt-get install busybox-static (scripts/setup does)");
  const dir = mkdtempSync(join(tmpdir(), "appstorage-bb-"));
  execFileSync(busybox!, ["--install", "-s", dir]);
  for (const tool of ["rsync", ...(xattrs ? ["getfattr"] : [])]) {
    const found = ["/usr/bin", "/bin"].map((d) => join(d, tool)).find((p) => existsSync(p));
    assert.ok(found, `${tool} is missing: apt-get install rsync attr (scripts/setup does)`);
    symlinkSync(found!, join(dir, tool));
  }
  return dir;
}

interface Run {
  code: number;
  report: Record<string, unknown>;
  stderr: string;
}

function run(env: Record<string, string>, dirs: { src: string; dst: string; work: string }, path = bin): Run {
  const out = join(dirs.work, "termination-log");
  rmSync(out, { force: true });
  const r = spawnSync(join(path, "sh"), ["-c", copyScript], {
    env: { PATH: path, SRC: dirs.src, DST: dirs.dst, OUT: out, TMPDIR: dirs.work, ...env },
    encoding: "utf8",
  });
  return { code: r.status ?? -1, report: existsSync(out) ? JSON.parse(readFileSync(out, "utf8")) : {}, stderr: r.stderr };
}

const bin = appletPath();
const root = process.getuid?.() === 0;

/** A 32 MiB ext4 file system (its image in WORK) mounted at DIR until the test ends: a volume with its own lost+found. */
function ext4At(t: TestContext, work: string, dir: string): void {
  const image = join(work, "ext4.img");
  execFileSync("truncate", ["-s", "32M", image]);
  execFileSync("mkfs.ext4", ["-q", "-F", image]);
  execFileSync("mount", ["-o", "loop", image, dir]);
  t.after(() => execFileSync("umount", [dir]));
}

function fresh(): { src: string; dst: string; work: string } {
  const base = mkdtempSync(join(tmpdir(), "appstorage-copy-"));
  const dirs = { src: join(base, "src"), dst: join(base, "dst"), work: join(base, "work") };
  for (const d of Object.values(dirs)) mkdirSync(d);
  return dirs;
}

/** Gives `to` the modification time of `from`, to the nanosecond (coreutils' touch). */
const sameTime = (from: string, to: string) => execFileSync("touch", ["-h", "-r", from, to]);

function populate(src: string): void {
  mkdirSync(join(src, "base/sub"), { recursive: true });
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
    // Regular files: a.dat, b.dat, same-size, empty, new, dir-to-file, renamed/kept.
    assert.equal(sync.report["files"], 7);
    assert.equal(sync.report["bytes"], 10_000 + 5000 + 10 + 0 + 23 + 10 + 21);
    assert.equal(readFileSync(join(dirs.dst, "same-size.txt"), "utf8"), "9876543210");
    // While the pod was down only what changed was read again: an unchanged file's hashes came from the first copy.
    const reread = (side: string) =>
      readFileSync(join(dirs.work, `${side}.fresh`), "utf8")
        .trim()
        .split("\n")
        .map((l) => l.slice(l.indexOf("|") + 1))
        .sort();
    assert.deepEqual(reread("src"), ["./dir-to-file", "./empty", "./new.txt", "./renamed/kept.txt", "./same-size.txt", "./base/sub/b.dat"].sort());
    assert.deepEqual(reread("dst"), ["./dir-to-file", "./empty", "./new.txt", "./renamed/kept.txt", "./same-size.txt", "./base/sub/b.dat"].sort());
    assert.ok(!existsSync(join(dirs.dst, ".kubectl-appstorage-verify")), "the hashes' folder is gone from the new volume");
    assert.equal(readFileSync(join(dirs.dst, "renamed/kept.txt"), "utf8"), "kept through a rename");
    assert.ok(!existsSync(join(dirs.dst, "gone.txt")) && !existsSync(join(dirs.dst, "rename-me")));
  });

  test("every kind of entry kept exactly, through changes after the first copy, and verified: the test's own stat, sha256 and getfattr of both sides agree", () => {
    const dirs = fresh();
    makeExactTree(dirs.src);
    execFileSync("sleep", ["2"]);
    const first = run({ MODE: "copy" }, dirs);
    assert.equal(first.code, 0, first.stderr);
    // The first copy's own folder of hashes is on the new volume until the final copy: the tree below it only.
    const below = (m: ReturnType<typeof hostTree>) => new Map([...m].filter(([p]) => p.startsWith("tree")));
    assertSameTree(below(hostTree(dirs.dst)), below(hostTree(dirs.src)), "after the first copy");
    // While the "pod" still runs: a new hard link, an xattr and an ACL changed (the file's time kept),
    // a name with a newline renamed, a fifo gone, a new sparse file, the root's mode.
    const t = join(dirs.src, "tree");
    execFileSync("ln", [join(t, "links/a"), join(t, "links/d")]);
    execFileSync("setfattr", ["-n", "user.color", "-v", "green", join(t, "xattrs")]);
    execFileSync("setfacl", ["-m", "u:777:r--", join(t, "acl/file")]);
    renameSync(join(t, treeNames.newline), join(t, "renamed\nagain"));
    unlinkSync(join(t, "fifo"));
    execFileSync("truncate", ["-s", "10M", join(t, "sparse-2")]);
    chmodSync(dirs.src, 0o750);
    const sync = run({ MODE: "sync", SINCE: String(first.report["since"]) }, dirs);
    assert.equal(sync.code, 0, `${sync.stderr} ${JSON.stringify(sync.report)}`);
    assert.equal(sync.report["src"], sync.report["dst"]);
    assert.equal(sync.report["xattrs"], "getfattr");
    const after = hostTree(dirs.dst);
    assertSameTree(after, hostTree(dirs.src), "after the final copy");
    // What the comparison holds, said once more by name.
    assert.equal(after.get("tree/links/d")!.linkGroup, "tree/links/a");
    assert.equal(after.get("tree/sparse")!.sparse, true);
    assert.equal(after.get("tree/sparse-2")!.sparse, true);
    assert.ok(after.get("tree/xattrs")!.xattrs.includes(`user.color=0x${Buffer.from("green").toString("hex")}`));
    assert.ok(after.get("tree/acl/file")!.xattrs.some((x) => x.startsWith("system.posix_acl_access=")));
    assert.ok(after.get("tree/acl")!.xattrs.some((x) => x.startsWith("system.posix_acl_default=")));
    assert.equal(after.get("tree/xattrs")!.mtimeNs, "1612325106123456789");
    assert.equal(after.get("tree/link")!.mtimeNs, "1612325106987654321");
    assert.deepEqual([after.get("tree/setuid")!.mode, after.get("tree/sticky")!.mode, after.get("tree/shared")!.mode], ["4755", "1777", "2770"]);
    assert.deepEqual([after.get("tree/null")!.rdev, after.get("tree/loop200")!.rdev], ["1:3", "7:200"]);
    assert.equal(after.get("tree/dangling")!.target, "/nowhere/at/all");
    assert.ok(after.has("tree/renamed\nagain") && !after.has(`tree/${treeNames.newline}`) && !after.has("tree/fifo"));
    assert.deepEqual([after.get(".")!.mode, after.get(".")!.uid, after.get(".")!.gid], ["750", 4321, 8765]);
  });

  test("without getfattr in the image, xattrs and ACLs are compared by rsync's own dry run, and the copy still verifies", () => {
    const dirs = fresh();
    makeExactTree(dirs.src);
    const plain = appletPath(false);
    const first = run({ MODE: "copy" }, dirs, plain);
    assert.equal(first.code, 0, first.stderr);
    const sync = run({ MODE: "sync", SINCE: String(first.report["since"]) }, dirs, plain);
    assert.equal(sync.code, 0, `${sync.stderr} ${JSON.stringify(sync.report)}`);
    assert.equal(sync.report["xattrs"], "rsync");
    assertSameTree(hostTree(dirs.dst), hostTree(dirs.src), "copied without getfattr");
  });

  test("an image without rsync (or an older one) stops before anything is read or written", () => {
    const dirs = fresh();
    writeFileSync(join(dirs.src, "a"), "a");
    const none = mkdtempSync(join(tmpdir(), "appstorage-bb-"));
    execFileSync(busybox!, ["--install", "-s", none]);
    const r = run({ MODE: "copy" }, dirs, none);
    assert.equal(r.code, 1);
    assert.match(String(r.report["error"]), /^the copy image has no rsync: pass --copy-image with an image that has rsync and sh, find/);
    assert.ok(!existsSync(join(dirs.dst, "a")));
    writeFileSync(join(none, "rsync"), "#!/bin/sh\necho 'rsync  version 3.1.2  protocol version 31'\n");
    chmodSync(join(none, "rsync"), 0o755);
    const old = run({ MODE: "copy" }, dirs, none);
    assert.equal(old.code, 1);
    assert.match(String(old.report["error"]), /^rsync 3\.1\.2 is older than 3\.1\.3/);
  });

  const mkfs = ["/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"].some((p) => existsSync(p));
  test("lost+found at the top: the file system's own on ext4 (left out, the new volume's own kept); data elsewhere (copied, verified)", { skip: !mkfs && "no mkfs.ext4 (e2fsprogs)" }, (t) => {
    // An ext4 source with its own lost+found (and a file e2fsck put there) onto a tmpfs new volume.
    const dirs = fresh();
    ext4At(t, dirs.work, dirs.src);
    writeFileSync(join(dirs.src, "lost+found/#12"), "the file system's own");
    writeFileSync(join(dirs.src, "data"), "data");
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m", "appstorage-test", dirs.dst]);
    t.after(() => execFileSync("umount", [dirs.dst]));
    const first = run({ MODE: "copy" }, dirs);
    assert.equal(first.code, 0, first.stderr);
    const sync = run({ MODE: "sync", SINCE: String(first.report["since"]) }, dirs);
    assert.equal(sync.code, 0, `${sync.stderr} ${JSON.stringify(sync.report)}`);
    assert.ok(!existsSync(join(dirs.dst, "lost+found")), "ext4's own lost+found is not copied");
    assert.equal(sync.report["files"], 1);
    // The other way: a tmpfs source whose lost+found is data, onto an ext4 new volume with its own.
    const back = fresh();
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m", "appstorage-test", back.src]);
    t.after(() => execFileSync("umount", [back.src]));
    mkdirSync(join(back.src, "lost+found"));
    writeFileSync(join(back.src, "lost+found/mine"), "a user's file in a folder of that name");
    chmodSync(join(back.src, "lost+found"), 0o755);
    ext4At(t, back.work, back.dst);
    const c = run({ MODE: "copy" }, back);
    assert.equal(c.code, 0, c.stderr);
    const s2 = run({ MODE: "sync", SINCE: String(c.report["since"]) }, back);
    assert.equal(s2.code, 0, `${s2.stderr} ${JSON.stringify(s2.report)}`);
    assert.equal(readFileSync(join(back.dst, "lost+found/mine"), "utf8"), "a user's file in a folder of that name");
    assert.equal(s2.report["files"], 1);
    // And a source without one onto an ext4 new volume: the new volume's own is kept, and verifies.
    const none = fresh();
    writeFileSync(join(none.src, "data"), "data");
    ext4At(t, none.work, none.dst);
    const c3 = run({ MODE: "copy" }, none);
    assert.equal(c3.code, 0, c3.stderr);
    const s3 = run({ MODE: "sync", SINCE: String(c3.report["since"]) }, none);
    assert.equal(s3.code, 0, `${s3.stderr} ${JSON.stringify(s3.report)}`);
    assert.ok(existsSync(join(none.dst, "lost+found")), "the new volume's own lost+found is kept");
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
    // Corrupted behind the copy's back, its time set back (so rsync finds its size and time equal and
    // copies nothing); its change time moves with it, so its kept hashes are not used.
    rewrite(join(dirs.dst, "segment"), mib + 5, Buffer.from("corrupt"));
    sameTime(join(dirs.src, "segment"), join(dirs.dst, "segment"));
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
    // The new volume corrupted behind the copy's back, with the same size and time (rsync alone would
    // trust them); the source did not change, so nothing is copied again.
    writeFileSync(join(dirs.dst, "base/a.dat"), "b".repeat(10_000));
    sameTime(join(dirs.src, "base/a.dat"), join(dirs.dst, "base/a.dat"));
    const sync = run({ MODE: "sync", SINCE: String(Number(first.report["since"]) + 3600) }, dirs);
    assert.equal(sync.code, 2);
    assert.notEqual(sync.report["src"], sync.report["dst"]);
    assert.match(String(sync.report["diff"]), /a\.dat/);
  });

  test("a difference rsync can see (another time, another xattr) is repaired by the final copy, and verifies", () => {
    const dirs = fresh();
    populate(dirs.src);
    const first = run({ MODE: "copy" }, dirs);
    assert.equal(first.code, 0, first.stderr);
    writeFileSync(join(dirs.dst, "base/a.dat"), "b".repeat(10_000));
    execFileSync("setfattr", ["-n", "user.behind", "-v", "x", join(dirs.dst, "base/sub/b.dat")]);
    const sync = run({ MODE: "sync", SINCE: String(Number(first.report["since"]) + 3600) }, dirs);
    assert.equal(sync.code, 0, `${sync.stderr} ${JSON.stringify(sync.report)}`);
    assert.equal(sync.report["src"], sync.report["dst"]);
    assert.equal(readFileSync(join(dirs.dst, "base/a.dat"), "utf8"), "a".repeat(10_000));
    assert.equal(spawnSync("getfattr", ["-n", "user.behind", join(dirs.dst, "base/sub/b.dat")]).status, 1, "the xattr added behind the copy is gone");
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
