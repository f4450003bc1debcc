// scripts/sea/macho-sign.mjs, the release's ad-hoc signer of the darwin binaries, against the
// reading of test/shared/macho.ts (written from Apple's format, page by page as the kernel checks),
// on small Mach-O executables built here (test/fixtures/macho.ts) and, when the release has
// fetched it into the cache, the real darwin runtime. test/e2e/packaging.test.ts checks the
// release's own binaries.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import runtimes from "../../scripts/sea/runtimes.json";
import { parseMachO, signFile, signMachO } from "../../scripts/sea/macho-sign.mjs";
import { verifyCodeSignature } from "../shared/macho";
import { type MachOArch, machO } from "../fixtures/macho";

const identifier = "kubectl-appstorage";
const archs: { arch: MachOArch; name: string; vmPage: number }[] = [
  { arch: "x86_64", name: "amd64", vmPage: 0x1000 },
  { arch: "arm64", name: "arm64", vmPage: 0x4000 },
];
// SHA-256 of the empty Requirements blob (fade0c01 0000000c 00000000), as rcodesign 0.29.0 put it
// in special slot 2 of the release's darwin binaries.
const emptyRequirementsHash = "987920904eab650e75788c054aa0b0524e6a80bfc71aa32df8d237a61743f986";

function codeDirectory(signed: Buffer) {
  const cd = verifyCodeSignature(signed).blobs.get(0)!;
  return {
    version: cd.readUInt32BE(8),
    flags: cd.readUInt32BE(12),
    nSpecialSlots: cd.readUInt32BE(24),
    codeLimit: cd.readUInt32BE(32),
    platform: cd[38],
    teamOffset: cd.readUInt32BE(48),
    execSeg: { base: cd.readBigUInt64BE(64), limit: cd.readBigUInt64BE(72), flags: cd.readBigUInt64BE(80) },
    special: (n: number) => {
      const hashOffset = cd.readUInt32BE(16);
      return cd.subarray(hashOffset - n * 32, hashOffset - (n - 1) * 32).toString("hex");
    },
  };
}

