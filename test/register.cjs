// Lets node:test load the TypeScript sources and tests directly: each .ts file is
// transpiled to CommonJS by esbuild (already a dependency for the bundle).
const { transformSync } = require("esbuild");
const fs = require("node:fs");

require.extensions[".ts"] = function loadTs(module, filename) {
  const { code } = transformSync(fs.readFileSync(filename, "utf8"), {
    loader: "ts",
    format: "cjs",
    target: "node20",
    sourcefile: filename,
    sourcemap: "inline",
    define: { __VERSION__: '"test"' },
  });
  module._compile(code, filename);
};
