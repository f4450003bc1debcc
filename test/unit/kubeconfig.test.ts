// src/kube/kubeconfig.ts follows client-go's clientcmd (what kubectl does), not client-node.
// test/e2e/kubectl-parity.test.ts checks the same rules against the real kubectl; these are the
// fast cases, including the ones a cluster cannot show (relative paths, file errors).
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { Credentials } from "../../src/kube/credentials";
import { ConfigError } from "../../src/kube/config-error";
import { resolveConfig, type ResolvedConfig } from "../../src/kube/kubeconfig";
import type { KubeFlags } from "../../src/kube/client";
import { noProxyMatches, proxyFor } from "../../src/kube/proxy";

const dir = mkdtempSync(join(tmpdir(), "kubeconfig-test-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

function file(text: string, name = `k${++n}.yaml`): string {
  const path = join(dir, name);
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
  return path;
}

/** A folder `name` under the test's folder holding `files` (name -> text); its path. */
function folder(name: string, files: Record<string, string>): string {
  for (const [f, text] of Object.entries(files)) file(text, join(name, f));
  return join(dir, name);
}

interface Spec {
  clusters?: Record<string, Record<string, unknown>>;
  users?: Record<string, Record<string, unknown>>;
  contexts?: Record<string, Record<string, unknown>>;
  current?: string;
}

function kubeconfig(s: Spec, name?: string): string {
  const list = (m: Record<string, Record<string, unknown>> | undefined, key: string) => Object.entries(m ?? {}).map(([k, v]) => ({ name: k, [key]: v }));
  return file(
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: list(s.clusters, "cluster"),
      users: list(s.users, "user"),
      contexts: list(s.contexts, "context"),
      ...(s.current !== undefined ? { "current-context": s.current } : {}),
    }),
    name,
  );
}

/** One context "NAME" with its own cluster (server https://NAME:6443) and user (token NAME). */
function single(nameOf: string, extra: { namespace?: string; current?: string } = {}): string {
  return kubeconfig({
    clusters: { [nameOf]: { server: `https://${nameOf}:6443` } },
    users: { [nameOf]: { token: `token-${nameOf}` } },
    contexts: { [nameOf]: { cluster: nameOf, user: nameOf, ...(extra.namespace ? { namespace: extra.namespace } : {}) } },
    current: extra.current ?? nameOf,
  });
}

const noHome = join(dir, "no-home");
const resolve = (flags: KubeFlags, env: Record<string, string | undefined> = {}, serviceAccountDir = join(dir, "no-sa")): ResolvedConfig =>
  resolveConfig(flags, { env: { HOME: noHome, ...env }, platform: "linux", serviceAccountDir });
const where = (c: ResolvedConfig) => ({ context: c.context, server: c.cluster.server, namespace: c.namespace, token: c.user.token });

