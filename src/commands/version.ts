// `version [--client] [-o json|yaml]`: this build's version and, as kubectl version does, the API
// server's of the current context. A server that cannot be reached still gets the client's
// version printed; its error follows on stderr and the exit code is kubectl's (1).
import type { KubeFlags } from "../kube/client";
import { printFlags } from "../output/print-flags";
import { connectWith, type CommandDeps } from "./deps";

declare const __VERSION__: string;

export interface VersionOptions {
  flags: KubeFlags;
  /** --client: the client's version only; no request is sent. */
  client: boolean;
  /** -o as given: json or yaml; none prints kubectl's lines. */
  output?: string;
}

/** What the API server's /version says (k8s.io/apimachinery's version.Info); printed as it came. */
type ServerVersion = Record<string, unknown> & { gitVersion?: string };

/** kubectl's VersionInfo, this tool's part of it: no Kustomize here. */
interface Versions {
  clientVersion: { gitVersion: string; platform: string };
  serverVersion?: ServerVersion;
}

/** The Validate step: usage errors only. */
export function validateVersion(opts: VersionOptions): void {
  printFlags.version.validate(opts.output);
}

/** This build's version as kubectl writes versions: v0.1.0. */
export function clientVersion(): string {
  const v = typeof __VERSION__ === "string" ? __VERSION__ : "dev";
  return /^\d/.test(v) ? `v${v}` : v;
}

export function versionText(v: Versions): string {
  return `Client Version: ${v.clientVersion.gitVersion}\n${v.serverVersion ? `Server Version: ${v.serverVersion.gitVersion ?? "unknown"}\n` : ""}`;
}

/** Node's platform and architecture in Go's words, as kubectl's platform field has them: linux/amd64. */
function goPlatform(platform: string, arch: string | undefined): string {
  const os = platform === "win32" ? "windows" : platform;
  const goArch = ({ x64: "amd64", ia32: "386", arm: "arm" } as Record<string, string>)[arch ?? ""] ?? arch ?? "unknown";
  return `${os}/${goArch}`;
}

export async function runVersion(opts: VersionOptions, deps: CommandDeps): Promise<void> {
  validateVersion(opts);
  const printer = printFlags.version.toPrinter(opts.output);
  const versions: Versions = { clientVersion: { gitVersion: clientVersion(), platform: goPlatform(deps.platform, deps.arch) } };
  let failure: unknown;
  if (!opts.client) {
    try {
      const client = await connectWith(deps, opts.flags);
      versions.serverVersion = await client.request<ServerVersion>({ method: "GET", path: "/version" });
    } catch (e) {
      failure = e;
    }
  }
  printer.print(deps.streams.out, { data: () => versions, text: () => versionText(versions) });
  if (failure !== undefined) throw failure;
}
