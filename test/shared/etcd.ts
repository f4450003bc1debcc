// etcd on the zones' three nodes (appstorage.local/etcd:3.4, lab/node/db-images.sh): a three-member
// cluster as a StatefulSet, one member per zone, and a client pod that puts numbered keys and logs
// each put etcd acknowledged (with the revision it answered), and samples every member's health and
// revision, so that a test checks quorum, acknowledged writes and revisions from outside the plugin.
//
// The lab has no cluster DNS, and a pod's address changes when it is re-created, while etcd's members
// know each other by the peer URLs they started with. So the members use their nodes' networks
// (hostNetwork: each node's own address, 10.211.I.2, which stays) and are named after their nodes:
// a member's data lives on a volume in its node's zone, and a moved replica comes back to that node.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import type { StatefulSet } from "../../src/api/types";
import { eventually, kubectlJson } from "./harness";
import { appContainer, clientPod, dataDirInit, exec, statefulSetWith } from "./node";

export const etcdImage = "appstorage.local/etcd:3.4";
/** The image's etcd user (lab/node/db-images.sh). */
export const etcdUid = 999;
const dataDir = "/var/lib/etcd/data";

export interface NodeAddress {
  name: string;
  ip: string;
}

/** The nodes and their InternalIPs, by name. */
export function nodeAddresses(): NodeAddress[] {
  const nodes = kubectlJson<{ items: { metadata: { name: string }; status?: { addresses?: { type: string; address: string }[] } }[] }>(["get", "nodes"]).items;
  return nodes.map((n) => ({ name: n.metadata.name, ip: n.status?.addresses?.find((a) => a.type === "InternalIP")?.address ?? "" })).sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Lets the host forward between the nodes' links (appstor-hI), which the members' traffic crosses:
 * node to node goes through the host, where forwarding is off. Set per link (packets received on that
 * link), so nothing else of the host forwards, and it goes with the links when the nodes go down.
 */
export function routeBetweenNodes(): void {
  const links = execFileSync("ip", ["-o", "link", "show"], { encoding: "utf8" })
    .split("\n")
    .map((l) => /^\d+: (appstor-h\d+)[@:]/.exec(l)?.[1])
    .filter((l): l is string => !!l);
  assert.ok(links.length >= 3, `the nodes' links on the host: ${links.join(", ")}`);
  for (const l of links) execFileSync("sysctl", ["-q", "-w", `net.ipv4.conf.${l}.forwarding=1`]);
}

export const clientURLs = (nodes: NodeAddress[]) => nodes.map((n) => `http://${n.ip}:2379`).join(",");

/**
 * Three members, one per zone (a topology spread constraint that refuses a skew), started together
 * (Parallel) as a new cluster of the three nodes. An init container of the workload image, as root
 * with only CAP_CHOWN, makes the data folder once in the claim (0700, owned by etcd); etcd runs as
 * etcd. Ready when the member answers /health (it has a leader).
 */
export function etcdStatefulSet(name: string, nodes: NodeAddress[], opts: { claim?: string; size?: string; storageClass?: string } = {}): StatefulSet {
  const claim = opts.claim ?? "data";
  const mount = [{ name: claim, mountPath: "/var/lib/etcd" }];
  const initialCluster = nodes.map((n) => `${n.name}=http://${n.ip}:2380`).join(",");
  const script = [
    'exec etcd --name "$NODE_NAME" --data-dir ' + dataDir,
    '  --listen-peer-urls "http://$HOST_IP:2380" --initial-advertise-peer-urls "http://$HOST_IP:2380"',
    '  --listen-client-urls "http://$HOST_IP:2379,http://127.0.0.1:2379" --advertise-client-urls "http://$HOST_IP:2379"',
    `  --initial-cluster ${initialCluster} --initial-cluster-state new --initial-cluster-token appstorage-${name}`,
    // A loaded 2-core machine: slower heartbeats than the defaults, so that a busy moment is not an election.
    "  --heartbeat-interval 250 --election-timeout 2500",
  ].join(" \\\n");
  return statefulSetWith(
    name,
    nodes.length,
    { name: claim, storageClass: opts.storageClass, size: opts.size },
    {
      podManagementPolicy: "Parallel",
      template: {
        metadata: { labels: { app: name } },
        spec: {
          hostNetwork: true,
          terminationGracePeriodSeconds: 30,
          automountServiceAccountToken: false,
          topologySpreadConstraints: [{ maxSkew: 1, topologyKey: "topology.kubernetes.io/zone", whenUnsatisfiable: "DoNotSchedule", labelSelector: { matchLabels: { app: name } } }],
          initContainers: [dataDirInit("datadir", dataDir, etcdUid, mount)],
          containers: [
            appContainer(etcdImage, etcdUid, script, {
              env: [
                { name: "NODE_NAME", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
                { name: "HOST_IP", valueFrom: { fieldRef: { fieldPath: "status.hostIP" } } },
              ],
              volumeMounts: mount,
              // Generous: a probe that times out on a loaded machine would count a member down that is not.
              readinessProbe: { httpGet: { path: "/health", port: 2379 }, periodSeconds: 1, timeoutSeconds: 3, failureThreshold: 3 },
            }),
          ],
        },
      },
    },
  );
}

/**
 * The client's two loops, from /tmp/go until /tmp/stop (then /tmp/stopped):
 * - the writer puts k/00000001, k/00000002, ... (value: the number) through all three members
 *   (etcdctl picks one that answers), and appends "N REVISION" to /tmp/acked.log for each put etcd
 *   acknowledged; a put that failed is not retried (its key may or may not exist) and is logged to
 *   /tmp/failed.log;
 * - the sampler, once a second, appends to /tmp/health.log and /tmp/status.log one line each:
 *   seconds since boot, then `etcdctl endpoint health` and `endpoint status` of the three members, as JSON.
 */
function clientScript(endpoints: string): string {
  const ctl = `etcdctl --endpoints=${endpoints} --dial-timeout=2s --command-timeout=3s`;
  return [
    "trap 'exit 0' TERM",
    "while [ ! -f /tmp/go ]; do sleep 0.2 & wait $!; done",
    "(",
    "  n=0",
    "  while [ ! -f /tmp/stop ]; do",
    "    n=$((n + 1))",
    `    if out="$(${ctl} -w json put "k/$(printf %08d $n)" "$n" 2>>/tmp/put-errors.log)"; then`,
    `      echo "$n $(echo "$out" | sed -n 's/.*"revision":\\([0-9]*\\).*/\\1/p')" >> /tmp/acked.log`,
    '    else echo "$n" >> /tmp/failed.log; fi',
    "    sleep 0.1",
    "  done",
    "  touch /tmp/writer-stopped",
    ") &",
    "(",
    "  while [ ! -f /tmp/stop ]; do",
    "    t=$(cut -d' ' -f1 /proc/uptime)",
    `    echo "$t $(etcdctl --endpoints=${endpoints} --dial-timeout=1s --command-timeout=2s -w json endpoint health 2>/dev/null | tr -d '\\n')" >> /tmp/health.log`,
    `    echo "$t $(etcdctl --endpoints=${endpoints} --dial-timeout=1s --command-timeout=2s -w json endpoint status 2>/dev/null | tr -d '\\n')" >> /tmp/status.log`,
    "    sleep 1",
    "  done",
    "  touch /tmp/sampler-stopped",
    ") &",
    "while [ ! -f /tmp/writer-stopped ] || [ ! -f /tmp/sampler-stopped ]; do sleep 0.2 & wait $!; done",
    "touch /tmp/stopped",
    "while :; do sleep 3600 & wait $!; done",
  ].join("\n");
}

/** One sample of the members: per endpoint, healthy or not, and the revision it reported (if it answered). */
export interface Sample {
  at: number;
  healthy: Record<string, boolean>;
  revision: Record<string, number>;
}

export interface WriterReport {
  /** Each acknowledged put: its number and the revision etcd answered. */
  acked: { n: number; revision: number }[];
  failed: number[];
  samples: Sample[];
}

/** The client pod (hostNetwork, as etcd): the writer and the sampler. */
export class EtcdClient {
  readonly pod = "etcd-client";
  constructor(
    private readonly ns: string,
    private readonly endpoints: string,
  ) {}

  async create(): Promise<void> {
    await clientPod(this.ns, this.pod, etcdImage, etcdUid, clientScript(this.endpoints), { spec: { hostNetwork: true } });
  }

  /** etcdctl in the client pod against the three members. */
  ctl(args: string): string {
    return exec(this.ns, this.pod, `etcdctl --endpoints=${this.endpoints} --dial-timeout=2s --command-timeout=5s ${args}`);
  }

  async start(atLeast = 50): Promise<void> {
    exec(this.ns, this.pod, "touch /tmp/go");
    await this.ackedAtLeast(atLeast);
  }

  async ackedAtLeast(n: number, timeoutMs = 120_000): Promise<void> {
    await eventually(`${n} puts acknowledged`, () => Number(exec(this.ns, this.pod, "cat /tmp/acked.log 2>/dev/null | wc -l").trim()) >= n, timeoutMs);
  }

  async stop(): Promise<WriterReport> {
    exec(this.ns, this.pod, "touch /tmp/stop");
    await eventually("the etcd client to stop", () => exec(this.ns, this.pod, "test -f /tmp/stopped && echo yes || true").trim() === "yes", 60_000);
    return this.report();
  }

  report(): WriterReport {
    const out = exec(this.ns, this.pod, "cat /tmp/acked.log; echo ---; cat /tmp/failed.log 2>/dev/null; echo ---; cat /tmp/health.log; echo ---; cat /tmp/status.log");
    const [acked = "", failed = "", health = "", status = ""] = out.split("---\n");
    const lines = (s: string) => s.split("\n").filter(Boolean);
    const statuses = new Map<string, Record<string, number>>();
    for (const l of lines(status)) {
      const at = l.slice(0, l.indexOf(" "));
      const revision: Record<string, number> = {};
      for (const m of l.matchAll(/"Endpoint":"([^"]+)","Status":\{"header":\{[^}]*"revision":(\d+)/g)) revision[m[1]!] = Number(m[2]);
      statuses.set(at, revision);
    }
    const samples = lines(health).map((l) => {
      const at = l.slice(0, l.indexOf(" "));
      const healthy: Record<string, boolean> = {};
      for (const m of l.matchAll(/"endpoint":"([^"]+)","health":(true|false)/g)) healthy[m[1]!] = m[2] === "true";
      return { at: Number(at), healthy, revision: statuses.get(at) ?? {} };
    });
    return {
      acked: lines(acked).map((l) => {
        const [n = "", revision = ""] = l.split(" ");
        return { n: Number(n), revision: Number(revision) };
      }),
      failed: lines(failed).map(Number),
      samples,
    };
  }

  /** Every key k/... and its value, read through the members now. */
  keys(): Map<string, string> {
    const out = this.ctl("get k/ --prefix").split("\n");
    const kv = new Map<string, string>();
    for (let i = 0; i + 1 < out.length; i += 2) if (out[i]) kv.set(out[i]!, out[i + 1]!);
    return kv;
  }
}
