// A tree of every kind of entry a faithful copy must keep, made and read from the host (a local
// folder, or a volume of the test node as its kubelet mounted it), with the host's own tools:
// node's fs (lstat to the nanosecond), getfattr (every xattr, ACLs among them as
// system.posix_acl_*), setfacl and setfattr. None of it trusts the copy script's manifests.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, closeSync, lchownSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";

/** One entry as a faithful copy must keep it. */
export interface Entry {
  type: string;
  uid: number;
  gid: number;
  /** Permission bits with setuid, setgid and sticky (octal). */
  mode: string;
  /** Modification time in nanoseconds since the epoch (a symlink's own). */
  mtimeNs: string;
  /** Not for directories (their size is the file system's). */
  size?: number;
  /** major:minor, for device nodes. */
  rdev?: string;
  /** A symlink's target. */
  target?: string;
  sha256?: string;
  /** Every xattr as name=hex (ACLs too), sorted. */
  xattrs: string[];
  /** The first (sorted) path of the entry's inode, when it has several names in the tree. */
  linkGroup?: string;
  /** Takes less room than its size (holes). */
  sparse?: boolean;
}

/** What kind of entry a stat is. */
function kind(s: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean; isFIFO(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean; isSocket(): boolean }): string {
  if (s.isFile()) return "file";
  if (s.isDirectory()) return "dir";
  if (s.isSymbolicLink()) return "symlink";
  if (s.isFIFO()) return "fifo";
  if (s.isCharacterDevice()) return "char";
  if (s.isBlockDevice()) return "block";
  return s.isSocket() ? "socket" : "other";
}

/** Every xattr of one entry (not following a symlink), as name=hex, sorted. */
function xattrsOf(path: string): string[] {
  const out = execFileSync("getfattr", ["-h", "-d", "-m", "-", "-e", "hex", "--absolute-names", path], { encoding: "utf8" });
  return out
    .split("\n")
    .filter((l) => l.includes("=") && !l.startsWith("# file:"))
    .sort();
}

/**
 * Every entry of `dir` (the root as "."), by path. `skip`: top-level names left out (lost+found
 * where it is the file system's own, the writer's log).
 */
export function hostTree(dir: string, skip: string[] = []): Map<string, Entry> {
  const entries = new Map<string, Entry>();
  const inodes = new Map<string, string[]>();
  const walk = (rel: string) => {
    const path = rel === "." ? dir : join(dir, rel);
    const s = lstatSync(path, { bigint: true });
    const type = kind(s);
    const e: Entry = {
      type,
      uid: Number(s.uid),
      gid: Number(s.gid),
      mode: (Number(s.mode) & 0o7777).toString(8),
      mtimeNs: String(s.mtimeNs),
      xattrs: xattrsOf(path),
    };
    if (type !== "dir") e.size = Number(s.size);
    if (type === "char" || type === "block") e.rdev = `${Number(s.rdev) >> 8}:${Number(s.rdev) & 0xff}`;
    if (type === "symlink") e.target = readlinkSync(path);
    if (type === "file") {
      e.sha256 = createHash("sha256").update(readFileSync(path)).digest("hex");
      e.sparse = Number(s.blocks) * 512 + 1048576 < Number(s.size);
    }
    if (type !== "dir" && s.nlink > 1n) inodes.set(String(s.ino), [...(inodes.get(String(s.ino)) ?? []), rel]);
    entries.set(rel, e);
    if (type === "dir") {
      for (const name of readdirSync(path)) {
        if (rel === "." && skip.includes(name)) continue;
        walk(rel === "." ? name : join(rel, name));
      }
    }
  };
  walk(".");
  for (const names of inodes.values()) {
    if (names.length < 2) continue;
    const first = [...names].sort()[0]!;
    for (const n of names) entries.get(n)!.linkGroup = first;
  }
  return entries;
}

/** Two trees equal entry by entry, the first difference named. */
export function assertSameTree(actual: Map<string, Entry>, expected: Map<string, Entry>, context: string): void {
  assert.deepEqual([...actual.keys()].sort(), [...expected.keys()].sort(), `${context}: the same entries`);
  for (const [path, e] of expected) assert.deepEqual(actual.get(path), e, `${context}: ${JSON.stringify(path)}`);
}

const MiB = 1048576;

/** The names the tree holds that the test checks by name (a newline and a backslash among them). */
export const treeNames = { newline: "new\nline", backslash: "back\\slash" };

