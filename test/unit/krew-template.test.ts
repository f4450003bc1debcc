// .krew.yaml (krew-release-bot's template, read by the release workflow's krew-index job) is
// generated from plugin.yaml by scripts/krew-template.mjs: the committed file must be the script's
// output, and rendered as the bot renders it (each addURIAndSha line becomes the asset's uri and
// sha256, {{ .TagName }} the tag) it must be plugin.yaml's manifest with every platform once,
// pointing at the archive `npm run release` names for it.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import YAML from "yaml";

const root = join(__dirname, "..", "..");
const committed = readFileSync(join(root, ".krew.yaml"), "utf8");
const plugin = YAML.parse(readFileSync(join(root, "plugin.yaml"), "utf8"));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

type Platform = { selector: { matchLabels: { os: string; arch: string } }; uri: string; sha256: string; [k: string]: unknown };

test("the committed .krew.yaml is what scripts/krew-template.mjs renders from plugin.yaml (run it after editing plugin.yaml)", () => {
  const rendered = execFileSync(process.execPath, [join(root, "scripts", "krew-template.mjs"), "--stdout"], { encoding: "utf8" });
  assert.equal(committed, rendered);
});

test(".krew.yaml, rendered as krew-release-bot does for the tag, is plugin.yaml's manifest with each platform's release archive once", () => {
  const tag = `v${pkg.version}`;
  const fakeSha = "a".repeat(64);
  const lines = committed.split("\n");
  const calls = lines.filter((l) => l.includes("addURIAndSha"));
  assert.equal(calls.length, plugin.spec.platforms.length, "one addURIAndSha line per platform of plugin.yaml");
  const text = lines
    .map((l) => {
      const m = l.match(/^( *)\{\{ addURIAndSha "([^"]+)" \.TagName \}\}$/);
      return m ? `${m[1]}uri: ${m[2]}\n${m[1]}sha256: ${fakeSha}` : l;
    })
    .join("\n")
    .replaceAll("{{ .TagName }}", tag);
  assert.doesNotMatch(text, /\{\{|\}\}/, "every template action of .krew.yaml is one the bot knows: {{ .TagName }} and {{ addURIAndSha URL .TagName }}");
  const manifest = YAML.parse(text);
  const repo = plugin.spec.homepage.replace("https://github.com/", "");
  const expected = structuredClone(plugin);
  expected.spec.version = tag;
  for (const p of expected.spec.platforms as Platform[]) {
    const { os, arch } = p.selector.matchLabels;
    // scripts/release.mjs's archive names (kubectl-appstorage_v0.1.0_linux_amd64.tar.gz), spelt out here.
    p.uri = `https://github.com/${repo}/releases/download/${tag}/kubectl-appstorage_${tag}_${os}_${arch}.${os === "windows" ? "zip" : "tar.gz"}`;
    p.sha256 = fakeSha;
  }
  assert.deepEqual(manifest, expected);
  const ids = (manifest.spec.platforms as Platform[]).map((p) => `${p.selector.matchLabels.os}/${p.selector.matchLabels.arch}`);
  assert.deepEqual([...new Set(ids)].sort(), ids.slice().sort(), "no platform twice");
  assert.deepEqual(ids.sort(), ["darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64"]);
});
