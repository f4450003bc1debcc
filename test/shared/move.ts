// Helpers of the --migrate-existing tests on the real node: a writer whose lines carry the writing
// pod's uid, a reader of a kept old volume (mounted again by a pod of the test's own), and the
// test's own comparison of two trees (stat of every entry: type, owner, group, mode, mtime, size,
// symlink targets; sha256 of every file), so that none of it trusts the copy script's digest.
import assert from "node:assert/strict";
import type { PersistentVolume, Pod, StatefulSet } from "../../src/api/types";
import { apply, eventually, kubectl, kubectlJson, kubectlTry } from "./harness";
import { exec, workloadImage } from "./node";

/**
 * The workload plus a writer: a line "POD_UID N" every 50 ms to /data/load.log, N counting from 1
 * in every pod (never resumed from what the volume holds), so the lines of each pod that ever
 * wrote are there, in order, and a line lost anywhere shows.
 *
 * On SIGTERM the container stops its writer and waits for it, and the writer ends between two
 * lines: a writer left to the SIGKILL that follows the end of PID 1 can be killed inside a
 * write(2) that crosses a page boundary, and the kernel then keeps only the first page's part
 * (seen once in CI: the old volume ended in "UID 70" at byte 28672, 7 pages, for line 702). Such a
 * torn line is the writer's own, not the move's, and would hide a real loss among false ones.
 */
export function withUidWriter(sts: StatefulSet): StatefulSet {
  const container = (sts.spec.template.spec as { containers: { command: string[]; env?: unknown[] }[] }).containers[0]!;
  const writer = "( trap 'exit 0' TERM; n=0; while :; do n=$((n + 1)); echo \"$POD_UID $n\" >> /data/load.log; sleep 0.05; done ) &\nwriter=$!";
  const script = container.command[2]!;
  assert.ok(script.includes("trap 'exit 0' TERM"), "the workload's script ends on SIGTERM with trap 'exit 0' TERM");
  container.command = ["sh", "-c", script.replace("trap 'exit 0' TERM", `${writer}\ntrap 'kill "$writer"; wait "$writer"; exit 0' TERM`)];
  container.env = [...(container.env ?? []), { name: "POD_UID", valueFrom: { fieldRef: { fieldPath: "metadata.uid" } } }];
  return sts;
}

/** A writer's log, as (uid, count) segments: each pod's lines together, numbered 1, 2, 3, ... with no gap. */
export function writerSegments(log: string, context: string): { uid: string; lines: number }[] {
  const segments: { uid: string; lines: number }[] = [];
  for (const [i, line] of log.trim().split("\n").filter(Boolean).entries()) {
    const [uid = "", n = ""] = line.split(" ");
    const last = segments.at(-1);
    if (last?.uid === uid) {
      assert.equal(Number(n), last.lines + 1, `${context}: line ${i + 1} of load.log is "${line}" after ${last.lines} line(s) of ${uid}`);
      last.lines += 1;
    } else {
      assert.ok(!segments.some((s) => s.uid === uid), `${context}: pod ${uid} writes again at line ${i + 1} after another pod`);
      assert.equal(n, "1", `${context}: pod ${uid}'s first line is "${line}" (a writer counts from 1)`);
      segments.push({ uid, lines: 1 });
    }
  }
  return segments;
}

/**
 * What a moved claim must hold: the kept old volume's log is a prefix of the new volume's (every
 * line every old pod wrote, its last one included), and the rest was written by the pod that runs
 * on the new volume now, from its first line.
 */
export function assertLogMoved(oldLog: string, newLog: string, newPodUid: string, context: string): void {
  const old = writerSegments(oldLog, `${context} (old volume)`);
  assert.ok(old.length > 0, `${context}: the old volume has no line`);
  assert.ok(newLog.startsWith(oldLog), `${context}: the new volume's load.log does not start with the old volume's (${oldLog.length} bytes, last line "${oldLog.trim().split("\n").at(-1)}")`);
  const after = writerSegments(newLog.slice(oldLog.length), `${context} (new volume, after the move)`);
  assert.deepEqual(
    after.map((s) => s.uid),
    [newPodUid],
    `${context}: after the old volume's lines, only the pod on the new volume writes`,
  );
  writerSegments(newLog, `${context} (new volume)`);
}

/**
 * Every entry below a folder, one line each, sorted: type, owner, group, mode, mtime, size (not
 * for directories, whose size is the file system's), and for a symlink its target; then the
 * sha256 of every regular file. `skip`: paths (from the folder) left out, e.g. a log that grows.
 */
export function statScript(dir: string, skip: string[] = []): string {
  const drop = ["./lost+found", ...skip].map((p) => `-e '^${p.replace(/[.]/g, "\\.")}[|/ ]' -e '^${p.replace(/[.]/g, "\\.")}$'`).join(" ");
  return [
    `cd ${dir}`,
    `{ find . -mindepth 1 ! -type l -exec stat -c '%n|%F|%u|%g|%a|%Y|%s' {} + | awk -F'|' -v OFS='|' '$2 == "directory" { $7 = "-" } { print }'`,
    `  find . -mindepth 1 -type l -exec stat -c '%n|link|%u|%g|%N' {} +`,
    `  find . -mindepth 1 -type f -exec sha256sum {} + | awk '{ print $2 "|sha256|" $1 }'; } | grep -v ${drop} | LC_ALL=C sort`,
  ].join("\n");
}

