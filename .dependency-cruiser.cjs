// The layering of src/ (README "Architecture"), checked in `npm test` (npm run lint:layers).
// main -> commands -> plan (pure) / apply (the only writer) / kube (the client) / output.
const io = "^(fs|node:fs|child_process|node:child_process|net|node:net|http|node:http|https|node:https|os|node:os|tls|node:tls|dgram|node:dgram)$";
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: "no-circular", severity: "error", comment: "modules depend on data (types modules), not on each other", from: {}, to: { circular: true } },
    {
      name: "cli-only-from-main-and-commands",
      severity: "error",
      comment: "nothing below src/commands imports src/cli",
      from: { path: "^src/", pathNot: "^src/(main\\.ts|commands/|cli/)" },
      to: { path: "^src/cli/" },
    },
    {
      name: "pure-layers-do-no-io",
      severity: "error",
      comment: "plan, report and output are pure: no node I/O",
      from: { path: "^src/(plan|report|output)/" },
      to: { path: io, dependencyTypes: ["core"] },
    },
    {
      name: "pure-layers-use-no-runtime-kube",
      severity: "error",
      comment: "plan, report and output take data: they may import kube's types, never its runtime modules, nor apply or commands",
      from: { path: "^src/(plan|report|output)/" },
      to: { path: "^src/(kube|apply|commands)/", dependencyTypesNot: ["type-only"] },
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
      name: "kube-is-below",
      severity: "error",
      comment: "the client knows nothing of commands, the writer, printing or the plan (journals are decoded above it)",
      from: { path: "^src/kube/" },
      to: { path: "^src/(apply|commands|cli|output|report|plan)/" },
    },
    {
      name: "apply-is-below-commands",
      severity: "error",
      from: { path: "^src/apply/" },
      to: { path: "^src/(commands|cli|output|report)/" },
    },
    {
      name: "plan-does-not-print",
      severity: "error",
      comment: "the plan is data and decisions: it knows nothing of how it is shown (src/output) or read (src/report)",
      from: { path: "^src/plan/" },
      to: { path: "^src/(output|report)/" },
    },
    {
      name: "output-reads-plans-as-data",
      severity: "error",
      comment:
        "output reads plan's types; at run time it only seals plans for -o (seal), and asks what the plan decided: the history, the annotations a change records (desired) and the restart order (resize)",
      from: { path: "^src/output/" },
      to: { path: "^src/plan/", pathNot: "^src/plan/(types|seal|history|desired|resize)\\.ts$", dependencyTypesNot: ["type-only"] },
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