describe("which files: clientcmd's loading rules", () => {
  const a = single("a", { namespace: "ns-a" });
  const b = single("b", { namespace: "ns-b" });
  test("KUBECONFIG a:b: the first file's current-context wins", () => assert.equal(resolve({}, { KUBECONFIG: `${a}:${b}` }).context, "a"));
  test("KUBECONFIG b:a: the other one (client-node took the last)", () => assert.equal(resolve({}, { KUBECONFIG: `${b}:${a}` }).context, "b"));
  test("contexts of every file are available", () =>
    assert.deepEqual(where(resolve({ context: "b" }, { KUBECONFIG: `${a}:${b}` })), { context: "b", server: "https://b:6443", namespace: "ns-b", token: "token-b" }));
  test("a missing file in KUBECONFIG is skipped", () => assert.equal(resolve({}, { KUBECONFIG: `${join(dir, "nope")}:${b}` }).context, "b"));
  test("an empty file is an empty config, skipped; so is an empty entry in the list", () => {
    const empty = file("");
    assert.equal(resolve({}, { KUBECONFIG: `${empty}::${b}` }).context, "b");
  });
  test("an empty current-context in the first file does not hide the second's", () => {
    const noCurrent = kubeconfig({ contexts: { x: { cluster: "x" } }, clusters: { x: { server: "https://x" } } });
    assert.equal(resolve({}, { KUBECONFIG: `${noCurrent}:${b}` }).context, "b");
  });
  test("duplicate names across files: the first file's entry wins, whole", () => {
    const first = kubeconfig({
      clusters: { c: { server: "https://first" } },
      users: { u: { token: "first" } },
      contexts: { same: { cluster: "c", user: "u", namespace: "first-ns" } },
      current: "same",
    });
    const second = kubeconfig({
      clusters: { c: { server: "https://second", "tls-server-name": "second" } },
      users: { u: { token: "second", username: "x" } },
      contexts: { same: { cluster: "c", user: "u", namespace: "second-ns" } },
      current: "same",
    });
    const c = resolve({}, { KUBECONFIG: `${first}:${second}` });
    assert.deepEqual(where(c), { context: "same", server: "https://first", namespace: "first-ns", token: "first" });
    assert.equal(c.cluster.tlsServerName, undefined, "no field of the second file's entry leaks in");
    assert.equal(c.user.username, undefined);
  });
  test("a file named twice in KUBECONFIG is read once", () => assert.equal(resolve({}, { KUBECONFIG: `${a}:${a}` }).context, "a"));
  test("--kubeconfig is exactly one file: KUBECONFIG is ignored", () => assert.equal(resolve({ kubeconfig: b }, { KUBECONFIG: a }).context, "b"));
  test("--kubeconfig must exist", () => assert.throws(() => resolve({ kubeconfig: join(dir, "missing") }), /kubeconfig ".*missing" does not exist; pass --kubeconfig with an existing file/));
  test("~/.kube/config without KUBECONFIG", () => {
    const home = join(dir, "home");
    file(JSON.stringify({ clusters: [{ name: "h", cluster: { server: "https://home" } }], contexts: [{ name: "h", context: { cluster: "h" } }], "current-context": "h" }), "home/.kube/config");
    assert.equal(resolveConfig({}, { env: { HOME: home }, platform: "linux", serviceAccountDir: join(dir, "no-sa") }).cluster.server, "https://home");
  });
  test("a name twice in one file is an error, as in client-go", () => {
    const dup = file(
      JSON.stringify({
        contexts: [
          { name: "x", context: { cluster: "a" } },
          { name: "x", context: { cluster: "b" } },
        ],
      }),
    );
    assert.throws(() => resolve({ kubeconfig: dup }), /duplicate name "x" in contexts/);
  });
  test("broken YAML names the file", () => assert.throws(() => resolve({ kubeconfig: file("clusters: [") }), /cannot load kubeconfig ".*"/));
  test("nothing at all: one line that says what to do", () => assert.throws(() => resolve({}), /no kubeconfig found .* pass --kubeconfig, set KUBECONFIG, or pass --server/));
  test("relative paths are relative to the file that holds the entry", () => {
    const sub = folder("sub", { "ca.crt": "CA", "c.crt": "CERT", "c.key": "KEY" });
    const k = kubeconfig(
      {
        clusters: { r: { server: "https://r", "certificate-authority": "ca.crt" } },
        users: { r: { "client-certificate": "c.crt", "client-key": "./c.key", "token-file": "t", exec: { command: "./bin/plugin" } } },
        contexts: { r: { cluster: "r", user: "r" } },
        current: "r",
      },
      "sub/k.yaml",
    );
    const c = resolve({ kubeconfig: k });
    assert.equal(c.cluster.certificateAuthority, join(sub, "ca.crt"));
    assert.equal(c.user.clientCertificate, join(sub, "c.crt"));
    assert.equal(c.user.clientKey, join(sub, "c.key"));
    assert.equal(c.user.tokenFile, join(sub, "t"));
    assert.equal(c.user.exec?.command, join(sub, "bin/plugin"));
  });
});

