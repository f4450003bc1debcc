// Fetches the Node.js runtime of every release platform (scripts/sea/runtimes.json) into the cache
// once, as `npm run release` would: `scripts/setup base` runs it, so that the unit tests of the
// darwin signer always have the real darwin runtimes to re-sign (they are not skipped on a new
// machine) and the packaging test finds them. Quick when all are there. Prints nothing on stdout.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { nodeRuntime, root } from "../sea.mjs";

const runtimes = JSON.parse(readFileSync(join(root, "scripts", "sea", "runtimes.json"), "utf8"));
for (const p of runtimes.platforms) nodeRuntime(p.package, p.version, p.file, p.integrity);
