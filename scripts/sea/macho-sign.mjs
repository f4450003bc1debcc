// The ad-hoc code signature of a thin 64-bit Mach-O (x86_64 or arm64), what `codesign --sign -`
// writes on a Mac: no identity and no CMS, a CodeDirectory with the SHA-256 of every 4 KiB page
// up to the signature, an empty Requirements blob, and an empty CMS wrapper, in one SuperBlob at
// the end of __LINKEDIT. macOS on Apple silicon runs no unsigned binary and kills one whose pages
// do not match their hashes; release.mjs signs each darwin binary after postject injected the SEA
// blob (which removed the runtime's own signature). Written from the public format
// (<mach-o/loader.h>, <kern/cs_blobs.h>): test/unit/macho-sign.test.ts checks it with the
// independent reading of test/shared/macho.ts, and test/e2e/packaging.test.ts the release's binaries.
// `node scripts/sea/macho-sign.mjs FILE [--identifier ID]` signs FILE in place.
import { createHash } from "node:crypto";
import { chmodSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { basename, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const MH_MAGIC_64 = 0xfeedfacf;
const MH_EXECUTE = 2;
const LC_SEGMENT_64 = 0x19;
const LC_CODE_SIGNATURE = 0x1d;
// vmPage: the segment alignment the linker uses for the architecture (__LINKEDIT's vmsize is rounded to it).
const CPUS = new Map([
  [0x01000007, { arch: "x86_64", vmPage: 0x1000 }],
  [0x0100000c, { arch: "arm64", vmPage: 0x4000 }],
]);

const CSMAGIC_REQUIREMENTS = 0xfade0c01;
const CSMAGIC_CODEDIRECTORY = 0xfade0c02;
const CSMAGIC_EMBEDDED_SIGNATURE = 0xfade0cc0;
const CSMAGIC_BLOBWRAPPER = 0xfade0b01;
const CSSLOT_CODEDIRECTORY = 0;
const CSSLOT_REQUIREMENTS = 2;
const CSSLOT_ENTITLEMENTS = 5;
const CSSLOT_DER_ENTITLEMENTS = 7;
const CSSLOT_SIGNATURESLOT = 0x10000;
// Not CS_LINKER_SIGNED (0x20000): that marks the placeholder a linker writes, which tools treat
// as no signature at all; this is a signature in its own right, as codesign's ad-hoc one is.
const CS_ADHOC = 0x2;
const CS_EXECSEG_MAIN_BINARY = 0x1;
const CS_HASHTYPE_SHA256 = 2;
const HASH_SIZE = 32;
const PAGE_SHIFT = 12;
const PAGE_SIZE = 1 << PAGE_SHIFT;
// Version 0x20400 (execSeg fields) is what codesign writes for a binary without a runtime version.
const CD_VERSION = 0x20400;
const CD_HEADER_SIZE = 88;
const LINKEDIT_DATA_COMMAND_SIZE = 16;

const align = (n, to) => Math.ceil(n / to) * to;
const segName = (buf, at) =>
  buf
    .subarray(at, at + 16)
    .toString("latin1")
    .replace(/\0+$/, "");

/** The parts of a thin 64-bit Mach-O that signing reads and rewrites. */
export function parseMachO(buf) {
  if (buf.length < 32) throw new Error("not a Mach-O file: too short");
  const magic = buf.readUInt32LE(0);
  if (magic === 0xbebafeca || magic === 0xbfbafeca) throw new Error("a universal (fat) Mach-O: sign each architecture's thin binary before joining them");
  if (magic !== MH_MAGIC_64) throw new Error("not a thin 64-bit little-endian Mach-O file");
  const cpu = CPUS.get(buf.readUInt32LE(4));
  if (!cpu) throw new Error(`unsupported Mach-O cputype 0x${buf.readUInt32LE(4).toString(16)} (x86_64 and arm64 only)`);
  const filetype = buf.readUInt32LE(12);
  const ncmds = buf.readUInt32LE(16);
  const sizeofcmds = buf.readUInt32LE(20);
  const cmdsEnd = 32 + sizeofcmds;
  let at = 32;
  let firstData = buf.length;
  let text;
  let linkedit;
  let codeSignature;
  for (let i = 0; i < ncmds; i++) {
    if (at + 8 > cmdsEnd) throw new Error("the load commands run past sizeofcmds");
    const cmd = buf.readUInt32LE(at);
    const cmdsize = buf.readUInt32LE(at + 4);
    if (cmdsize < 8 || at + cmdsize > cmdsEnd) throw new Error(`load command ${i} has a bad size ${cmdsize}`);
    if (cmd === LC_SEGMENT_64) {
      const seg = { at, name: segName(buf, at + 8), vmsize: Number(buf.readBigUInt64LE(at + 32)), fileoff: Number(buf.readBigUInt64LE(at + 40)), filesize: Number(buf.readBigUInt64LE(at + 48)) };
      if (seg.name === "__TEXT") text = seg;
      if (seg.name === "__LINKEDIT") linkedit = seg;
      if (seg.fileoff > 0 && seg.filesize > 0) firstData = Math.min(firstData, seg.fileoff);
      const nsects = buf.readUInt32LE(at + 64);
      for (let j = 0; j < nsects; j++) {
        const offset = buf.readUInt32LE(at + 72 + j * 80 + 48);
        // Zero-fill sections (__bss) have offset 0: no bytes in the file.
        if (offset > 0) firstData = Math.min(firstData, offset);
      }
    }
    if (cmd === LC_CODE_SIGNATURE) codeSignature = { at, dataoff: buf.readUInt32LE(at + 8), datasize: buf.readUInt32LE(at + 12) };
    at += cmdsize;
  }
  if (!text) throw new Error("no __TEXT segment");
  if (!linkedit) throw new Error("no __LINKEDIT segment: the signature has nowhere to go");
  return { arch: cpu.arch, vmPage: cpu.vmPage, filetype, ncmds, sizeofcmds, cmdsEnd, firstData, text, linkedit, codeSignature };
}

/** The blobs of an existing signature by slot type (empty when it is not a SuperBlob). */
function existingBlobs(buf, { dataoff, datasize }) {
  const blobs = new Map();
  if (dataoff + datasize > buf.length || datasize < 12 || buf.readUInt32BE(dataoff) !== CSMAGIC_EMBEDDED_SIGNATURE) return blobs;
  const count = buf.readUInt32BE(dataoff + 8);
  for (let i = 0; i < count; i++) {
    const type = buf.readUInt32BE(dataoff + 12 + i * 8);
    const offset = dataoff + buf.readUInt32BE(dataoff + 16 + i * 8);
    blobs.set(type, buf.subarray(offset, offset + buf.readUInt32BE(offset + 4)));
  }
  return blobs;
}

function blobHeader(magic, length) {
  const b = Buffer.alloc(8);
  b.writeUInt32BE(magic, 0);
  b.writeUInt32BE(length, 4);
  return b;
}

/** An empty requirement set: ad hoc, nothing to designate the code by but its CodeDirectory hash. */
function emptyRequirements() {
  return Buffer.concat([blobHeader(CSMAGIC_REQUIREMENTS, 12), Buffer.alloc(4)]);
}

const sha256 = (data) => createHash("sha256").update(data).digest();

/**
 * Returns `input` signed ad hoc: a new buffer, `input` is not changed. An existing signature is
 * replaced where it is (its entitlements blobs are kept, nothing else of it), and its space is
 * reused when the new one fits; an unsigned binary gets an LC_CODE_SIGNATURE load command and the
 * signature at the end of __LINKEDIT (16-byte aligned), which grows to hold it.
 */
export function signMachO(input, { identifier }) {
  if (!identifier || identifier.includes("\0")) throw new Error("an identifier (such as the program's name, with no NUL) is required");
  const m = parseMachO(input);
  const linkeditEnd = m.linkedit.fileoff + m.linkedit.filesize;
  let codeLimit;
  let reserved = 0;
  const special = new Map([[CSSLOT_REQUIREMENTS, emptyRequirements()]]);
  if (m.codeSignature) {
    const { dataoff, datasize } = m.codeSignature;
    if (dataoff < m.linkedit.fileoff || dataoff + datasize !== linkeditEnd || linkeditEnd !== input.length) {
      throw new Error("the existing code signature is not at the end of __LINKEDIT and of the file; this signer rewrites only that layout");
    }
    codeLimit = dataoff;
    reserved = datasize;
    const old = existingBlobs(input, m.codeSignature);
    for (const slot of [CSSLOT_ENTITLEMENTS, CSSLOT_DER_ENTITLEMENTS]) if (old.has(slot)) special.set(slot, Buffer.from(old.get(slot)));
  } else {
    if (linkeditEnd !== input.length) throw new Error(`${input.length - linkeditEnd} bytes follow __LINKEDIT; the signature must be the file's last part`);
    if (m.cmdsEnd + LINKEDIT_DATA_COMMAND_SIZE > m.firstData || input.subarray(m.cmdsEnd, m.cmdsEnd + LINKEDIT_DATA_COMMAND_SIZE).some((b) => b !== 0)) {
      throw new Error("no room after the load commands for LC_CODE_SIGNATURE (16 bytes before the first section)");
    }
    codeLimit = align(linkeditEnd, 16);
  }
  if (codeLimit > 0xffffffff) throw new Error("the binary is over 4 GiB: its code limit needs the 64-bit field, which this signer does not write");

  const ident = Buffer.from(`${identifier}\0`, "utf8");
  const nSpecialSlots = Math.max(...special.keys());
  const nCodeSlots = Math.ceil(codeLimit / PAGE_SIZE);
  const identOffset = CD_HEADER_SIZE;
  const hashOffset = identOffset + ident.length + nSpecialSlots * HASH_SIZE;
  const cdLength = hashOffset + nCodeSlots * HASH_SIZE;
  const slots = [[CSSLOT_CODEDIRECTORY, cdLength], ...[...special].sort(([a], [b]) => a - b).map(([type, blob]) => [type, blob.length]), [CSSLOT_SIGNATURESLOT, 8]];
  const indexSize = 12 + slots.length * 8;
  const superLength = indexSize + slots.reduce((n, [, length]) => n + length, 0);
  const datasize = Math.max(reserved, align(superLength, 16));

  // The header first: the load commands are in page 0, which the CodeDirectory hashes.
  const out = Buffer.alloc(codeLimit + datasize);
  input.copy(out, 0, 0, Math.min(codeLimit, input.length));
  let lc = m.codeSignature?.at;
  if (lc === undefined) {
    lc = m.cmdsEnd;
    out.writeUInt32LE(LC_CODE_SIGNATURE, lc);
    out.writeUInt32LE(LINKEDIT_DATA_COMMAND_SIZE, lc + 4);
    out.writeUInt32LE(m.ncmds + 1, 16);
    out.writeUInt32LE(m.sizeofcmds + LINKEDIT_DATA_COMMAND_SIZE, 20);
  }
  out.writeUInt32LE(codeLimit, lc + 8);
  out.writeUInt32LE(datasize, lc + 12);
  const filesize = codeLimit + datasize - m.linkedit.fileoff;
  out.writeBigUInt64LE(BigInt(Math.max(m.linkedit.vmsize, align(filesize, m.vmPage))), m.linkedit.at + 32);
  out.writeBigUInt64LE(BigInt(filesize), m.linkedit.at + 48);

  const cd = Buffer.alloc(cdLength);
  cd.writeUInt32BE(CSMAGIC_CODEDIRECTORY, 0);
  cd.writeUInt32BE(cdLength, 4);
  cd.writeUInt32BE(CD_VERSION, 8);
  cd.writeUInt32BE(CS_ADHOC, 12);
  cd.writeUInt32BE(hashOffset, 16);
  cd.writeUInt32BE(identOffset, 20);
  cd.writeUInt32BE(nSpecialSlots, 24);
  cd.writeUInt32BE(nCodeSlots, 28);
  cd.writeUInt32BE(codeLimit, 32);
  cd[36] = HASH_SIZE;
  cd[37] = CS_HASHTYPE_SHA256;
  cd[38] = 0; // platform: not a platform binary
  cd[39] = PAGE_SHIFT;
  // 40..63: spare2, scatterOffset, teamOffset (no team: ad hoc), spare3, codeLimit64: all zero.
  // The executable segment: the kernel gives the main binary's __TEXT the main-binary treatment.
  cd.writeBigUInt64BE(BigInt(m.text.fileoff), 64);
  cd.writeBigUInt64BE(BigInt(m.text.filesize), 72);
  cd.writeBigUInt64BE(BigInt(m.filetype === MH_EXECUTE ? CS_EXECSEG_MAIN_BINARY : 0), 80);
  ident.copy(cd, identOffset);
  // Special slot n (Info.plist 1, requirements 2, entitlements 5, DER entitlements 7) sits n
  // hashes before hashOffset; a slot with nothing in it stays zero.
  for (const [slot, blob] of special) sha256(blob).copy(cd, hashOffset - slot * HASH_SIZE);
  for (let page = 0; page < nCodeSlots; page++) {
    sha256(out.subarray(page * PAGE_SIZE, Math.min((page + 1) * PAGE_SIZE, codeLimit))).copy(cd, hashOffset + page * HASH_SIZE);
  }

  const blobs = new Map([[CSSLOT_CODEDIRECTORY, cd], ...special, [CSSLOT_SIGNATURESLOT, blobHeader(CSMAGIC_BLOBWRAPPER, 8)]]);
  const at = codeLimit;
  out.writeUInt32BE(CSMAGIC_EMBEDDED_SIGNATURE, at);
  out.writeUInt32BE(superLength, at + 4);
  out.writeUInt32BE(slots.length, at + 8);
  let offset = indexSize;
  slots.forEach(([type, length], i) => {
    out.writeUInt32BE(type, at + 12 + i * 8);
    out.writeUInt32BE(offset, at + 16 + i * 8);
    blobs.get(type).copy(out, at + offset);
    offset += length;
  });
  // The rest of the reserved space stays zero (Buffer.alloc).
  return out;
}

/** Signs a file in place (written beside it and renamed over it, keeping its mode). */
export function signFile(file, { identifier }) {
  const mode = statSync(file).mode & 0o7777;
  const signed = signMachO(readFileSync(file), { identifier });
  const tmp = `${file}.signing`;
  writeFileSync(tmp, signed);
  chmodSync(tmp, mode);
  renameSync(tmp, file);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const at = args.indexOf("--identifier");
  const identifier = at >= 0 ? args.splice(at, 2)[1] : undefined;
  if (args.length !== 1) {
    console.error("usage: node scripts/sea/macho-sign.mjs FILE [--identifier ID]  (default identifier: the file's name)");
    process.exit(2);
  }
  const started = performance.now();
  try {
    signFile(args[0], { identifier: identifier ?? basename(args[0]) });
  } catch (e) {
    console.error(`macho-sign: ${args[0]}: ${e.message}`);
    process.exit(1);
  }
  console.error(`macho-sign: ${args[0]} signed ad hoc in ${Math.round(performance.now() - started)} ms`);
}
