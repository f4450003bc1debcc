import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { assertGolden } from "../fixtures/golden";

test("a missing golden file fails, with or without CI, and is not written", { skip: process.env["UPDATE_GOLDEN"] === "1" && "UPDATE_GOLDEN=1 writes golden files" }, () => {
  const name = "no-such-golden-file.txt";
  assert.throws(() => assertGolden(name, "anything"), /golden file no-such-golden-file.txt is missing/);
  assert.equal(existsSync(join(__dirname, "..", "fixtures", "golden", name)), false);
});
