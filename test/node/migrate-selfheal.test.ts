// --migrate-existing while someone else re-creates the StatefulSet (a GitOps self-heal), on the real
// node: a loop of the test's own creates db again whenever it is missing, from the old manifest,
// then from the new one, while `set --migrate-existing` runs; another loop reads /data/payload of
// every replica whenever it is Ready (each pod writes its payload, 1 MiB of random bytes, only when
// the volume has none: a replica on an empty volume would be Ready with other bytes).
//
// 1. the loop armed from the moment a claim being moved is deleted (the swap), from the old
//    manifest: the StatefulSet controller's claim, made from the old template, binds to the new
//    volume pre-bound to its name; the move goes on. Once the next move's orphan delete meets the
//    loop, the run stops, saying per replica where its newest data is and the claim bound to it,
//    and what to pause, with the command that finishes;
// 2. the loop from the new manifest, re-creating as soon as db is gone: the rerun stops the same way;
// 3. the loop stopped (the owner paused): the command from the line finishes; every claim on the new
//    class, every payload as it was.
// Not run when written (the node was busy): see docs/testing.md.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { PersistentVolumeClaim, Pod, StatefulSet } from "../../src/api/types";
import { kubectlJson, kubectlTry, namespace, runPlugin } from "../shared/harness";
import { allReady, copyImage, create, deleteKeptVolumes, payloadSha, workload } from "../shared/node";

const names = ["db-0", "db-1", "db-2"];
const directive = "data=1Gi,appstorage-csi-b";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The self-heal: every 100 ms, when db is missing and `armed()` says so, it is created from
 * `manifest()`; counts what it re-created. Polls, as Argo CD's self-heal reacts to a missing object.
 */
function selfHeal(ns: string, manifest: () => StatefulSet, armed: () => boolean): { stop: () => Promise<number> } {
  let on = true;
  let made = 0;
  const loop = (async () => {
    while (on) {
      if (armed() && kubectlTry(["get", "statefulset", "db", "-n", ns]).code !== 0) {
        if (kubectlTry(["create", "-n", ns, "-f", "-"], { input: JSON.stringify(manifest()) }).code === 0) made++;
      }
      await sleep(100);
    }
  })();
  return {
    stop: async () => {
      on = false;
      await loop;
      return made;
    },
  };
}

/** Every replica's payload whenever it is Ready, read once per pod: the pods that were Ready with other bytes. */
function payloadWatch(ns: string, expected: Record<string, string>): { stop: () => Promise<{ checked: number; wrong: string[] }> } {
  let on = true;
  const seen = new Set<string>();
  const wrong: string[] = [];
  const loop = (async () => {
    while (on) {
      const pods = kubectlJson<{ items: Pod[] }>(["get", "pods", "-n", ns, "-l", "app=db"]).items;
      for (const p of pods) {
        const ready = p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
        const uid = p.metadata.uid!;
        if (!ready || seen.has(uid) || p.metadata.deletionTimestamp) continue;
        try {
          const sha = payloadSha(ns, p.metadata.name!);
          seen.add(uid);
          if (sha !== expected[p.metadata.name!]) {
            const claim = kubectlJson<PersistentVolumeClaim>(["get", "pvc", `data-${p.metadata.name}`, "-n", ns]);
            wrong.push(`${p.metadata.name} (uid ${uid}) Ready on claim ${claim.metadata.uid}, volume ${claim.spec.volumeName}, with payload ${sha}`);
          }
        } catch {
          // Gone meanwhile (evicted): a pod not Ready long enough to be read did not serve.
        }
      }
      await sleep(300);
    }
  })();
  return {
    stop: async () => {
      on = false;
      await loop;
      return { checked: seen.size, wrong };
    },
  };
}

const claimsOf = (ns: string) => kubectlJson<{ items: PersistentVolumeClaim[] }>(["get", "pvc", "-n", ns]).items.filter((c) => /^data-db-\d$/.test(c.metadata.name!));

