// Differential suite: for each case, /usr/bin/kubectl and the plugin run with the same
// environment and the same flags against the local control plane, and must get the same answer
// from the server: which user it authenticated (SelfSubjectReview: `kubectl auth whoami`, and
// the plugin's plan, which records the SelfSubjectReview user in its last-change annotation),
// and which namespace was listed (the namespace of the StatefulSets kubectl got back; the
// plan's target namespace), or a refusal by both. Every case also states the expected answer,
// so that both tools being wrong the same way (or a broken setup) fails too.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { load } from "js-yaml";
import { sts } from "../fixtures/builders";
import { apply, kubeconfig, kubectl, kubectlTry, pinnedKubectl, plugin, userKubeconfig } from "../shared/harness";

interface Answer {
  ok: boolean;
  user?: string;
  namespace?: string;
  /** stderr of the failing command, for the assertion message. */
  detail?: string;
}

interface KubeconfigDoc {
  clusters: { name: string; cluster: Record<string, unknown> }[];
  users: { name: string; user: Record<string, unknown> }[];
}

const id = randomBytes(3).toString("hex");
const nsA = `parity-a-${id}`;
const nsB = `parity-b-${id}`;
const role = `parity-reader-${id}`;
const group = `parity-readers-${id}`;
const alice = "parity-alice";
const tmp = mkdtempSync(join(tmpdir(), "parity-"));
const emptyHome = join(tmp, "home");
mkdirSync(emptyHome);
const counter = join(tmp, "exec-calls");
/** The user a token of service account parity-sa (in nsA) is. */
const paritySa = `system:serviceaccount:${nsA}:parity-sa`;

let server = "";
let apiPort = 0;
let caFile = "";
let saToken = "";
/** A token of a second service account (parity-sa-b in nsB, bound to the same reader role). */
let otherSaToken = "";
const files: Record<string, string> = {};
let proxyServer: http.Server;
let proxyPort = 0;
const tunnels: string[] = [];

/** A CONNECT proxy on 127.0.0.1 that tunnels every request to the API server, whatever host it names. */
function startProxy(): Promise<void> {
  proxyServer = http.createServer((_req, res) => res.writeHead(405).end());
  proxyServer.on("connect", (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    tunnels.push(req.url ?? "");
    const upstream = net.connect(apiPort, "127.0.0.1", () => {
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on("error", () => socket.destroy());
    socket.on("error", () => upstream.destroy());
  });
  return new Promise((resolve) =>
    proxyServer.listen(0, "127.0.0.1", () => {
      proxyPort = (proxyServer.address() as net.AddressInfo).port;
      resolve();
    }),
  );
}

/** A SOCKS5 proxy (no authentication) that also sends every connection to the API server. */
let socksServer: net.Server;
let socksPort = 0;
const socksConnections: string[] = [];
function startSocks(): Promise<void> {
  socksServer = net.createServer((socket) => {
    let buffered = Buffer.alloc(0);
    let stage: "greeting" | "request" | "piping" = "greeting";
    socket.on("error", () => socket.destroy());
    socket.on("data", function onData(d: Buffer) {
      buffered = Buffer.concat([buffered, d]);
      if (stage === "greeting" && buffered.length >= 2 && buffered.length >= 2 + buffered[1]!) {
        buffered = buffered.subarray(2 + buffered[1]!);
        socket.write(Buffer.from([5, 0]));
        stage = "request";
      }
      if (stage === "request" && buffered.length >= 5) {
        const type = buffered[3]!;
        const addressLength = type === 1 ? 4 : type === 4 ? 16 : 1 + buffered[4]!;
        if (buffered.length < 4 + addressLength + 2) return;
        const host = type === 3 ? buffered.subarray(5, 5 + buffered[4]!).toString() : type === 1 ? [...buffered.subarray(4, 8)].join(".") : "ipv6";
        socksConnections.push(host);
        const rest = buffered.subarray(4 + addressLength + 2);
        stage = "piping";
        socket.off("data", onData);
        const upstream = net.connect(apiPort, "127.0.0.1", () => {
          socket.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]));
          if (rest.length) upstream.write(rest);
          upstream.pipe(socket);
          socket.pipe(upstream);
        });
        upstream.on("error", () => socket.destroy());
      }
    });
  });
  return new Promise((resolve) =>
    socksServer.listen(0, "127.0.0.1", () => {
      socksPort = (socksServer.address() as net.AddressInfo).port;
      resolve();
    }),
  );
}

