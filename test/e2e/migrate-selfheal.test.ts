// A StatefulSet someone else re-creates during --migrate-existing (a GitOps self-heal), on the real
// control plane, where no node runs copy pods (the moves themselves: test/unit/move.test.ts through
// its world, and test/node/migrate-selfheal.test.ts, on a node):
// - what the move relies on at its swap, played by hand: a volume pre-bound to the claim's name
//   (claimRef without uid) while the original claim is bound elsewhere changes nothing; once the
//   original is gone, the claim the StatefulSet controller makes from a template binds to it,
//   whatever the template's class (the old manifest's or the new one's); a template that asks more
//   than it holds is not bound to it;
// - the plan names a self-healing owner (Argo CD with automated sync) and how to pause it, before
//   consent, and refuses a move to a smaller size (the old template's claim would not fit) until it is paused.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { sts } from "../fixtures/builders";
import type { PersistentVolume } from "../../src/api/types";
import { apply, claims, eventually, kubectl, kubectlJson, kubectlTry, namespace, runPlugin, settled, storageClassFor } from "../shared/harness";
import { installOwnerCrds } from "../shared/crds";

/** A volume of `cls` and `size`, pre-bound to claim `claim` of ns by name only, as a move's swap leaves its new volume. */
function preBound(t: TestContext, ns: string, name: string, cls: string, claim: string, size = "1Gi"): void {
  apply(
    {
      apiVersion: "v1",
      kind: "PersistentVolume",
      metadata: { name },
      spec: {
        capacity: { storage: size },
        accessModes: ["ReadWriteOnce"],
        persistentVolumeReclaimPolicy: "Retain",
        storageClassName: cls,
        hostPath: { path: `/tmp/appstorage-e2e/${name}` },
        claimRef: { namespace: ns, name: claim },
      },
    },
    ns,
  );
  t.after(() => kubectlTry(["delete", "pv", name, "--wait=false"]));
}

describe("a StatefulSet re-created at a move's swap: its controller's claim and the pre-bound volume", () => {
  for (const manifest of ["old", "new"] as const) {
    test(`the swap's order, played by hand: a volume pre-bound to a claim's name while that claim is bound elsewhere changes nothing; once the claim is gone, the one the controller makes from the ${manifest} manifest's template binds to it, whatever its class`, async (t) => {
      const ns = namespace(t, `selfheal-${manifest}`);
      const oldClass = storageClassFor(t, ns, { expandable: false });
      const newClass = storageClassFor(t, ns, { expandable: true });
      const oldManifest = sts("db", ns).withClaim("data", "1Gi", oldClass).replicas(1).build();
      preBound(t, ns, `pv-${ns}-old`, oldClass, "data-db-0");
      apply(oldManifest, ns);
      await settled(ns, "db", 1);
      const original = await eventually("data-db-0 bound to the old volume", () => claims(ns).find((c) => c.metadata.name === "data-db-0" && c.status?.phase === "Bound"), 60_000);
      assert.equal(original.spec.volumeName, `pv-${ns}-old`);
      // The new volume, pre-bound to the claim's name while the original claim still holds it (the swap's bind-new-volume).
      preBound(t, ns, `pv-${ns}-new`, newClass, "data-db-0");
      await eventually("the new volume Available (pre-bound, waiting for its claim)", () => kubectlJson<PersistentVolume>(["get", "pv", `pv-${ns}-new`]).status?.phase === "Available", 30_000);
      await new Promise((r) => setTimeout(r, 3000));
      const still = claims(ns).find((c) => c.metadata.name === "data-db-0")!;
      assert.equal(still.metadata.uid, original.metadata.uid);
      assert.equal(still.spec.volumeName, `pv-${ns}-old`, "the original claim stays on its volume");
      assert.equal(kubectlJson<PersistentVolume>(["get", "pv", `pv-${ns}-new`]).spec.claimRef?.uid ?? "", "", "and the new volume waits, unbound");
      // The StatefulSet orphan-deleted, its replica gone, the original claim deleted (the swap's delete-claim).
      kubectl(["delete", "statefulset", "db", "-n", ns, "--cascade=orphan"]);
      kubectl(["delete", "pod", "db-0", "-n", ns, "--grace-period=0", "--force"]);
      kubectl(["delete", "pvc", "data-db-0", "-n", ns]);
      // Someone else re-creates it at once, from the old manifest or the new one: its controller makes the claim from that template.
      apply(manifest === "old" ? oldManifest : sts("db", ns).withClaim("data", "1Gi", newClass).replicas(1).build(), ns);
      const bound = await eventually("data-db-0 made again and bound", () => claims(ns).find((c) => c.metadata.name === "data-db-0" && c.status?.phase === "Bound"), 60_000);
      assert.notEqual(bound.metadata.uid, original.metadata.uid, "the controller's claim");
      assert.equal(bound.spec.volumeName, `pv-${ns}-new`, "bound to the pre-bound volume, the one with the data");
      assert.equal(bound.spec.storageClassName, manifest === "old" ? oldClass : newClass, "the template's class, not the volume's");
    });
  }

  test("a template that asks more than the pre-bound volume holds is not bound to it (the move takes such a claim back)", async (t) => {
    const ns = namespace(t, "selfheal-big");
    const cls = storageClassFor(t, ns, { expandable: false });
    preBound(t, ns, `pv-${ns}`, cls, "data-db-0", "1Gi");
    apply(sts("db", ns).withClaim("data", "2Gi", cls).replicas(1).build(), ns);
    await eventually("data-db-0 made", () => claims(ns).find((c) => c.metadata.name === "data-db-0"), 30_000);
    // The binder looks at a pending claim at once and again every 15 s: two of its periods.
    await new Promise((r) => setTimeout(r, 20_000));
    const claim = claims(ns).find((c) => c.metadata.name === "data-db-0")!;
    assert.equal(claim.status?.phase, "Pending");
    assert.equal(claim.spec.volumeName ?? "", "");
  });
});

