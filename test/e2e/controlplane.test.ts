// The harness itself: the local control plane behaves like Kubernetes where this tool relies on it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { sts } from "../fixtures/builders";
import { apply, claims, eventually, getSts, kubectl, kubectlTry, namespace, patchTemplateSize, pods, uids } from "../shared/harness";

test("the StatefulSet controller creates pods and claims", async (t) => {
  const ns = namespace(t);
  apply(sts("web", ns).withClaim("data", "1Gi").replicas(2).parallel().build(), ns);
  await eventually("2 pods and 2 claims", () => pods(ns).length === 2 && claims(ns).length === 2);
  assert.deepEqual(
    claims(ns)
      .map((c) => c.metadata.name)
      .sort(),
    ["data-web-0", "data-web-1"],
  );
});

test("an orphan delete finishes (garbage collector) and the pods survive", async (t) => {
  const ns = namespace(t);
  apply(sts("web", ns).withClaim("data", "1Gi").replicas(2).parallel().build(), ns);
  await eventually("2 pods", () => pods(ns).length === 2 && claims(ns).length === 2);
  const before = uids(ns);
  kubectl(["delete", "statefulset", "web", "-n", ns, "--cascade=orphan", "--wait", "--timeout=30s"]);
  assert.equal(kubectlTry(["get", "statefulset", "web", "-n", ns]).code, 1);
  assert.deepEqual(uids(ns), before);
  for (const p of pods(ns)) assert.equal(p.metadata.ownerReferences, undefined, `${p.metadata.name} still has an owner`);
});

test("the API server refuses an update of volumeClaimTemplates with 422", async (t) => {
  const ns = namespace(t);
  apply(sts("web", ns).withClaim("data", "1Gi").build(), ns);
  const r = patchTemplateSize(ns, "web", "2Gi");
  assert.equal(r.code, 1);
  assert.match(r.stderr, /is invalid|Forbidden/);
  assert.equal(getSts(ns, "web").spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "1Gi");
  // Without a resourceVersion the update is unconditional, so a status write by the controller
  // in between cannot turn the answer into a 409 Conflict: what is left is validation.
  const live = getSts(ns, "web");
  delete live.metadata.resourceVersion;
  const raw = kubectlTry(["replace", "--raw", `/apis/apps/v1/namespaces/${ns}/statefulsets/web`, "-f", "-"], {
    input: JSON.stringify({ ...live, spec: { ...live.spec, volumeClaimTemplates: [] } }),
  });
  assert.match(raw.stderr, /422|Unprocessable|invalid/i);
});
