// An embedded code signature checked the way macOS checks an ad-hoc one, written against the
// Mach-O and code-signing formats (<mach-o/loader.h>, <kern/cs_blobs.h>) so that the test does
// not take the signing tool's word for it: the LC_CODE_SIGNATURE load command points at a
// SuperBlob whose CodeDirectory hashes every page of the file up to the signature; the kernel
// compares those hashes as it pages the file in, so one stale page stops the binary.
import { createHash } from "node:crypto";

const MH_MAGIC_64 = 0xfeedfacf;
const LC_CODE_SIGNATURE = 0x1d;
const CSMAGIC_EMBEDDED_SIGNATURE = 0xfade0cc0;
const CSMAGIC_CODEDIRECTORY = 0xfade0c02;
const CSMAGIC_BLOBWRAPPER = 0xfade0b01;
const CSSLOT_CODEDIRECTORY = 0;
const CSSLOT_SIGNATURESLOT = 0x10000;
const CS_ADHOC = 0x2;
const CPU_TYPES: Record<number, string> = { 0x01000007: "amd64", 0x0100000c: "arm64" };
const HASHES: Record<number, { name: string; size: number; length: number }> = {
  1: { name: "sha1", size: 20, length: 20 },
  2: { name: "sha256", size: 32, length: 32 },
  3: { name: "sha256", size: 20, length: 20 }, // CS_HASHTYPE_SHA256_TRUNCATED
  4: { name: "sha384", size: 48, length: 48 },
};

export interface CodeSignature {
  arch: string;
  identifier: string;
  adhoc: boolean;
  flags: number;
  hashType: string;
  pageSize: number;
  codeSlots: number;
  /** The CMS signature's DER bytes (empty for an ad-hoc signature). */
  cms: Buffer;
  /** The blobs of the SuperBlob by slot type (requirements 2, entitlements 5 and 7, ...). */
  blobs: Map<number, Buffer>;
}

/** Reads and checks the signature of a thin 64-bit Mach-O; throws a one-line reason when it is missing or stale. */
export function verifyCodeSignature(file: Buffer): CodeSignature {
  if (file.length < 32 || file.readUInt32LE(0) !== MH_MAGIC_64) throw new Error("not a thin 64-bit little-endian Mach-O file");
  const cpu = file.readUInt32LE(4);
  const arch = CPU_TYPES[cpu] ?? `cputype 0x${cpu.toString(16)}`;
  const ncmds = file.readUInt32LE(16);
  let at = 32;
  let sig: { off: number; size: number } | undefined;
  for (let i = 0; i < ncmds; i++) {
    const cmd = file.readUInt32LE(at);
    if (cmd === LC_CODE_SIGNATURE) sig = { off: file.readUInt32LE(at + 8), size: file.readUInt32LE(at + 12) };
    at += file.readUInt32LE(at + 4);
  }
  if (!sig) throw new Error("no LC_CODE_SIGNATURE: the binary is unsigned");
  if (sig.off + sig.size > file.length) throw new Error("the code signature lies past the end of the file");
  const superBlob = file.subarray(sig.off, sig.off + sig.size);
  if (superBlob.readUInt32BE(0) !== CSMAGIC_EMBEDDED_SIGNATURE) throw new Error("LC_CODE_SIGNATURE does not point at an embedded signature");
  const blobs = new Map<number, Buffer>();
  const count = superBlob.readUInt32BE(8);
  for (let i = 0; i < count; i++) {
    const type = superBlob.readUInt32BE(12 + i * 8);
    const offset = superBlob.readUInt32BE(16 + i * 8);
    blobs.set(type, superBlob.subarray(offset, offset + superBlob.readUInt32BE(offset + 4)));
  }
  const cd = blobs.get(CSSLOT_CODEDIRECTORY);
  if (!cd || cd.readUInt32BE(0) !== CSMAGIC_CODEDIRECTORY) throw new Error("the signature has no CodeDirectory");
  const flags = cd.readUInt32BE(12);
  const hashOffset = cd.readUInt32BE(16);
  const identOffset = cd.readUInt32BE(20);
  const nSpecialSlots = cd.readUInt32BE(24);
  const nCodeSlots = cd.readUInt32BE(28);
  const codeLimit = cd.readUInt32BE(32);
  const hash = HASHES[cd[37]];
  if (!hash || hash.size !== cd[36]) throw new Error(`unknown hash type ${cd[37]} (size ${cd[36]})`);
  const pageSize = 2 ** cd[39];
  // The CodeDirectory must cover every byte before the signature, and only those.
  if (codeLimit !== sig.off) throw new Error(`the CodeDirectory covers ${codeLimit} bytes but the signature starts at ${sig.off}: stale signature`);
  if (nCodeSlots !== Math.ceil(codeLimit / pageSize)) throw new Error(`${nCodeSlots} code slots for ${codeLimit} bytes in ${pageSize}-byte pages`);
  const digest = (data: Buffer) => createHash(hash.name).update(data).digest().subarray(0, hash.length);
  for (let page = 0; page < nCodeSlots; page++) {
    const want = cd.subarray(hashOffset + page * hash.size, hashOffset + (page + 1) * hash.size);
    const got = digest(file.subarray(page * pageSize, Math.min((page + 1) * pageSize, codeLimit)));
    if (!got.equals(want)) throw new Error(`page ${page} (offset ${page * pageSize}) does not match its hash in the CodeDirectory: stale signature`);
  }
  // Special slots hash the other blobs (requirements, entitlements, ...): slot -n is blob type n.
  for (let n = 1; n <= nSpecialSlots; n++) {
    const want = cd.subarray(hashOffset - n * hash.size, hashOffset - (n - 1) * hash.size);
    const blob = blobs.get(n);
    if (blob) {
      if (!digest(blob).equals(want)) throw new Error(`special slot ${n} does not match its blob`);
    } else if (want.some((b) => b !== 0) && n !== 1 && n !== 3) {
      // Slots 1 (Info.plist) and 3 (resources) hash files outside the binary; a bare executable has none.
      throw new Error(`special slot ${n} names a blob the signature does not carry`);
    }
  }
  const identifier = cd.subarray(identOffset, cd.indexOf(0, identOffset)).toString("utf8");
  const wrapper = blobs.get(CSSLOT_SIGNATURESLOT);
  const cms = wrapper && wrapper.readUInt32BE(0) === CSMAGIC_BLOBWRAPPER ? wrapper.subarray(8) : Buffer.alloc(0);
  return { arch, identifier, adhoc: (flags & CS_ADHOC) !== 0, flags, hashType: hash.name, pageSize, codeSlots: nCodeSlots, cms, blobs };
}

/** The file offset and size of a section of a thin 64-bit Mach-O (LC_SEGMENT_64's section_64 records). */
export function machoSection(file: Buffer, segment: string, section: string): { offset: number; size: number } {
  const name = (at: number) =>
    file
      .subarray(at, at + 16)
      .toString("latin1")
      .replace(/\0+$/, "");
  const ncmds = file.readUInt32LE(16);
  let at = 32;
  for (let i = 0; i < ncmds; i++) {
    if (file.readUInt32LE(at) === 0x19 && name(at + 8) === segment) {
      for (let j = 0; j < file.readUInt32LE(at + 64); j++) {
        const sect = at + 72 + j * 80;
        if (name(sect) === section) return { offset: file.readUInt32LE(sect + 48), size: Number(file.readBigUInt64LE(sect + 40)) };
      }
    }
    at += file.readUInt32LE(at + 4);
  }
  throw new Error(`no section ${segment},${section}`);
}
