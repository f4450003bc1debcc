import assert from "node:assert/strict";
import { test } from "node:test";
import type { KubeClient, RequestSpec, WatchEvent } from "../../src/kube/client";
import { listAll, listPodMetadata, waitPods } from "../../src/kube/read";

test("a metadata-only list of nothing (items: null, as the API server answers it) is no pods, asked with the metadata Accept header", async () => {
  const asked: RequestSpec[] = [];
  const client = { namespace: "shop", request: async (spec: RequestSpec) => (asked.push(spec), { metadata: {}, items: null }) } as unknown as KubeClient;
  assert.deepEqual(await listPodMetadata(client, "shop"), []);
  assert.equal(asked[0]!.path, "/api/v1/namespaces/shop/pods");
  assert.match(asked[0]!.accept!, /^application\/json;as=PartialObjectMetadataList;g=meta\.k8s\.io;v=v1,application\/json$/);
});

test("a wait lists in pages (limit and continue) and watches from the resourceVersion of the pages", async () => {
  const asked: RequestSpec[] = [];
  const watched: { path: string; query: unknown }[] = [];
  const pod = (name: string) => ({ metadata: { name } });
  const pages: Record<string, { metadata: { resourceVersion: string; continue?: string }; items: unknown[] }> = {
    "": { metadata: { resourceVersion: "41", continue: "page-2" }, items: [pod("db-0"), pod("db-1")] },
    "page-2": { metadata: { resourceVersion: "41" }, items: [pod("db-2")] },
  };
  const client = {
    namespace: "shop",
    request: async (spec: RequestSpec) => (asked.push(spec), pages[String(spec.method === "GET" ? (spec.query?.continue ?? "") : "")]),
    watch: async (path: string, query: unknown, onEvent: (e: WatchEvent) => boolean) => {
      watched.push({ path, query });
      return onEvent({ type: "ADDED", object: pod("db-3") });
    },
  } as unknown as KubeClient;
  const pods = await waitPods(client, "shop", "app=db", (p) => p.size === 4, new AbortController().signal);
  assert.deepEqual([...pods.keys()], ["db-0", "db-1", "db-2", "db-3"]);
  assert.deepEqual(
    asked.map((s) => s.method === "GET" && s.query),
    [
      { labelSelector: "app=db", limit: 500, continue: undefined },
      { labelSelector: "app=db", limit: 500, continue: "page-2" },
    ],
  );
  assert.deepEqual(watched, [{ path: "/api/v1/namespaces/shop/pods", query: { labelSelector: "app=db", resourceVersion: "41", timeoutSeconds: 60 } }]);
});

test("listAll reads every page, 500 at a time, until the server gives no continue token", async () => {
  const asked: (string | number | boolean | undefined)[] = [];
  const client = {
    request: async (spec: RequestSpec) => {
      const cont = spec.method === "GET" ? spec.query?.continue : undefined;
      asked.push(cont);
      const n = cont === undefined ? 0 : Number(cont);
      return { metadata: { resourceVersion: "7", ...(n < 2 ? { continue: String(n + 1) } : {}) }, items: [{ metadata: { name: `c-${n}` } }] };
    },
  } as unknown as KubeClient;
  assert.deepEqual(
    (await listAll<{ metadata: { name: string } }>(client, "/api/v1/persistentvolumeclaims")).map((c) => c.metadata.name),
    ["c-0", "c-1", "c-2"],
  );
  assert.deepEqual(asked, [undefined, "1", "2"]);
});
