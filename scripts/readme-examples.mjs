// The example runs of docs/examples.md (history and undo, an interrupted change undone, many
// StatefulSets at once, reviewed plans, and the Helm flow): each block is the exact output of one
// run of this script, on the local control plane, with the commit it ran at. (Its name is from when
// the blocks were in the README.) The commands run as a user types them: `kubectl appstorage`,
// found by kubectl on PATH (dist/), with KUBECONFIG set. Refuses a tree with uncommitted changes
// (the page must say which commit made its output), unless --print (to look, not to write).
// With --node, only the Helm flow (docs/examples.md, Helm on the real node) runs, on a cluster with the real
// node (scripts/cluster up --node: one node per host, so run it under the node lock where others
// share the machine), with Helm 4 as `helm` on PATH, and the test chart of test/fixtures/helm.
//   npm run readme:examples [-- --print] [-- --node]
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const printOnly = process.argv.includes("--print");
const onNode = process.argv.includes("--node");
const log = (m) => process.stderr.write(`readme-examples: ${m}\n`);
const git = (args) => spawnSync("git", ["-C", root, ...args], { encoding: "utf8" }).stdout.trim();
const commit = git(["rev-parse", "HEAD"]);
if (!printOnly && git(["status", "--porcelain", "--untracked-files=no"]) !== "")
  throw new Error("readme-examples: uncommitted changes; commit first (docs/examples.md names the commit its output comes from), or pass --print");