/** The tree at /data of a running pod (statScript). */
export const statInPod = (ns: string, pod: string, skip: string[] = []) => exec(ns, pod, statScript("/data", skip));

/**
 * Runs `script` in a pod of the test's own that mounts kept old volumes (read-only, the i-th at
 * /kept/i), and returns what it printed. Each volume (Released, Retain) is bound for it to a claim
 * of its own and released again after (it stays Retain; deleteKeptVolumes gives it Delete when the
 * test ends).
 */
export async function onKeptVolumes(ns: string, pvNames: string[], script: string): Promise<string> {
  const claims = pvNames.map((pvName) => {
    const pv = kubectlJson<PersistentVolume>(["get", "pv", pvName]);
    const claim = `kept-${pvName}`.slice(0, 63).replace(/-+$/, "");
    kubectl(["patch", "pv", pvName, "--type=merge", "-p", JSON.stringify({ spec: { claimRef: { namespace: ns, name: claim, uid: null, resourceVersion: null } } })]);
    apply(
      {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: claim },
        spec: { accessModes: pv.spec["accessModes"], storageClassName: pv.spec.storageClassName ?? "", volumeName: pvName, resources: { requests: { storage: pv.spec.capacity?.["storage"] } } },
      },
      ns,
    );
    return claim;
  });
  const podName = `read-kept-${Date.now()}`;
  try {
    for (const claim of claims) {
      await eventually(`claim ${claim} bound to its kept volume`, () => kubectlJson<{ status?: { phase?: string } }>(["get", "pvc", claim, "-n", ns]).status?.phase === "Bound", 60_000);
    }
    apply(
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: podName },
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: "read",
              image: workloadImage,
              imagePullPolicy: "Never",
              command: ["sh", "-c", script],
              volumeMounts: claims.map((_, i) => ({ name: `kept-${i}`, mountPath: `/kept/${i}`, readOnly: true })),
            },
          ],
          volumes: claims.map((claimName, i) => ({ name: `kept-${i}`, persistentVolumeClaim: { claimName, readOnly: true } })),
        },
      },
      ns,
    );
    const done = await eventually(
      `pod ${podName} reading the kept volumes`,
      () => {
        const p = kubectlJson<Pod>(["get", "pod", podName, "-n", ns]);
        return p.status?.phase === "Succeeded" || p.status?.phase === "Failed" ? p : undefined;
      },
      120_000,
    );
    const out = kubectl(["logs", podName, "-n", ns]);
    assert.equal(done.status?.phase, "Succeeded", `reading kept volumes ${pvNames.join(", ")}: ${out}`);
    return out;
  } finally {
    kubectlTry(["delete", "pod", podName, "-n", ns, "--wait=true", "--timeout=60s"]);
    for (const claim of claims) kubectlTry(["delete", "pvc", claim, "-n", ns, "--wait=true", "--timeout=60s"]);
  }
}

/** Per kept volume, its tree (statScript, without load.log) and its load.log, read by one pod. */
export async function keptTreesAndLogs(ns: string, pvNames: string[]): Promise<{ tree: string; log: string }[]> {
  const mark = (i: number, what: string) => `----- ${i} ${what}`;
  const script = pvNames.map((_, i) => `echo '${mark(i, "tree")}'\n( ${statScript(`/kept/${i}`, ["./load.log"])} )\necho '${mark(i, "log")}'\ncat /kept/${i}/load.log`).join("\n");
  const out = await onKeptVolumes(ns, pvNames, script);
  return pvNames.map((_, i) => {
    const from = out.indexOf(`${mark(i, "tree")}\n`) + mark(i, "tree").length + 1;
    const mid = out.indexOf(`${mark(i, "log")}\n`);
    const end = i + 1 < pvNames.length ? out.indexOf(`${mark(i + 1, "tree")}\n`) : out.length;
    return { tree: out.slice(from, mid), log: out.slice(mid + mark(i, "log").length + 1, end) };
  });
}

/**
 * A tree of every kind of entry in /data of a running pod, each with its own owner, group, mode
 * and modification time: directories (one private), files, an empty file, a symlink to a file, a
 * dangling symlink, a fifo; so the test's own stat of both volumes compares them.
 */
export function makeTree(ns: string, pod: string): void {
  exec(
    ns,
    pod,
    [
      "set -e",
      "mkdir -p /data/tree/a/b /data/tree/private",
      "printf hello > /data/tree/a/b/file && chown 1001:1002 /data/tree/a/b/file && chmod 0640 /data/tree/a/b/file",
      ": > /data/tree/empty && chown 0:1234 /data/tree/empty && chmod 0604 /data/tree/empty",
      "ln -s a/b/file /data/tree/link && ln -s /nowhere /data/tree/dangling && chown -h 1001:1001 /data/tree/link",
      "mkfifo /data/tree/fifo && chmod 0600 /data/tree/fifo",
      "chown 1234:5678 /data/tree/a/b && chmod 0750 /data/tree/private && chmod 2775 /data/tree/a",
      "touch -h -d '2020-01-02 03:04:05' /data/tree/a/b/file /data/tree/empty /data/tree/fifo /data/tree/a/b /data/tree/private /data/tree/a /data/tree",
      "sync",
    ].join("\n"),
  );
}

