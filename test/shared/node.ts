// Helpers for the tests on a real node (node scripts/test.mjs node): StatefulSets of the locally made
// workload image whose pods write a file onto their volume, and what a user reads
// back from running pods: container ids, restart counts, the file's checksum, the filesystem's size.
import type { PersistentVolume, Pod, StatefulSet } from "../../src/api/types";
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { after, type TestContext } from "node:test";
import { apply, eventually, kubeconfig, kubectl, kubectlJson, kubectlTry, pods, runPlugin, uids } from "./harness";

export const workloadImage = "appstorage.local/workload:1";
/** The tests' --copy-image: busybox's applets and Debian's rsync, getfattr and getfacl (lab/node/images.sh). */
export const copyImage = "appstorage.local/copy:1";

/**
 * The one node's kubelet root on the host, as lab/cluster's kubelet_root names it: out of the
 * cluster's folder (a CSI socket below a long HOME would be too long), one per cluster folder.
 */
export function kubeletRoot(): string {
  const state = process.env["APPSTORAGE_CLUSTER_DIR"];
  assert.ok(state, "APPSTORAGE_CLUSTER_DIR names the cluster (node scripts/test.mjs node sets it)");
  return `/var/lib/kubectl-appstorage/kubelet-${createHash("sha256").update(state).digest("hex").slice(0, 8)}`;
}
export interface WorkloadOptions {
  replicas?: number;
  size?: string;
  claim?: string;
  storageClass?: string;
  podManagementPolicy?: "OrderedReady" | "Parallel";
  minReadySeconds?: number;
  /** Annotations of the claim template (local-path-provisioner reads volumeType: local there). */
  claimAnnotations?: Record<string, string>;
}

/**
 * A StatefulSet whose pods write /data/payload once (1 MiB of random bytes: a new, empty volume
 * would get other bytes, so an equal checksum after a change is the same data), and are
 * Ready while the file is there and /tmp/unready is not (a test makes a pod not Ready by creating
 * it). SIGTERM ends the container at once with exit code 0: a graceful termination.
 */
export function workload(name: string, opts: WorkloadOptions = {}): StatefulSet {
  const claim = opts.claim ?? "data";
  const script = [
    "[ -f /data/payload ] || { head -c 1048576 /dev/urandom > /data/payload.new && sync && mv /data/payload.new /data/payload; }",
    "sync",
    "trap 'exit 0' TERM",
    "while :; do sleep 1 & wait $!; done",
  ].join("\n");
  return statefulSetWith(
    name,
    opts.replicas ?? 1,
    { name: claim, storageClass: opts.storageClass, size: opts.size, annotations: opts.claimAnnotations },
    {
      ...(opts.podManagementPolicy ? { podManagementPolicy: opts.podManagementPolicy } : {}),
      ...(opts.minReadySeconds !== undefined ? { minReadySeconds: opts.minReadySeconds } : {}),
      template: {
        metadata: { labels: { app: name } },
        spec: {
          terminationGracePeriodSeconds: 10,
          containers: [
            {
              name: "app",
              image: workloadImage,
              imagePullPolicy: "Never",
              command: ["sh", "-c", script],
              volumeMounts: [{ name: claim, mountPath: "/data" }],
              readinessProbe: { exec: { command: ["sh", "-c", "test -f /data/payload && test ! -f /tmp/unready"] }, periodSeconds: 1, failureThreshold: 1 },
            },
          ],
        },
      },
    },
  );
}

const ready = (p: Pod) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;

/** Pod name -> what identifies the running container: pod uid, container id, restart count. */
export interface Running {
  uid: string;
  containerID: string;
  restartCount: number;
  ready: boolean;
}

export function running(ns: string, name: string): Record<string, Running> {
  const out: Record<string, Running> = {};
  for (const p of pods(ns)) {
    if (!new RegExp(`^${name}-\\d+$`).test(p.metadata.name ?? "")) continue;
    const c = (p.status?.["containerStatuses"] as { containerID?: string; restartCount?: number }[] | undefined)?.[0];
    out[p.metadata.name!] = { uid: p.metadata.uid!, containerID: c?.containerID ?? "", restartCount: c?.restartCount ?? -1, ready: ready(p) };
  }
  return out;
}