describe("flags over the kubeconfig: clientcmd's overrides", () => {
  const k = kubeconfig({
    clusters: { one: { server: "https://one", "certificate-authority-data": "Q0E=", "tls-server-name": "one.internal" }, two: { server: "https://two" } },
    users: { alice: { token: "alice" }, bob: { token: "bob" } },
    contexts: { main: { cluster: "one", user: "alice", namespace: "main-ns" }, other: { cluster: "two", user: "bob" } },
    current: "main",
  });
  test("--context", () => assert.deepEqual(where(resolve({ kubeconfig: k, context: "other" })), { context: "other", server: "https://two", namespace: "default", token: "bob" }));
  test("--cluster and --user replace the context's", () =>
    assert.deepEqual(where(resolve({ kubeconfig: k, cluster: "two", user: "bob" })), { context: "main", server: "https://two", namespace: "main-ns", token: "bob" }));
  test("-n replaces the context's namespace", () => assert.equal(resolve({ kubeconfig: k, namespace: "x" }).namespace, "x"));
  test("unknown --context, --cluster, --user: one line each, with what to do", () => {
    assert.throws(() => resolve({ kubeconfig: k, context: "nope" }), /context "nope" does not exist in the kubeconfig; list contexts with: kubectl config get-contexts/);
    assert.throws(() => resolve({ kubeconfig: k, cluster: "nope" }), /cluster "nope" does not exist in the kubeconfig/);
    assert.throws(() => resolve({ kubeconfig: k, user: "nope" }), /user "nope" does not exist in the kubeconfig/);
  });
  test("a current-context that names no context is an error", () => {
    const broken = kubeconfig({ clusters: { c: { server: "https://c" } }, contexts: { c: { cluster: "c" } }, current: "gone" });
    assert.throws(() => resolve({ kubeconfig: broken }), /current-context "gone" does not exist/);
  });
  test("--server keeps the CA but resets tls-server-name (to --tls-server-name, if given)", () => {
    const c = resolve({ kubeconfig: k, server: "https://elsewhere:6443" });
    assert.equal(c.cluster.server, "https://elsewhere:6443");
    assert.equal(c.cluster.certificateAuthorityData, "Q0E=");
    assert.equal(c.cluster.tlsServerName, undefined);
    assert.equal(resolve({ kubeconfig: k, server: "https://x", tlsServerName: "n" }).cluster.tlsServerName, "n");
  });
  test("--insecure-skip-tls-verify drops the kubeconfig's CA; --certificate-authority replaces it", () => {
    const insecure = resolve({ kubeconfig: k, insecureSkipTlsVerify: true }).cluster;
    assert.equal(insecure.insecureSkipTlsVerify, true);
    assert.equal(insecure.certificateAuthorityData, undefined);
    const ca = file("CA");
    const withCa = resolve({ kubeconfig: k, certificateAuthority: ca }).cluster;
    assert.equal(withCa.certificateAuthority, ca);
    assert.equal(withCa.certificateAuthorityData, undefined);
  });
  test("--token, --as, --as-group, --as-uid", () => {
    const u = resolve({ kubeconfig: k, token: "flag", as: "carol", asGroups: ["g1", "g2"], asUid: "7" }).user;
    assert.deepEqual(u, { token: "flag", as: "carol", asGroups: ["g1", "g2"], asUid: "7" });
  });
  test("--username and --password: basic authentication", async () => {
    const c = resolve({ kubeconfig: k, user: "bob", username: "u", password: "p" });
    assert.deepEqual(c.user, { token: "bob", username: "u", password: "p" });
    const basic = resolve({ server: "https://h", username: "u", password: "p" });
    assert.equal((await new Credentials(basic, {}).forRequest()).headers["Authorization"], `Basic ${Buffer.from("u:p").toString("base64")}`);
  });
  test("--server --token --certificate-authority with no kubeconfig at all", () => {
    const ca = file("CA");
    const c = resolve({ server: "https://h:6443", token: "t", certificateAuthority: ca, namespace: "n" });
    assert.deepEqual(where(c), { context: "", server: "https://h:6443", namespace: "n", token: "t" });
    assert.equal(c.cluster.certificateAuthority, ca);
  });
  test("a missing --certificate-authority or a certificate without its key is refused before any request", () => {
    assert.throws(() => resolve({ kubeconfig: k, certificateAuthority: join(dir, "none.crt") }), /unable to read certificate-authority/);
    assert.throws(() => resolve({ kubeconfig: k, clientCertificate: file("C") }), /needs its key/);
  });
});