/** A large file: `mib` MiB of random bytes at /data/big (over the copy's 64 MiB, so copied by blocks of 16 MiB). */
export function makeBigFile(ns: string, pod: string, mib: number): void {
  exec(ns, pod, `head -c ${mib * 1048576} /dev/urandom > /data/big.new && sync && mv /data/big.new /data/big && sync`);
}

/** Rewrites 1 MiB of random bytes at the start of each 16 MiB block given, in place. */
export function touchBlocks(ns: string, pod: string, blocks: number[]): void {
  exec(ns, pod, `${blocks.map((b) => `dd if=/dev/urandom of=/data/big bs=1048576 seek=${b * 16} count=1 conv=notrunc 2>/dev/null`).join(" && ")} && sync`);
}

/** The capabilities a copy pod may add (a faithful copy's needs), and the tolerations admission adds to every pod. */
const copyCapabilitiesAllowed = ["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "SETFCAP", "MKNOD"];
const admissionTolerations = ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"];

/**
 * A pod of the tool's, as admitted, is hardened: not privileged, capabilities dropped (ALL) but
 * those a faithful copy needs, no privilege escalation, RuntimeDefault seccomp, no service account
 * token (and no token volume), the claim mounted read-only (a probe pod mounts none), the image asked for, and tolerations of
 * exactly `taints` (beside the not-ready and unreachable ones DefaultTolerationSeconds gives every
 * pod), never a blanket one.
 */
export function assertHardened(pod: Pod, image: string, taints: { key: string; value?: string; effect: string }[]): void {
  const name = pod.metadata.name ?? pod.metadata.generateName ?? "";
  const probe = pod.metadata.annotations?.["appstorage.kubectl.io/copy"] === "probe";
  const spec = pod.spec as {
    automountServiceAccountToken?: boolean;
    securityContext?: { seccompProfile?: { type?: string } };
    tolerations?: { key?: string; operator?: string; value?: string; effect?: string }[];
    containers: {
      image: string;
      securityContext?: { privileged?: boolean; allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[]; add?: string[] }; seccompProfile?: { type?: string } };
      volumeMounts?: { name: string; readOnly?: boolean }[];
    }[];
    initContainers?: unknown[];
    volumes?: { name: string; persistentVolumeClaim?: { readOnly?: boolean }; projected?: unknown }[];
  };
  assert.equal(spec.automountServiceAccountToken, false, `${name}: no service account token`);
  assert.ok(!(spec.volumes ?? []).some((v) => v.projected !== undefined), `${name}: no token volume: ${JSON.stringify(spec.volumes)}`);
  assert.equal(spec.initContainers, undefined, `${name}: no init container`);
  for (const c of spec.containers) {
    const sc = c.securityContext ?? {};
    assert.equal(c.image, image, `${name}: image`);
    assert.equal(sc.privileged, false, `${name}: not privileged`);
    assert.equal(sc.allowPrivilegeEscalation, false, `${name}: no privilege escalation`);
    assert.deepEqual(sc.capabilities?.drop, ["ALL"], `${name}: every capability dropped`);
    assert.ok(
      (sc.capabilities?.add ?? []).every((x) => copyCapabilitiesAllowed.includes(x)),
      `${name}: only a faithful copy's capabilities: ${JSON.stringify(sc.capabilities?.add)}`,
    );
    assert.equal(sc.seccompProfile?.type ?? spec.securityContext?.seccompProfile?.type, "RuntimeDefault", `${name}: seccomp RuntimeDefault`);
    if (probe) continue;
    const src = (c.volumeMounts ?? []).find((m) => m.name === "src");
    assert.equal(src?.readOnly, true, `${name}: the claim mounted read-only`);
  }
  // A probe pod (it proves the copy image starts on the node, before the journal) mounts no claim at all.
  if (probe)
    assert.deepEqual(
      (spec.volumes ?? []).filter((v) => v.persistentVolumeClaim),
      [],
      `${name}: a probe mounts no claim`,
    );
  else assert.equal(spec.volumes?.find((v) => v.name === "src")?.persistentVolumeClaim?.readOnly, true, `${name}: the claim's volume read-only`);
  const tolerations = (spec.tolerations ?? []).filter((t) => !admissionTolerations.includes(t.key ?? ""));
  assert.ok(!tolerations.some((t) => !t.key), `${name}: no blanket toleration: ${JSON.stringify(spec.tolerations)}`);
  const expected = taints.map((t) => ({ key: t.key, operator: t.value ? "Equal" : "Exists", ...(t.value ? { value: t.value } : {}), effect: t.effect }));
  assert.deepEqual(tolerations, expected, `${name}: exactly its node's taints tolerated`);
}
