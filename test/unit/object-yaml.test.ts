// The hand-laid YAML of diff is js-yaml's dump, byte for byte: on the fixtures' real objects and on
// random JSON values whose strings are drawn from what makes YAML quote, fold or block a string.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { dump } from "js-yaml";
import { objectYamlOptions, toObjectYaml, toObjectYamlPair } from "../../src/output/object-yaml";

const reference = (v: unknown) => dump(v, objectYamlOptions);

/** A small deterministic generator (mulberry32), so a failure names a seed that reproduces it. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const words = [
  "",
  "a",
  "y",
  "Y",
  "yes",
  "No",
  "on",
  "OFF",
  "true",
  "False",
  "null",
  "~",
  "NULL",
  "1",
  "0755",
  "0x1F",
  "1e3",
  "1E",
  "-1.5",
  ".5",
  ".inf",
  ".NaN",
  "1_000",
  "12:30:45",
  "2026-11-30",
  "2026-11-30T23:21:53Z",
  "1Gi",
  "500m",
  "<<",
  "=",
  "-",
  "--",
  "-c",
  "- x",
  "*",
  "&a",
  "!t",
  "|",
  ">",
  "%",
  "@",
  "`",
  "#c",
  "a #b",
  "a# b",
  "a: b",
  "a:b",
  "a:",
  ":a",
  "?",
  "? x",
  "[x]",
  "{x}",
  "x,y",
  "'q'",
  '"q"',
  " lead",
  "trail ",
  "\ttab",
  "a\nb",
  "a\n",
  "\n",
  "\nlead",
  "  \n x",
  "a\n\nb\n\n",
  " a\nb",
  "é",
  "日本",
  "\u0007bell",
  "\ufeffbom",
  "registry.k8s.io/pause:3.10",
  "app.kubernetes.io/name",
  "ReadWriteOnce",
  "x".repeat(90),
  `${"long words ".repeat(12)}end`,
];
const keyWords = ["a", "b", "app", "y", "on", "1", "01", "a b", "a: b", "x/y", "-k", "?k", "null", "", "Z", "é", "a.b-c_d", "10", "9", "a\nb"];

function value(r: () => number, depth: number): unknown {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const roll = r();
  if (depth > 4 || roll < 0.45) {
    const s = r();
    if (s < 0.6) return pick(words) + (r() < 0.2 ? pick(words) : "");
    if (s < 0.75) return pick([0, 1, -1, 42, 5432, 1e21, 0.5, -0.25, 1.5e-7, -0, 3.0]);
    if (s < 0.9) return pick([true, false]);
    return null;
  }
  if (roll < 0.7) return Array.from({ length: Math.floor(r() * 4) }, () => value(r, depth + 1));
  return Object.fromEntries(Array.from({ length: Math.floor(r() * 5) }, () => [pick(keyWords) + (r() < 0.2 ? pick(keyWords) : ""), value(r, depth + 1)]));
}

describe("toObjectYaml", () => {
  test("equals js-yaml's dump on a real StatefulSet and on the kubectl fixture", () => {
    const object = JSON.parse(readFileSync(join(__dirname, "..", "fixtures", "kubectl-diff", "postgresql-k8s.json"), "utf8"));
    assert.equal(toObjectYaml(object), reference(object));
  });

  test("equals js-yaml's dump on 3,000 random JSON values", () => {
    for (let seed = 1; seed <= 3000; seed++) {
      const v = value(random(seed), 0);
      assert.equal(toObjectYaml(v), reference(v), `seed ${seed}: ${JSON.stringify(v)}`);
    }
  });

  test("a pair that shares parts is written as each alone (3,000 random values and edits of them)", () => {
    // An edit copies the path to what it changes and shares the rest, as a plan's desired shares its original.
    const edit = (v: unknown, r: () => number, depth: number): unknown => {
      if (r() < 0.3) return value(r, depth + 2);
      if (Array.isArray(v)) return r() < 0.2 ? [...v, value(r, 4)] : v.map((x) => (r() < 0.3 ? edit(x, r, depth + 1) : x));
      if (v && typeof v === "object") {
        const out: Record<string, unknown> = { ...(v as Record<string, unknown>) };
        for (const k of Object.keys(out)) if (r() < 0.3) out[k] = r() < 0.2 ? undefined : edit(out[k], r, depth + 1);
        if (r() < 0.2) out[`new${Math.floor(r() * 3)}`] = value(r, 4);
        return out;
      }
      return v;
    };
    for (let seed = 1; seed <= 3000; seed++) {
      const r = random(seed);
      const a = value(r, 0);
      const b = edit(a, r, 0);
      assert.deepEqual(toObjectYamlPair(a, b), [toObjectYaml(a), toObjectYaml(b)], `seed ${seed}`);
    }
  });

  test("lists are not indented under their key, and keys are sorted", () => {
    assert.equal(toObjectYaml({ spec: { b: 1, a: ["x", { k: "v", j: [] }] } }), "spec:\n  a:\n  - x\n  - j: []\n    k: v\n  b: 1\n");
  });
});