/** Waits until `name` has `replicas` pods, all Running and Ready (or only those given), and returns them. */
export async function allReady(ns: string, name: string, replicas: number, timeoutMs = 120_000): Promise<Record<string, Running>> {
  return eventually(
    `${replicas} pod(s) of ${ns}/${name} Running and Ready`,
    () => {
      const r = running(ns, name);
      return Object.keys(r).length === replicas && Object.values(r).every((p) => p.ready && p.containerID) ? r : undefined;
    },
    timeoutMs,
  ).catch((e) => {
    throw new Error(`${(e as Error).message}\n${kubectlTry(["get", "pods,pvc", "-n", ns, "-o", "wide"]).stdout}${kubectlTry(["get", "events", "-n", ns]).stdout}`);
  });
}

/** kubectl exec's own stream failures, which a loaded node gives now and then ("error: closed all streams"). */
const execStreamFailure = /closed all streams|Unknown stream id|error dialing backend|unable to upgrade connection/;

/**
 * Runs `script` in the pod's app container. A failure of kubectl exec's streams (not of the script)
 * runs it again after 0.5 s, at most 3 times in all: every script of these tests may run twice.
 */
export function exec(ns: string, pod: string, script: string): string {
  for (let attempt = 1; ; attempt++) {
    try {
      return kubectl(["exec", "-n", ns, pod, "-c", "app", "--", "sh", "-c", script]);
    } catch (e) {
      if (attempt >= 3 || !execStreamFailure.test((e as Error).message)) throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    }
  }
}

/** The sha256 of /data/payload, read in the running container. */
export function payloadSha(ns: string, pod: string): string {
  return exec(ns, pod, "sha256sum /data/payload").split(/\s+/)[0]!;
}

/** The size of the filesystem at /data in the pod, in bytes (df -k). */
export function fsBytes(ns: string, pod: string): number {
  const line = exec(ns, pod, "df -k /data").trim().split("\n").pop()!;
  return Number(line.trim().split(/\s+/)[1]) * 1024;
}

export const GiB = 2 ** 30;

/** Whether a filesystem of `bytes` is what a volume of `gib` GiB gives (ext4/xfs keep some for metadata). */
export function aboutGiB(bytes: number, gib: number): boolean {
  return bytes > gib * GiB * 0.9 && bytes <= gib * GiB;
}

/** A claim's phase, capacity and the conditions that hold (status True: 1.37 also writes Unused=False). */
export function claimStatus(ns: string, claim: string): { phase?: string; capacity?: string; conditions: string[] } {
  const c = kubectlJson<{ status?: { phase?: string; capacity?: { storage?: string }; conditions?: { type: string; status: string }[] } }>(["get", "pvc", claim, "-n", ns]);
  return { phase: c.status?.phase, capacity: c.status?.capacity?.storage, conditions: (c.status?.conditions ?? []).filter((x) => x.status === "True").map((x) => x.type) };
}

export function create(obj: unknown, ns: string): void {
  apply(obj, ns);
}

/** One pod as a watch saw it at one moment. */
export interface PodSeen {
  name: string;
  uid: string;
  deleting: boolean;
  /** The container's exit code once it terminated, else "". */
  exitCode: string;
  ready: boolean;
  /** The container's restart count ("" before it has a status). */
  restarts: string;
}

/**
 * The watches (kubectl get -w) still running: a test that fails before its stop() would leave its
 * watch behind, and a live child keeps the test file's process, and so the suite, waiting (seen:
 * the node suite hung after restart.test.ts failed). They are stopped once the file's tests end.
 */
const watches = new Set<ChildProcess>();
after(() => {
  for (const child of watches) child.kill();
});

function tracked<T extends ChildProcess>(child: T): T {
  watches.add(child);
  child.once("close", () => watches.delete(child));
  return child;
}

