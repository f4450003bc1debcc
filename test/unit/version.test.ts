import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { KubeClient } from "../../src/kube/client";
import { runVersion, type VersionOptions } from "../../src/commands/version";

/** runVersion with a cluster that answers /version (or cannot be reached); what it printed, and whether it asked. */
async function version(opts: Partial<VersionOptions>, server: "reachable" | "unreachable" = "reachable") {
  let out = "";
  let err = "";
  const asked: string[] = [];
  const client = {
    request: async (spec: { path: string }) => {
      asked.push(spec.path);
      return { major: "1", minor: "37", gitVersion: "v1.37.2", platform: "linux/amd64" };
    },
  } as unknown as KubeClient;
  const deps = {
    streams: { in: process.stdin, out: { write: (s: string) => (out += s) }, errOut: { write: (s: string) => (err += s) } },
    env: {},
    platform: "linux" as const,
    arch: "x64",
    now: () => new Date(),
    connect: async () => {
      if (server === "unreachable") throw new Error("the connection to the server 127.0.0.1:1 failed (dial tcp 127.0.0.1:1: connect: connection refused): is the API server running?");
      return client;
    },
  };
  let error: unknown;
  await runVersion({ flags: {}, client: false, ...opts }, deps).catch((e) => (error = e));
  return { out, err, asked, error };
}

describe("version, as kubectl version", () => {
  test("the client's version and the server's", async () => {
    const r = await version({});
    assert.equal(r.out, "Client Version: test\nServer Version: v1.37.2\n");
    assert.deepEqual(r.asked, ["/version"]);
    assert.equal(r.error, undefined);
  });
  test("--client asks nothing", async () => {
    const r = await version({ client: true });
    assert.equal(r.out, "Client Version: test\n");
    assert.deepEqual(r.asked, []);
  });
  test("-o json: clientVersion with kubectl's platform words, serverVersion as the server sent it", async () => {
    const r = await version({ output: "json" });
    assert.deepEqual(JSON.parse(r.out), {
      clientVersion: { gitVersion: "test", platform: "linux/amd64" },
      serverVersion: { major: "1", minor: "37", gitVersion: "v1.37.2", platform: "linux/amd64" },
    });
  });
  test("a server that cannot be reached: the client's version still printed, then the error (exit 1 by main.ts)", async () => {
    const r = await version({}, "unreachable");
    assert.equal(r.out, "Client Version: test\n");
    assert.match(String(r.error), /connection refused/);
    const y = await version({ output: "yaml" }, "unreachable");
    assert.match(y.out, /^clientVersion:\n {2}gitVersion: test\n {2}platform: linux\/amd64\n$/);
  });
  test("-o with another format is a usage error before anything is read", async () => {
    const r = await version({ output: "wide" });
    assert.match(String(r.error), /invalid --output "wide": must be one of json, yaml/);
    assert.deepEqual(r.asked, []);
  });
});
