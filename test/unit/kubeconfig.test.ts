// src/kube/kubeconfig.ts against @kubernetes/client-node's KubeConfig, which it stands in for:
// the same kubeconfig must give the same cluster, contexts and request options.
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { RequestOptions } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { KubeConfig as ClientNode } from "@kubernetes/client-node";
import { KubeConfig } from "../../src/kube/kubeconfig";

const dir = mkdtempSync(join(tmpdir(), "kubeconfig-test-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const b64 = (s: string) => Buffer.from(s).toString("base64");

function file(name: string, text: string): string {
  const path = join(dir, name);
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
  return path;
}

interface UserSpec {
  [key: string]: unknown;
}

function kubeconfig(opts: { cluster?: Record<string, unknown>; user?: UserSpec; namespace?: string; current?: string; name?: string } = {}): string {
  const name = opts.name ?? "c1";
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name, cluster: { server: "https://127.0.0.1:6443/", "certificate-authority-data": b64("CA"), ...opts.cluster } }],
    users: [{ name: `${name}-user`, user: opts.user ?? { "client-certificate-data": b64("CERT"), "client-key-data": b64("KEY") } }],
    contexts: [{ name, context: { cluster: name, user: `${name}-user`, ...(opts.namespace ? { namespace: opts.namespace } : {}) } }],
    "current-context": opts.current ?? name,
  });
}

/** What a request is sent with; client-node also makes an agent and an empty header set, which client.ts does not use. */
async function requestOptions(kc: { applyToHTTPSOptions(o: RequestOptions): Promise<void> }): Promise<Record<string, unknown>> {
  const opts: RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const out: Record<string, unknown> = {};
  for (const k of ["ca", "cert", "key", "auth", "rejectUnauthorized", "servername"] as const) if (opts[k] !== undefined && opts[k] !== null) out[k] = String(opts[k]);
  const headers = Object.entries((opts.headers ?? {}) as Record<string, string>).filter(([, v]) => v !== undefined);
  if (headers.length) out["headers"] = Object.fromEntries(headers);
  return out;
}

function both(load: (kc: KubeConfig | ClientNode) => void): [KubeConfig, ClientNode] {
  const mine = new KubeConfig();
  const theirs = new ClientNode();
  load(mine);
  load(theirs);
  return [mine, theirs];
}

async function assertSame(load: (kc: KubeConfig | ClientNode) => void, opts: { requests?: boolean } = {}): Promise<void> {
  const [mine, theirs] = both(load);
  assert.deepEqual(mine.getCurrentCluster(), theirs.getCurrentCluster());
  assert.deepEqual(mine.getContexts(), theirs.getContexts());
  assert.equal(mine.getCurrentContext() || undefined, theirs.getCurrentContext() || undefined);
  assert.deepEqual(mine.getContextObject(mine.getCurrentContext()), theirs.getContextObject(theirs.getCurrentContext()));
  if (opts.requests !== false) assert.deepEqual(await requestOptions(mine), await requestOptions(theirs));
}

function withEnv<T>(env: Record<string, string | undefined>, f: () => T): T {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  const set = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  set(env);
  try {
    return f();
  } finally {
    set(saved);
  }
}