function writeKubeconfig(name: string, doc: unknown): string {
  const path = join(tmp, `${name}.kubeconfig`);
  writeFileSync(path, JSON.stringify(doc), { mode: 0o600 });
  return path;
}

before(async () => {
  const adminFile = kubeconfig();
  const admin = load(readFileSync(adminFile, "utf8")) as KubeconfigDoc;
  const local = admin.clusters[0]!.cluster;
  server = String(local["server"]);
  apiPort = Number(new URL(server).port);
  caFile = join(tmp, "ca.crt");
  writeFileSync(caFile, Buffer.from(String(local["certificate-authority-data"]), "base64"));
  const adminUser = admin.users[0]!.user;
  const aliceUser = (load(readFileSync(userKubeconfig(alice), "utf8")) as KubeconfigDoc).users[0]!.user;

  for (const ns of [nsA, nsB]) {
    kubectl(["create", "namespace", ns]);
    apply(sts("web", ns).withClaim("data", "1Gi").build(), ns);
  }
  apply(
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: role },
      rules: [
        { apiGroups: ["apps"], resources: ["statefulsets"], verbs: ["get", "list", "watch"] },
        { apiGroups: [""], resources: ["pods", "persistentvolumeclaims", "secrets", "namespaces"], verbs: ["get", "list", "watch"] },
        { apiGroups: ["storage.k8s.io"], resources: ["storageclasses", "volumeattributesclasses"], verbs: ["get", "list", "watch"] },
      ],
    },
    nsA,
  );
  kubectl(["create", "serviceaccount", "parity-sa", "-n", nsA]);
  kubectl(["create", "clusterrolebinding", role, `--clusterrole=${role}`, `--user=${alice}`, `--group=${group}`, `--serviceaccount=${nsA}:parity-sa`, `--serviceaccount=${nsB}:parity-sa-b`]);
  saToken = kubectl(["create", "token", "parity-sa", "-n", nsA, "--duration", "1h"]).trim();
  kubectl(["create", "serviceaccount", "parity-sa-b", "-n", nsB]);
  otherSaToken = kubectl(["create", "token", "parity-sa-b", "-n", nsB, "--duration", "1h"]).trim();
  const tokenFile = join(tmp, "sa-token");
  writeFileSync(tokenFile, saToken);

  await startProxy();
  await startSocks();
  const cluster = (extra: Record<string, unknown> = {}) => ({ server, "certificate-authority-data": local["certificate-authority-data"], ...extra });
  const users = [
    { name: "admin", user: adminUser },
    { name: "alice", user: aliceUser },
  ];
  /** A kubeconfig with one context, the current one: `user` of `withUsers` on cluster `on` (the local server unless given), in `namespace` if given. */
  const oneContext = (file: string, context: string, c: { user: string; namespace?: string; on?: { name: string; cluster: Record<string, unknown> }; withUsers?: unknown[] }) => {
    const on = c.on ?? { name: "local", cluster: cluster() };
    return writeKubeconfig(file, {
      apiVersion: "v1",
      kind: "Config",
      clusters: [on],
      users: c.withUsers ?? users,
      contexts: [{ name: context, context: { cluster: on.name, user: c.user, ...(c.namespace ? { namespace: c.namespace } : {}) } }],
      "current-context": context,
    });
  };
  files["a"] = writeKubeconfig("a", {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      { name: "local", cluster: cluster() },
      { name: "bad", cluster: cluster({ server: "https://127.0.0.1:1" }) },
    ],
    users,
    contexts: [
      { name: "ctx-a", context: { cluster: "local", user: "admin", namespace: nsA } },
      { name: "ctx-bad", context: { cluster: "bad", user: "admin", namespace: nsA } },
    ],
    "current-context": "ctx-a",
  });
  files["b"] = oneContext("b", "ctx-b", { user: "alice", namespace: nsB });
  // The same context name as in a, meaning alice in nsB.
  files["a2"] = oneContext("a2", "ctx-a", { user: "alice", namespace: nsB });
  files["proxied"] = oneContext("proxied", "p", { user: "admin", namespace: nsA, on: { name: "via-proxy", cluster: cluster({ "proxy-url": `http://127.0.0.1:${proxyPort}` }) } });
  files["nons"] = oneContext("nons", "no-namespace", { user: "alice" });
  files["socks"] = oneContext("socks", "s", { user: "alice", namespace: nsB, on: { name: "via-socks", cluster: cluster({ "proxy-url": `socks5://127.0.0.1:${socksPort}` }) } });
  writeFileSync(join(tmp, "alice.crt"), Buffer.from(String(aliceUser["client-certificate-data"]), "base64"));
  writeFileSync(join(tmp, "alice.key"), Buffer.from(String(aliceUser["client-key-data"]), "base64"), { mode: 0o600 });
  // An exec credential plugin whose credential expires the second it is issued: every request
  // after the first finds it expired and must call the plugin again.
  const execScript = join(tmp, "credential-plugin.sh");
  writeFileSync(
    execScript,
    `#!/bin/sh
echo call >> "$PARITY_COUNTER"
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\\n' "$(cat ${tokenFile})" "$now"
`,
  );
  chmodSync(execScript, 0o755);
  files["exec"] = oneContext("exec", "e", {
    user: "exec-user",
    namespace: nsA,
    withUsers: [
      { name: "exec-user", user: { exec: { apiVersion: "client.authentication.k8s.io/v1", command: execScript, env: [{ name: "PARITY_COUNTER", value: counter }], interactiveMode: "Never" } } },
    ],
  });
  // In-cluster: the service account's folder, mounted at the real path in a private mount namespace.
  const sa = join(tmp, "serviceaccount");
  mkdirSync(sa);
  writeFileSync(join(sa, "token"), saToken);
  writeFileSync(join(sa, "ca.crt"), readFileSync(caFile));
  writeFileSync(join(sa, "namespace"), nsA);
  files["sa"] = sa;
});

