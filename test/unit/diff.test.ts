import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { load } from "js-yaml";
import { applyPatch, formatPatch, structuredPatch, type StructuredPatchHunk } from "diff";
import { unifiedDiff, unifiedHunks } from "../../src/output/diff";
import { toObjectYaml } from "../../src/output/object-yaml";

const fixture = (name: string) => readFileSync(join(__dirname, "..", "fixtures", "kubectl-diff", name), "utf8");

describe("objects as kubectl diff writes them", () => {
  const object = JSON.parse(fixture("postgresql-k8s.json")) as Record<string, unknown>;
  const kubectlFile = fixture("postgresql-k8s.live.yaml");
  const ours = toObjectYaml(object);

  test("the same value, keys sorted, lists not indented, every line as kubectl's but seven quoted for syntax", () => {
    assert.deepEqual(load(ours), object);
    assert.deepEqual(load(kubectlFile), object);
    const a = ours.split("\n");
    const b = kubectlFile.split("\n");
    assert.equal(a.length, b.length);
    const differing = a.flatMap((line, i) => (line === b[i] ? [] : [[line, b[i]]]));
    // kubectl (go-yaml) single-quotes a string that needs quotes for its syntax and leaves a
    // leading dash plain where it can; js-yaml double-quotes both. A string that would read as
    // another type ("on", "14", "true", "2026-11-30", "") is double-quoted by both.
    assert.deepEqual(differing, [
      ['    example.com/colon: "a: b"', "    example.com/colon: 'a: b'"],
      ['        - "-c"', "        - -c"],
      ['        - "--"', "        - --"],
      ['        - "*"', "        - '*'"],
      ['        - "- x"', "        - '- x'"],
      ['        - "#c"', "        - '#c'"],
      ['          value: " lead"', "          value: ' lead'"],
    ]);
  });

  test("the diff is in diff -u's layout, with the template's size changed", () => {
    const after = JSON.parse(JSON.stringify(object)) as { spec: { volumeClaimTemplates: { spec: { resources: { requests: { storage: string } } } }[] } };
    after.spec.volumeClaimTemplates[0]!.spec.resources.requests.storage = "2Gi";
    const diff = unifiedDiff("live/x", "merged/x", object, after, false);
    assert.match(diff, /^--- live\/x\n\+\+\+ merged\/x\n@@ -\d+,7 \+\d+,7 @@\n/);
    assert.match(diff, /^-          storage: 1Gi\n\+          storage: 2Gi$/m);
    assert.equal(unifiedDiff("live/x", "merged/x", object, JSON.parse(JSON.stringify(object)), false), "");
  });
});

describe("unifiedHunks", () => {
  // Lines shared at the start and the end are left out first, as GNU diff does; where the texts
  // repeat lines, the diff package may then align an edit differently, equally short and correct.
  const cases = (unique: boolean) => {
    let seed = unique ? 11 : 7;
    const r = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    return Array.from({ length: 2000 }, (_, i) => {
      const lines = Array.from({ length: Math.floor(r() * 40) }, (_, j) => (unique ? `u${i}-${j}` : `l${Math.floor(r() * 6)}`));
      const edited = [...lines];
      for (let e = Math.floor(r() * 4); e > 0; e--) {
        const at = Math.floor(r() * (edited.length + 1));
        const fresh = `n${e}-${Math.floor(r() * 3)}`;
        if (r() < 0.4) edited.splice(at, 1);
        else if (r() < 0.5) edited.splice(at, 0, fresh);
        else edited[at] = fresh;
      }
      return {
        a: lines.map((l) => `${l}\n`).join(""),
        b: edited
          .filter((l) => l !== undefined)
          .map((l) => `${l}\n`)
          .join(""),
      };
    });
  };
  const format = (hunks: StructuredPatchHunk[]) =>
    formatPatch({ oldFileName: "a", newFileName: "b", oldHeader: undefined, newHeader: undefined, hunks }, { includeIndex: false, includeUnderline: false, includeFileHeaders: true });
  const whole = (a: string, b: string) => format(structuredPatch("", "", a, b, "", "", { context: 3 }).hunks);

  test("the same hunks as the diff package over the whole texts when no line repeats (2,000 random edits)", () => {
    for (const { a, b } of cases(true)) assert.equal(format(unifiedHunks(a, b)), whole(a, b), JSON.stringify({ a, b }));
  });

  test("with repeated lines, hunks that turn the one text into the other, no longer than the diff package's (2,000 random edits)", () => {
    for (const { a, b } of cases(false)) {
      const patch = format(unifiedHunks(a, b));
      assert.equal(applyPatch(a, patch), b, JSON.stringify({ a, b, patch }));
      const changed = (p: string) => p.split("\n").filter((l) => /^[-+](?![-+]{2} )/.test(l)).length;
      assert.ok(changed(patch) <= changed(whole(a, b)), JSON.stringify({ a, b }));
    }
  });
});
