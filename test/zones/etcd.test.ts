// etcd, a quorum, on three nodes in three zones: a three-member cluster (one member per zone, its
// data in its claim) moved with --migrate-existing to appstorage-csi-b, member by member, while a
// client puts numbered keys and logs each put etcd acknowledged.
//
// Checked by the test itself, from the client's logs and samples: quorum kept throughout (etcdctl
// endpoint health, sampled once a second, never shows two members unhealthy, and the pods' watch
// never two down); every acknowledged key is there afterwards with its value; the revisions etcd
// answered the puts with only grow, and so does every member's revision across the samples (a member
// that came back with less than it had would show); each member back on its node, on a new claim of
// appstorage-csi-b in its zone, still the member it was (the same member id).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { kubectlJson, namespace, runPlugin } from "../shared/harness";
import { allReady, create, deleteKeptVolumes, exec, maxDown, watchPods, whenTwoDown, workloadImage } from "../shared/node";
import { clientURLs, EtcdClient, etcdStatefulSet, etcdUid, nodeAddresses, routeBetweenNodes } from "../shared/etcd";
import { placement, troubleEvents } from "./zones";

const names = ["etcd-0", "etcd-1", "etcd-2"];

describe("zones: etcd, a quorum", { timeout: 1_200_000 }, () => {
  test("three members, one per zone, each moved to appstorage-csi-b under a writer: quorum kept, every acknowledged put kept, revisions only grow", async (t) => {
    const ns = namespace(t, "zones");
    deleteKeptVolumes(t, ns);
    routeBetweenNodes();
    const nodes = nodeAddresses();
    assert.equal(nodes.length, 3, JSON.stringify(nodes));
    const endpoints = clientURLs(nodes);
    create(etcdStatefulSet("etcd", nodes, { size: "1Gi" }), ns);
    await allReady(ns, "etcd", 3, 240_000);
    const before = placement(ns);
    assert.equal(new Set(Object.values(before).map((w) => w.podZone)).size, 3, `one member per zone: ${JSON.stringify(before)}`);
    const client = new EtcdClient(ns, endpoints);
    await client.create();
    const members = client.ctl("member list -w simple");
    assert.equal(members.trim().split("\n").length, 3, members);
    for (const n of nodes) assert.match(members, new RegExp(`started, ${n.name}, http://${n.ip.replace(/\./g, "\\.")}:2380`), members);
    for (const n of names) assert.equal(exec(ns, n, "id -u").trim(), String(etcdUid), `${n}: etcd runs as etcd`);

    await client.start(50);
    const watch = watchPods(ns);
    const t0 = Date.now();
    const r = await runPlugin(["set", "etcd", "data=1Gi,appstorage-csi-b", "--migrate-existing", "--copy-image", workloadImage, "--timeout", "300s", "-n", ns, "--yes"]);
    const took = (Date.now() - t0) / 1000;
    assert.equal(r.code, 0, r.stderr);
    await allReady(ns, "etcd", 3, 180_000);
    const ackedThen = client.report().acked.length;
    await client.ackedAtLeast(ackedThen + 30);
    await watch.stop();
    const report = await client.stop();

    // Quorum: never two members down, neither by their pods' readiness nor by etcd's own health.
    assert.equal(maxDown(watch.seen, names), 1, `never more than one member's pod down:\n${whenTwoDown(watch.seen, names)}`);
    const unhealthy = report.samples.map((s) => Object.values(s.healthy).filter((h) => !h).length + (3 - Object.keys(s.healthy).length));
    const worst = report.samples.filter((_, i) => unhealthy[i]! > 1);
    assert.deepEqual(worst, [], "endpoint health never shows two members down");
    assert.ok(
      unhealthy.some((u) => u === 1),
      `the samples saw the members go down one at a time (${report.samples.length} samples)`,
    );
    t.diagnostic(
      `moved in ${took}s; ${report.acked.length} puts acknowledged, ${report.failed.length} failed; ${report.samples.length} health samples, ${unhealthy.filter((u) => u === 1).length} with one member down`,
    );

    // Every acknowledged put is there, with its value; the revisions it was answered with only grow.
    const kv = client.keys();
    const missing = report.acked.filter((a) => kv.get(`k/${String(a.n).padStart(8, "0")}`) !== String(a.n));
    assert.deepEqual(missing, [], "every acknowledged key is there with its value");
    for (let i = 1; i < report.acked.length; i++) {
      assert.ok(
        report.acked[i]!.revision > report.acked[i - 1]!.revision,
        `the revision grows: put ${report.acked[i - 1]!.n} at ${report.acked[i - 1]!.revision}, put ${report.acked[i]!.n} at ${report.acked[i]!.revision}`,
      );
    }
    // Each member's revision, sample after sample, never goes back.
    const last: Record<string, number> = {};
    for (const s of report.samples) {
      for (const [ep, rev] of Object.entries(s.revision)) {
        assert.ok(rev >= (last[ep] ?? 0), `${ep}'s revision went back from ${last[ep]} to ${rev} at ${s.at}`);
        last[ep] = rev;
      }
    }
    const lastAcked = report.acked.at(-1)!.revision;
    const now = client.ctl("endpoint status -w json");
    const revisions = [...now.matchAll(/"revision":(\d+)/g)].map((m) => Number(m[1]));
    assert.equal(revisions.length, 3, now);
    for (const rev of revisions) assert.ok(rev >= lastAcked, `every member has caught up with the last acknowledged put (${rev} >= ${lastAcked})`);

    // Each member back on its node, on its new claim in its zone, still the same member.
    const after = placement(ns);
    for (const n of names) {
      const claim = `data-${n}`;
      assert.equal(after[claim]!.node, before[claim]!.node, `${n}: back on its node`);
      assert.deepEqual(after[claim]!.volumeZones, [after[claim]!.podZone], `${n}: its new volume lives in its zone`);
      assert.equal(kubectlJson<{ spec: { storageClassName: string } }>(["get", "pvc", claim, "-n", ns]).spec.storageClassName, "appstorage-csi-b");
    }
    const sorted = (s: string) => s.trim().split("\n").sort();
    assert.deepEqual(sorted(client.ctl("member list -w simple")), sorted(members), "the same three members, the same ids");
    assert.deepEqual(troubleEvents(ns), [], "no Multi-Attach error and no FailedScheduling event");
  });
});
