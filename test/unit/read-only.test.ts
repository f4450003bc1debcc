import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertReadOnly, type WireRequest } from "../../src/kube/api-request";

// The client's request() is for reads: a write cast past the types is refused before it is sent.
describe("the client's request() sends reads only", () => {
  const reads: [string, WireRequest][] = [
    ["a GET", { method: "GET", path: "/apis/apps/v1/namespaces/shop/statefulsets/db" }],
    ["a SelfSubjectAccessReview", { method: "POST", idempotent: true, path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body: {} }],
    ["a SelfSubjectReview", { method: "POST", idempotent: true, path: "/apis/authentication.k8s.io/v1/selfsubjectreviews", body: {} }],
  ];
  for (const [what, spec] of reads) test(`${what} is sent`, () => assert.doesNotThrow(() => assertReadOnly(spec)));

  const writes: [string, WireRequest][] = [
    ["a create", { method: "POST", path: "/apis/apps/v1/namespaces/shop/statefulsets", body: {} }],
    ["a review path without idempotent", { method: "POST", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body: {} }],
    ["an idempotent POST elsewhere", { method: "POST", idempotent: true, path: "/api/v1/namespaces/shop/pods/db-0/eviction", body: {} }],
    ["a delete", { method: "DELETE", path: "/apis/apps/v1/namespaces/shop/statefulsets/db" }],
    ["a patch", { method: "PATCH", path: "/api/v1/namespaces/shop/persistentvolumeclaims/data-db-0", body: {} }],
    ["a replace", { method: "PUT", path: "/api/v1/namespaces/shop/secrets/s", body: {} }],
  ];
  for (const [what, spec] of writes) {
    test(`${what} is refused`, () =>
      assert.throws(() => assertReadOnly(spec), new RegExp(`^Error: ${spec.method} ${spec.path.replace(/[.]/g, "\\.")} is a write: writes go through src/kube/write\\.ts$`)));
  }
});
