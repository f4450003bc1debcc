// Packaging as users meet it: the single executable with no Node.js anywhere, kubectl finding it
// as a plugin, shell completion through kubectl, and the krew release installed with a real krew
// (built from the Go module proxy by scripts/krew/build.sh).
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, lstatSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import YAML from "yaml";
import { sts } from "../fixtures/builders";
import { apply, kubeconfig, namespace, plugin, root } from "./harness";

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
    assert.match(help.stdout, /^kubectl appstorage: change a StatefulSet's volume claim templates safely$/m);
    assert.match(help.stdout, /Usage: kubectl appstorage <command> \[flags\]/);
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
    assert.match(r.stderr, /^error: .*\(see 'kubectl appstorage --help'\)\n$/);
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
    assert.match(r.stdout, /kubectl appstorage show \[statefulset\]/);
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
    assert.equal(complete(["show", "-o", ""]), "table\nwide\njson\nyaml\n:4\n");
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
  let out = "";
  let manifest: {
    apiVersion: string;
    kind: string;
    metadata: { name: string };
    spec: { version: string; homepage: string; shortDescription: string; description: string; caveats: string; platforms: { selector: { matchLabels: { os: string; arch: string } }; uri: string; sha256: string; bin: string; files: { from: string; to: string }[] }[] };
  };
  const archiveOf = (p: (typeof manifest.spec.platforms)[number]) => join(out, p.uri.split("/").pop()!);
  const linux = () => manifest.spec.platforms.find((p) => p.selector.matchLabels.os === "linux" && p.selector.matchLabels.arch === "amd64")!;

  before(() => {
    out = mkdtempSync(join(tmpdir(), "appstorage-release-"));
    // The whole release, every platform whose Node package the registry has (cached after once).
    execFileSync(process.execPath, [join(root, "scripts", "release.mjs"), "--out", out], { stdio: ["ignore", "ignore", "inherit"] });
    manifest = YAML.parse(readFileSync(join(out, "plugin.yaml"), "utf8")) as typeof manifest;
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  test("the manifest has krew's fields", () => {
    assert.equal(manifest.apiVersion, "krew.googlecontainertools.github.com/v1alpha2");
    assert.equal(manifest.kind, "Plugin");
    assert.equal(manifest.metadata.name, "appstorage");
    assert.equal(manifest.spec.version, `v${pkg.version}`);
    assert.match(manifest.spec.homepage, /^https:\/\//);
    assert.ok(manifest.spec.shortDescription.length > 0 && manifest.spec.shortDescription.length <= 70);
    for (const line of manifest.spec.description.split("\n")) assert.ok(line.length <= 80, line);
    for (const line of manifest.spec.caveats.split("\n")) assert.ok(line.length <= 80, line);
    assert.match(manifest.spec.caveats, /kubectl_complete-appstorage/);
    assert.ok(linux(), "linux/amd64 always builds");
  });

  test("every platform entry has its archive, with a matching lowercase sha256", () => {
    const archives = readdirSync(out).filter((f) => /\.(tar\.gz|zip)$/.test(f)).sort();
    assert.deepEqual(manifest.spec.platforms.map((p) => p.uri.split("/").pop()).sort(), archives, "one archive per entry, no entry without its archive");
    for (const p of manifest.spec.platforms) {
      assert.match(p.sha256, /^[0-9a-f]{64}$/);
      assert.equal(createHash("sha256").update(readFileSync(archiveOf(p))).digest("hex"), p.sha256, p.uri);
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
      assert.ok(entries.every((l) => !l.startsWith("l")), "no symlinks");
      assert.deepEqual(p.files.map((f) => f.from).sort(), [p.bin, shim, "LICENSE", "README.md"].sort());
    }
  });

  test("kubectl krew install --manifest --archive installs it, and kubectl appstorage runs from krew's bin", () => {
    const built = spawnSync("bash", [join(root, "scripts", "krew", "build.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    assert.equal(built.status, 0, "scripts/krew/build.sh failed (it needs Go and the Go module proxy)");
    const krewBin = built.stdout.trim().split("\n").pop()!;
    const krewRoot = mkdtempSync(join(tmpdir(), "krew-root-"));
    const env = { PATH: `${join(krewRoot, "bin")}:${krewBin}:${kubectlOnly}`, HOME: krewRoot, KREW_ROOT: krewRoot, KREW_NO_UPGRADE_CHECK: "1" };
    try {
      const install = run(realKubectl, ["krew", "install", `--manifest=${join(out, "plugin.yaml")}`, `--archive=${archiveOf(linux())}`], env);
      assert.equal(install.code, 0, install.stderr);
      assert.match(install.stderr + install.stdout, /Installed plugin: appstorage/);
      assert.ok(lstatSync(join(krewRoot, "bin", "kubectl-appstorage")).isSymbolicLink());
      const help = run(realKubectl, ["appstorage", "--help"], env);
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, /^kubectl appstorage: change a StatefulSet's volume claim templates safely$/m);
      // The caveat's completion step, then completion through kubectl.
      execFileSync("/bin/sh", ["-c", `d="$KREW_ROOT"; ln -sf "$d"/store/appstorage/*/kubectl_complete-appstorage "$d/bin/"`], { env: { ...env, PATH: "/usr/bin:/bin" } });
      const completed = run(realKubectl, ["__complete", "appstorage", "di"], env);
      assert.equal(completed.stdout, "diff\tShow what set would change (exit 0: none, 1: changes, >1: error)\n:4\n");
      // krew list and uninstall need the plugin index (a git clone of krew-index): not here.
      assert.match(readFileSync(join(krewRoot, "receipts", "appstorage.yaml"), "utf8"), /version: v\d+\.\d+\.\d+/);
    } finally {
      rmSync(krewRoot, { recursive: true, force: true });
    }
  });
});
