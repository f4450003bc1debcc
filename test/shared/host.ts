// The host as scripts/cluster up and down touch it, read independently of lab/node/host.sh (which
// records and restores): sysctls, netfilter (iptables-save and nft), links, network namespaces,
// mounts, loop devices, kubepods cgroups (and the zones nodes' cgroup roots, appstor-node-*), the
// paths kubelet and containerd hard-wire, and the data folders of the storage provisioners of the
// classes standard and local-path.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

// Counters and random values that change by themselves.
const volatile = /^(fs\.(dentry-state|file-nr|inode-nr|inode-state|aio-nr|quota\.)|kernel\.(ns_last_pid|random\.|pty\.nr)|net\.netfilter\.nf_conntrack_count)/;
// minikube's storage-provisioner (class standard) and local-path-provisioner (class local-path) keep their volumes in host folders.
export const dataFolders = ["/tmp/hostpath-provisioner", "/var/local-path-provisioner"];
const paths = [
  "/var/lib/kubelet",
  "/var/lib/kubectl-appstorage",
  "/var/log/containers",
  "/var/log/pods",
  "/var/lib/cni",
  "/run/containerd",
  "/run/netns",
  "/var/lib/containerd",
  "/usr/libexec/kubernetes",
  "/etc/cni",
  "/opt/cni",
  ...dataFolders,
];
const sh = (cmd: string, args: string[]) => {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  return r.status === 0 ? r.stdout : `(${cmd} failed: ${r.stderr})`;
};

function find(dir: string, depth: number): string[] {
  if (depth === 0 || !existsSync(dir)) return [];
  let out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    out.push(p);
    if (e.isDirectory()) out = out.concat(find(p, depth - 1));
  }
  return out;
}

// The copy script's unit tests mount loop devices and tmpfs in folders of their own
// (/tmp/appstorage-copy-*): a developer's unit run beside a node test is none of the node's doing.
const notBeside = (line: string) => !line.includes("/tmp/appstorage-copy-");

export function snapshot(): Record<string, string[]> {
  const cgroups = find("/sys/fs/cgroup", 2).filter((p) => /kubepods|appstor-node-|pod[0-9a-f-]{36}/.test(p) && !p.split("/").pop()!.includes("."));
  return {
    sysctl: sh("sysctl", ["-a"])
      .split("\n")
      .filter((l) => l && !volatile.test(l))
      .sort(),
    iptables: sh("iptables-save", [])
      .split("\n")
      .filter((l) => l && !l.startsWith("#")),
    nft: sh("nft", ["list", "ruleset"]).split("\n"),
    links: sh("ip", ["-o", "link", "show"])
      .split("\n")
      .map((l) => l.split(": ")[1]?.replace(/@.*/, "") ?? "")
      .filter(Boolean)
      .sort(),
    netns: existsSync("/run/netns") ? readdirSync("/run/netns").sort() : [],
    mounts: readFileSync("/proc/mounts", "utf8").split("\n").filter(Boolean).filter(notBeside).sort(),
    loops: sh("losetup", ["-a"]).split("\n").filter(Boolean).filter(notBeside).sort(),
    cgroups: cgroups.sort(),
    paths: paths.flatMap((p) => (existsSync(p) ? [p, ...find(p, 2)] : [])).sort(),
  };
}

/** Every part's differences between two snapshots, as lines: "part: + line" added, "part: - line" gone. */
export function leftovers(before: Record<string, string[]>, after: Record<string, string[]>): string[] {
  return Object.keys(before).flatMap((part) => {
    const was = new Set(before[part]);
    const is = new Set(after[part]);
    return [...after[part]!.filter((l) => !was.has(l)).map((l) => `${part}: + ${l}`), ...before[part]!.filter((l) => !is.has(l)).map((l) => `${part}: - ${l}`)];
  });
}