/**
 * Lays out under `dir/tree` every kind of entry a faithful copy must keep (and gives `dir` itself
 * its own mode and owner): a sparse file (64 MiB with 2 small parts of data), hard links (three
 * names of one file, in two folders), user.* xattrs (one of binary bytes), an access ACL and a
 * default ACL, setuid and setgid files, setgid and sticky folders, owners no user has, nanosecond
 * modification times (a folder's and a symlink's own too), a dangling symlink, a fifo, a character
 * and a block device node, an empty file, and names with a newline and a backslash.
 */
export function makeExactTree(dir: string): void {
  const t = join(dir, "tree");
  mkdirSync(join(t, "links/other"), { recursive: true });
  mkdirSync(join(t, "acl"), { recursive: true });
  // Sparse: 64 MiB, data at 1 MiB and at 40 MiB only.
  const fd = openSync(join(t, "sparse"), "w");
  writeSync(fd, Buffer.alloc(4096, 7), 0, 4096, MiB);
  writeSync(fd, Buffer.alloc(4096, 9), 0, 4096, 40 * MiB);
  closeSync(fd);
  execFileSync("truncate", ["-s", `${64 * MiB}`, join(t, "sparse")]);
  writeFileSync(join(t, "links/a"), "linked three times");
  linkSync(join(t, "links/a"), join(t, "links/b"));
  linkSync(join(t, "links/a"), join(t, "links/other/c"));
  writeFileSync(join(t, "xattrs"), "with xattrs");
  execFileSync("setfattr", ["-n", "user.color", "-v", "blue", join(t, "xattrs")]);
  execFileSync("setfattr", ["-n", "user.binary", "-v", "0x00ff10", join(t, "xattrs")]);
  execFileSync("setfattr", ["-n", "user.dir", "-v", "on a folder", join(t, "acl")]);
  writeFileSync(join(t, "acl/file"), "with an ACL");
  execFileSync("setfacl", ["-m", "u:1234:rwx,g:5678:r--", join(t, "acl/file")]);
  execFileSync("setfacl", ["-d", "-m", "u:4242:r-x", join(t, "acl")]);
  writeFileSync(join(t, "setuid"), "#!/bin/sh\n");
  chownSync(join(t, "setuid"), 1234, 5678);
  chmodSync(join(t, "setuid"), 0o4755);
  writeFileSync(join(t, "setgid"), "g");
  chownSync(join(t, "setgid"), 0, 5678);
  chmodSync(join(t, "setgid"), 0o2750);
  mkdirSync(join(t, "sticky"));
  chmodSync(join(t, "sticky"), 0o1777);
  mkdirSync(join(t, "shared"));
  chownSync(join(t, "shared"), 2000, 3000);
  chmodSync(join(t, "shared"), 0o2770);
  writeFileSync(join(t, "shared/owned"), "owned by nobody the system knows");
  chownSync(join(t, "shared/owned"), 65000, 65001);
  chmodSync(join(t, "shared/owned"), 0o600);
  symlinkSync("/nowhere/at/all", join(t, "dangling"));
  symlinkSync("links/a", join(t, "link"));
  lchownSync(join(t, "link"), 1234, 5678);
  execFileSync("mkfifo", ["-m", "0640", join(t, "fifo")]);
  execFileSync("mknod", ["-m", "0600", join(t, "null"), "c", "1", "3"]);
  execFileSync("mknod", ["-m", "0600", join(t, "loop200"), "b", "7", "200"]);
  writeFileSync(join(t, "empty"), "");
  writeFileSync(join(t, treeNames.newline), "a name with a newline");
  writeFileSync(join(t, treeNames.backslash), "a name with a backslash");
  // Nanosecond times, last (writing into a folder changes its time): a file's, a folder's, a symlink's own.
  execFileSync("touch", ["-d", "2021-02-03 04:05:06.123456789", join(t, "xattrs")]);
  execFileSync("touch", ["-h", "-d", "2021-02-03 04:05:06.987654321", join(t, "link")]);
  execFileSync("touch", ["-d", "2021-02-03 04:05:06.555555555", join(t, "sticky")]);
  execFileSync("touch", ["-d", "2021-02-03 04:05:06.000000001", t]);
  chownSync(dir, 4321, 8765);
  chmodSync(dir, 0o751);
}
