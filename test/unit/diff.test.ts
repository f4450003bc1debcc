import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { load } from "js-yaml";
import { unifiedDiff } from "../../src/output/diff";
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
