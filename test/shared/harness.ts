// End-to-end harness: the real local control plane (scripts/cluster), the real kubectl, and
// the built plugin (dist/kubectl-appstorage) as a user runs it. Each test gets a fresh namespace.
import { execFile, execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { TestContext } from "node:test";
import { promisify } from "node:util";
import type { KubeObject, PersistentVolumeClaim, Pod, StatefulSet } from "../../src/api/types";

export const root = resolve(__dirname, "..", "..");
// APPSTORAGE_PLUGIN runs the tests against another build of the plugin.
export const plugin = process.env["APPSTORAGE_PLUGIN"] ?? join(root, "dist", "kubectl-appstorage");
let kubeconfigPath: string | undefined;
const execFileAsync = promisify(execFile);

/** Whether the tests run on a cluster with a real node (APPSTORAGE_NODE=1: node scripts/test.mjs node). */
export const onNode = process.env["APPSTORAGE_NODE"] === "1";
/** How many nodes in zones (APPSTORAGE_NODES=3: node scripts/test.mjs zones); 0 for none or the one node. */
export const zoneNodes = Number(process.env["APPSTORAGE_NODES"] ?? "0");

/** Brings the control plane (and with onNode the node) up if needed (idempotent) and returns the admin kubeconfig. */
export function kubeconfig(): string {
  if (kubeconfigPath) return kubeconfigPath;
  const up = spawnSync("bash", [join(root, "scripts", "cluster"), "up", ...(zoneNodes > 0 ? ["--nodes", String(zoneNodes)] : onNode ? ["--node"] : [])], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  if (up.status !== 0) throw new Error("scripts/cluster up failed");
  kubeconfigPath = up.stdout.trim().split("\n").pop()!;
  return kubeconfigPath;
}

/** What the server says it is (GET /version); APPSTORAGE_K8S_VERSION chose it (scripts/test.mjs --version). */
export interface ServerVersion {
  gitVersion: string;
  major: number;
  minor: number;
}
let versionSeen: ServerVersion | undefined;

export function serverVersion(): ServerVersion {
  if (versionSeen) return versionSeen;
  const v = JSON.parse(kubectl(["get", "--raw", "/version"])) as { gitVersion: string; major: string; minor: string };
  // Vendors write minors like "32+"; the number is what counts.
  versionSeen = { gitVersion: v.gitVersion, major: parseInt(v.major, 10), minor: parseInt(v.minor, 10) };
  return versionSeen;
}

/** Whether discovery lists `resource` under `groupVersion` (e.g. "storage.k8s.io/v1"), as the plugin decides. */
export function serves(groupVersion: string, resource: string): boolean {
  const r = kubectlTry(["get", "--raw", groupVersion.includes("/") ? `/apis/${groupVersion}` : `/api/${groupVersion}`]);
  if (r.code !== 0) return false;
  return (JSON.parse(r.stdout) as { resources: { name: string }[] }).resources.some((x) => x.name === resource);
}

let pinned: string | undefined;
/**
 * kubectl of the pinned Kubernetes release (lab/tools/kubectl/build.sh, built once): what the
 * plugin is compared with. The machine's kubectl (PATH) stays for plugin discovery and setup.
 */
export function pinnedKubectl(): string {
  if (pinned) return pinned;
  const r = spawnSync("bash", [join(root, "lab", "tools", "kubectl", "build.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (r.status !== 0) throw new Error("lab/tools/kubectl/build.sh failed: the parity tests compare with the kubectl of the pinned release");
  pinned = join(r.stdout.trim().split("\n").pop()!, "kubectl");
  return pinned;
}

export function kubectl(args: string[], opts: { input?: string; kubeconfig?: string } = {}): string {
  return execFileSync("kubectl", ["--kubeconfig", opts.kubeconfig ?? kubeconfig(), ...args], {
    encoding: "utf8",
    input: opts.input,
    stdio: ["pipe", "pipe", "pipe"],
  });
}

export function kubectlJson<T = KubeObject>(args: string[]): T {
  return JSON.parse(kubectl([...args, "-o", "json"])) as T;
}

/** Tries kubectl; returns exit code and output instead of throwing. */
export function kubectlTry(args: string[], opts: { input?: string; kubeconfig?: string } = {}): { code: number; stdout: string; stderr: string } {
  const r = spawnSync("kubectl", ["--kubeconfig", opts.kubeconfig ?? kubeconfig(), ...args], { encoding: "utf8", input: opts.input });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/**
 * What the plugin never does: a JSON patch of the size of a StatefulSet's first claim template, in
 * place. The API server refuses it (volumeClaimTemplates may not change); its answer, as kubectl says it.
 */
export function patchTemplateSize(ns: string, name: string, size: string): { code: number; stdout: string; stderr: string } {
  const patch = [{ op: "replace", path: "/spec/volumeClaimTemplates/0/spec/resources/requests/storage", value: size }];
  return kubectlTry(["patch", "statefulset", name, "-n", ns, "--type=json", "-p", JSON.stringify(patch)]);
}

export function apply(obj: unknown, ns: string): void {
  kubectl(["create", "-n", ns, "-f", "-"], { input: JSON.stringify(obj) });
}

/** A fresh namespace for one test, deleted when the test ends. */
export function namespace(t: TestContext, prefix = "e2e"): string {
  const ns = createdNamespace(t, prefix);
  // Pods are refused until the namespace's default ServiceAccount exists (ServiceAccount
  // admission); the StatefulSet controller then backs off. Wait for it, as a user would not notice.
  const deadline = Date.now() + 30_000;
  while (kubectlTry(["get", "serviceaccount", "default", "-n", ns]).code !== 0) {
    if (Date.now() > deadline) throw new Error(`namespace ${ns} got no default ServiceAccount`);
    execFileSync("sleep", ["0.1"]);
  }
  return ns;
}

/**
 * namespace() for cases that run side by side in one process: it waits for the ServiceAccount
 * without blocking the event loop, so another case's timers still fire meanwhile (one of
 * test/e2e/reliability.test.ts stops kube-controller-manager until a timer of its own continues
 * it: a synchronous wait here would wait for a controller that cannot run).
 */
export async function namespaceAsync(t: TestContext, prefix = "e2e"): Promise<string> {
  const ns = createdNamespace(t, prefix);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = await execFileAsync("kubectl", ["--kubeconfig", kubeconfig(), "get", "serviceaccount", "default", "-n", ns]).then(
      () => true,
      () => false,
    );
    if (found) return ns;
    if (Date.now() > deadline) throw new Error(`namespace ${ns} got no default ServiceAccount`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function createdNamespace(t: TestContext, prefix: string): string {
  const ns = `${prefix}-${randomBytes(4).toString("hex")}`;
  kubectl(["create", "namespace", ns]);
  t.after(() => {
    kubectlTry(["delete", "namespace", ns, "--wait=false"]);
  });
  return ns;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built plugin with the admin kubeconfig unless args give another. */
export function runPlugin(args: string[], opts: { env?: Record<string, string>; input?: string; kubeconfig?: string; stateDir?: string } = {}): Promise<RunResult> {
  const stateDir = opts.stateDir ?? mkdtempSync(join(tmpdir(), "appstorage-state-"));
  return new Promise((resolvePromise) => {
    const withConfig = args.includes("--kubeconfig") ? args : [...args, "--kubeconfig", opts.kubeconfig ?? kubeconfig()];
    const child = spawn(plugin, withConfig, {
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", APPSTORAGE_STATE_DIR: stateDir, ...opts.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.stdin.end(opts.input ?? "");
    child.on("close", (code) => resolvePromise({ code: code ?? -1, stdout, stderr }));
  });
}

export function getSts(ns: string, name: string): StatefulSet {
  return kubectlJson<StatefulSet>(["get", "statefulset", name, "-n", ns]);
}

export function pods(ns: string): Pod[] {
  return kubectlJson<{ items: Pod[] }>(["get", "pods", "-n", ns]).items;
}

export function claims(ns: string): PersistentVolumeClaim[] {
  return kubectlJson<{ items: PersistentVolumeClaim[] }>(["get", "pvc", "-n", ns]).items;
}

/** name -> uid of every pod and claim in the namespace: the no-data-loss check compares these. */
export function uids(ns: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pods(ns)) out[`pod/${p.metadata.name}`] = p.metadata.uid!;
  for (const c of claims(ns)) out[`pvc/${c.metadata.name}`] = c.metadata.uid!;
  return out;
}

export async function eventually<T>(what: string, f: () => T | undefined | false, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Marks a pod Running and Ready, as a kubelet would (there is no kubelet here). */
export function markReady(ns: string, pod: string): void {
  kubectl(markReadyArgs(ns, pod));
}

/** kubectl's arguments for markReady, for a caller that runs kubectl its own way (asynchronously). */
export function markReadyArgs(ns: string, pod: string): string[] {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  return [
    "patch",
    "pod",
    pod,
    "-n",
    ns,
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify({
      status: {
        phase: "Running",
        conditions: [
          { type: "Ready", status: "True", lastTransitionTime: now },
          { type: "ContainersReady", status: "True", lastTransitionTime: now },
        ],
      },
    }),
  ];
}

/** Waits until the StatefulSet controller created all pods and its status settled. */
export async function settled(ns: string, name: string, replicas: number, opts: { ready?: boolean } = {}): Promise<StatefulSet> {
  // Its own pods (name-ORDINAL): a namespace may hold several StatefulSets.
  const members = () => pods(ns).filter((p) => new RegExp(`^${name}-\\d+$`).test(p.metadata.name ?? ""));
  return eventually(
    `statefulset ${ns}/${name} to settle with ${replicas} pod(s)`,
    () => {
      if (opts.ready) for (const p of members()) if (p.status?.phase !== "Running") markReady(ns, p.metadata.name!);
      const s = getSts(ns, name);
      const st = s.status ?? {};
      const ok =
        // >=: right after a re-create the controller may write the old object's status (its
        // generation was bumped by the deletion) onto the new one; it is corrected on the next sync.
        (st.observedGeneration ?? 0) >= (s.metadata.generation ?? 0) &&
        st.replicas === replicas &&
        st.updatedReplicas === replicas &&
        st.currentRevision === st.updateRevision &&
        members().length === replicas &&
        // The last pod may have appeared after this round marked the others Ready.
        (!opts.ready || members().every((p) => p.status?.phase === "Running"));
      return ok ? s : undefined;
    },
    90_000,
  );
}

/** A kubeconfig for a user with no permissions (scripts/cluster user NAME). */
export function userKubeconfig(name: string): string {
  kubeconfig();
  return execFileSync("bash", [join(root, "scripts", "cluster"), "user", name], { encoding: "utf8" })
    .trim()
    .split("\n")
    .pop()!;
}

/** A cluster-scoped StorageClass for one test, deleted when the test ends. */
export function storageClassFor(t: TestContext, ns: string, opts: { expandable: boolean; isDefault?: boolean }): string {
  const name = `${ns}-${opts.expandable ? "expandable" : "fixed"}`;
  apply(
    {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name, ...(opts.isDefault ? { annotations: { "storageclass.kubernetes.io/is-default-class": "true" } } : {}) },
      provisioner: "example.com/no-provisioner",
      allowVolumeExpansion: opts.expandable,
      volumeBindingMode: "Immediate",
    },
    ns,
  );
  t.after(() => kubectlTry(["delete", "storageclass", name, "--wait=false"]));
  return name;
}

/** A PersistentVolume reserved for one claim (claimRef), so the binder binds them without a provisioner. */
export function volumeFor(t: TestContext, ns: string, claimName: string, size: string, storageClass: string): void {
  const name = `pv-${ns}-${claimName}`.slice(0, 63);
  apply(
    {
      apiVersion: "v1",
      kind: "PersistentVolume",
      metadata: { name },
      spec: {
        capacity: { storage: size },
        accessModes: ["ReadWriteOnce"],
        persistentVolumeReclaimPolicy: "Retain",
        storageClassName: storageClass,
        hostPath: { path: `/tmp/appstorage-e2e/${name}` },
        claimRef: { namespace: ns, name: claimName },
      },
    },
    ns,
  );
  t.after(() => kubectlTry(["delete", "pv", name, "--wait=false"]));
}

/**
 * A ValidatingAdmissionPolicy (and its binding, limited to one namespace) that denies requests
 * matching `rule` where `expression` is false, as a site policy or a broken webhook might.
 * `probe` runs a request the policy should deny: the policy is in effect once the probe's stderr
 * carries `message`, and lifted once the probe succeeds again. Returns the (idempotent) lift,
 * also run when the test ends.
 */
export async function denyingPolicy(
  t: TestContext,
  ns: string,
  opts: { name: string; rule: { apiGroups: string[]; resources: string[]; operations: string[] }; expression: string; message: string; probe: () => { code: number; stderr: string } },
): Promise<() => Promise<void>> {
  const { name, rule, expression, message, probe } = opts;
  apply(
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: { resourceRules: [{ ...rule, apiVersions: ["v1"] }] },
        validations: [{ expression, message }],
      },
    },
    ns,
  );
  apply(
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name },
      spec: { policyName: name, validationActions: ["Deny"], matchResources: { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns } } } },
    },
    ns,
  );
  let lifted = false;
  const lift = async () => {
    if (lifted) return;
    lifted = true;
    kubectlTry(["delete", "validatingadmissionpolicybinding", name]);
    kubectlTry(["delete", "validatingadmissionpolicy", name]);
    await eventually("the policy to be lifted", () => probe().code === 0);
  };
  t.after(lift);
  await eventually("the policy to take effect", () => probe().stderr.includes(message));
  return lift;
}

/**
 * Denies creating StatefulSets in one namespace (where `allowed` is false, a CEL expression over
 * `object`), as a site policy or a broken webhook might; `probe` is a StatefulSet the policy
 * denies, created with --dry-run=server to see it take effect and be lifted. Returns the lift.
 */
export function denyStatefulSetCreate(t: TestContext, ns: string, opts: { allowed?: string; message?: string; probe?: StatefulSet } = {}): Promise<() => Promise<void>> {
  const message = opts.message ?? "creating StatefulSets is denied by test policy";
  const probe = JSON.stringify(
    opts.probe ?? {
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      metadata: { name: "probe" },
      spec: { selector: { matchLabels: { app: "probe" } }, serviceName: "probe", template: { metadata: { labels: { app: "probe" } }, spec: { containers: [{ name: "c", image: "pause" }] } } },
    },
  );
  return denyingPolicy(t, ns, {
    name: `deny-sts-create-${ns}`,
    rule: { apiGroups: ["apps"], resources: ["statefulsets"], operations: ["CREATE"] },
    expression: opts.allowed ?? "false",
    message,
    probe: () => kubectlTry(["create", "-n", ns, "--dry-run=server", "-f", "-"], { input: probe }),
  });
}

let helmBins: string | undefined;
/** Helm 4 or Helm 3, the newest releases the Go module proxy serves (lab/tools/helm/build.sh, built once). */
export function helm(major: 3 | 4): string {
  if (!helmBins) {
    const r = spawnSync("bash", [join(root, "lab", "tools", "helm", "build.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    if (r.status !== 0) throw new Error("lab/tools/helm/build.sh failed: the Helm tests run the Helm users have");
    helmBins = r.stdout.trim().split("\n").pop()!;
  }
  return join(helmBins, `helm${major}`);
}