const build = spawnSync("npm", ["run", "build"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
if (build.status !== 0) throw new Error("npm run build failed");
const wasUp = spawnSync("bash", [join(root, "scripts", "cluster"), "status"], { stdio: "ignore" }).status === 0;
const up = spawnSync("bash", [join(root, "scripts", "cluster"), "up", ...(onNode ? ["--node"] : [])], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
if (up.status !== 0) throw new Error("scripts/cluster up failed");
const kubeconfig = up.stdout.trim().split("\n").pop();
const work = mkdtempSync(join(tmpdir(), "appstorage-readme-"));
/** Helm 4 as `helm` (lab/tools/helm/build.sh prints where it built it), for the Helm flow. */
function helmOnPath() {
  const built = spawnSync("bash", [join(root, "lab", "tools", "helm", "build.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (built.status !== 0) throw new Error("lab/tools/helm/build.sh failed");
  const dir = join(work, "bin");
  spawnSync("mkdir", ["-p", dir]);
  spawnSync("ln", ["-s", join(built.stdout.trim().split("\n").pop(), "helm4"), join(dir, "helm")]);
  return dir;
}
const extraPath = onNode ? `${helmOnPath()}:` : "";
const env = { ...process.env, KUBECONFIG: kubeconfig, PATH: `${extraPath}${join(root, "dist")}:${process.env.PATH}`, APPSTORAGE_STATE_DIR: join(work, "state"), NO_COLOR: "1" };
const ns = onNode ? "readme-helm" : "readme";

/** Runs a shell command as the reader would type it; its output (stderr and stdout as they came) and exit code. */
function sh(command, { quiet = false } = {}) {
  const r = spawnSync("bash", ["-c", `${command} 2>&1`], { cwd: work, env, encoding: "utf8" });
  if (quiet && r.status !== 0) throw new Error(`${command}: exit ${r.status}\n${r.stdout}`);
  return { output: r.stdout, code: r.status };
}
const kubectl = (args, input) => {
  const r = spawnSync("kubectl", args, { env, input, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, f, ms = 60_000) {
  for (const deadline = Date.now() + ms; !f(); await sleep(200)) if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
}

/** One example block: each command with its output, and the exit code when it is not 0. */
function session() {
  const lines = [];
  return {
    run(command, expectCode = 0) {
      const { output, code } = sh(command);
      if (code !== expectCode) throw new Error(`${command}: exit ${code}, expected ${expectCode}\n${output}`);
      lines.push(
        `$ ${command}`,
        ...output
          .trimEnd()
          .split("\n")
          .filter((l, i, all) => l !== "" || all.length > 1),
      );
      if (code !== 0) lines.push(`(exit code ${code})`);
    },
    text: () => lines.join("\n"),
  };
}

function statefulSet(name) {
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name, labels: { tier: "db" } },
    spec: {
      replicas: 1,
      serviceName: name,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: "postgres", image: "postgres:16" }] } },
      volumeClaimTemplates: [{ metadata: { name: "pgdata" }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } }],
    },
  };
}
const podsAndClaims = () =>
  JSON.parse(kubectl(["get", "pods,pvc", "-n", ns, "-o", "json"]))
    .items.map((o) => `${o.kind}/${o.metadata.name}=${o.metadata.uid}`)
    .sort()
    .join("\n");

/** The Helm flow on the real node: the blocks it makes, checked (no pod restarted, every claim and payload kept). */
async function helmFlow() {
  kubectl(["delete", "namespace", ns, "--ignore-not-found", "--wait"]);
  spawnSync("cp", ["-r", join(root, "test", "fixtures", "helm", "db-1"), join(root, "test", "fixtures", "helm", "db-2"), work]);
  const set = "--set image=appstorage.local/workload:1";
  const containers = () =>
    JSON.parse(kubectl(["get", "pods", "-n", ns, "-o", "json"]))
      .items.map((p) => `${p.metadata.name} ${p.metadata.uid} ${p.status.containerStatuses?.[0]?.containerID} ${p.status.containerStatuses?.[0]?.restartCount}`)
      .sort()
      .join("\n");
  const flow = session();
  flow.run(`helm install db ./db-1 -n ${ns} --create-namespace ${set}`);
  await until(
    "both pods Running and Ready",
    () => (kubectl(["get", "pods", "-n", ns, "-o", "jsonpath={.items[*].status.conditions[?(@.type=='Ready')].status}"]).match(/True/g) ?? []).length === 2,
    180_000,
  );
  const sums = "for p in db-0 db-1; do kubectl exec $p -n " + ns + " -- sha256sum /data/payload; done";
  flow.run(`for p in db-0 db-1; do kubectl exec $p -n ${ns} -- sh -c 'head -c 1048576 /dev/urandom > /data/payload && sync'; done && ${sums}`);
  const columns = "custom-columns=POD:.metadata.name,UID:.metadata.uid,CONTAINER:.status.containerStatuses[0].containerID,RESTARTS:.status.containerStatuses[0].restartCount";
  flow.run(`kubectl get pods -n ${ns} -o ${columns}`);
  // Compared on the checksums alone: kubectl exec may add a line of its own on stderr ("Unknown stream id").
  const checksums = () => ["db-0", "db-1"].map((p) => kubectl(["exec", p, "-n", ns, "--", "sha256sum", "/data/payload"]).split(/\s+/)[0]).join("\n");
  const before = { pods: containers(), uids: podsAndClaims(), data: checksums() };
  flow.run(`helm upgrade db ./db-2 -n ${ns} ${set}`, 1);
  flow.run(`helm template db ./db-2 -n ${ns} ${set} | kubectl appstorage diff -f -`, 1);
  flow.run(`helm template db ./db-2 -n ${ns} ${set} | kubectl appstorage set -f - --relabel-existing --yes`);
  flow.run(`helm upgrade db ./db-2 -n ${ns} ${set}`);
  flow.run(`kubectl get pods -n ${ns} -o ${columns}`);
  flow.run(sums);
  flow.run(`kubectl get pvc -n ${ns} -L helm.sh/chart`);
  const after = { pods: containers(), uids: podsAndClaims(), data: checksums() };
  for (const key of ["pods", "uids", "data"]) if (after[key] !== before[key]) throw new Error(`the Helm flow changed ${key}:\n${before[key]}\n---\n${after[key]}`);
  sh(`helm uninstall db -n ${ns}`);
  return { helm: flow.text() };
}

async function main() {
  const blocks = onNode ? await helmFlow() : await controlPlaneBlocks();
  const server = JSON.parse(kubectl(["version", "-o", "json"])).serverVersion?.gitVersion ?? "unknown";
  kubectl(["delete", "namespace", ns, "--wait=false"]);
  if (!wasUp) spawnSync("bash", [join(root, "scripts", "cluster"), "down"], { stdio: "ignore" });
  const where = onNode
    ? `one run of \`npm run readme:examples -- --node\` at commit \`${commit.slice(0, 12)}\`, ${new Date().toISOString().slice(0, 10)}, on the local control plane ${server} with a real node (kubelet, containerd, the CSI driver of class appstorage-csi) and Helm 4; the script checked that every pod kept its uid, container and restart count, every claim its uid, and every payload its checksum`
    : `one run of \`npm run readme:examples\` at commit \`${commit.slice(0, 12)}\`, ${new Date().toISOString().slice(0, 10)}, on the local control plane ${server}; pods and claims kept their uids throughout`;
  if (printOnly) {
    for (const [name, text] of Object.entries(blocks)) process.stdout.write(`== ${name}\n${text}\n`);
    return;
  }
  const page = join(root, "docs", "examples.md");
  let text = readFileSync(page, "utf8");
  for (const [name, output] of Object.entries(blocks)) {
    const begin = `<!-- example:${name}:begin (generated by npm run readme:examples${onNode ? " -- --node" : ""}) -->\n`;
    const end = `<!-- example:${name}:end -->`;
    const a = text.indexOf(begin);
    const b = text.indexOf(end);
    if (a < 0 || b < a) throw new Error(`docs/examples.md has no markers for the example ${name}`);
    text = `${text.slice(0, a + begin.length)}Output of ${where}:\n\n\`\`\`\n${output}\n\`\`\`\n${text.slice(b)}`;
  }
  writeFileSync(page, text);
  log("docs/examples.md updated");
}

/** The blocks of history and undo, many StatefulSets at once and reviewed plans, on the control plane alone. */
async function controlPlaneBlocks() {
  kubectl(["delete", "namespace", ns, "--ignore-not-found", "--wait"]);
  kubectl(["create", "namespace", ns]);
  kubectl(["create", "-n", ns, "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: [statefulSet("pg-a"), statefulSet("pg-b")] }));
  await until("the pods and claims of pg-a and pg-b", () => podsAndClaims().split("\n").length === 4);
  const before = podsAndClaims();
  const blocks = {};

  log("history and undo");
  const history = session();
  history.run(`kubectl appstorage set pg-a pgdata=2Gi -n ${ns} --yes`);
  history.run(`kubectl appstorage history pg-a -n ${ns}`);
  history.run(`kubectl appstorage undo pg-a -n ${ns} --yes`);
  history.run(`kubectl appstorage history pg-a -n ${ns}`);
  history.run(`kubectl appstorage show pg-a -n ${ns}`);
  blocks.history = history.text();

  log("undo of an interrupted change");
  // An admission policy that refuses StatefulSets whose claims use the class "premium": the
  // re-create is denied after the delete, and the change stops with its journal.
  const policy = "readme-no-premium";
  const premium = [
    { apiVersion: "storage.k8s.io/v1", kind: "StorageClass", metadata: { name: "premium" }, provisioner: "example.com/premium", allowVolumeExpansion: true },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name: policy },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: { resourceRules: [{ apiGroups: ["apps"], apiVersions: ["v1"], resources: ["statefulsets"], operations: ["CREATE"] }] },
        validations: [
          {
            expression: "!object.spec.volumeClaimTemplates.exists(t, has(t.spec.storageClassName) && t.spec.storageClassName == 'premium')",
            message: "the premium storage class needs an approved quota in this namespace",
          },
        ],
      },
    },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name: policy },
      spec: { policyName: policy, validationActions: ["Deny"], matchResources: { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns } } } },
    },
  ];
  kubectl(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: premium }));
  const probe = {
    ...statefulSet("probe"),
    spec: {
      ...statefulSet("probe").spec,
      volumeClaimTemplates: [{ metadata: { name: "d" }, spec: { storageClassName: "premium", accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } }],
    },
  };
  await until("the policy to take effect", () =>
    spawnSync("kubectl", ["create", "-n", ns, "--dry-run=server", "-f", "-"], { env, input: JSON.stringify(probe), encoding: "utf8" }).stderr.includes("premium storage class"),
  );
  const interrupted = session();
  interrupted.run(`kubectl appstorage set pg-a pgdata=2Gi,premium -n ${ns} --yes`, 1);
  interrupted.run(`kubectl appstorage show pg-a -n ${ns}`);
  interrupted.run(`kubectl appstorage undo pg-a -n ${ns} --yes`);
  interrupted.run(`kubectl appstorage history pg-a -n ${ns}`);
  blocks.interrupted = interrupted.text();
  kubectl(["delete", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: premium.toReversed() }));

  log("many StatefulSets at once");
  const many = session();
  many.run(`kubectl appstorage set -l tier=db pgdata=3Gi,fast data=1Gi -n ${ns} --yes`, 1);
  many.run(`kubectl appstorage diff -l tier=db pgdata=3Gi -n ${ns}`, 1);
  many.run(`kubectl appstorage set -l tier=db pgdata=3Gi -n ${ns} --yes`);
  blocks.many = many.text();

  log("reviewed plans");
  const plans = session();
  plans.run(`kubectl appstorage diff -l tier=db pgdata=4Gi -n ${ns} -o yaml > plan.yaml`, 1);
  plans.run(`head -n 32 plan.yaml`);
  plans.run(`sed 's/4Gi/40Gi/' plan.yaml > edited.yaml && kubectl appstorage set --plan edited.yaml --yes`, 1);
  plans.run(`kubectl appstorage set --plan plan.yaml --yes`);
  plans.run(`kubectl appstorage set --plan plan.yaml --yes`, 1);
  blocks.plans = plans.text();

  const after = podsAndClaims();
  if (after !== before) throw new Error(`pods or claims changed uid:\n${before}\n---\n${after}`);
  return blocks;
}

await main();
