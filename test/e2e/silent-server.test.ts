// A server that takes connections and never answers (a hung API server, a proxy that holds
// requests): a listener on 127.0.0.1 that accepts and stays silent. kubectl says so once per try
// and gives up after its tries; the plugin says "no answer from SERVER in Ns; trying again (K of 4)"
// on stderr for each of its tries (one request asks again, the others wait for it) and gives up
// within about twice what kubectl takes with the same --request-timeout. Here --request-timeout is
// 1s so the case is quick: kubectl (the pinned release's, lab/tools/kubectl/build.sh; the
// machine's /usr/bin/kubectl adds a discovery request of its own) took 5.3 s here, the plugin 6.0 s
// (show) and 5.9 s (set). The bound allows 2 s on top of twice kubectl's time, for a loaded 2-core machine.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test, type TestContext } from "node:test";
import { pinnedKubectl, plugin } from "../shared/harness";

/** The listener, and a kubeconfig whose only cluster is it. */
async function silentServer(t: TestContext): Promise<{ kubeconfig: string; server: string; accepted: () => number }> {
  const sockets: net.Socket[] = [];
  const listener = net.createServer((s) => void sockets.push(s));
  await new Promise<void>((r) => listener.listen(0, "127.0.0.1", r));
  t.after(() => {
    for (const s of sockets) s.destroy();
    listener.close();
  });
  const server = `https://127.0.0.1:${(listener.address() as net.AddressInfo).port}`;
  const kubeconfig = join(tmpdir(), `appstorage-silent-${process.pid}-${Date.now()}.kubeconfig`);
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "silent", cluster: { server, "insecure-skip-tls-verify": true } }],
      users: [{ name: "u", user: { token: "t" } }],
      contexts: [{ name: "silent", context: { cluster: "silent", user: "u", namespace: "default" } }],
      "current-context": "silent",
    }),
    { mode: 0o600 },
  );
  return { kubeconfig, server, accepted: () => sockets.length };
}

/** Runs a program to its end: exit code, stderr, seconds taken. */
function timed(file: string, args: string[]): Promise<{ code: number; stderr: string; seconds: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(file, args, { env: { PATH: process.env["PATH"] ?? "", HOME: tmpdir() }, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code: code ?? -1, stderr, seconds: (Date.now() - started) / 1000 }));
  });
}

describe("a server that accepts and never answers", () => {
  test("show and set say each try on stderr and give up within about twice kubectl's time", async (t) => {
    const silent = await silentServer(t);
    const flags = ["--kubeconfig", silent.kubeconfig, "--request-timeout", "1s"];
    const kubectl = await timed(pinnedKubectl(), ["get", "statefulsets", ...flags]);
    t.diagnostic(`kubectl: exit ${kubectl.code} in ${kubectl.seconds.toFixed(1)} s`);
    assert.notEqual(kubectl.code, 0, kubectl.stderr);
    const bound = 2 * kubectl.seconds + 2;
    for (const args of [["show"], ["set", "db", "data=2Gi", "--dry-run=client"]]) {
      const r = await timed(plugin, [...args, ...flags]);
      t.diagnostic(`${args[0]}: exit ${r.code} in ${r.seconds.toFixed(1)} s`);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(
        r.stderr,
        [2, 3, 4].map((k) => `no answer from ${silent.server} in 1s; trying again (${k} of 4)\n`).join("") +
          `error: the server ${silent.server} did not answer within 1s; check the server or raise --request-timeout\n`,
      );
      assert.ok(r.seconds < bound, `${args[0]} gave up after ${r.seconds.toFixed(1)} s; kubectl after ${kubectl.seconds.toFixed(1)} s (bound ${bound.toFixed(1)} s)`);
    }
    assert.ok(silent.accepted() > 0, "the requests reached the listener");
  });
});