/** Watches the namespace's pods (kubectl get -w) until stop(); every change seen, in order. */
export function watchPods(ns: string): { seen: PodSeen[]; stop: () => Promise<void> } {
  const line =
    '{.metadata.name} {.metadata.uid} {.metadata.deletionTimestamp}|{.status.containerStatuses[0].state.terminated.exitCode}|{.status.conditions[?(@.type=="Ready")].status}|{.status.containerStatuses[0].restartCount}{"\\n"}';
  const child = tracked(spawn("kubectl", ["--kubeconfig", kubeconfig(), "get", "pods", "-n", ns, "-w", "-o", `jsonpath=${line}`], { stdio: ["ignore", "pipe", "ignore"] }));
  const seen: PodSeen[] = [];
  onLines(child, (l) => {
    const [head = "", exitCode = "", ready = "", restarts = ""] = l.split("|");
    const [name = "", uid = "", deletion = ""] = head.split(" ");
    if (name) seen.push({ name, uid, deleting: deletion !== "", exitCode, ready: ready === "True", restarts });
  });
  return { seen, stop: () => stopChild(child) };
}

/** Calls f with each line the child writes to stdout, as it comes (a line split across chunks is put together). */
function onLines(child: ChildProcess, f: (line: string) => void): void {
  let buf = "";
  child.stdout!.on("data", (d: Buffer) => {
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      f(line);
    }
  });
}

/** Ends a watch and resolves once it has closed (again: the same promise). */
const stopping = new WeakMap<ChildProcess, Promise<void>>();
function stopChild(child: ChildProcess): Promise<void> {
  let closed = stopping.get(child);
  if (!closed) {
    closed = new Promise((res) => {
      if (child.exitCode !== null || child.signalCode !== null) return res();
      child.on("close", () => res());
      child.kill();
    });
    stopping.set(child, closed);
  }
  return closed;
}

/**
 * Watches the namespace's claims until stop(): every condition type seen True, per claim
 * ("claim/type"). The types and the statuses come as two lists: a jsonpath range or filter prints
 * only the first object of a watch (kubectl 1.37).
 */
export function watchClaimConditions(ns: string): { seen: Set<string>; stop: () => Promise<void> } {
  const line = '{.metadata.name}|{.status.conditions[*].type}|{.status.conditions[*].status}{"\\n"}';
  const child = tracked(spawn("kubectl", ["--kubeconfig", kubeconfig(), "get", "pvc", "-n", ns, "-w", "-o", `jsonpath=${line}`], { stdio: ["ignore", "pipe", "ignore"] }));
  const seen = new Set<string>();
  onLines(child, (l) => {
    const [name = "", types = "", statuses = ""] = l.split("|");
    const status = statuses.split(" ");
    for (const [k, t] of types.split(" ").entries()) if (name && t && status[k] === "True") seen.add(`${name}/${t}`);
  });
  return { seen, stop: () => stopChild(child) };
}

/** Where a watch first saw more than one of `names` down: the events up to then (for a failure's message). */
export function whenTwoDown(seen: PodSeen[], names: string[]): string {
  const up = new Map<string, boolean>(names.map((n) => [n, true]));
  for (const [i, s] of seen.entries()) {
    if (!up.has(s.name)) continue;
    up.set(s.name, s.ready && !s.deleting);
    if ([...up.values()].filter((v) => !v).length > 1)
      return seen
        .slice(Math.max(0, i - 8), i + 1)
        .map((x) => JSON.stringify(x))
        .join("\n");
  }
  return "";
}

/** The most pods of `names` down (not Ready, or being deleted, or missing) at once over a watch. */
export function maxDown(seen: PodSeen[], names: string[]): number {
  const up = new Map<string, boolean>(names.map((n) => [n, true]));
  let most = 0;
  for (const s of seen) {
    if (!up.has(s.name)) continue;
    up.set(s.name, s.ready && !s.deleting);
    most = Math.max(most, [...up.values()].filter((v) => !v).length);
  }
  return most;
}

/**
 * When the test ends: the old volumes --migrate-existing kept for the namespace are given reclaim
 * policy Delete, so the provisioner deletes them (the tool itself never does).
 */
export function deleteKeptVolumes(t: { after: (fn: () => void) => void }, ns: string): void {
  t.after(() => {
    const kept = kubectlTry(["get", "pv", "-l", `appstorage.kubectl.io/namespace=${ns}`, "-o", "name"])
      .stdout.trim()
      .split("\n")
      .filter(Boolean);
    for (const pv of kept) kubectlTry(["patch", pv, "-p", '{"spec":{"persistentVolumeReclaimPolicy":"Delete"}}']);
  });
}

