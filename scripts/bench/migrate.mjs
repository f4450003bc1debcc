// The --migrate-existing rows of the bench, on the real node (scripts/cluster up --node). For each
// shape of data (1 GiB in 16,384 files of 64 KiB; 1 GiB in one file; 4 GiB in 65,536 files of
// 64 KiB), in one run, 5 rounds, each alternating the plugin and its references on the same replica:
//   - a plain restart: the replica evicted through the Eviction API, timed until its new pod is
//     Ready, as the plugin times its downtime (from the eviction request until Ready is seen);
//   - `set --migrate-existing` to the other class (appstorage-csi <-> appstorage-csi-b, so every
//     round moves): the first copy, timed inside the copy pod (the copy alone, and with the hashing
//     of both sides the final copy relies on); the change (1% of the data) made once that first copy
//     finished: the plugin is held at the move's orphan delete by the test's proxy
//     (test/shared/faultproxy.ts) while the replica rewrites it; then how long the replica was down;
//   - a tar pipe between the same two kinds of volume in one pod (the claim read-only, a new claim
//     of the other class), timed inside the pod; and the same pipe followed by sha256sum of both
//     trees in that pod: what a user copying with verification would run;
//   - for the one file: one read of the changed file on the volume the next move reads it from
//     (dd to /dev/null, and sha256sum), in the replica, timed there.
// Medians of the 5 rounds. Targets: small files, down <= a plain restart + 1.0 s; one file, down <=
// a plain restart + one read of the file + 1.0 s; 4 GiB of small files against 1 GiB, the same
// change: down within 1.2x; first copy with its hashing >= 0.8x the tar pipe with sha256sum, the
// copy alone >= 0.8x the tar pipe (throughput: their time over the plugin's).
// Usage: npm run bench:migrate [-- SHAPE...] (small1, big1, small4; all by default). Brings the node
// cluster up if it is not, and down again if it started it. Prints the rows, writes
// dist/bench/migrate.json and the plugin's progress of every move to dist/bench/migrate-SHAPE-N.log.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import * as https from "node:https";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const require = createRequire(import.meta.url);
// The proxy that holds the plugin at its orphan delete (TypeScript, loaded through test/register.cjs: see package.json).
const { startFaultProxy } = require("../../test/shared/faultproxy.ts");
const { parse } = require("yaml");
const plugin = process.env.APPSTORAGE_PLUGIN ?? join(root, "dist", "kubectl-appstorage");
process.env.APPSTORAGE_PORT_BASE ??= "18440";
process.env.APPSTORAGE_CLUSTER_DIR ??= join(process.env.HOME ?? "/root", ".cache", "kubectl-appstorage", "cluster-node");
const kubeconfig = join(process.env.APPSTORAGE_CLUSTER_DIR, "admin.kubeconfig");
const image = "appstorage.local/workload:1";
// The copy pods' image: busybox and rsync (lab/node/images.sh).
const copyImage = "appstorage.local/copy:1";
const ns = `bench-migrate-${randomBytes(3).toString("hex")}`;
const stateDir = mkdtempSync(join(tmpdir(), "appstorage-bench-"));
const rounds = Number(process.env.BENCH_MIGRATE_ROUNDS ?? 5);
const log = (m) => process.stderr.write(`bench-migrate: ${m}\n`);
const classes = ["appstorage-csi", "appstorage-csi-b"];

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 1 << 26, input: opts.input, env: { ...process.env, APPSTORAGE_STATE_DIR: stateDir } });
  if (r.status !== 0 && !opts.allowFail) throw new Error(`${[cmd, ...args].join(" ")} exited ${r.status}: ${(r.stderr || r.stdout).trim().slice(0, 2000)}`);
  return r;
}
const kubectl = (args, opts) => run("kubectl", ["--kubeconfig", kubeconfig, ...args], opts);
const apply = (obj) => kubectl(["apply", "-n", ns, "-f", "-"], { input: JSON.stringify(obj) });
const exec = (pod, script) => kubectl(["exec", "-n", ns, pod, "-c", "app", "--", "sh", "-c", script]).stdout;
const getJson = (args) => JSON.parse(kubectl([...args, "-o", "json"]).stdout);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The API server, straight (no kubectl process start in a timed path): the eviction and the watch of the plain restart. */
function apiClient() {
  const kc = parse(readFileSync(kubeconfig, "utf8"));
  const server = new URL(kc.clusters[0].cluster.server);
  const user = kc.users[0].user;
  const agent = new https.Agent({
    ca: Buffer.from(kc.clusters[0].cluster["certificate-authority-data"], "base64"),
    cert: Buffer.from(user["client-certificate-data"], "base64"),
    key: Buffer.from(user["client-key-data"], "base64"),
    keepAlive: true,
  });
  const request = (method, path, body, onData) =>
    new Promise((res, rej) => {
      const req = https.request({ hostname: server.hostname, port: server.port, method, path, agent, headers: { "Content-Type": "application/json" } }, (r) => {
        let text = "";
        r.on("data", (c) => {
          text += c.toString();
          if (onData && onData(text)) {
            req.destroy();
            res(text);
          }
        });
        r.on("end", () => (r.statusCode < 300 ? res(text) : rej(new Error(`${method} ${path}: ${r.statusCode} ${text.slice(0, 300)}`))));
      });
      req.on("error", (e) => (onData ? undefined : rej(e)));
      req.end(body ? JSON.stringify(body) : undefined);
    });
  return { request, close: () => agent.destroy() };
}