describe("signMachO on an unsigned executable (what postject leaves)", () => {
  for (const { arch, name, vmPage } of archs) {
    test(`${arch}: an ad-hoc signature that verifies, laid out as codesign -s - lays it out`, () => {
      const unsigned = machO({ arch, textPages: 3, linkedit: 1234 });
      const before = Buffer.from(unsigned);
      const signed = signMachO(unsigned, { identifier });
      assert.ok(unsigned.equals(before), "the input is not changed");
      const sig = verifyCodeSignature(signed);
      assert.deepEqual(
        { arch: sig.arch, identifier: sig.identifier, adhoc: sig.adhoc, hashType: sig.hashType, pageSize: sig.pageSize, cms: sig.cms.length, slots: [...sig.blobs.keys()] },
        { arch: name, identifier, adhoc: true, hashType: "sha256", pageSize: 4096, cms: 0, slots: [0, 2, 0x10000] },
      );
      const cd = codeDirectory(signed);
      const text = 3 * vmPage;
      // Signed where __LINKEDIT ended, rounded up to 16 bytes; the code limit is the signature's offset.
      const codeLimit = Math.ceil((text + 1234) / 16) * 16;
      assert.deepEqual(
        { version: cd.version, flags: cd.flags, nSpecialSlots: cd.nSpecialSlots, codeLimit: cd.codeLimit, platform: cd.platform, teamOffset: cd.teamOffset, execSeg: cd.execSeg },
        { version: 0x20400, flags: 0x2, nSpecialSlots: 2, codeLimit, platform: 0, teamOffset: 0, execSeg: { base: 0n, limit: BigInt(text), flags: 1n } },
      );
      assert.equal(cd.special(2), emptyRequirementsHash);
      assert.equal(cd.special(1), "00".repeat(32), "no Info.plist");
      assert.equal(sig.codeSlots, Math.ceil(codeLimit / 4096));
      assert.equal(sig.blobs.get(2)!.toString("hex"), "fade0c010000000c00000000", "an empty requirement set");
      assert.equal(sig.blobs.get(0x10000)!.toString("hex"), "fade0b0100000008", "an empty CMS wrapper: no identity");
      // One more load command, and __LINKEDIT grown to end with the signature.
      const m = parseMachO(signed);
      assert.equal(m.ncmds, parseMachO(unsigned).ncmds + 1);
      assert.deepEqual(m.codeSignature, { at: m.cmdsEnd - 16, dataoff: codeLimit, datasize: signed.length - codeLimit });
      assert.equal(m.linkedit.fileoff + m.linkedit.filesize, signed.length);
      assert.equal(m.linkedit.vmsize, Math.ceil(m.linkedit.filesize / vmPage) * vmPage);
      assert.equal(m.codeSignature!.datasize % 16, 0);
      // The bytes before the signature are the input's, apart from the load commands.
      assert.ok(signed.subarray(m.cmdsEnd, text + 1234).equals(unsigned.subarray(m.cmdsEnd)));
    });
  }

  test("a changed byte in any page, or in a page hash, fails the check", () => {
    const signed = signMachO(machO({ arch: "arm64", textPages: 2, linkedit: 500 }), { identifier });
    const { dataoff } = parseMachO(signed).codeSignature!;
    const lastPage = Math.floor((dataoff - 1) / 4096);
    for (const [offset, reason] of [
      [20, /page 0 .*does not match/], // sizeofcmds in the header
      [5 * 4096 + 17, /page 5 .*does not match/],
      [dataoff - 1, new RegExp(`page ${lastPage} .*does not match`)], // the last, partial page
    ] as const) {
      const changed = Buffer.from(signed);
      changed[offset] ^= 0x01;
      assert.throws(() => verifyCodeSignature(changed), reason, `byte ${offset}`);
    }
    const cd = verifyCodeSignature(signed).blobs.get(0)!;
    const changed = Buffer.from(signed);
    changed[dataoff + 36 + cd.readUInt32BE(16) + 3 * 32] ^= 0x80; // the hash of page 3 (the CodeDirectory is the first blob, at 36)
    assert.throws(() => verifyCodeSignature(changed), /page 3 .*does not match/);
  });
});

describe("signMachO on a signed executable: the signature rewritten in place", () => {
  for (const { arch } of archs) {
    test(`${arch}: rcodesign 0.29.0's ad-hoc signature of the same file, signed again, is byte for byte what rcodesign wrote`, () => {
      // test/fixtures/macho/README.md says how these were made.
      const golden = readFileSync(join(__dirname, "..", "fixtures", "macho", `${arch}.rcodesign`));
      verifyCodeSignature(golden);
      const resigned = signMachO(golden, { identifier });
      assert.equal(resigned.length, golden.length);
      assert.ok(resigned.equals(golden), "the same bytes as rcodesign's");
      // And it is a signature of the fixture that the test builds.
      const code = machO({ arch, textPages: 2 });
      assert.ok(golden.subarray(parseMachO(golden).cmdsEnd, code.length).equals(code.subarray(parseMachO(golden).cmdsEnd)));
    });
  }

  test("signing twice gives the same bytes as signing once", () => {
    const once = signMachO(machO({ arch: "x86_64" }), { identifier });
    assert.ok(signMachO(once, { identifier }).equals(once));
  });

  test("a page changed after signing is covered again by signing again, in the same space", () => {
    const signed = signMachO(machO({ arch: "arm64" }), { identifier });
    const changed = Buffer.from(signed);
    changed[2 * 4096 + 5] ^= 0xff;
    assert.throws(() => verifyCodeSignature(changed), /page 2 /);
    const resigned = signMachO(changed, { identifier });
    verifyCodeSignature(resigned);
    assert.equal(resigned.length, signed.length);
    assert.equal(resigned[2 * 4096 + 5], changed[2 * 4096 + 5]);
  });

  test("a signature that needs more room grows LC_CODE_SIGNATURE and __LINKEDIT", () => {
    const signed = signMachO(machO({ arch: "x86_64" }), { identifier: "a" });
    const before = parseMachO(signed);
    const longer = "x".repeat(100);
    const resigned = signMachO(signed, { identifier: longer });
    const after = parseMachO(resigned);
    assert.equal(verifyCodeSignature(resigned).identifier, longer);
    assert.equal(after.codeSignature!.dataoff, before.codeSignature!.dataoff);
    assert.ok(after.codeSignature!.datasize > before.codeSignature!.datasize);
    assert.equal(after.linkedit.fileoff + after.linkedit.filesize, resigned.length);
    assert.equal(after.ncmds, before.ncmds, "the load command is reused");
  });
});

