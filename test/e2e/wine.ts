// Windows programs under wine 10 of Debian trixie, in the chroot lab/wine/wine.sh makes once into
// the cache (Debian 12's wine 8 cannot start Node.js 24). Each run has a mount and pid namespace of
// its own and leaves nothing behind; its stdout and stderr are files, because wine hands a Windows
// program a pipe it cannot write to (Node.js fails with EBADF).
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "../shared/harness";

const wineSh = join(root, "lab", "wine", "wine.sh");

/** Makes the chroot if it is not in the cache yet (scripts/setup base makes it); returns its folder. */
export function wineChroot(): string {
  const r = spawnSync("bash", [wineSh, "build"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (r.status !== 0) throw new Error("lab/wine/wine.sh build failed (it needs root, debootstrap and Debian's mirror)");
  return r.stdout.trim().split("\n").pop()!;
}

/** The Windows path of a folder of this machine: wine's drive Z: is the root. */
export const windowsPath = (path: string): string => `Z:${path.replaceAll("/", "\\")}`;

/** The Windows user's profile folder under wine (USERPROFILE): where kubectl and the plugin look for .kube\config. */
export const userProfile = "C:\\users\\root";

/**
 * Runs `program` (a Windows program under `dir`, or one of wine's, such as cmd) with `args`, `dir`
 * bound into the chroot at the same path, `env` in its environment, and with `kube` (a folder of
 * this machine) as the user's .kube folder.
 */
export function wine(dir: string, program: string, args: string[], opts: { env?: Record<string, string>; kube?: string } = {}): { code: number; stdout: string; stderr: string } {
  const io = mkdtempSync(join(tmpdir(), "wine-io-"));
  const out = openSync(join(io, "stdout"), "w");
  const err = openSync(join(io, "stderr"), "w");
  try {
    const pairs = Object.entries(opts.env ?? {}).map(([k, v]) => `${k}=${v}`);
    const kube = opts.kube ? ["--kube", opts.kube] : [];
    const r = spawnSync("bash", [wineSh, "run", dir, ...kube, ...pairs, "--", program, ...args], { stdio: ["ignore", out, err], timeout: 120_000 });
    if (r.error) throw r.error;
    return { code: r.status ?? -1, stdout: readFileSync(join(io, "stdout"), "utf8"), stderr: readFileSync(join(io, "stderr"), "utf8") };
  } finally {
    closeSync(out);
    closeSync(err);
    rmSync(io, { recursive: true, force: true });
  }
}
