import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatDirective, parseDirective, parseDirectives } from "../../src/plan/directive";

describe("parseDirective", () => {
  const cases: [string, object][] = [
    ["pgdata=2Gi", { claim: "pgdata", size: "2Gi" }],
    ["pgdata=2048Mi", { claim: "pgdata", size: "2Gi" }],
    ["pgdata=2Gi,fast-ssd", { claim: "pgdata", size: "2Gi", storageClass: "fast-ssd" }],
    ["pgdata=fast-ssd,2Gi", { claim: "pgdata", size: "2Gi", storageClass: "fast-ssd" }],
    ["pgdata=fast-ssd", { claim: "pgdata", storageClass: "fast-ssd" }],
    ["pgdata=class=1e3", { claim: "pgdata", storageClass: "1e3" }],
    ["pgdata=size=10G,class=gp3", { claim: "pgdata", size: "10G", storageClass: "gp3" }],
    ["data-1=500M", { claim: "data-1", size: "500M" }],
    ["pgdata=standard.storage.example.com", { claim: "pgdata", storageClass: "standard.storage.example.com" }],
  ];
  for (const [text, want] of cases) test(text, () => assert.deepEqual(parseDirective(text), want));

  const refused: [string, RegExp][] = [
    ["pgdata", /not a directive/],
    ["=2Gi", /names no claim template/],
    ["pgdata=", /neither a size nor a storage class/],
    ["pgdata=2Gi,", /empty item/],
    ["pgdata=,2Gi", /empty item/],
    ["pgdata=2Gi,3Gi", /two sizes/],
    ["pgdata=a,b", /two storage classes/],
    ["pgdata=0", /greater than zero/],
    ["pgdata=-1Gi", /greater than zero/],
    ["pgdata=2GB", /unknown suffix/],
    ["pgdata=1.5", /whole number of bytes/],
    ["pgdata=Fast_SSD", /neither a size .* nor a valid storage class/],
    ["PGDATA=2Gi", /not a valid claim template name/],
    ["pg_data=2Gi", /not a valid claim template name/],
    ["pgdata=99Ei", /too large/],
  ];
  for (const [text, why] of refused) test(`refuses ${text}`, () => assert.throws(() => parseDirective(text), why));
});

describe("parseDirectives", () => {
  test("needs at least one", () => assert.throws(() => parseDirectives([]), /no change given/));
  test("refuses a claim named twice", () => assert.throws(() => parseDirectives(["a=1Gi", "a=2Gi"]), /named twice/));
  test("keeps order", () =>
    assert.deepEqual(
      parseDirectives(["b=1Gi", "a=fast"]).map((d) => d.claim),
      ["b", "a"],
    ));
});

test("formatDirective round-trips", () => {
  for (const text of ["pgdata=2Gi", "pgdata=2Gi,fast", "pgdata=fast"]) assert.equal(formatDirective(parseDirective(text)), text);
});