describe("kubeconfig: the same as client-node's KubeConfig", () => {
  const cases: [string, string][] = [
    ["client certificate and key data", kubeconfig({ namespace: "prod" })],
    ["a bearer token", kubeconfig({ user: { token: "t0k3n" } })],
    ["a token file", kubeconfig({ user: { "token-file": file("token", "from-file") } })],
    ["basic auth", kubeconfig({ user: { username: "alice", password: "s3cret" } })],
    ["impersonation", kubeconfig({ user: { token: "t", as: "bob" } })],
    ["insecure-skip-tls-verify and tls-server-name", kubeconfig({ cluster: { "insecure-skip-tls-verify": true, "tls-server-name": "api.internal" } })],
    ["relative certificate files", kubeconfig({ cluster: { "certificate-authority-data": undefined, "certificate-authority": "pki/ca.crt" }, user: { "client-certificate": "pki/admin.crt", "client-key": "pki/admin.key" } })],
    ["no current context", kubeconfig({ current: "" })],
    ["a current context that does not exist", kubeconfig({ current: "elsewhere" })],
    ["YAML", "apiVersion: v1\nclusters:\n- name: y\n  cluster:\n    server: https://10.0.0.1\n    insecure-skip-tls-verify: true\nusers:\n- name: y\n  user:\n    token: abc\ncontexts:\n- name: y\n  context: {cluster: y, user: y, namespace: ns1}\ncurrent-context: y\n"],
  ];
  file("pki/ca.crt", "CA-FILE");
  file("pki/admin.crt", "CERT-FILE");
  file("pki/admin.key", "KEY-FILE");
  for (const [name, text] of cases) {
    test(name, async () => {
      const path = file(`${name.replace(/\W+/g, "-")}.kubeconfig`, text);
      await assertSame((kc) => kc.loadFromFile(path));
    });
  }

  test("$KUBECONFIG with two files is merged", async () => {
    const a = file("merge-a", kubeconfig({ name: "a" }));
    const b = file("merge-b", kubeconfig({ name: "b", user: { token: "b-token" } }));
    await withEnv({ KUBECONFIG: `${a}:${b}` }, () => assertSame((kc) => kc.loadFromDefault()));
    const [mine] = both(() => undefined);
    withEnv({ KUBECONFIG: `${a}:${b}` }, () => mine.loadFromDefault());
    mine.setCurrentContext("a");
    assert.equal(mine.getCurrentCluster()?.name, "a");
  });

  test("~/.kube/config, and the localhost:8080 fallback when there is none", async () => {
    const home = join(dir, "home");
    file("home/.kube/config", kubeconfig({ name: "home" }));
    await withEnv({ KUBECONFIG: undefined, HOME: home }, () => assertSame((kc) => kc.loadFromDefault()));
    const empty = join(dir, "empty-home");
    mkdirSync(empty, { recursive: true });
    // client.ts recognises this fallback and refuses before any request is made.
    await withEnv({ KUBECONFIG: undefined, HOME: empty }, () => assertSame((kc) => kc.loadFromDefault(), { requests: false }));
    const kc = new KubeConfig();
    withEnv({ KUBECONFIG: undefined, HOME: empty }, () => kc.loadFromDefault());
    assert.equal(kc.getCurrentCluster()?.server, "http://localhost:8080");
    assert.deepEqual(kc.getContexts().map((c) => c.name), ["loaded-context"]);
  });

  test("one difference: a plain http server (kubectl proxy) is allowed, as kubectl and client.ts allow it", async () => {
    const path = file("http.kubeconfig", kubeconfig({ cluster: { server: "http://127.0.0.1:8001", "certificate-authority-data": undefined }, user: {} }));
    const theirs = new ClientNode();
    theirs.loadFromFile(path);
    await assert.rejects(theirs.applyToHTTPSOptions({}), /HTTP protocol is not allowed/);
    const mine = new KubeConfig();
    mine.loadFromFile(path);
    assert.deepEqual(await requestOptions(mine), {});
  });

  test("an exec plugin is run by client-node, with the same result", async () => {
    const plugin = file("exec-plugin.sh", `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec"}}'\n`);
    chmodSync(plugin, 0o755);
    const path = file("exec.kubeconfig", kubeconfig({ user: { exec: { apiVersion: "client.authentication.k8s.io/v1", command: plugin, interactiveMode: "Never" } } }));
    await assertSame((kc) => kc.loadFromFile(path));
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    assert.deepEqual((await requestOptions(kc))["headers"], { Authorization: "Bearer from-exec" });
  });
});

describe("kubeconfig: errors client.ts turns into messages", () => {
  test("a missing file is ENOENT with its path", () => {
    const missing = join(dir, "missing");
    assert.throws(() => new KubeConfig().loadFromFile(missing), (e: NodeJS.ErrnoException) => e.code === "ENOENT" && e.path === missing);
  });

  test("an empty file is a TypeError, as in client-node", () => {
    const empty = file("empty", "");
    assert.throws(() => new KubeConfig().loadFromFile(empty), TypeError);
    assert.throws(() => new ClientNode().loadFromFile(empty), TypeError);
  });

  test("broken YAML throws", () => {
    const broken = file("broken", "apiVersion: v1\nclusters: [\n");
    assert.throws(() => new KubeConfig().loadFromFile(broken));
  });

  for (const [what, text, message] of [
    ["a cluster without a name", JSON.stringify({ clusters: [{ cluster: { server: "https://x" } }] }), "clusters[0].name is missing"],
    ["a cluster without a server", JSON.stringify({ clusters: [{ name: "x", cluster: {} }] }), "clusters[0].cluster.server is missing"],
    ["a user without a name", JSON.stringify({ users: [{ user: {} }] }), "users[0].name is missing"],
    ["a context without a cluster", JSON.stringify({ contexts: [{ name: "x", context: { user: "u" } }] }), "contexts[0].context.cluster is missing"],
  ] as const) {
    test(`${what}: the same message as client-node`, () => {
      const path = file(`invalid-${what.replace(/\W+/g, "-")}`, text);
      assert.throws(() => new KubeConfig().loadFromFile(path), { message: message });
      assert.throws(() => new ClientNode().loadFromFile(path), { message: message });
    });
  }
});
