import assert from "node:assert/strict";
import { test } from "node:test";
import type { KubeClient, RequestSpec } from "../../src/kube/client";
import { listPodMetadata } from "../../src/kube/read";

test("a metadata-only list of nothing (items: null, as the API server answers it) is no pods, asked with the metadata Accept header", async () => {
  const asked: RequestSpec[] = [];
  const client = { namespace: "shop", request: async (spec: RequestSpec) => (asked.push(spec), { metadata: {}, items: null }) } as unknown as KubeClient;
  assert.deepEqual(await listPodMetadata(client, "shop"), []);
  assert.equal(asked[0]!.path, "/api/v1/namespaces/shop/pods");
  assert.match(asked[0]!.accept!, /^application\/json;as=PartialObjectMetadataList;g=meta\.k8s\.io;v=v1,application\/json$/);
});
