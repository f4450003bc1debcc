// Types of macho-sign.mjs for the TypeScript tests (test/unit/macho-sign.test.ts).
export interface MachOSegment {
  at: number;
  name: string;
  vmsize: number;
  fileoff: number;
  filesize: number;
}
export interface MachOLayout {
  arch: "x86_64" | "arm64";
  vmPage: number;
  filetype: number;
  ncmds: number;
  sizeofcmds: number;
  cmdsEnd: number;
  firstData: number;
  text: MachOSegment;
  linkedit: MachOSegment;
  codeSignature?: { at: number; dataoff: number; datasize: number };
}
export function parseMachO(buf: Buffer): MachOLayout;
export function signMachO(input: Buffer, opts: { identifier: string }): Buffer;
export function signFile(file: string, opts: { identifier: string }): void;