describe("in-cluster: only when nothing else gives a server", () => {
  const sa = folder("sa", { token: "sa-token", "ca.crt": "CA", namespace: "pod-ns\n" });
  const pod = { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" };
  test("the service account: server, token file, CA, namespace", () => {
    const c = resolve({}, pod, sa);
    assert.equal(c.source, "in-cluster");
    assert.equal(c.cluster.server, "https://10.0.0.1:443");
    assert.equal(c.user.tokenFile, join(sa, "token"));
    assert.equal(c.cluster.certificateAuthority, join(sa, "ca.crt"));
    assert.equal(c.namespace, "pod-ns");
  });
  test("POD_NAMESPACE first, then -n", () => {
    assert.equal(resolve({}, { ...pod, POD_NAMESPACE: "downward" }, sa).namespace, "downward");
    assert.equal(resolve({ namespace: "flag" }, { ...pod, POD_NAMESPACE: "downward" }, sa).namespace, "flag");
  });
  test("IPv6 service host", () => assert.equal(resolve({}, { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" }, sa).cluster.server, "https://[fd00::1]:443"));
  test("a kubeconfig with a server wins over the pod's service account", () => assert.equal(resolve({ kubeconfig: single("k") }, pod, sa).source, "kubeconfig"));
  test("... but a context without a namespace takes the pod's", () => assert.equal(resolve({ kubeconfig: single("k") }, pod, sa).namespace, "pod-ns"));
  test("--as or a non-zero --request-timeout: kubectl would not use the service account (localhost:8080): refused", () => {
    assert.throws(() => resolve({ as: "bob" }, pod, sa), /with --as and no kubeconfig, kubectl does not use the pod's service account \(it falls back to http:\/\/localhost:8080\)/);
    assert.throws(() => resolve({ requestTimeoutMs: 5000 }, pod, sa), /with --request-timeout and no kubeconfig/);
    assert.equal(resolve({ requestTimeoutMs: 0 }, pod, sa).source, "in-cluster");
  });
  test("--as-group or --as-uid without --as is refused, as kubectl refuses it", () => {
    assert.throws(() => resolve({ asGroups: ["g"] }, pod, sa), /without impersonating a user/);
    assert.throws(() => resolve({ kubeconfig: single("k"), asUid: "1" }), /without impersonating a user/);
  });
  test("--token replaces the service account's token", () => assert.deepEqual(resolve({ token: "t" }, pod, sa).user, { token: "t" }));
  test("no KUBERNETES_SERVICE_PORT: not in a cluster", () => assert.throws(() => resolve({}, { KUBERNETES_SERVICE_HOST: "h" }, sa), ConfigError));
});

describe("credentials per request", () => {
  const base: ResolvedConfig = { source: "kubeconfig", context: "c", clusterName: "c", userName: "u", namespace: "default", cluster: { server: "https://h" }, user: {} };
  test("impersonation headers", async () => {
    const c = new Credentials({ ...base, user: { token: "t", as: "bob", asGroups: ["g1", "g2"], asUid: "9" } }, {});
    assert.deepEqual((await c.forRequest()).headers, { Authorization: "Bearer t", "Impersonate-User": "bob", "Impersonate-Group": ["g1", "g2"], "Impersonate-Uid": "9" });
  });
  test("a token file is re-read when it changes", async () => {
    const path = file("one\n");
    const c = new Credentials({ ...base, user: { tokenFile: path } }, {});
    assert.equal((await c.forRequest()).headers["Authorization"], "Bearer one");
    writeFileSync(path, "two-rotated\n");
    utimesSync(path, new Date(), new Date(Date.now() + 5000));
    assert.equal((await c.forRequest()).headers["Authorization"], "Bearer two-rotated");
  });
  test("an exec plugin is run again once its credential expires, once for parallel requests", async () => {
    const count = join(dir, "exec-count");
    writeFileSync(count, "");
    const script = file(
      `#!/bin/sh\necho x >> ${count}\nn=$(wc -l < ${count})\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"tok-'$n'","expirationTimestamp":"2030-01-01T00:00:00Z"}}'\n`,
      "exec.sh",
    );
    chmodSync(script, 0o755);
    let now = Date.parse("2029-12-31T23:59:00Z");
    const c = new Credentials({ ...base, user: { exec: { command: script, apiVersion: "client.authentication.k8s.io/v1" } } }, { PATH: process.env["PATH"] }, () => now);
    const parallel = await Promise.all([c.forRequest(), c.forRequest(), c.forRequest()]);
    assert.deepEqual(
      parallel.map((p) => p.headers["Authorization"]),
      ["Bearer tok-1", "Bearer tok-1", "Bearer tok-1"],
    );
    assert.equal((await c.forRequest()).headers["Authorization"], "Bearer tok-1", "still valid: cached");
    now = Date.parse("2030-01-01T00:00:01Z");
    assert.equal((await c.forRequest()).headers["Authorization"], "Bearer tok-2", "expired: asked again");
    assert.equal(c.execRuns, 2);
    c.invalidate(); // the server answered 401
    assert.equal((await c.forRequest()).headers["Authorization"], "Bearer tok-3");
  });
  test("an exec plugin that fails: one line with its exit code", async () => {
    const c = new Credentials({ ...base, user: { exec: { command: "false" } } }, { PATH: process.env["PATH"] });
    await assert.rejects(c.forRequest(), /exec credential plugin "false" failed with exit code 1/);
  });
});

describe("proxies: Go's rules", () => {
  const https = new URL("https://api.example.com:6443");
  test("a cluster's proxy-url always applies, even to loopback", () => {
    assert.equal(proxyFor(new URL("https://127.0.0.1:6443"), "socks5://127.0.0.1:1080", {})?.href, "socks5://127.0.0.1:1080");
  });
  test("HTTPS_PROXY for https servers, HTTP_PROXY for http, lower case too", () => {
    assert.equal(proxyFor(https, undefined, { HTTPS_PROXY: "http://p:3128" })?.host, "p:3128");
    assert.equal(proxyFor(https, undefined, { https_proxy: "p:3128" })?.href, "http://p:3128/");
    assert.equal(proxyFor(https, undefined, { HTTP_PROXY: "http://p:3128" }), undefined);
    assert.equal(proxyFor(new URL("http://api:8080"), undefined, { HTTP_PROXY: "http://p:3128" })?.host, "p:3128");
  });
  test("localhost and loopback are never proxied from the environment", () => {
    for (const host of ["https://localhost:6443", "https://127.0.0.1:6443", "https://127.3.4.5", "https://[::1]:6443"]) {
      assert.equal(proxyFor(new URL(host), undefined, { HTTPS_PROXY: "http://p:3128" }), undefined, host);
    }
  });
  const noProxy: [string, string, string, boolean][] = [
    ["api.example.com", "443", "example.com", true],
    ["api.example.com", "443", ".example.com", true],
    ["example.com", "443", ".example.com", false],
    ["example.com", "443", "*", true],
    ["10.1.2.3", "443", "10.0.0.0/8", true],
    ["10.1.2.3", "443", "10.1.2.3", true],
    ["api.example.com", "6443", "example.com:443", false],
    ["api.example.com", "6443", "example.com:6443", true],
    ["other.org", "443", "example.com, foo", false],
  ];
  for (const [host, port, list, expected] of noProxy) test(`NO_PROXY=${list}: ${host}:${port} ${expected ? "direct" : "proxied"}`, () => assert.equal(noProxyMatches(host, port, list), expected));
  test("an unsupported proxy scheme is one line", () => assert.throws(() => proxyFor(https, "ftp://p", {}), /unsupported scheme ftp:/));
});

describe("auth providers: handed to client-node, loaded only then", () => {
  test("an oidc provider with a valid id-token sends it as the bearer token", async () => {
    const b64url = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const idToken = `${b64url({ alg: "none" })}.${b64url({ exp: Math.floor(Date.now() / 1000) + 3600, iss: "https://issuer.example" })}.sig`;
    const config: ResolvedConfig = {
      source: "kubeconfig",
      context: "c",
      clusterName: "c",
      userName: "u",
      namespace: "default",
      cluster: { server: "https://h" },
      user: { authProvider: { name: "oidc", config: { "id-token": idToken, "client-id": "kubectl", "idp-issuer-url": "https://issuer.example" } } },
    };
    assert.equal((await new Credentials(config, {}).forRequest()).headers["Authorization"], `Bearer ${idToken}`);
  });
});