/**
 * A storage class of the project's driver whose volumes grow only when they are mounted
 * (expansion=at-mount): kubelet's online expansion is refused, the claim waits in
 * FileSystemResizePending until its pod restarts. Deleted when the test ends.
 */
export function atMountClass(t: TestContext, ns: string): string {
  const name = `${ns}-at-mount`;
  apply(
    {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name },
      provisioner: "csi.appstorage.local",
      parameters: { expansion: "at-mount" },
      allowVolumeExpansion: true,
      volumeBindingMode: "WaitForFirstConsumer",
    },
    ns,
  );
  t.after(() => kubectlTry(["delete", "storageclass", name, "--wait=false"]));
  return name;
}

/**
 * Every pod of the tool's (label appstorage.kubectl.io/claim) in the namespace, as the API server
 * first gave it to a watch (its spec as admitted), by uid: what the test checks of every pod a move
 * creates, however short its life.
 */
export function watchToolPods(ns: string): { pods: Map<string, Pod>; stop: () => Promise<void> } {
  const child = tracked(
    spawn("kubectl", ["--kubeconfig", kubeconfig(), "get", "--raw", `/api/v1/namespaces/${ns}/pods?watch=1&labelSelector=appstorage.kubectl.io%2Fclaim`], {
      stdio: ["ignore", "pipe", "ignore"],
    }),
  );
  const seen = new Map<string, Pod>();
  onLines(child, (line) => {
    if (!line.trim()) return;
    const event = JSON.parse(line) as { type: string; object: Pod };
    if (event.object.metadata?.uid && !seen.has(event.object.metadata.uid)) seen.set(event.object.metadata.uid, event.object);
  });
  return {
    pods: seen,
    stop: () =>
      new Promise((res) => {
        if (child.exitCode !== null || child.signalCode !== null) return res();
        child.on("close", () => res());
        child.kill();
      }),
  };
}

/** Watches the copy pods of the namespace (label appstorage.kubectl.io/claim): the node each was put on. */
export function watchCopyPods(ns: string): { nodes: Map<string, string>; stop: () => Promise<void> } {
  const child = tracked(
    spawn("kubectl", ["--kubeconfig", kubeconfig(), "get", "pods", "-n", ns, "-l", "appstorage.kubectl.io/claim", "-w", "-o", 'jsonpath={.metadata.name} {.spec.nodeName}{"\\n"}'], {
      stdio: ["ignore", "pipe", "ignore"],
    }),
  );
  const nodes = new Map<string, string>();
  onLines(child, (l) => {
    const [name = "", node = ""] = l.split(" ");
    if (name && node) nodes.set(name, node);
  });
  return {
    nodes,
    stop: () =>
      new Promise((res) => {
        if (child.exitCode !== null || child.signalCode !== null) return res();
        child.on("close", () => res());
        child.kill();
      }),
  };
}

/** The whole tree's checksums, one line per file ("sha256  ./path"), sorted: in a pod's /data or in a host folder. */
const treeScript = 'cd "$1" && find . -type f | LC_ALL=C sort | while read -r f; do sha256sum "$f"; done';
export const treeInPod = (ns: string, pod: string) => exec(ns, pod, `set -- /data; ${treeScript}`);
export const treeOnHost = (dir: string) => execFileSync("sh", ["-c", treeScript, "sh", dir], { encoding: "utf8" });

/** The node names a PV's nodeAffinity allows (kubernetes.io/hostname In [...]); [] without affinity. */
export function affinityNodes(pv: PersistentVolume): string[] {
  const terms = (pv.spec.nodeAffinity as { required?: { nodeSelectorTerms?: { matchExpressions?: { key: string; values?: string[] }[] }[] } } | undefined)?.required?.nodeSelectorTerms ?? [];
  return terms.flatMap((t) => (t.matchExpressions ?? []).filter((e) => e.key === "kubernetes.io/hostname").flatMap((e) => e.values ?? []));
}

/**
 * `set STS data=2Gi --resize-existing --wait-resize` on running pods NAMES (Ready as BEFORE): each
 * claim said resized, no restart and no warning; each claim Bound at 2Gi with no condition, df in
 * its pod shows 2 GiB, its data kept; the same pods and containers, the same objects.
 */
