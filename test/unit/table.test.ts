// src/output/table.ts must lay out tables exactly as cli-table3 (the design card's table
// library) does with kubectl's borderless style: compared byte for byte on random tables.
import assert from "node:assert/strict";
import { test } from "node:test";
import Table from "cli-table3";
import { renderTable } from "../../src/output/table";

function reference(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const table = new Table({
    head: headers.map((h) => h.toUpperCase()),
    chars: {
      top: "",
      "top-mid": "",
      "top-left": "",
      "top-right": "",
      bottom: "",
      "bottom-mid": "",
      "bottom-left": "",
      "bottom-right": "",
      left: "",
      "left-mid": "",
      mid: "",
      "mid-mid": "",
      right: "",
      "right-mid": "",
      middle: "   ",
    },
    style: { head: [], border: [], "padding-left": 0, "padding-right": 0, compact: true },
  });
  for (const row of rows) table.push([...row]);
  return `${table
    .toString()
    .split("\n")
    .map((l) => l.trimEnd())
    .join("\n")}\n`;
}

/** A small deterministic generator, so a failure can be reproduced. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

test("byte-identical to cli-table3 on 300 random tables", () => {
  const next = random(42);
  const words = ["pgdata", "1Gi", "<none>", "standard (default)", "-", "Bound", "template 2Gi, claim 1Gi (smaller)", "0", "12", "x", "ReadWriteOnce,ReadOnlyMany"];
  for (let n = 0; n < 300; n++) {
    const columns = 1 + Math.floor(next() * 9);
    const headers = Array.from({ length: columns }, (_, i) => `col ${i}${"x".repeat(Math.floor(next() * 6))}`);
    const rows = Array.from({ length: Math.floor(next() * 12) }, () => Array.from({ length: columns }, () => words[Math.floor(next() * words.length)]!));
    assert.equal(renderTable(headers, rows), reference(headers, rows), `table ${n}`);
  }
});