/** A stop for the self-heal: where each replica stands, then what to pause and the command that finishes (the run's own flags). */
function assertSelfHealStop(stderr: string, ns: string): string {
  for (const n of names) assert.match(stderr, new RegExp(`^${n}: its newest data is on volume \\S+.*, bound to (claim data-${n}|no claim yet)`, "m"), stderr);
  const m = /is being re-created by someone else: pause whatever re-creates it first \(.*\), then finish the move with: (kubectl appstorage set db .*)$/m.exec(stderr);
  assert.ok(m, stderr);
  assert.match(m[1]!, new RegExp(`^kubectl appstorage set db ${directive} --migrate-existing --copy-image ${copyImage.replace(/[./]/g, "\\$&")} .*-n ${ns}$`));
  return m[1]!;
}

describe("node: --migrate-existing while someone else re-creates the StatefulSet", { timeout: 1_500_000 }, () => {
  test("re-created from the old manifest at the swap, then from the new one in a loop: no replica is ever Ready without its data; the stops say where each stands; once the loop stops, the line's command finishes", async (t) => {
    const ns = namespace(t, "node");
    deleteKeptVolumes(t, ns);
    const oldManifest = workload("db", { replicas: 3, size: "1Gi" });
    const newManifest = workload("db", { replicas: 3, size: "1Gi", storageClass: "appstorage-csi-b" });
    create(oldManifest, ns);
    await allReady(ns, "db", 3);
    const expected = Object.fromEntries(names.map((n) => [n, payloadSha(ns, n)]));
    const original = Object.fromEntries(claimsOf(ns).map((c) => [c.metadata.name!, c.metadata.uid!]));
    const watch = payloadWatch(ns, expected);
    const args = ["set", "db", directive, "--migrate-existing", "--copy-image", copyImage, "--timeout", "240s", "-n", ns, "--yes"];
    try {
      // 1. From the old manifest, armed once an original claim is gone (a claim's swap).
      const swapped = () => claimsOf(ns).some((c) => original[c.metadata.name!] && c.metadata.uid !== original[c.metadata.name!]) || claimsOf(ns).length < 3;
      let armed = false;
      const heal1 = selfHeal(
        ns,
        () => oldManifest,
        () => (armed ||= swapped()),
      );
      const first = await runPlugin(args);
      const made1 = await heal1.stop();
      t.diagnostic(`first run: exit ${first.code}, ${made1} re-create(s) from the old manifest\n${first.stderr}`);
      assert.ok(made1 > 0, "the old manifest was re-created at least once");
      if (first.code !== 0) assertSelfHealStop(first.stderr, ns);

      // 2. From the new manifest, as soon as db is gone: the rerun stops the same way (or, if the
      //    first run finished, there is nothing left to move).
      const heal2 = selfHeal(
        ns,
        () => newManifest,
        () => true,
      );
      const second = await runPlugin(args);
      const made2 = await heal2.stop();
      t.diagnostic(`second run: exit ${second.code}, ${made2} re-create(s) from the new manifest\n${second.stderr}`);
      let finish = args;
      if (second.code !== 0) {
        const line = assertSelfHealStop(second.stderr, ns);
        finish = [...line.replace(/^kubectl appstorage /, "").split(" "), "--yes"];
      }

      // 3. The owner paused (no loop): the line's command finishes.
      const third = await runPlugin(finish);
      assert.equal(third.code, 0, third.stderr);
    } finally {
      await allReady(ns, "db", 3, 300_000).catch(() => undefined);
      await sleep(1000);
    }
    const seen = await watch.stop();
    t.diagnostic(`${seen.checked} Ready pod(s) read`);
    assert.deepEqual(seen.wrong, [], "no replica was ever Ready without its data");
    await allReady(ns, "db", 3);
    for (const n of names) assert.equal(payloadSha(ns, n), expected[n], `${n}: its data`);
    for (const c of claimsOf(ns)) {
      const pv = kubectlJson<{ spec: { storageClassName?: string } }>(["get", "pv", c.spec.volumeName!]);
      assert.equal(pv.spec.storageClassName, "appstorage-csi-b", `${c.metadata.name}: on a volume of the new class`);
      assert.notEqual(c.metadata.uid, original[c.metadata.name!], `${c.metadata.name}: moved`);
    }
  });
});
