// The --migrate-existing rows of the bench, on the real node (scripts/cluster up --node): for
// 1 GiB in one file and 1 GiB in many small files, in one run:
//   1. a plain tar pipe between the same two volumes (the claim mounted read-only and a new
//      claim of appstorage-csi-b, in one pod on the node), timed inside the pod;
//   2. `set --migrate-existing` of the same claim to appstorage-csi-b: its first copy, timed
//      inside the copy pod (the plugin prints it), against (1): throughput >= 0.8x;
//   3. the move back, with 1% of the data rewritten while the first copy runs: how long the
//      replica was down (the plugin prints it), against that move's first copy: <= 0.2x;
//   4. a plain restart of the same replica (evicted, then Ready again, nothing copied; the median
//      of three), against the same first copy, for reference: what a stop and start take here.
// The plugin's progress of each move goes to dist/bench/migrate-SHAPE-there|back.log.
// Prints the rows and writes dist/bench/migrate.json. Usage: node scripts/bench/migrate.mjs
// (brings the node cluster up if it is not, and down again if it started it).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const plugin = join(root, "dist", "kubectl-appstorage");
process.env.APPSTORAGE_PORT_BASE ??= "18440";
process.env.APPSTORAGE_CLUSTER_DIR ??= join(process.env.HOME ?? "/root", ".cache", "kubectl-appstorage", "cluster-node");
const kubeconfig = join(process.env.APPSTORAGE_CLUSTER_DIR, "admin.kubeconfig");
const image = "appstorage.local/workload:1";
const ns = `bench-migrate-${randomBytes(3).toString("hex")}`;
const stateDir = mkdtempSync(join(tmpdir(), "appstorage-bench-"));
const log = (m) => process.stderr.write(`bench-migrate: ${m}\n`);

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 1 << 26, input: opts.input, env: { ...process.env, APPSTORAGE_STATE_DIR: stateDir } });
  if (r.status !== 0 && !opts.allowFail) throw new Error(`${[cmd, ...args].join(" ")} exited ${r.status}: ${(r.stderr || r.stdout).trim().slice(0, 2000)}`);
  return r;
}
const kubectl = (args, opts) => run("kubectl", ["--kubeconfig", kubeconfig, ...args], opts);
const apply = (obj) => kubectl(["apply", "-n", ns, "-f", "-"], { input: JSON.stringify(obj) });
const exec = (pod, script) => kubectl(["exec", "-n", ns, pod, "-c", "app", "--", "sh", "-c", script]).stdout;

async function until(what, check, ms = 300_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

function statefulSet(name, cls) {
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name },
    spec: {
      replicas: 1,
      serviceName: name,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          terminationGracePeriodSeconds: 10,
          containers: [
            {
              name: "app",
              image,
              imagePullPolicy: "Never",
              command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done"],
              volumeMounts: [{ name: "data", mountPath: "/data" }],
            },
          ],
        },
      },
      volumeClaimTemplates: [{ metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"], storageClassName: cls, resources: { requests: { storage: "2Gi" } } } }],
    },
  };
}

const ready = (pod) => {
  const r = kubectl(["get", "pod", pod, "-n", ns, "-o", "json"], { allowFail: true });
  if (r.status !== 0) return false;
  const p = JSON.parse(r.stdout);
  return p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
};

