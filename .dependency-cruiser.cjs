// The layering of src/ (README "Architecture"), checked in `npm test` (npm run lint:layers).
// `allowed` is the README's picture, arrow by arrow: an import that no arrow allows is an error.
// `forbidden` adds what the picture cannot say: which imports do I/O, which module writes.
const io = "^(fs|node:fs|child_process|node:child_process|net|node:net|http|node:http|https|node:https|os|node:os|tls|node:tls|dgram|node:dgram)$";
/** Modules every layer may use, which import nothing of src/ but each other and errors.ts. */
const shared = "^src/(errors|refs|streams|duration|lock-holder)\\.ts$";
const layer = (name) => `^src/${name}/`;
/** An arrow of the picture: from a layer (or main.ts) to the layers (and shared modules) it may import. */
const arrow = (from, to, extra = {}) => ({ from: { path: from }, to: { path: `(${to.join("|")})`, ...extra } });
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  allowed: [
    // Outside src/: packages and Node's modules (the forbidden rules below say which may do I/O).
    { from: {}, to: { path: "^(?!src/)" } },
    // Within a layer.
    { from: { path: "^src/([^/]+)/" }, to: { path: "^src/$1/" } },
    arrow("^src/main\\.ts$", [layer("cli"), layer("commands"), shared]),
    // The parser types the words into each command's Options and reads each command's -o list.
    arrow(layer("cli"), [layer("commands"), layer("api"), "^src/kube/kube-flags\\.ts$"], { dependencyTypes: ["type-only"] }),
    arrow(layer("cli"), ["^src/plan/migration-types\\.ts$", "^src/output/print-flags\\.ts$", "^src/output/completion\\.ts$", shared]),
    arrow(layer("commands"), [layer("apply"), layer("kube"), layer("plan"), layer("report"), layer("output"), layer("api"), shared]),
    arrow(layer("apply"), [layer("kube"), layer("plan"), layer("api"), shared]),
    arrow(layer("report"), [layer("plan"), layer("api"), shared]),
    arrow(layer("output"), [layer("plan"), layer("report"), layer("api"), shared]),
    arrow(layer("plan"), [layer("api"), shared]),
    arrow(layer("kube"), [layer("api"), shared]),
    arrow(shared, [shared]),
  ],
  allowedSeverity: "error",
  forbidden: [
    { name: "no-circular", severity: "error", comment: "modules depend on data (types modules), not on each other", from: {}, to: { circular: true } },
    {
      name: "pure-layers-do-no-io",
      severity: "error",
      comment: "plan, report and output are pure: no node I/O",
      from: { path: "^src/(plan|report|output)/" },
      to: { path: io, dependencyTypes: ["core"] },
    },
    {
      name: "only-apply-writes",
      severity: "error",
      comment: "every write to the cluster goes through src/apply",
      from: { path: "^src/", pathNot: "^src/(apply/|kube/write\\.ts)" },
      to: { path: "^src/kube/write\\.ts$" },
    },
    {
      name: "writes-only-through-kube-write",
      severity: "error",
      comment:
        "the client's write capability (the symbol of kube/write-access.ts) is imported only by the client, which provides it, and kube/write.ts, which names every write; every other holder of a client can only read (GETs, watches, and the access and identity reviews)",
      from: { path: "^src/", pathNot: "^src/kube/(client|write)\\.ts$" },
      to: { path: "^src/kube/write-access\\.ts$" },
    },
    {
      name: "output-reads-plans-as-data",
      severity: "error",
      comment:
        "output reads plan's types; at run time it only seals plans for -o (seal), and asks what the plan decided: the history, the annotations a change records (desired), the restart order (resize), and a claim's labels and annotations before and after --relabel-existing (relabel, template-metadata)",
      from: { path: "^src/output/" },
      to: { path: "^src/plan/", pathNot: "^src/plan/(types|seal|history|desired|resize|relabel|template-metadata)\\.ts$", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "only-main-reads-process",
      severity: "error",
      comment: "the process (argv, environment, platform, exit) is main's: everything else is handed what it needs; biome's noProcessGlobal checks the global",
      from: { path: "^src/", pathNot: "^src/main\\.ts$" },
      to: { path: "^(node:)?process$" },
    },
    { name: "no-unresolvable", severity: "error", from: {}, to: { couldNotResolve: true } },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    exclude: { path: "^(node_modules|dist)/" },
  },
};