after(() => {
  proxyServer?.close();
  socksServer?.close();
  for (const ns of [nsA, nsB]) kubectlTry(["delete", "namespace", ns, "--wait=false"]);
  kubectlTry(["delete", "clusterrolebinding", role]);
  kubectlTry(["delete", "clusterrole", role]);
  rmSync(tmp, { recursive: true, force: true });
});

interface Case {
  name: string;
  /** Evaluated once the setup has run (names, files, tokens). */
  args: () => string[];
  env?: () => Record<string, string>;
  /** Run both inside a mount namespace where the service account folder exists (in-cluster). */
  inCluster?: boolean;
  expect: () => { user: string; namespace: string } | "refused";
  /** For a refusal: what both must say it was (so that a refusal for another reason fails). */
  why?: RegExp;
}

function baseEnv(c: Omit<Case, "args">): Record<string, string> {
  return { PATH: process.env["PATH"] ?? "", HOME: emptyHome, APPSTORAGE_STATE_DIR: join(tmp, "state"), ...(c.env?.() ?? {}) };
}

/** In-cluster runs: a private mount namespace with a tmpfs on /run holding /run/secrets/kubernetes.io/serviceaccount. */
function command(c: Omit<Case, "args">, cmd: string, args: string[]): [string, string[]] {
  if (!c.inCluster) return [cmd, args];
  const script = 'mount -t tmpfs tmpfs /run && mkdir -p /run/secrets/kubernetes.io/serviceaccount && cp "$0"/* /run/secrets/kubernetes.io/serviceaccount/ && exec "$@"';
  return ["unshare", ["-m", "--propagation", "private", "sh", "-c", script, files["sa"]!, cmd, ...args]];
}