/** The tar pipe between the claim (read-only) and a new claim of the other class, timed in the pod. */
async function tarPipe(name, cls) {
  const claim = `tar-${name}`;
  apply({ apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name: claim }, spec: { accessModes: ["ReadWriteOnce"], storageClassName: cls, resources: { requests: { storage: "2Gi" } } } });
  const node = JSON.parse(kubectl(["get", "pod", `${name}-0`, "-n", ns, "-o", "json"]).stdout).spec.nodeName;
  const script =
    "t0=$(cut -d' ' -f1 /proc/uptime); tar cf - -C /src . | tar xf - -C /dst; sync; awk -v a=$t0 -v b=$(cut -d' ' -f1 /proc/uptime) 'BEGIN { printf \"%.2f\", b - a }' > /dev/termination-log";
  apply({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: claim },
    spec: {
      restartPolicy: "Never",
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name", operator: "In", values: [node] }] }] } } },
      containers: [
        {
          name: "tar",
          image,
          imagePullPolicy: "Never",
          command: ["sh", "-c", script],
          volumeMounts: [
            { name: "src", mountPath: "/src", readOnly: true },
            { name: "dst", mountPath: "/dst" },
          ],
        },
      ],
      volumes: [
        { name: "src", persistentVolumeClaim: { claimName: `data-${name}-0`, readOnly: true } },
        { name: "dst", persistentVolumeClaim: { claimName: claim } },
      ],
    },
  });
  const seconds = await until("the tar pipe", () => {
    const p = JSON.parse(kubectl(["get", "pod", claim, "-n", ns, "-o", "json"]).stdout);
    if (p.status?.phase === "Failed") throw new Error(`the tar pod failed: ${JSON.stringify(p.status)}`);
    return p.status?.phase === "Succeeded" ? Number(p.status.containerStatuses[0].state.terminated.message) : undefined;
  });
  kubectl(["delete", "pod,pvc", claim, "-n", ns, "--wait=true"]);
  return seconds;
}

/**
 * A plain restart of the replica, for reference beside a move's downtime: the pod evicted (the
 * Eviction API, as the plugin does), then timed until the StatefulSet's new pod is Ready, with
 * nothing copied and no claim changed. Seconds, polled every 100 ms.
 */
