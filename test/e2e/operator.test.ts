// An operator with a documented pause, for real: the Prometheus Operator (built from its Go module,
// lab/tools/prometheus-operator) runs against the test control plane with its own CRDs and makes an
// Alertmanager's StatefulSet. set refuses the StatefulSet it controls and names --pause-owner;
// `set --pause-owner` pauses the Alertmanager (spec.paused), re-creates the StatefulSet with the
// new claim template while the operator stays off it (the StatefulSet's watch sees this run's
// delete and create only), keeps every pod and claim (uids), and leaves the Alertmanager paused with the
// command that resumes it: resumed as the user would, with its storage changed to match, the
// operator reconciles and keeps the StatefulSet as it is. The control: with its storage set back,
// the operator, not paused, deletes the StatefulSet and makes its own (what it would have done to
// the run's, and why the run leaves it paused).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { KubeObject, StatefulSet } from "../../src/api/types";
import { apply, eventually, getSts, kubectl, kubectlJson, kubectlTry, namespace, runPlugin, uids } from "../shared/harness";
import { installOwnerCrds, operatorCrdSources } from "../shared/crds";
import { prometheusOperator } from "../shared/operator";
import { watchEvents } from "../shared/watch";

type Alertmanager = KubeObject & { spec: { paused?: boolean }; status?: { conditions?: { type: string; observedGeneration?: number; status: string }[] } };

describe("an operator's pause: the real Prometheus Operator", { timeout: 600_000 }, () => {
  test("refused without --pause-owner; with it the operator stays off while the StatefulSet is re-created, and is left paused with the command that resumes it", async (t) => {
    installOwnerCrds(operatorCrdSources);
    const ns = namespace(t, "operator");
    const operator = prometheusOperator(t, ns);
    apply(
      {
        apiVersion: "monitoring.coreos.com/v1",
        kind: "Alertmanager",
        metadata: { name: "main", namespace: ns },
        spec: { replicas: 2, storage: { volumeClaimTemplate: { spec: { resources: { requests: { storage: "1Gi" } } } } } },
      },
      ns,
    );
    await eventually("the operator's StatefulSet with its 2 pods and claims", () => Object.keys(uids(ns)).length === 4, 120_000);
    const sts = getSts(ns, "alertmanager-main");
    assert.deepEqual(
      sts.metadata.ownerReferences?.map((r) => `${r.kind}/${r.name}/${r.controller}`),
      ["Alertmanager/main/true"],
    );
    const before = uids(ns);

    const refused = await runPlugin(["set", "alertmanager-main", "alertmanager-main-db=2Gi", "-n", ns, "--yes"]);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /^error: statefulset.apps\/alertmanager-main is controlled by Alertmanager main, which would fight the change or re-create the old object; change the storage through it, pass --pause-owner to pause it while this runs, or pass --force$/m,
    );
    assert.ok(refused.stderr.includes(`pause it with: kubectl patch alertmanagers.monitoring.coreos.com main -n ${ns} --type merge -p '{"spec":{"paused":true}}'`), refused.stderr);
    assert.equal(getSts(ns, "alertmanager-main").metadata.uid, sts.metadata.uid, "nothing changed");

    const watch = watchEvents(["statefulset", "alertmanager-main", "-n", ns], "{.object.metadata.uid}");
    const set = await runPlugin(["set", "alertmanager-main", "alertmanager-main-db=2Gi", "-n", ns, "--yes", "--pause-owner"]);
    const events = (await watch.stop()).filter((e) => e.type === "ADDED" || e.type === "DELETED").map((e) => `${e.type} ${e.extra}`);
    assert.equal(set.code, 0, set.stderr);
    assert.equal(set.stdout, "statefulset.apps/alertmanager-main recreated\n");
    const now = getSts(ns, "alertmanager-main");
    assert.equal(now.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "2Gi");
    assert.deepEqual(events, [`ADDED ${sts.metadata.uid}`, `DELETED ${sts.metadata.uid}`, `ADDED ${now.metadata.uid}`], "only this run deleted and created it");
    assert.deepEqual(uids(ns), before, "every pod and claim kept");
    assert.equal(kubectlJson<Alertmanager>(["get", "alertmanager", "main", "-n", ns]).spec.paused, true, "left paused");
    const resume = set.stderr.match(
      /^Warning: left alertmanager.monitoring.coreos.com\/main in namespace \S+ paused \(spec.paused: true\): change its storage to what this run set, then resume it with: kubectl (patch .+) -p '(.+)'$/m,
    );
    assert.ok(resume, set.stderr);

    // As the user would: the Alertmanager's storage changed to match, then the printed command.
    kubectl(["patch", "alertmanager", "main", "-n", ns, "--type", "merge", "-p", '{"spec":{"storage":{"volumeClaimTemplate":{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}}}}']);
    kubectl([...resume[1]!.split(" "), "-p", resume[2]!]);
    const am = kubectlJson<Alertmanager>(["get", "alertmanager", "main", "-n", ns]);
    assert.equal(am.spec.paused, undefined, "resumed");
    await eventually(
      "the operator reconciled the resumed Alertmanager",
      () =>
        kubectlJson<Alertmanager>(["get", "alertmanager", "main", "-n", ns]).status?.conditions?.some(
          (c) => c.type === "Reconciled" && c.observedGeneration === am.metadata.generation && c.status === "True",
        ),
      120_000,
    );
    assert.equal(getSts(ns, "alertmanager-main").metadata.uid, now.metadata.uid, "the operator kept the StatefulSet");
    assert.deepEqual(uids(ns), before, "and every pod and claim");

    // The control: the same operator, not paused, fights a StatefulSet that differs from its
    // Alertmanager (here the storage set back to 1Gi): it deletes it and makes its own.
    kubectl(["patch", "alertmanager", "main", "-n", ns, "--type", "merge", "-p", '{"spec":{"storage":{"volumeClaimTemplate":{"spec":{"resources":{"requests":{"storage":"1Gi"}}}}}}}']);
    const remade = await eventually(
      "the operator made its own StatefulSet again",
      () => {
        // Gone for a moment between the operator's delete and its create.
        const got = kubectlTry(["get", "statefulset", "alertmanager-main", "-n", ns, "-o", "json"]);
        const s = got.code === 0 ? (JSON.parse(got.stdout) as StatefulSet) : undefined;
        return s && s.metadata.uid !== now.metadata.uid && s.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"] === "1Gi" ? s : undefined;
      },
      120_000,
    );
    assert.ok(remade, `the operator's log:\n${operator.log()}`);
  });
});