function run(c: Omit<Case, "args">, cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const [file, argv] = command(c, cmd, args);
  return new Promise((resolve) => {
    const child = spawn(file, argv, { env: baseEnv(c), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

type Run = Omit<Case, "args"> & { args: string[] };

async function viaKubectl(c: Run): Promise<Answer> {
  const who = await run(c, pinnedKubectl(), ["auth", "whoami", "-o", "json", ...c.args]);
  if (who.code !== 0) return { ok: false, detail: who.stderr.trim() };
  const list = await run(c, pinnedKubectl(), ["get", "statefulsets", "-o", "json", ...c.args]);
  if (list.code !== 0) return { ok: false, detail: list.stderr.trim() };
  const namespaces = [...new Set((JSON.parse(list.stdout) as { items: { metadata: { namespace: string } }[] }).items.map((i) => i.metadata.namespace))];
  assert.equal(namespaces.length, 1, `kubectl listed one namespace: ${namespaces.join(", ")}`);
  return { ok: true, user: (JSON.parse(who.stdout) as { status: { userInfo: { username: string } } }).status.userInfo.username, namespace: namespaces[0]! };
}

function lastChange(value: unknown): { by?: string } | undefined {
  if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "appstorage.kubectl.io/last-change" && typeof v === "string") return JSON.parse(v) as { by?: string };
      const found = lastChange(v);
      if (found) return found;
    }
  }
  return undefined;
}

async function viaPlugin(c: Run): Promise<Answer> {
  // diff exits 1 when there are changes: the plan names the namespace and the user the server saw.
  const r = await run(c, plugin, ["diff", "web", "data=2Gi", "-o", "json", ...c.args]);
  if (r.code !== 1) return { ok: false, detail: r.stderr.trim() };
  const plan = JSON.parse(r.stdout) as { target: { namespace: string } };
  return { ok: true, user: lastChange(plan)?.by ?? "(none)", namespace: plan.target.namespace };
}

const same = (a: Answer) => (a.ok ? { user: a.user, namespace: a.namespace } : "refused");
const admin = "admin";
/** The environment Kubernetes gives a pod (the API server's service), with `extra`: for the in-cluster cases. */
const inPod = (extra: Record<string, string> = {}) => ({ KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: String(apiPort), ...extra });

const cases: Case[] = [
  { name: "KUBECONFIG a:b: the first file's current-context", args: () => [], env: () => ({ KUBECONFIG: `${files["a"]}:${files["b"]}` }), expect: () => ({ user: admin, namespace: nsA }) },
  { name: "KUBECONFIG b:a: the other order", args: () => [], env: () => ({ KUBECONFIG: `${files["b"]}:${files["a"]}` }), expect: () => ({ user: alice, namespace: nsB }) },
  { name: "a missing file in KUBECONFIG is skipped", args: () => [], env: () => ({ KUBECONFIG: `${join(tmp, "missing")}:${files["b"]}` }), expect: () => ({ user: alice, namespace: nsB }) },
  { name: "duplicate context names: the first file's wins (a:a2)", args: () => [], env: () => ({ KUBECONFIG: `${files["a"]}:${files["a2"]}` }), expect: () => ({ user: admin, namespace: nsA }) },
  { name: "duplicate context names: the first file's wins (a2:a)", args: () => [], env: () => ({ KUBECONFIG: `${files["a2"]}:${files["a"]}` }), expect: () => ({ user: alice, namespace: nsB }) },
  {
    name: "--context picks a context of another file",
    args: () => ["--context", "ctx-b"],
    env: () => ({ KUBECONFIG: `${files["a"]}:${files["b"]}` }),
    expect: () => ({ user: alice, namespace: nsB }),
  },
  { name: "--user replaces the context's user", args: () => ["--user", "alice"], env: () => ({ KUBECONFIG: `${files["a"]}:${files["b"]}` }), expect: () => ({ user: alice, namespace: nsA }) },
  {
    name: "--cluster replaces the context's (unreachable) cluster",
    args: () => ["--context", "ctx-bad", "--cluster", "local"],
    env: () => ({ KUBECONFIG: files["a"]! }),
    expect: () => ({ user: admin, namespace: nsA }),
  },
  {
    name: "...and without --cluster both fail on the unreachable one",
    args: () => ["--context", "ctx-bad", "--request-timeout", "5s"],
    env: () => ({ KUBECONFIG: files["a"]! }),
    expect: () => "refused",
    why: /127\.0\.0\.1:1\b/,
  },
  {
    name: "--kubeconfig is that one file, whatever KUBECONFIG says",
    args: () => ["--kubeconfig", files["b"]!],
    env: () => ({ KUBECONFIG: files["a"]! }),
    expect: () => ({ user: alice, namespace: nsB }),
  },
  { name: "repeated -n: the last one", args: () => ["-n", nsB, "-n", nsA], env: () => ({ KUBECONFIG: files["a"]! }), expect: () => ({ user: admin, namespace: nsA }) },
  { name: "repeated -n, the other way", args: () => ["-n", nsA, "-n", nsB], env: () => ({ KUBECONFIG: files["a"]! }), expect: () => ({ user: admin, namespace: nsB }) },
  {
    name: "repeated --context: the last one",
    args: () => ["--context", "ctx-a", "--context", "ctx-b"],
    env: () => ({ KUBECONFIG: `${files["a"]}:${files["b"]}` }),
    expect: () => ({ user: alice, namespace: nsB }),
  },
  { name: "--as a user with no rights: refused by both", args: () => ["--as", `parity-nobody-${id}`], env: () => ({ KUBECONFIG: files["a"]! }), expect: () => "refused", why: /forbidden/i },
  { name: "--as a user with rights", args: () => ["--as", alice], env: () => ({ KUBECONFIG: files["a"]! }), expect: () => ({ user: alice, namespace: nsA }) },
  {
    name: "--as-group gives the impersonated user the group's rights",
    args: () => ["--as", `parity-grouped-${id}`, "--as-group", group],
    env: () => ({ KUBECONFIG: files["a"]! }),
    expect: () => ({ user: `parity-grouped-${id}`, namespace: nsA }),
  },
  { name: "...and without --as-group the same user is refused", args: () => ["--as", `parity-grouped-${id}`], env: () => ({ KUBECONFIG: files["a"]! }), expect: () => "refused", why: /forbidden/i },
  {
    name: "--server, --token, --certificate-authority with no kubeconfig at all",
    args: () => ["-s", server, "--token", saToken, "--certificate-authority", caFile, "-n", nsA],
    expect: () => ({ user: paritySa, namespace: nsA }),
  },
  { name: "a cluster's proxy-url: both go through the CONNECT proxy", args: () => ["--kubeconfig", files["proxied"]!], expect: () => ({ user: admin, namespace: nsA }) },
  { name: "a cluster's socks5 proxy-url: both go through the SOCKS5 proxy", args: () => ["--kubeconfig", files["socks"]!], expect: () => ({ user: alice, namespace: nsB }) },
  {
    name: "--client-certificate and --client-key with --server and no kubeconfig",
    args: () => ["-s", server, "--certificate-authority", caFile, "--client-certificate", join(tmp, "alice.crt"), "--client-key", join(tmp, "alice.key"), "-n", nsB],
    expect: () => ({ user: alice, namespace: nsB }),
  },
  {
    name: "--insecure-skip-tls-verify drops the kubeconfig's CA",
    args: () => ["--insecure-skip-tls-verify"],
    env: () => ({ KUBECONFIG: files["a"]! }),
    expect: () => ({ user: admin, namespace: nsA }),
  },
  {
    name: "--tls-server-name: a name in the server's certificate",
    args: () => ["--tls-server-name", "kubernetes"],
    env: () => ({ KUBECONFIG: files["a"]! }),
    expect: () => ({ user: admin, namespace: nsA }),
  },
  {
    name: "--tls-server-name: a name not in it is refused by both",
    args: () => ["--tls-server-name", "not-the-apiserver.example"],
    env: () => ({ KUBECONFIG: files["a"]! }),
    expect: () => "refused",
    why: /not-the-apiserver\.example|certificate/i,
  },
  {
    name: "HTTPS_PROXY is not used for a loopback server (Go's rule)",
    args: () => [],
    env: () => ({ KUBECONFIG: files["a"]!, HTTPS_PROXY: `http://127.0.0.1:${proxyPort}` }),
    expect: () => ({ user: admin, namespace: nsA }),
  },
  {
    name: "HTTPS_PROXY is used for a named server",
    args: () => ["--server", `https://kubernetes.default.svc:${apiPort}`],
    env: () => ({ KUBECONFIG: files["a"]!, HTTPS_PROXY: `http://127.0.0.1:${proxyPort}` }),
    expect: () => ({ user: admin, namespace: nsA }),
  },
  {
    name: "...unless NO_PROXY names it (then the name does not resolve: both fail)",
    args: () => ["--server", `https://kubernetes.default.svc:${apiPort}`, "--request-timeout", "10s"],
    env: () => ({ KUBECONFIG: files["a"]!, HTTPS_PROXY: `http://127.0.0.1:${proxyPort}`, NO_PROXY: "default.svc" }),
    expect: () => "refused",
    why: /kubernetes\.default\.svc/,
  },
  { name: "an exec credential plugin whose credential expires", args: () => ["--kubeconfig", files["exec"]!], expect: () => ({ user: paritySa, namespace: nsA }) },
  {
    name: "in-cluster: the pod's service account, only when nothing else is given",
    args: () => [],
    inCluster: true,
    env: () => inPod(),
    expect: () => ({ user: paritySa, namespace: nsA }),
  },
  {
    name: "in-cluster with -n",
    args: () => ["-n", nsB],
    inCluster: true,
    env: () => inPod(),
    // The service account may read every namespace (a ClusterRoleBinding).
    expect: () => ({ user: paritySa, namespace: nsB }),
  },
  {
    name: "in-cluster: POD_NAMESPACE before the service account's namespace file",
    args: () => [],
    inCluster: true,
    env: () => inPod({ POD_NAMESPACE: nsB }),
    expect: () => ({ user: paritySa, namespace: nsB }),
  },
  {
    name: "in-cluster: --token replaces the service account's token",
    args: () => ["--token", otherSaToken],
    inCluster: true,
    env: () => inPod(),
    expect: () => ({ user: `system:serviceaccount:${nsB}:parity-sa-b`, namespace: nsA }),
  },
  {
    name: "in-cluster: --request-timeout 0 keeps the service account",
    args: () => ["--request-timeout", "0"],
    inCluster: true,
    env: () => inPod(),
    expect: () => ({ user: paritySa, namespace: nsA }),
  },
  {
    name: "in-cluster with --as: kubectl leaves the service account for localhost:8080; both fail",
    args: () => ["--as", alice],
    inCluster: true,
    env: () => inPod(),
    expect: () => "refused",
    why: /localhost:8080/,
  },
  {
    name: "in-cluster with a non-zero --request-timeout: the same",
    args: () => ["--request-timeout", "20s"],
    inCluster: true,
    env: () => inPod(),
    expect: () => "refused",
    why: /localhost:8080/,
  },
  {
    name: "--as-group without --as is refused by both",
    args: () => ["--as-group", group],
    env: () => ({ KUBECONFIG: files["a"]! }),
    expect: () => "refused",
    why: /without impersonating a user/,
  },
  {
    name: "a kubeconfig inside a pod: its user, and the pod's namespace when its context names none",
    args: () => [],
    inCluster: true,
    env: () => inPod({ KUBECONFIG: files["nons"]! }),
    expect: () => ({ user: alice, namespace: nsA }),
  },
];

describe("the same cluster, user and namespace as kubectl", () => {
  for (const c of cases) {
    test(c.name, async () => {
      const resolved = { ...c, args: c.args() };
      const before = tunnels.length;
      const socksBefore = socksConnections.length;
      writeFileSync(counter, "");
      const theirs = await viaKubectl(resolved);
      const kubectlTunnels = tunnels.length - before;
      const kubectlSocks = socksConnections.length - socksBefore;
      const kubectlCalls = readFileSync(counter, "utf8").split("\n").filter(Boolean).length;
      writeFileSync(counter, "");
      const ours = await viaPlugin(resolved);
      const pluginTunnels = tunnels.length - before - kubectlTunnels;
      const pluginCalls = readFileSync(counter, "utf8").split("\n").filter(Boolean).length;
      const context = `kubectl: ${JSON.stringify(theirs)}\nplugin: ${JSON.stringify(ours)}`;
      assert.deepEqual(same(ours), same(theirs), context);
      assert.deepEqual(same(ours), c.expect(), context);
      if (c.why) {
        assert.match(theirs.detail ?? "", c.why, "kubectl's refusal");
        assert.match(ours.detail ?? "", c.why, "the plugin's refusal");
        assert.equal((ours.detail ?? "").split("\n").length, 1, `one line: ${ours.detail}`);
      }
      if ((c.name.includes("proxy-url") && !c.name.includes("socks5")) || c.name === "HTTPS_PROXY is used for a named server") {
        assert.ok(kubectlTunnels > 0, "kubectl went through the proxy");
        assert.ok(pluginTunnels > 0, "the plugin went through the proxy");
      }
      if (c.name.includes("loopback") || c.name.includes("NO_PROXY")) assert.equal(tunnels.length - before, 0, "nobody used the proxy");
      if (c.name.includes("socks5")) {
        assert.ok(kubectlSocks > 0, "kubectl went through the SOCKS5 proxy");
        assert.ok(socksConnections.length - socksBefore - kubectlSocks > 0, "the plugin went through the SOCKS5 proxy");
      }
      if (c.name.includes("exec credential")) {
        assert.ok(kubectlCalls >= 2, `kubectl called the plugin ${kubectlCalls} times`);
        assert.ok(pluginCalls >= 2, `the plugin called the credential plugin ${pluginCalls} times`);
      }
    });
  }
});

describe("-v 6", () => {
  test("one stderr line per request (method, URL, status, latency), never the token", async () => {
    const args = ["-s", server, "--token", saToken, "--certificate-authority", caFile, "-n", nsA, "-v", "6"];
    const r = await run({ name: "v6", expect: () => "refused" }, plugin, ["show", ...args]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stderr
      .trim()
      .split("\n")
      .filter((l) => !l.startsWith("Warning: "));
    assert.ok(lines.length >= 3, r.stderr);
    // Every request, whatever its answer (a user who may not list events gets 403 for that list).
    for (const line of lines) assert.match(line, /^(GET|POST) https:\/\/127\.0\.0\.1:\d+\/\S+ \d{3} [A-Za-z ]+ in \d+ milliseconds$/);
    assert.ok(lines.some((l) => l.includes(`/namespaces/${nsA}/statefulsets`)));
    assert.ok(!r.stderr.includes(saToken) && !r.stdout.includes(saToken), "the token is never printed");
  });
});

// Kept honest: the proxy case must really have started a proxy, the exec case a plugin.
test("the setup is what the cases claim", () => {
  assert.ok(proxyPort > 0);
  assert.ok(spawnSync(pinnedKubectl(), ["version", "--client"]).status === 0, "the kubectl of the pinned release runs");
});