async function until(what, check, ms = 600_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

function statefulSet(name, cls, size) {
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
              readinessProbe: { exec: { command: ["true"] }, periodSeconds: 1, failureThreshold: 1 },
            },
          ],
        },
      },
      volumeClaimTemplates: [{ metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"], storageClassName: cls, resources: { requests: { storage: size } } } }],
    },
  };
}

const ready = (pod) => {
  const r = kubectl(["get", "pod", pod, "-n", ns, "-o", "json"], { allowFail: true });
  if (r.status !== 0) return false;
  const p = JSON.parse(r.stdout);
  return p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
};

/** A pod on the replica's node with the claim (read-only) at /src and a new claim of `cls` at /dst, running `script`; its termination message. */
async function pipePod(name, cls, size, script) {
  const claim = `pipe-${name}`;
  apply({ apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name: claim }, spec: { accessModes: ["ReadWriteOnce"], storageClassName: cls, resources: { requests: { storage: size } } } });
  const node = getJson(["get", "pod", `${name}-0`, "-n", ns]).spec.nodeName;
  apply({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: claim },
    spec: {
      restartPolicy: "Never",
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name", operator: "In", values: [node] }] }] } } },
      containers: [
        {
          name: "pipe",
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
  const message = await until("the pipe pod", () => {
    const p = getJson(["get", "pod", claim, "-n", ns]);
    if (p.status?.phase === "Failed") throw new Error(`the pipe pod failed: ${JSON.stringify(p.status)}`);
    return p.status?.phase === "Succeeded" ? p.status.containerStatuses[0].state.terminated.message : undefined;
  });
  kubectl(["delete", "pod,pvc", claim, "-n", ns, "--wait=true"]);
  return JSON.parse(message);
}

const clock = "$(cut -d' ' -f1 /proc/uptime)";
const took = (from) => `$(awk -v a=${from} -v b=${clock} 'BEGIN { printf "%.2f", b - a }')`;
/** The tar pipe alone, and the tar pipe then sha256sum of every file of both trees (both sides at once, as the plugin hashes them). */
const tarScript = `t0=${clock}; tar cf - -C /src . | tar xf - -C /dst; sync; printf '{"seconds":%s}' "${took("$t0")}" > /dev/termination-log`;
const tarShaScript = `t0=${clock}; tar cf - -C /src . | tar xf - -C /dst; sync; (cd /src && find . -type f -exec sha256sum {} + > /tmp/src.sha) & (cd /dst && find . -type f -exec sha256sum {} + > /tmp/dst.sha) & wait; printf '{"seconds":%s}' "${took("$t0")}" > /dev/termination-log`;

/** A plain restart: the replica evicted (the Eviction API, as the plugin), timed until its new pod is Ready (a watch, as the plugin). */
async function plainRestart(api, name) {
  const pod = `${name}-0`;
  const uid = getJson(["get", "pod", pod, "-n", ns]).metadata.uid;
  let readyAt;
  const watching = api.request("GET", `/api/v1/namespaces/${ns}/pods?watch=1&fieldSelector=metadata.name%3D${pod}&timeoutSeconds=300`, undefined, (text) => {
    // Whole lines only: the last one may still be arriving.
    for (const line of text.split("\n").slice(0, -1).filter(Boolean)) {
      const e = JSON.parse(line);
      if (e.object?.metadata?.uid !== uid && e.object?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")) {
        readyAt ??= performance.now();
        return true;
      }
    }
    return false;
  });
  await sleep(200);
  const t0 = performance.now();
  await api.request("POST", `/api/v1/namespaces/${ns}/pods/${pod}/eviction`, { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: pod, namespace: ns } });
  await watching;
  if (readyAt === undefined) throw new Error(`${pod} was not seen Ready again`);
  return Number(((readyAt - t0) / 1000).toFixed(2));
}

/**
 * `set --migrate-existing` to `cls`, held at the move's orphan delete (the re-create's is the
 * first; the move's, once its first copy is done and its final copy's pod waits, the second) while
 * `change` runs in the replica. What the plugin printed, parsed.
 */
async function migrate(name, cls, size, change) {
  const proxy = await startFaultProxy(kubeconfig, [{ kind: "hold", signature: "delete statefulsets", nth: 1 }]);
  try {
    const child = spawn(plugin, ["set", name, `data=${size},${cls}`, "--migrate-existing", "--copy-image", copyImage, "--timeout", "900s", "-n", ns, "--yes", "--kubeconfig", proxy.kubeconfig], {
      env: { ...process.env, APPSTORAGE_STATE_DIR: stateDir },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d.toString()));
    const exited = new Promise((r) => child.on("close", (code) => r(code)));
    const held = await Promise.race([proxy.nextHeld(900_000), exited.then((code) => Promise.reject(new Error(`the plugin exited ${code} before its orphan delete:\n${stderr}`)))]);
    if (!/copied \d+ bytes/.test(stderr)) throw new Error(`held before the first copy was done:\n${stderr}`);
    exec(`${name}-0`, change);
    held.release();
    const code = await exited;
    if (code !== 0) throw new Error(`set --migrate-existing exited ${code}:\n${stderr}`);
    const num = (re) => Number(re.exec(stderr)?.[1]);
    const final = /final copy ([\d.]+)s(?:, (\d+) block\(s\) rewritten in \d+ large file\(s\))?, verification ([\d.]+)s/.exec(stderr);
    const at = (re) => Number(new RegExp(`^\\[([\\d.]+)s\\] .*${re.source}`, "m").exec(stderr)?.[1]);
    return {
      copySeconds: num(/ in ([\d.]+)s \([\d.]+ MiB\/s;/),
      hashSeconds: num(/hashing both sides ([\d.]+)s/),
      downSeconds: num(/it was down ([\d.]+)s/),
      finalCopySeconds: Number(final?.[1]),
      blocks: final?.[2] === undefined ? undefined : Number(final[2]),
      verifySeconds: Number(final?.[3]),
      finalPhaseSeconds: Number((at(/verified \d+ files/) - at(/told copy pod \S+ to make the final copy/)).toFixed(2)),
      stderr,
    };
  } finally {
    await proxy.close();
  }
}

/** Small files: N files of 64 KiB in 128 folders (file i in folder i % 128), from 64 MiB of random bytes. */
const fillSmall = (n) =>
  `head -c 67108864 /dev/urandom > /tmp/r && mkdir -p /data/f && i=0; while [ $i -lt 128 ]; do mkdir -p /data/f/$i; i=$((i + 1)); done; i=0; while [ $i -lt ${n} ]; do dd if=/tmp/r of=/data/f/$((i % 128))/$i bs=65536 count=1 skip=$((i % 1024)) 2>/dev/null; i=$((i + 1)); done; rm /tmp/r; sync`;
/** 164 files (1% of 16,384: 10.25 MiB) rewritten in place, spread over the folders. */
const changeSmall = (n) => `i=0; while [ $i -lt 164 ]; do j=$((i * 97 % ${n})); head -c 65536 /dev/urandom > /data/f/$((j % 128))/$j; i=$((i + 1)); done; sync`;

const shapes = {
  small1: { what: "1 GiB in 16,384 files of 64 KiB", size: "2Gi", fill: fillSmall(16384), change: changeSmall(16384) },
  big1: {
    what: "1 GiB in one file",
    size: "2Gi",
    fill: "head -c 1073741824 /dev/urandom > /data/big && sync",
    // 1% of the file (10 MiB, one place), rewritten in place.
    change: "dd if=/dev/urandom of=/data/big bs=1048576 count=10 seek=500 conv=notrunc 2>/dev/null && sync",
    read: true,
  },
  small4: { what: "4 GiB in 65,536 files of 64 KiB, the same 164 files changed", size: "6Gi", fill: fillSmall(65536), change: changeSmall(65536) },
};

/** Every kept old volume of the namespace given reclaim policy Delete (the bench keeps no data). */
function dropKeptVolumes() {
  for (const pv of kubectl(["get", "pv", "-l", `appstorage.kubectl.io/namespace=${ns}`, "-o", "name"], { allowFail: true })
    .stdout.trim()
    .split("\n")
    .filter(Boolean)) {
    kubectl(["patch", pv, "-p", '{"spec":{"persistentVolumeReclaimPolicy":"Delete"}}'], { allowFail: true });
  }
}

async function benchShape(api, key) {
  const s = shapes[key];
  apply(statefulSet(key, classes[0], s.size));
  await until(`${key}-0 Ready`, () => ready(`${key}-0`));
  log(`${s.what}: filling`);
  exec(`${key}-0`, s.fill);
  const r = { restart: [], down: [], copy: [], hash: [], tar: [], tarSha: [], read: [], sha: [], final: [], blocks: [] };
  for (let i = 0; i < rounds; i++) {
    const to = classes[(i + 1) % 2];
    // Alternated: the references before the move in even rounds, after it in odd ones.
    const references = async () => {
      r.restart.push(await plainRestart(api, key));
      await until(`${key}-0 Ready`, () => ready(`${key}-0`));
      r.tar.push((await pipePod(key, to, s.size, tarScript)).seconds);
      r.tarSha.push((await pipePod(key, to, s.size, tarShaScript)).seconds);
      if (s.read) {
        r.read.push(Number(exec(`${key}-0`, `t0=${clock}; dd if=/data/big of=/dev/null bs=1048576 2>/dev/null; echo ${took("$t0")}`).trim()));
        r.sha.push(Number(exec(`${key}-0`, `t0=${clock}; sha256sum /data/big >/dev/null; echo ${took("$t0")}`).trim()));
      }
    };
    if (i % 2 === 0) await references();
    log(`${s.what}: round ${i + 1}, moving to ${to}`);
    const m = await migrate(key, to, s.size, s.change);
    await until(`${key}-0 Ready`, () => ready(`${key}-0`));
    dropKeptVolumes();
    mkdirSync(join(root, "dist", "bench"), { recursive: true });
    writeFileSync(join(root, "dist", "bench", `migrate-${key}-${i + 1}.log`), m.stderr);
    r.down.push(m.downSeconds);
    r.copy.push(m.copySeconds);
    r.hash.push(m.copySeconds + m.hashSeconds);
    r.final.push(m.finalPhaseSeconds);
    if (m.blocks !== undefined) r.blocks.push(m.blocks);
    if (i % 2 === 1) await references();
    log(`${s.what}: round ${i + 1}: down ${m.downSeconds}s (restart ${r.restart.at(-1)}s), copy ${m.copySeconds}s (tar ${r.tar.at(-1)}s)`);
  }
  kubectl(["delete", "statefulset", key, "-n", ns, "--wait=true"]);
  kubectl(["delete", "pvc", `data-${key}-0`, "-n", ns, "--wait=false"]);
  return {
    shape: s.what,
    samples: r,
    median: Object.fromEntries(
      Object.entries(r)
        .filter(([, v]) => v.length)
        .map(([k, v]) => [k, median(v)]),
    ),
  };
}

async function main() {
  const chosen = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(shapes);
  for (const c of chosen) if (!shapes[c]) throw new Error(`unknown shape ${c}: ${Object.keys(shapes).join(", ")}`);
  // The commit the run measures, read before it (a commit made meanwhile is not the one measured).
  const commit = run("git", ["-C", root, "rev-parse", "--short=12", "HEAD"]).stdout.trim();
  const dirty = run("git", ["-C", root, "status", "--porcelain", "--untracked-files=no"]).stdout.trim() !== "";
  const started = run("bash", [join(root, "scripts", "cluster"), "status"], { allowFail: true }).status !== 0;
  if (started) run("bash", [join(root, "scripts", "cluster"), "up", "--node"]);
  const api = apiClient();
  const results = {};
  try {
    kubectl(["create", "namespace", ns]);
    for (const key of chosen) results[key] = await benchShape(api, key);
  } finally {
    api.close();
    kubectl(["delete", "namespace", ns, "--wait=false"], { allowFail: true });
    dropKeptVolumes();
    if (started) run("bash", [join(root, "scripts", "cluster"), "down"], { allowFail: true });
  }
  mkdirSync(join(root, "dist", "bench"), { recursive: true });
  writeFileSync(join(root, "dist", "bench", "migrate.json"), `${JSON.stringify({ commit, dirty, at: new Date().toISOString(), rounds, results }, null, 2)}\n`);
  report(commit + (dirty ? " (with uncommitted changes)" : ""), results);
}

function report(commit, results) {
  const line = (a) => a.map((x, i) => String(x).padEnd([58, 12, 30, 9][i] ?? 10)).join(" ");
  const rows = [];
  const small1 = results.small1?.median;
  for (const [key, res] of Object.entries(results)) {
    const m = res.median;
    rows.push([`${res.shape}`, "", "", "", ""]);
    if (key === "big1") {
      const limit = m.restart + m.read + 1;
      rows.push([`  down, 1% changed after the first copy`, `${m.down}s`, `restart ${m.restart}s + read ${m.read}s + 1.0s`, `${(m.down - limit).toFixed(2)}s`, m.down <= limit ? "met" : "MISSED"]);
      rows.push([`    for reference: that read with sha256sum`, `${m.sha}s`, "", "", ""]);
    } else {
      const limit = m.restart + 1;
      rows.push([`  down, 1% changed after the first copy`, `${m.down}s`, `restart ${m.restart}s + 1.0s`, `${(m.down - limit).toFixed(2)}s`, m.down <= limit ? "met" : "MISSED"]);
    }
    if (key === "small4" && small1)
      rows.push([
        `  down against 1 GiB of small files, the same change`,
        `${m.down}s`,
        `${small1.down}s`,
        `${(m.down / small1.down).toFixed(2)}x`,
        m.down / small1.down <= 1.2 ? "<= 1.2x met" : "<= 1.2x MISSED",
      ]);
    rows.push([`    final copy pod, told to go until verified`, `${m.final}s`, "", "", m.blocks !== undefined ? `${m.blocks} block(s) rewritten` : ""]);
    rows.push([
      `  first copy with its hashing (throughput)`,
      `${m.hash.toFixed(2)}s`,
      `tar + sha256sum ${m.tarSha}s`,
      `${(m.tarSha / m.hash).toFixed(2)}x`,
      m.tarSha / m.hash >= 0.8 ? ">= 0.8x met" : ">= 0.8x MISSED",
    ]);
    rows.push([`  first copy alone (throughput)`, `${m.copy}s`, `tar ${m.tar}s`, `${(m.tar / m.copy).toFixed(2)}x`, m.tar / m.copy >= 0.8 ? ">= 0.8x met" : ">= 0.8x MISSED"]);
  }
  console.log(`--migrate-existing on the node, at ${commit}, medians of ${rounds}:`);
  console.log(line(["benchmark", "plugin", "reference", "margin", "target"]));
  for (const r of rows) console.log(line(r));
}

main().catch((e) => {
  console.error(`bench-migrate: ${e.stack ?? e}`);
  process.exit(1);
});