async function plainRestart(name) {
  const pod = `${name}-0`;
  const uid = JSON.parse(kubectl(["get", "pod", pod, "-n", ns, "-o", "json"]).stdout).metadata.uid;
  const t0 = Date.now();
  kubectl(["create", "--raw", `/api/v1/namespaces/${ns}/pods/${pod}/eviction`, "-f", "-"], {
    input: JSON.stringify({ apiVersion: "policy/v1", kind: "Eviction", metadata: { name: pod, namespace: ns } }),
  });
  const end = Date.now() + 300_000;
  while (Date.now() < end) {
    const r = kubectl(["get", "pod", pod, "-n", ns, "-o", "json"], { allowFail: true });
    if (r.status === 0) {
      const p = JSON.parse(r.stdout);
      if (p.metadata.uid !== uid && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")) return (Date.now() - t0) / 1000;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${pod} was not Ready again within 300 s of its eviction`);
}

/** Resolves once the plugin's copy pod of claim data-NAME-0 runs (found by the claim label it carries), or rejects when it ended first. */
async function copyPodRunning(name) {
  const selector = `appstorage.kubectl.io/claim=data-${name}-0`;
  const end = Date.now() + 300_000;
  while (Date.now() < end) {
    const phase = kubectl(["get", "pods", "-n", ns, "-l", selector, "-o", "jsonpath={.items[*].status.phase}"], { allowFail: true }).stdout.trim();
    if (phase === "Running") return;
    if (phase === "Succeeded" || phase === "Failed") throw new Error(`the copy pod of data-${name}-0 ended (${phase}) before the change could be made during the copy`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the copy pod of data-${name}-0 did not run within 300 s`);
}

/**
 * `set --migrate-existing`; `during` runs once the first copy runs (its copy pod Running: the
 * plugin says it is copying before the pod starts, and a quick change made then lands before the
 * copy begins). Returns the copy's and the downtime's seconds.
 */
function migrate(name, cls, during) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(plugin, ["set", name, `data=2Gi,${cls}`, "--migrate-existing", "--copy-image", image, "--timeout", "600s", "-n", ns, "--yes", "--kubeconfig", kubeconfig], {
      env: { ...process.env, APPSTORAGE_STATE_DIR: stateDir },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    let started = false;
    let changed = during ? undefined : Promise.resolve();
    child.stderr.on("data", (d) => {
      stderr += d.toString();
      if (!started && /copying to a new volume/.test(stderr)) {
        started = true;
        if (during) changed = copyPodRunning(name).then(during);
      }
    });
    child.on("close", async (code) => {
      if (code !== 0) return reject(new Error(`set --migrate-existing exited ${code}:\n${stderr}`));
      if (!changed) return reject(new Error("the plugin never said it was copying, so no change was made during the copy"));
      try {
        await changed;
      } catch (e) {
        return reject(e);
      }
      const copy = Number(/ in ([\d.]+)s \([\d.]+ MiB\/s;/.exec(stderr)?.[1]);
      const down = Number(/it was down ([\d.]+)s/.exec(stderr)?.[1]);
      const final = /final copy ([\d.]+)s(?:, (\d+) block\(s\) rewritten in \d+ large file\(s\))?, verification ([\d.]+)s/.exec(stderr);
      // The final copy's pod, from being told to go (or its start, when it was not started early) until verified, by the plugin's clock.
      const at = (re) => Number(new RegExp(`^\\[([\\d.]+)s\\] .*${re.source}`, "m").exec(stderr)?.[1]);
      const told = at(/told copy pod \S+ to make the final copy/);
      const finalPhase = at(/verified \d+ files/) - (Number.isNaN(told) ? at(/final copy of what changed/) : told);
      resolvePromise({
        copySeconds: copy,
        downSeconds: down,
        finalCopySeconds: Number(final?.[1]),
        blocks: final?.[2] === undefined ? undefined : Number(final[2]),
        verifySeconds: Number(final?.[3]),
        finalPhaseSeconds: Number(finalPhase.toFixed(2)),
        stderr,
      });
    });
  });
}

const shapes = [
  {
    name: "onefile",
    what: "1 GiB in one file",
    fill: "head -c 1073741824 /dev/urandom > /data/big && sync",
    change: "dd if=/dev/urandom of=/data/big bs=1048576 count=10 seek=500 conv=notrunc 2>/dev/null && sync",
  },
  {
    name: "smallfiles",
    what: "1 GiB in 16,384 files of 64 KiB",
    fill: "head -c 67108864 /dev/urandom > /tmp/r && mkdir -p /data/f && i=0; while [ $i -lt 16384 ]; do d=/data/f/$((i % 128)); mkdir -p $d; dd if=/tmp/r of=$d/$i bs=65536 count=1 skip=$((i % 1024)) 2>/dev/null; i=$((i + 1)); done; sync",
    // 164 of the 16,384 files (1%), each rewritten in place: file j lives in directory j % 128.
    change: "i=0; while [ $i -lt 164 ]; do j=$((i * 97 % 16384)); head -c 65536 /dev/urandom > /data/f/$((j % 128))/$j; i=$((i + 1)); done; sync",
  },
];

async function main() {
  const started = run("bash", [join(root, "scripts", "cluster"), "status"], { allowFail: true }).status !== 0;
  if (started) run("bash", [join(root, "scripts", "cluster"), "up", "--node"]);
  const rows = [];
  try {
    kubectl(["create", "namespace", ns]);
    for (const s of shapes) {
      apply(statefulSet(s.name, "appstorage-csi"));
      await until(`${s.name}-0 Ready`, () => ready(`${s.name}-0`));
      log(`${s.what}: filling`);
      exec(`${s.name}-0`, s.fill);
      log(`${s.what}: tar pipe`);
      const tar = await tarPipe(s.name, "appstorage-csi-b");
      log(`${s.what}: set --migrate-existing to appstorage-csi-b`);
      const there = await migrate(s.name, "appstorage-csi-b");
      await until(`${s.name}-0 Ready`, () => ready(`${s.name}-0`));
      log(`${s.what}: back to appstorage-csi, 1% rewritten during the first copy`);
      const back = await migrate(s.name, "appstorage-csi", () => exec(`${s.name}-0`, s.change));
      await until(`${s.name}-0 Ready`, () => ready(`${s.name}-0`));
      log(`${s.what}: a plain restart of the replica (evicted until Ready again, nothing copied)`);
      // Three, the median: one restart's time depends on where the node's loops happen to be.
      const restarts = [];
      for (let i = 0; i < 3; i++) {
        restarts.push(await plainRestart(s.name));
        await until(`${s.name}-0 Ready`, () => ready(`${s.name}-0`));
      }
      const restart = restarts.sort((a, b) => a - b)[1];
      mkdirSync(join(root, "dist", "bench"), { recursive: true });
      writeFileSync(join(root, "dist", "bench", `migrate-${s.name}-there.log`), there.stderr);
      writeFileSync(join(root, "dist", "bench", `migrate-${s.name}-back.log`), back.stderr);
      rows.push({ shape: s.what, tarSeconds: tar, copySeconds: there.copySeconds, throughput: tar / there.copySeconds, back, restartSeconds: restart });
      log(
        `${s.what}: tar ${tar}s, copy ${there.copySeconds}s (${(tar / there.copySeconds).toFixed(2)}x); back: copy ${back.copySeconds}s, down ${back.downSeconds}s (${(back.downSeconds / back.copySeconds).toFixed(2)}x)`,
      );
    }
  } finally {
    kubectl(["delete", "namespace", ns, "--wait=false"], { allowFail: true });
    for (const pv of kubectl(["get", "pv", "-l", `appstorage.kubectl.io/namespace=${ns}`, "-o", "name"], { allowFail: true })
      .stdout.trim()
      .split("\n")
      .filter(Boolean)) {
      kubectl(["patch", pv, "-p", '{"spec":{"persistentVolumeReclaimPolicy":"Delete"}}'], { allowFail: true });
    }
    if (started) run("bash", [join(root, "scripts", "cluster"), "down"], { allowFail: true });
  }
  const commit = run("git", ["-C", root, "rev-parse", "--short=12", "HEAD"]).stdout.trim();
  const out = {
    commit,
    at: new Date().toISOString(),
    rows: rows.map(({ back, ...r }) => ({
      ...r,
      downSeconds: back.downSeconds,
      backCopySeconds: back.copySeconds,
      finalCopySeconds: back.finalCopySeconds,
      blocks: back.blocks,
      verifySeconds: back.verifySeconds,
      finalPhaseSeconds: back.finalPhaseSeconds,
      restSeconds: Number((back.downSeconds - back.finalPhaseSeconds).toFixed(2)),
      downRatio: back.downSeconds / back.copySeconds,
      restartRatio: r.restartSeconds / back.copySeconds,
    })),
  };
  mkdirSync(join(root, "dist", "bench"), { recursive: true });
  writeFileSync(join(root, "dist", "bench", "migrate.json"), `${JSON.stringify(out, null, 2)}\n`);
  const line = (a) => a.map((x, i) => String(x).padEnd([50, 14, 12, 10, 10][i] ?? 10)).join(" ");
  console.log(`--migrate-existing on the node, at ${commit}:`);
  console.log(line(["benchmark", "plugin", "tar pipe", "ratio", "target"]));
  for (const r of out.rows) {
    console.log(line([`copy throughput, ${r.shape}`, `${r.copySeconds}s`, `${r.tarSeconds}s`, `${r.throughput.toFixed(2)}x`, `>= 0.8x ${r.throughput >= 0.8 ? "met" : "MISSED"}`]));
    console.log(line([`  down, 1% changed (vs its first copy)`, `${r.downSeconds}s`, `${r.backCopySeconds}s`, `${r.downRatio.toFixed(2)}x`, `<= 0.2x ${r.downRatio <= 0.2 ? "met" : "MISSED"}`]));
    console.log(line([`    final copy pod, told to go until verified`, `${r.finalPhaseSeconds}s`, "", "", ""]));
    console.log(line([`      in it: copy / verification`, `${r.finalCopySeconds}s / ${r.verifySeconds}s${r.blocks === undefined ? "" : ` (${r.blocks} block(s) of 16 MiB rewritten)`}`, "", "", ""]));
    console.log(line([`    the rest: eviction, claim swap, Ready`, `${r.restSeconds}s`, "", "", ""]));
    console.log(line([`  a plain restart (evicted until Ready)`, `${r.restartSeconds.toFixed(1)}s`, `${r.backCopySeconds}s`, `${r.restartRatio.toFixed(2)}x`, "for reference"]));
  }
}

main().catch((e) => {
  console.error(`bench-migrate: ${e.stack ?? e}`);
  process.exit(1);
});
