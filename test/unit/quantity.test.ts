import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { canonical, compareQuantities, parseQuantity, parseStorageSize, toBytes } from "../../src/plan/quantity";

const bytes = (s: string) => toBytes(parseQuantity(s));

describe("parseQuantity: values with Kubernetes meaning", () => {
  const cases: [string, bigint][] = [
    ["0", 0n],
    ["1", 1n],
    ["1Ki", 1024n],
    ["1Mi", 1024n ** 2n],
    ["1Gi", 1024n ** 3n],
    ["2Gi", 2n * 2n ** 30n],
    ["1Ti", 1024n ** 4n],
    ["1Pi", 1024n ** 5n],
    ["1Ei", 1024n ** 6n],
    ["1k", 1000n],
    ["2G", 2_000_000_000n],
    ["1M", 1_000_000n],
    ["1T", 10n ** 12n],
    ["1P", 10n ** 15n],
    ["1E", 10n ** 18n],
    ["1.5Gi", 1610612736n],
    ["0.5Ki", 512n],
    [".5Ki", 512n],
    ["1e3", 1000n],
    ["1E3", 1000n],
    ["1e+3", 1000n],
    ["12e-1", undefined as unknown as bigint],
    ["+5", 5n],
    ["1000m", 1n],
    ["5.", 5n],
  ];
  for (const [text, want] of cases) {
    test(`${text}`, () => assert.equal(bytes(text), want));
  }
});

describe("parseQuantity: invalid input", () => {
  for (const text of ["", "Gi", "1GB", "1gi", "1 Gi", "1Gi ", "1..5", "1.2.3", "--1", "1e", "1e99999", "1Zi", "one", "1,5Gi", "0x10", "1KiB"]) {
    test(JSON.stringify(text), () => assert.throws(() => parseQuantity(text)));
  }
});

describe("compareQuantities: by value", () => {
  const cases: [string, string, number][] = [
    ["1Gi", "1024Mi", 0],
    ["1G", "1000M", 0],
    ["2G", "2Gi", -1],
    ["1.5Gi", "1536Mi", 0],
    ["1e9", "1G", 0],
    ["1Ki", "1k", 1],
    ["0", "0Gi", 0],
    ["100m", "0.1", 0],
  ];
  for (const [a, b, want] of cases) test(`${a} vs ${b}`, () => assert.equal(compareQuantities(parseQuantity(a), parseQuantity(b)), want));
});

describe("parseStorageSize: what a claim can ask for", () => {
  test("accepts whole bytes", () => assert.equal(toBytes(parseStorageSize("2Gi")), 2n ** 31n));
  const refused: [string, RegExp][] = [
    ["0", /greater than zero/],
    ["0Gi", /greater than zero/],
    ["-1Gi", /greater than zero/],
    ["0.5", /whole number of bytes/],
    ["100m", /whole number of bytes/],
    ["9Ei", /too large/],
    ["1e19", /too large/],
    ["9223372036854775808", /too large/],
  ];
  for (const [text, why] of refused) test(`refuses ${text}`, () => assert.throws(() => parseStorageSize(text), why));
  test("accepts the int64 maximum", () => assert.equal(toBytes(parseStorageSize("9223372036854775807")), 2n ** 63n - 1n));
});

describe("canonical: the form the API server stores", () => {
  const cases: [string, string][] = [
    ["2048Mi", "2Gi"],
    ["1024Ki", "1Mi"],
    ["1.5Gi", "1536Mi"],
    ["1000M", "1G"],
    ["1500M", "1500M"],
    ["2000M", "2G"],
    ["1e9", "1e9"],
    ["0", "0"],
    ["1Gi", "1Gi"],
    ["100", "100"],
    ["1000", "1k"],
  ];
  for (const [text, want] of cases) test(`${text} -> ${want}`, () => assert.equal(canonical(text), want));
});