describe("signMachO refuses what it cannot sign, with the reason", () => {
  const fat = Buffer.alloc(64);
  fat.writeUInt32BE(0xcafebabe, 0);
  const thin32 = Buffer.alloc(64);
  thin32.writeUInt32LE(0xfeedface, 0);
  const ppc = machO({ arch: "x86_64" });
  ppc.writeUInt32LE(0x01000012, 4);
  const trailing = Buffer.concat([machO({ arch: "x86_64" }), Buffer.alloc(10)]);
  const noRoom = machO({ arch: "x86_64" });
  noRoom.fill(0xcc, parseMachO(noRoom).cmdsEnd, 4096);
  for (const [name, file, reason] of [
    ["a universal binary", fat, /universal \(fat\) Mach-O: sign each architecture/],
    ["a 32-bit Mach-O", thin32, /not a thin 64-bit little-endian Mach-O/],
    ["another CPU", ppc, /unsupported Mach-O cputype 0x1000012/],
    ["bytes after __LINKEDIT", trailing, /10 bytes follow __LINKEDIT/],
    ["no room for the load command", noRoom, /no room after the load commands for LC_CODE_SIGNATURE/],
  ] as const) {
    test(name, () => assert.throws(() => signMachO(file, { identifier }), reason));
  }
  test("an empty identifier", () => assert.throws(() => signMachO(machO({ arch: "arm64" }), { identifier: "" }), /an identifier .* is required/));
});

test("signFile signs in place and keeps the file's mode", () => {
  const dir = mkdtempSync(join(tmpdir(), "macho-sign-"));
  try {
    const file = join(dir, "kubectl-appstorage");
    writeFileSync(file, machO({ arch: "arm64" }));
    chmodSync(file, 0o755);
    signFile(file, { identifier });
    assert.equal(statSync(file).mode & 0o777, 0o755);
    assert.equal(verifyCodeSignature(readFileSync(file)).identifier, identifier);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe("the real darwin runtimes (in the cache once npm run release has fetched them)", () => {
  const cache = process.env["APPSTORAGE_CACHE"] || join(homedir(), ".cache", "kubectl-appstorage");
  for (const r of runtimes.platforms.filter((p) => p.os === "darwin")) {
    const file = join(cache, "node", `${r.package}-${r.version}`, r.file);
    const integrity = join(cache, "node", `${r.package}-${r.version}`, "integrity");
    const cached = existsSync(file) && existsSync(integrity) && readFileSync(integrity, "utf8") === r.integrity;
    test(`${r.package} ${r.version}: the Node.js project's signature replaced by an ad-hoc one that keeps its entitlements`, {
      skip: cached ? false : `${r.package}@${r.version} is not in ${cache}/node yet (npm run release fetches it)`,
    }, () => {
      const original = readFileSync(file);
      const theirs = verifyCodeSignature(original);
      const signed = signMachO(original, { identifier });
      const ours = verifyCodeSignature(signed);
      assert.equal(ours.arch, r.arch);
      assert.equal(ours.adhoc, true);
      assert.equal(ours.cms.length, 0);
      for (const slot of [5, 7]) {
        assert.ok(theirs.blobs.has(slot), `the Node.js project's signature has entitlements blob ${slot}`);
        assert.ok(ours.blobs.get(slot)!.equals(theirs.blobs.get(slot)!), `entitlements blob ${slot} kept`);
        assert.equal(codeDirectory(signed).special(slot), createHash("sha256").update(theirs.blobs.get(slot)!).digest("hex"));
      }
      // The Developer ID signature's space (its CMS is several KiB) is reused, not grown.
      assert.equal(signed.length, original.length);
    });
  }
});