describe("--migrate-existing names a self-healing owner before consent", () => {
  test("Argo CD with automated sync: diff and set name the Application and the command that pauses it before consent (set, without a terminal, asks none: nothing changes); a move to a smaller size is refused", async (t) => {
    installOwnerCrds();
    const ns = namespace(t, "selfheal-argo");
    const cls = storageClassFor(t, ns, { expandable: false });
    const other = storageClassFor(t, ns, { expandable: true });
    const app = `shop-${ns}`;
    if (kubectlTry(["get", "namespace", "argocd"]).code !== 0) kubectlTry(["create", "namespace", "argocd"]);
    apply(
      {
        apiVersion: "argoproj.io/v1alpha1",
        kind: "Application",
        metadata: { name: app, namespace: "argocd" },
        spec: {
          project: "default",
          source: { repoURL: "https://git.example.com/shop.git", path: "db", targetRevision: "main" },
          destination: { server: "https://kubernetes.default.svc", namespace: ns },
          syncPolicy: { automated: { prune: true, selfHeal: true } },
        },
      },
      "argocd",
    );
    t.after(() => kubectlTry(["delete", "application", app, "-n", "argocd", "--wait=false"]));
    for (let i = 0; i < 2; i++) preBound(t, ns, `pv-${ns}-${i}`, cls, `data-db-${i}`);
    apply(
      sts("db", ns)
        .withClaim("data", "1Gi", cls)
        .replicas(2)
        .parallel()
        .annotations({ "argocd.argoproj.io/tracking-id": `${app}:apps/StatefulSet:${ns}/db` })
        .build(),
      ns,
    );
    await settled(ns, "db", 2);
    await eventually("2 claims bound", () => claims(ns).filter((c) => c.status?.phase === "Bound").length === 2, 60_000);
    const named = new RegExp(
      `statefulset.apps/db is managed by Argo CD \\(Application argocd/${app}; annotation argocd.argoproj.io/tracking-id=[^)]*\\), which may re-create or revert it while it is changed: pause it with: kubectl patch applications.argoproj.io ${app} -n argocd --type merge -p`,
    );
    const selfHeal = new RegExp(
      `while the claims of statefulset.apps/db move, Argo CD \\(Application argocd/${app};[^)]*\\) may re-create it from its manifest \\(self-heal\\): a replica then starts only on the volume with its data, .* pause it first \\(kubectl patch applications.argoproj.io ${app} -n argocd --type merge -p .*\\) or pass --pause-owner`,
    );
    const diff = await runPlugin(["diff", "db", `data=1Gi,${other}`, "--migrate-existing", "-n", ns]);
    assert.match(diff.stdout + diff.stderr, named);
    assert.match(diff.stdout + diff.stderr, selfHeal);
    const set = await runPlugin(["set", "db", `data=1Gi,${other}`, "--migrate-existing", "-n", ns], { input: "N\n" });
    t.diagnostic(set.stderr);
    assert.notEqual(set.code, 0, set.stderr);
    assert.match(set.stderr, selfHeal);
    const prompt = set.stderr.search(/\[y\/N\]/);
    const owner = set.stderr.search(named);
    assert.ok(owner >= 0, set.stderr);
    if (prompt >= 0) assert.ok(owner < prompt, "the owner is named before the prompt");
    assert.notEqual(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 0, "no journal");
    // A move to a smaller size: refused until the Application is paused, nothing changed.
    const shrink = await runPlugin(["set", "db", `data=512Mi,${other}`, "--migrate-existing", "-n", ns, "--yes"]);
    assert.equal(shrink.code, 1, shrink.stderr);
    assert.match(
      shrink.stderr,
      /claim template data there asks 1Gi, more than the new volumes hold \(512Mi\): a claim its controller made from it at a swap could not bind to the volume with the data and would get a new, empty one: pause it first/,
    );
    assert.notEqual(kubectlTry(["get", "secret", "appstorage-journal-db", "-n", ns]).code, 0, "no journal");
  });
});