export async function growsOnline(ns: string, sts: string, names: string[], before: Record<string, Running>, timeout: string): Promise<void> {
  const data = Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));
  const ids = uids(ns);
  const r = await runPlugin(["set", sts, "data=2Gi", "--resize-existing", "--wait-resize", "--timeout", timeout, "-n", ns, "--yes"]);
  assert.equal(r.code, 0, r.stderr);
  for (const n of names) assert.match(r.stderr, new RegExp(`claim data-${n}: resized: capacity 2Gi`));
  // kubelet's part, online: never a restart asked for.
  assert.doesNotMatch(r.stderr, /restart|Warning/);
  for (const n of names) {
    assert.deepEqual(claimStatus(ns, `data-${n}`), { phase: "Bound", capacity: "2Gi", conditions: [] });
    const bytes = fsBytes(ns, n);
    assert.ok(aboutGiB(bytes, 2), `${n}: df shows 2 GiB (${bytes} bytes)`);
    assert.equal(payloadSha(ns, n), data[n], `${n}: data kept`);
  }
  assert.deepEqual(running(ns, sts), before, "same pods, same containers, no restarts");
  assert.deepEqual(uids(ns), ids);
}

/**
 * An init container that makes DIR on the claim mounted by MOUNTS once, 0700 and owned by UID, as a
 * database's own image expects its data folder (its server then runs as UID, never as root).
 */
export function dataDirInit(name: string, dir: string, uid: number, mounts: { name: string; mountPath: string }[]): Record<string, unknown> {
  return {
    name,
    image: workloadImage,
    imagePullPolicy: "Never",
    command: ["sh", "-c", `[ -d ${dir} ] || { mkdir ${dir} && chmod 0700 ${dir} && chown ${uid}:${uid} ${dir}; }`],
    securityContext: { runAsUser: 0, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"], add: ["CHOWN"] } },
    volumeMounts: mounts,
  };
}

/**
 * A StatefulSet whose pods are labelled app=NAME (its selector and service name follow), with one
 * claim template: ReadWriteOnce, the class asked (else the default), the size asked (else 1Gi).
 * spec holds the rest: the pod template, the policies.
 */
export function statefulSetWith(
  name: string,
  replicas: number,
  claim: { name: string; storageClass?: string | undefined; size?: string | undefined; annotations?: Record<string, string> | undefined },
  spec: { template: unknown } & Record<string, unknown>,
): StatefulSet {
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name },
    spec: {
      replicas,
      serviceName: name,
      selector: { matchLabels: { app: name } },
      ...spec,
      volumeClaimTemplates: [
        {
          metadata: { name: claim.name, ...(claim.annotations ? { annotations: claim.annotations } : {}) },
          spec: {
            accessModes: ["ReadWriteOnce"],
            ...(claim.storageClass ? { storageClassName: claim.storageClass } : {}),
            resources: { requests: { storage: claim.size ?? "1Gi" } },
          },
        },
      ],
    },
  } as StatefulSet;
}

/**
 * Starts a client pod of a database's image (its one container, app, runs SCRIPT as UID, never as
 * root, with no service-account token) and waits until it runs. spec adds to the pod's spec
 * (hostNetwork), container to its container (env).
 */
export async function clientPod(
  ns: string,
  name: string,
  image: string,
  uid: number,
  script: string,
  more: { spec?: Record<string, unknown>; container?: Record<string, unknown> } = {},
): Promise<void> {
  create(
    {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name },
      spec: {
        ...more.spec,
        terminationGracePeriodSeconds: 1,
        automountServiceAccountToken: false,
        containers: [appContainer(image, uid, script, more.container)],
      },
    },
    ns,
  );
  await eventually(`pod ${name} running`, () => kubectlJson<Pod>(["get", "pod", name, "-n", ns]).status?.phase === "Running", 120_000);
}

/** A container's securityContext that runs it as UID (and its group), never as root, with no capability. */
export const asUser = (uid: number) => ({ runAsUser: uid, runAsGroup: uid, runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } });

/** A database image's container, app: runs SCRIPT as UID (asUser); more adds to it (env, ports, mounts, probes). */
export const appContainer = (image: string, uid: number, script: string, more: Record<string, unknown> = {}) => ({
  name: "app",
  image,
  imagePullPolicy: "Never",
  command: ["sh", "-c", script],
  securityContext: asUser(uid),
  ...more,
});
