// --migrate-existing as a plan: which claims move and in which order, what is refused before
// anything changes, and the objects a move creates. Pure.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { commandLine, existingOf } from "../fixtures/command-line";
import type { PersistentVolume, PersistentVolumeClaim, StatefulSet } from "../../src/api/types";
import { parseDirectives } from "../../src/plan/directive";
import { journalFor, journalIsStale } from "../../src/plan/journal";
import { copyImageNeeds, defaultCopyImage, type MigrationClaim, type MigrationPhase } from "../../src/plan/migration-types";
import {
  copyCapabilities,
  copyPod,
  labelValue,
  movedClaim,
  newVolumeClaim,
  parseCopyReport,
  phaseOrder,
  probePod,
  probeRefusal,
  probeTargets,
  progressPeriodSeconds,
  progressProbe,
  retainedAnnotations,
  retainedLabels,
  tolerationsOf,
} from "../../src/plan/migrate";
import { buildPlan } from "../../src/plan/plan";
import { renderPlan } from "../../src/output/plan";
import type { Observed, PlanRequest } from "../../src/plan/types";
import { claim, pod, storageClass, sts } from "../fixtures/builders";

const now = "2026-12-01T12:00:00.000Z";
const movesLeftKinds =
  "create-new-claim create-copy-pod record remove-copy-pod create-copy-pod orphan-delete evict record tell-copy-pod record retain-old-volume hold-new-volume delete-claim delete-claim bind-new-volume create-moved-claim create-statefulset restore-new-volume-policy record record";
const bound = (c: PersistentVolumeClaim, volume: string, more: Partial<PersistentVolumeClaim["spec"]> = {}): PersistentVolumeClaim => ({
  ...c,
  metadata: { ...c.metadata, labels: { app: "db" } },
  spec: { ...c.spec, volumeName: volume, ...more },
});

function observed(s: StatefulSet, extra: Partial<Observed> = {}): Observed {
  return {
    statefulSet: s,
    claims: [0, 1, 2].map((i) => bound(claim(`data-db-${i}`, "1Gi", { capacity: "1Gi", storageClass: "fast" }), `pv-${i}`)),
    pods: [0, 1, 2].map((i) => pod(`db-${i}`, s)),
    storageClasses: [storageClass("fast", { default: true }), storageClass("slow")],
    podNodes: { "db-0": "node-a", "db-1": "node-a", "db-2": "node-b" },
    nodeTaints: { "node-a": [], "node-b": [{ key: "dedicated", value: "db", effect: "NoSchedule" }] },
    user: "alice",
    now,
    ...extra,
  };
}

const db = () => sts("db").withClaim("data", "1Gi", "fast").replicas(3).live("uid-db", "7");
const request = (directives: string[]): PlanRequest => ({
  namespace: "default",
  name: "db",
  directives: parseDirectives(directives),
  force: false,
  existing: { resize: false, vac: false, waitResize: false, restartPods: false, migrate: { copyImage: "img:1" } },
});

describe("--migrate-existing: the plan", () => {
  test("another class: every claim moves, highest ordinal first, after the re-create", () => {
    const plan = buildPlan(observed(db()), request(["data=1Gi,slow"]));
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(plan.steps, ["write-journal", "orphan-delete", "wait-gone", "create", "verify", "record", "migrate", "remove-journal"]);
    assert.deepEqual(
      plan.migration!.claims.map((c) => [c.claim, c.ordinal, c.pod, c.node, c.volume, c.to.storageClass, c.to.size, c.phase]),
      [
        ["data-db-2", 2, "db-2", "node-b", "pv-2", "slow", "1Gi", "pending"],
        ["data-db-1", 1, "db-1", "node-a", "pv-1", "slow", "1Gi", "pending"],
        ["data-db-0", 0, "db-0", "node-a", "pv-0", "slow", "1Gi", "pending"],
      ],
    );
    assert.equal(plan.migration!.copyImage, "img:1");
    assert.deepEqual(plan.migration!.claims[0]!.labels, { app: "db" });
    assert.deepEqual(JSON.parse(JSON.stringify(plan)), plan);
  });

  test("a shrink: every claim measured by a pod once the change is confirmed, said in a warning; no kubelet stats (they need nodes/proxy)", () => {
    const plan = buildPlan(observed(db()), request(["data=512Mi"]));
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(
      plan.migration!.claims.map((c) => [c.claim, c.measure]),
      [
        ["data-db-2", true],
        ["data-db-1", true],
        ["data-db-0", true],
      ],
    );
    assert.deepEqual(
      plan.warnings.filter((w) => /shrinks/.test(w)),
      ["data-db-0", "data-db-1", "data-db-2"].map(
        (c) => `claim ${c} shrinks to 512Mi: set measures its data with a pod once the change is confirmed, and refuses before anything else changes if it does not fit`,
      ),
    );
    // Not a shrink: nothing to measure, nothing said.
    const other = buildPlan(observed(db()), request(["data=1Gi,slow"]));
    assert.ok(other.migration!.claims.every((c) => !c.measure));
    assert.ok(!other.warnings.some((w) => /shrinks/.test(w)));
  });

  test("the copy pods tolerate exactly their node's taints; a node that could not be read: none, said once per node", () => {
    const plan = buildPlan(observed(db()), request(["data=1Gi,slow"]));
    assert.deepEqual(
      plan.migration!.claims.map((c) => [c.claim, c.tolerations]),
      [
        ["data-db-2", [{ key: "dedicated", operator: "Equal", value: "db", effect: "NoSchedule" }]],
        ["data-db-1", undefined],
        ["data-db-0", undefined],
      ],
    );
    assert.deepEqual(tolerationsOf([{ key: "gpu", effect: "NoExecute" }]), [{ key: "gpu", operator: "Exists", effect: "NoExecute" }]);
    const unread = buildPlan(observed(db(), { nodeTaints: { "node-b": [] } }), request(["data=1Gi,slow"]));
    assert.ok(unread.migration!.claims.every((c) => c.tolerations === undefined));
    assert.deepEqual(
      unread.warnings.filter((w) => /could not be read/.test(w)),
      [
        "node node-a could not be read (get nodes, cluster scope), so its taints are not known: the copy pods there tolerate no taint, and if it has any they cannot start (the move then stops and says so); kubectl appstorage rbac prints a ClusterRole that allows it",
      ],
    );
    assert.match(renderPlan(plan), /^data-db-2 +2 +db-2 +node-b +1Gi fast +1Gi slow +dedicated=db:NoSchedule +pv-2 +pending$/m);
  });

  test("the plan as text: each moving claim says where it goes, the classes what they can do, a shrink that a pod measures it", () => {
    const text = renderPlan(buildPlan(observed(db()), request(["data=512Mi,slow"])));
    assert.match(text, /^data-db-0 +0 +Bound +1Gi +1Gi +fast +db-0 +moves to a new volume: 512Mi slow, the data copied$/m);
    assert.match(text, /^storage class fast \(example\.com\/test, the default\): volumes do not expand .*\nstorage class slow \(example\.com\/test\): volumes do not expand/m);
    assert.match(text, /^smaller: a pod measures the data of data-db-2, data-db-1, data-db-0 \(du\) once the change is confirmed, before anything changes/m);
    // Each claim's phase and the actions its move has left (src/plan/move.ts, movesLeft), in the order a run takes them.
    assert.match(
      text,
      /^ {2}data-db-2 \(pending\): create claim appstorage-new-data-db-2, first copy by pod appstorage-copy-data-db-2, record copied, remove pod appstorage-copy-data-db-2, start pod appstorage-copy-data-db-2 to wait for the final copy, orphan-delete statefulset.apps\/db, evict db-2, record stopped, tell pod appstorage-copy-data-db-2 to make the final copy and verify \(delete it: SIGTERM is its go\), record verified, set volume pv-2 to Retain, hold the new volume \(Retain\), delete claim appstorage-new-data-db-2, delete claim data-db-2, bind the new volume to the claim's name, create claim data-db-2 on the new volume, create statefulset.apps\/db, give the new volume its reclaim policy back, record swapped, record done$/m,
    );
  });

  test("a block volume is refused; a ReadWriteOncePod claim moves offline, said as a warning (consent is the run's, not the plan's)", () => {
    const o = observed(db());
    o.claims[0] = { ...o.claims[0]!, spec: { ...o.claims[0]!.spec, volumeMode: "Block" } };
    o.claims[1] = { ...o.claims[1]!, spec: { ...o.claims[1]!.spec, accessModes: ["ReadWriteOncePod"] } };
    const refused = buildPlan(o, request(["data=1Gi,slow"]));
    assert.deepEqual(
      refused.refusals.map((r) => r.message.split(":")[0]),
      ["claim data-db-0 of statefulset.apps/db is a block volume (volumeMode Block)"],
    );
    o.claims[0] = observed(db()).claims[0]!;
    const accepted = buildPlan(o, request(["data=1Gi,slow"]));
    assert.deepEqual(accepted.refusals, []);
    assert.ok(
      accepted.warnings.some((w) => /^claim data-db-1 is ReadWriteOncePod: no second pod may mount it while its pod runs, so its replica is down for the whole copy, not only the final one$/.test(w)),
      JSON.stringify(accepted.warnings),
    );
    assert.equal(accepted.migration!.claims.find((c) => c.claim === "data-db-1")!.offline, true);
    assert.deepEqual(phaseOrder({ offline: true }), ["pending", "stopped", "copied", "verified", "swapped", "done"]);
  });

  test("claims already on the target are left; unbound ones are named and left", () => {
    const o = observed(db());
    o.claims[2] = bound(claim("data-db-2", "1Gi", { capacity: "1Gi", storageClass: "slow" }), "pv-9");
    o.claims[1] = { ...claim("data-db-1", "1Gi", { phase: "Pending", storageClass: "fast" }) };
    const plan = buildPlan(o, request(["data=1Gi,slow"]));
    assert.deepEqual(
      plan.migration!.claims.map((c) => c.claim),
      ["data-db-0"],
    );
    assert.ok(plan.warnings.some((w) => w.startsWith("claim data-db-1 is Pending: it has no volume")));
  });

  test("nothing to move and no template change: no change", () => {
    const o = observed(sts("db").withClaim("data", "1Gi", "slow").replicas(1).live("uid-db", "7"));
    o.claims = [bound(claim("data-db-0", "1Gi", { capacity: "1Gi", storageClass: "slow" }), "pv-0")];
    const plan = buildPlan(o, request(["data=1Gi,slow"]));
    assert.equal(plan.noChange, true);
    assert.equal(plan.migration, undefined);
  });

  test("an interrupted move goes on from its journal, whatever the StatefulSet's uid", () => {
    const first = buildPlan(observed(db()), request(["data=1Gi,slow"]));
    const journal = { ...journalFor(first, { holder: "h", by: "alice", now: new Date(now) }), step: "migrating" as const, leaseExpires: "2026-12-01T11:00:00.000Z" };
    journal.migration!.claims[0]!.phase = "swapped";
    const recreated = { ...db(), metadata: { ...db().metadata, uid: "uid-db-2" }, spec: first.desired.spec };
    assert.equal(journalIsStale(journal, recreated), false);
    const plan = buildPlan(observed(recreated, { journal }), request(["data=1Gi,slow"]));
    assert.equal(plan.mode, "resume");
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(plan.steps, ["write-journal", "migrate", "remove-journal"]);
    assert.equal(plan.migration!.claims[0]!.phase, "swapped");
    assert.equal(plan.migration!.copyImage, "img:1", "the journal's copy image");
    // --copy-image given again: the rest of the move uses it (the journal's could not be pulled, say).
    const other = buildPlan(observed(recreated, { journal }), {
      ...request(["data=1Gi,slow"]),
      existing: { ...request(["data=1Gi,slow"]).existing!, migrate: { copyImage: "img:2", copyImageGiven: true } },
    });
    assert.equal(other.migration!.copyImage, "img:2");
    assert.equal(journalFor(other, { holder: "h2", by: "bob", now: new Date(now) }).migration!.copyImage, "img:2", "the run's journal (which apply reads the moves from) has it too");
    // A rerun's plan shows where each move stands and what it has left.
    assert.deepEqual(
      plan.moves!.map((v) => [v.claim, v.phase, v.left.map((s) => s.kind).join(" ")]),
      [
        ["data-db-2", "swapped", "record"],
        ["data-db-1", "pending", movesLeftKinds],
        ["data-db-0", "pending", movesLeftKinds],
      ],
    );
    assert.match(renderPlan(plan), /^ {2}data-db-2 \(swapped\): record done$/m);
    assert.match(plan.warnings[0]!, /was moving the claims of db to new volumes and was interrupted/);
    // Gone in the middle of a move (the StatefulSet is orphan-deleted while a replica is down): the same.
    const gone = buildPlan(observed(recreated, { statefulSet: undefined, journal }), request(["data=1Gi,slow"]));
    assert.deepEqual(gone.steps, ["write-journal", "migrate", "remove-journal"]);
    // Re-created by someone else with other templates: stale.
    assert.equal(journalIsStale(journal, db()), true);
  });

  test("the command line: --migrate-existing alone, --copy-image, --yes", () => {
    const parsed = commandLine(["set", "db", "data=2Gi,slow", "--migrate-existing", "--yes", "--copy-image", "reg/copy:2"]);
    assert.equal(parsed.kind, "set");
    assert.deepEqual(existingOf(parsed), { resize: false, vac: false, waitResize: false, restartPods: false, migrate: { copyImage: "reg/copy:2", copyImageGiven: true } });
    const diff = commandLine(["diff", "db", "data=2Gi", "--migrate-existing"]);
    assert.deepEqual(existingOf(diff)?.migrate, { copyImage: defaultCopyImage });
    assert.throws(() => commandLine(["set", "db", "data=2Gi", "--copy-image", "x"]), /--copy-image is the image of the copy pods of --migrate-existing/);
    assert.throws(() => commandLine(["set", "db", "data=2Gi", "--migrate-existing", "--resize-existing"]), /drop --resize-existing/);
  });
});

describe("--migrate-existing: the pod that proves the copy image starts on a node", () => {
  const m = buildPlan(observed(db(), { storageClasses: [storageClass("fast", { default: true }), { ...storageClass("slow"), volumeBindingMode: "WaitForFirstConsumer" }] }), request(["data=2Gi,slow"]))
    .migration!.claims[0]!;
  test("the copy pod as it would run there (image, node, tolerations, security), mounting no claim, running exit 0", () => {
    const probe = probePod(m, "default", "db", "img:1");
    const copy = copyPod(m, "default", "db", "measure", "img:1");
    assert.equal(probe.metadata.name, undefined);
    assert.equal(probe.metadata.generateName, "appstorage-probe-");
    assert.deepEqual(probe.metadata.labels, copy.metadata.labels);
    const spec = probe.spec as Record<string, unknown> & { containers: { image: string; command: string[]; volumeMounts: unknown[]; env: unknown[] }[]; volumes: unknown[] };
    const { containers: _c, volumes: _v, ...rest } = spec;
    const { containers: _cc, volumes: _vv, ...copyRest } = copy.spec as Record<string, unknown>;
    assert.deepEqual(rest, copyRest, "node affinity, tolerations, security context: the copy pod's");
    // No claim: only the scratch space the read-only root file system needs.
    assert.deepEqual(spec.volumes, [{ name: "tmp", emptyDir: {} }]);
    assert.deepEqual(
      spec.containers.map((c) => [c.image, c.command, c.volumeMounts, c.env]),
      [["img:1", ["/bin/sh", "-c", "exit 0"], [{ name: "tmp", mountPath: "/tmp" }], []]],
    );
  });

  test("one probe pod per node of the claims whose copy pods are still to run (a move before its final copy), before the journal", () => {
    const claim = (name: string, phase: MigrationPhase, node?: string): MigrationClaim => ({ ...m, claim: name, phase, ...(node ? { node } : { node: undefined }) });
    const cases: { name: string; claims: MigrationClaim[]; want: string[] }[] = [
      { name: "nothing moved yet: one per node, the first claim of each", claims: [claim("d-2", "pending", "a"), claim("d-1", "pending", "b"), claim("d-0", "pending", "a")], want: ["d-2", "d-1"] },
      {
        name: "a rerun: claims copied or stopped still copy; verified, swapped and done ones do not",
        claims: [claim("d-2", "done", "a"), claim("d-1", "verified", "b"), claim("d-0", "stopped", "c"), claim("d-3", "copied", "a")],
        want: ["d-0", "d-3"],
      },
      { name: "every claim past its final copy: no probe at all", claims: [claim("d-1", "swapped", "a"), claim("d-0", "done", "b")], want: [] },
      { name: "a claim whose replica does not run: one probe where the scheduler puts it", claims: [claim("d-1", "pending"), claim("d-0", "pending")], want: ["d-1"] },
    ];
    for (const k of cases)
      assert.deepEqual(
        probeTargets({ claims: k.claims }).map((c) => c.claim),
        k.want,
        k.name,
      );
  });

  test("a probe pod that cannot start refuses the run with one line: the reason, what to do, nothing changed", () => {
    const onNode = { claim: "data-db-2", node: "node-a", tolerations: [{ key: "dedicated", operator: "Equal" as const, value: "db", effect: "NoSchedule" }] };
    const cases: { name: string; m: Parameters<typeof probeRefusal>[1]; end: Parameters<typeof probeRefusal>[4]; want: string }[] = [
      {
        name: "an image the node cannot pull: --copy-image, and what the image needs",
        m: onNode,
        end: { trouble: { reason: "ImagePullBackOff", message: "Back-off pulling image" } },
        want: `the copy image img:1 cannot start on node node-a: ImagePullBackOff (Back-off pulling image); the pod was removed and nothing was changed: pass --copy-image with an image the node can pull or already has (${copyImageNeeds}), then run the same command again`,
      },
      {
        name: "no room on the replica's node: the node, the taints its copy pods tolerate (that node's, never every taint)",
        m: onNode,
        end: { trouble: { reason: "Unschedulable", message: "0/1 nodes are available: 1 Insufficient memory." } },
        want: "the copy image img:1 cannot start on node node-a: Unschedulable (0/1 nodes are available: 1 Insufficient memory.); the pod was removed and nothing was changed: the copy pods must run on node node-a, where the claim's replica runs, and tolerate only the taints that node had when the change was planned (dedicated:NoSchedule): make room there (or lower the namespace's LimitRange defaults), then run the same command again",
      },
      {
        name: "a container kubelet cannot create: the pod's events (it is removed)",
        m: onNode,
        end: { trouble: { reason: "CreateContainerConfigError" } },
        want: "the copy image img:1 cannot start on node node-a: CreateContainerConfigError; the pod was removed and nothing was changed: let the namespace's policies allow the copy pods (kubectl get events -n shop --field-selector involvedObject.name=appstorage-probe-x1), then run the same command again",
      },
      {
        name: "an image without a shell, a claim whose replica runs nowhere",
        m: { claim: "data-db-2" },
        end: { failed: "Error" },
        want: `the copy image img:1 does not run its shell (/bin/sh) where claim data-db-2's copy pods would run: Error; the pod was removed and nothing was changed: pass --copy-image with an image that has sh (${copyImageNeeds})`,
      },
    ];
    for (const k of cases) assert.equal(probeRefusal("img:1", k.m, "shop", "appstorage-probe-x1", k.end), k.want, k.name);
  });
});

describe("--migrate-existing: the objects", () => {
  // slow binds once its first pod is scheduled (the copy pod): no claim names a node.
  const m = buildPlan(observed(db(), { storageClasses: [storageClass("fast", { default: true }), { ...storageClass("slow"), volumeBindingMode: "WaitForFirstConsumer" }] }), request(["data=2Gi,slow"]))
    .migration!.claims[0]!;

  test("the claim of the new volume, the copy pod, the claim re-created on the new volume", () => {
    const temp = newVolumeClaim(m, "default", "db");
    assert.equal(temp.metadata.name, "appstorage-new-data-db-2");
    assert.deepEqual(temp.spec, { accessModes: ["ReadWriteOnce"], volumeMode: "Filesystem", resources: { requests: { storage: "2Gi" } }, storageClassName: "slow" });
    const copy = copyPod({ ...m, copiedSince: 1700000000 }, "default", "db", "sync", "img:1", "wait");
    const spec = copy.spec as Record<string, unknown> & { containers: { env: unknown[]; volumeMounts: unknown[] }[]; volumes: unknown[] };
    assert.deepEqual(spec["affinity"], {
      nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name", operator: "In", values: ["node-b"] }] }] } },
    });
    assert.deepEqual(spec["tolerations"], [{ key: "dedicated", operator: "Equal", value: "db", effect: "NoSchedule" }], "its node's taints, no blanket toleration");
    // The final copy started before its replica stops waits for SIGTERM (its deletion is the go), and has a day to finish once told.
    assert.deepEqual(spec.containers[0]!.env, [
      { name: "MODE", value: "sync" },
      { name: "SINCE", value: "1700000000" },
      { name: "WAIT", value: "sigterm" },
    ]);
    assert.equal(spec["terminationGracePeriodSeconds"], 86_400);
    assert.deepEqual(spec.volumes, [
      { name: "src", persistentVolumeClaim: { claimName: "data-db-2", readOnly: true } },
      { name: "dst", persistentVolumeClaim: { claimName: "appstorage-new-data-db-2" } },
      { name: "tmp", emptyDir: {} },
    ]);
    assert.equal(copy.metadata.annotations?.["appstorage.kubectl.io/start"], "wait");
    // One that goes at once does not wait.
    const now_ = copyPod({ ...m, copiedSince: 1 }, "default", "db", "sync", "img:1", "go");
    assert.equal(now_.metadata.annotations?.["appstorage.kubectl.io/start"], "go");
    assert.ok(!(now_.spec as { containers: { env: { name: string }[] }[] }).containers[0]!.env.some((e) => e.name === "WAIT"));
    // A first copy has neither.
    const first = copyPod(m, "default", "db", "copy", "img:1");
    assert.equal(first.metadata.annotations?.["appstorage.kubectl.io/start"], undefined);
    assert.equal((first.spec as { terminationGracePeriodSeconds?: number }).terminationGracePeriodSeconds, undefined);
    assert.equal((first.spec as { volumes: unknown[] }).volumes.length, 3);
    // A copy says its bytes move by being Ready (the progress probe); the measuring pod has none.
    const probe = (p: typeof first) => (p.spec as { containers: { readinessProbe?: { exec: { command: string[] }; periodSeconds: number } }[] }).containers[0]!.readinessProbe;
    for (const c of [copy, now_, first])
      assert.deepEqual(probe(c), {
        exec: { command: ["/bin/sh", "-c", progressProbe] },
        periodSeconds: progressPeriodSeconds,
        timeoutSeconds: progressPeriodSeconds,
        successThreshold: 1,
        failureThreshold: 1,
      });
    assert.equal(probe(copyPod(m, "default", "db", "measure", "img:1")), undefined);
    const moved = movedClaim(m, "default", "pv-new");
    assert.deepEqual(moved.metadata, { name: "data-db-2", namespace: "default", labels: { app: "db" } });
    assert.equal(moved.spec.volumeName, "pv-new");
    assert.deepEqual(retainedLabels(m, "default", "db", new Date(now)), {
      "app.kubernetes.io/managed-by": "kubectl-appstorage",
      "appstorage.kubectl.io/namespace": "default",
      "appstorage.kubectl.io/statefulset": "db",
      "appstorage.kubectl.io/claim": "data-db-2",
      "appstorage.kubectl.io/ordinal": "2",
      "appstorage.kubectl.io/retained-at": "2026-12-01",
    });
  });

  test("every copy pod is hardened: not privileged, only the capabilities a faithful copy needs, no escalation, RuntimeDefault seccomp, no token, the claim read-only", () => {
    for (const mode of ["copy", "sync", "measure"] as const) {
      const p = copyPod({ ...m, copiedSince: 1 }, "default", "db", mode, "img:1", "wait");
      const spec = p.spec as Record<string, unknown> & {
        containers: { securityContext: Record<string, unknown>; volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[] }[];
        volumes: { name: string; persistentVolumeClaim?: { claimName: string; readOnly?: boolean } }[];
      };
      assert.equal(spec["automountServiceAccountToken"], false, mode);
      assert.deepEqual(spec["securityContext"], { runAsUser: 0, runAsGroup: 0, seccompProfile: { type: "RuntimeDefault" } }, mode);
      assert.equal(spec.containers.length, 1);
      assert.deepEqual(
        spec.containers[0]!.securityContext,
        {
          privileged: false,
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ["ALL"], add: mode === "measure" ? ["DAC_OVERRIDE"] : ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "MKNOD", "SETFCAP"] },
          seccompProfile: { type: "RuntimeDefault" },
        },
        mode,
      );
      // Only capabilities the Pod Security Standards' baseline profile allows adding.
      const baseline = ["AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"];
      assert.ok(
        copyCapabilities[mode].every((c) => baseline.includes(c)),
        mode,
      );
      assert.deepEqual(
        spec.containers[0]!.volumeMounts.find((v) => v.name === "src"),
        { name: "src", mountPath: "/src", readOnly: true },
        mode,
      );
      assert.deepEqual(spec.volumes[0], { name: "src", persistentVolumeClaim: { claimName: "data-db-2", readOnly: true } }, mode);
      assert.deepEqual(spec["tolerations"], [{ key: "dedicated", operator: "Equal", value: "db", effect: "NoSchedule" }], mode);
    }
    // A replica whose node has no taint, or could not be read: its copy pods tolerate nothing.
    assert.equal((copyPod({ ...m, tolerations: undefined }, "default", "db", "copy", "img:1").spec as Record<string, unknown>)["tolerations"], undefined);
  });

  test("both new claims carry the claim's annotations under its new template's, never the binding's (local-path reads volumeType there)", () => {
    const s = db();
    s.spec.volumeClaimTemplates![0]!.metadata.annotations = { volumeType: "local", team: "db" };
    // local-path binds once the first pod is scheduled: the copy pod's node decides, the claim names none.
    const o = observed(s, { storageClasses: [storageClass("fast", { default: true }), { ...storageClass("slow"), volumeBindingMode: "WaitForFirstConsumer" }] });
    o.claims = o.claims.map((c) => ({
      ...c,
      metadata: {
        ...c.metadata,
        annotations: {
          team: "old",
          backup: "nightly",
          "pv.kubernetes.io/bind-completed": "yes",
          "pv.kubernetes.io/bound-by-controller": "yes",
          "volume.beta.kubernetes.io/storage-provisioner": "old.csi",
          "volume.kubernetes.io/storage-provisioner": "old.csi",
          "volume.kubernetes.io/selected-node": "node-b",
        },
      },
    }));
    const moving = buildPlan(o, request(["data=2Gi,slow"])).migration!.claims[0]!;
    const want = { team: "db", backup: "nightly", volumeType: "local" };
    assert.deepEqual(moving.annotations, want);
    assert.deepEqual(newVolumeClaim(moving, "default", "db").metadata.annotations, want);
    assert.deepEqual(movedClaim(moving, "default", "pv-new").metadata.annotations, want);
    // Neither has any: no annotations field at all.
    assert.equal(m.annotations, undefined);
    assert.equal(newVolumeClaim(m, "default", "db").metadata.annotations, undefined);
  });

  test("label values fit Kubernetes' rule for any claim name (63 characters, a letter or digit at each end)", () => {
    const valid = (v: string) => v.length <= 63 && /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(v);
    const template = "t".repeat(62) + "-";
    const sts = "s".repeat(52);
    const long = `${"d".repeat(63)}-${sts}-0`;
    for (const name of ["data-db-0", "d".repeat(63), long, `${template}x-${sts}-1`, `a.${"b".repeat(60)}.c-${sts}-12`]) {
      const v = labelValue(name);
      assert.ok(valid(v), `${name} -> ${v}`);
      if (name.length <= 63) assert.equal(v, name, "a name that fits is kept as it is");
    }
    assert.notEqual(labelValue(`${long}0`), labelValue(`${long}1`), "two long claims keep two values");
    const moved = { ...m, claim: long, ordinal: 0 };
    const labels = [copyPod(moved, "default", sts, "copy", "img:1").metadata.labels!, newVolumeClaim(moved, "default", sts).metadata.labels!, retainedLabels(moved, "default", sts, new Date(now))];
    for (const l of labels) for (const [k, v] of Object.entries(l)) assert.ok(valid(v), `${k}=${v}`);
    assert.deepEqual(retainedAnnotations(moved, sts), { "appstorage.kubectl.io/statefulset": sts, "appstorage.kubectl.io/claim": long }, "the whole names, for show");
  });

  test("a copy pod's report comes from its termination message", () => {
    const done = { metadata: {}, status: { phase: "Succeeded", containerStatuses: [{ name: "copy", state: { terminated: { exitCode: 0, message: '{"since":17,"bytes":4096}' } } }] } };
    assert.deepEqual(parseCopyReport(done), { since: 17, bytes: 4096 });
    assert.deepEqual(parseCopyReport({ metadata: {}, status: { containerStatuses: [{ name: "copy", state: { terminated: { message: "not json" } } }] } }), { error: "not json" });
    assert.equal(parseCopyReport({ metadata: {} }), undefined);
  });
});

describe("--migrate-existing to a class that binds at once (Immediate)", () => {
  const zoned = (name: string, zone: string): PersistentVolume => ({
    metadata: { name },
    spec: {
      capacity: { storage: "1Gi" },
      csi: { driver: "csi.example.com", volumeHandle: name },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: "topology.kubernetes.io/zone", operator: "In", values: [zone] }] }] } },
    },
  });
  const classes = [storageClass("fast", { default: true }), { ...storageClass("slow"), volumeBindingMode: "WaitForFirstConsumer" }, { ...storageClass("now"), volumeBindingMode: "Immediate" }];
  const zones = { persistentVolumes: [zoned("pv-0", "zone-a"), zoned("pv-1", "zone-a"), zoned("pv-2", "zone-b")], storageClasses: classes };

  test("the new volume's claim names the replica's node, so that the provisioner makes it in that node's zone", () => {
    const plan = buildPlan(observed(db(), zones), request(["data=1Gi,now"]));
    assert.deepEqual(plan.refusals, []);
    const m = plan.migration!.claims.find((c) => c.claim === "data-db-2")!;
    assert.equal(m.provisionOn, "node-b");
    assert.equal(newVolumeClaim(m, "default", "db").metadata.annotations?.["volume.kubernetes.io/selected-node"], "node-b");
    // The claim re-created on the new volume is bound by name: it names no node.
    assert.equal(movedClaim(m, "default", "pv-new").metadata.annotations?.["volume.kubernetes.io/selected-node"], undefined);
  });

  test("an old volume usable anywhere (a hostPath volume of minikube's provisioner, no node affinity): the claim names no node", () => {
    // minikube's provisioner may not read nodes (role system:persistent-volume-provisioner): a
    // claim naming one is never provisioned.
    const hostPath = (name: string): PersistentVolume => ({ metadata: { name }, spec: { capacity: { storage: "1Gi" }, hostPath: { path: `/tmp/hostpath-provisioner/default/${name}` } } });
    const plan = buildPlan(observed(db(), { persistentVolumes: [hostPath("pv-0"), hostPath("pv-1"), hostPath("pv-2")], storageClasses: classes }), request(["data=512Mi,now"]));
    assert.deepEqual(plan.refusals, []);
    assert.equal(plan.migration?.claims.length, 3, "every replica's claim moves");
    for (const m of plan.migration!.claims) {
      assert.equal(m.provisionOn, undefined, m.claim);
      assert.equal(newVolumeClaim(m, "default", "db").metadata.annotations, undefined, m.claim);
    }
  });

  test("a WaitForFirstConsumer class: the copy pod's node decides, the claim names none", () => {
    const plan = buildPlan(observed(db(), zones), request(["data=1Gi,slow"]));
    const m = plan.migration!.claims.find((c) => c.claim === "data-db-2")!;
    assert.equal(m.provisionOn, undefined);
    assert.equal(newVolumeClaim(m, "default", "db").metadata.annotations, undefined);
  });

  test("a zoned volume whose pod does not run is refused up front, with what to do", () => {
    const o = observed(db(), zones);
    o.podNodes = { "db-0": "node-a", "db-1": "node-a" };
    const plan = buildPlan(o, request(["data=1Gi,now"]));
    assert.deepEqual(
      plan.refusals.map((r) => r.message),
      [
        "claim data-db-2's volume can be used only where topology.kubernetes.io/zone=zone-b, and its pod db-2 does not run on a node: class now binds at once (volumeBindingMode Immediate), so its new volume could be made elsewhere, where no copy pod can mount both; start the claim's pod first, or choose a class with volumeBindingMode WaitForFirstConsumer",
      ],
    );
  });
});

describe("--migrate-existing with a replica on a cordoned node", () => {
  test("refused up front with what to do; --force moves it anyway, said as a warning", () => {
    const o = observed(db(), { cordonedNodes: ["node-b"] });
    const refused = buildPlan(o, request(["data=1Gi,slow"]));
    assert.deepEqual(
      refused.refusals.map((r) => r.message),
      [
        "node node-b, where db-2 runs, is cordoned: moving claim data-db-2 restarts db-2, which could then not start on that node again (and the new volume is made where that node is); uncordon it first (kubectl uncordon node-b), or pass --force to move it anyway",
      ],
    );
    const forced = buildPlan(o, { ...request(["data=1Gi,slow"]), force: true });
    assert.deepEqual(forced.refusals, []);
    assert.deepEqual(
      forced.migration!.claims.map((c) => c.claim),
      ["data-db-2", "data-db-1", "data-db-0"],
    );
    assert.ok(
      forced.warnings.some((w) => w.includes("node node-b, where db-2 runs, is cordoned")),
      forced.warnings.join("\n"),
    );
  });
});

describe("--migrate-existing under a PodDisruptionBudget", () => {
  test("a maxUnavailable budget over the pods refuses the plan (no eviction is allowed once the StatefulSet is orphan-deleted); an integer minAvailable does not", () => {
    const s = db();
    s.spec.template.metadata = { labels: { app: "db" } };
    const budget = (spec: Record<string, unknown>) => ({ metadata: { name: "db", namespace: "default" }, spec: { selector: { matchLabels: { app: "db" } }, ...spec } });
    const refused = buildPlan(observed(s, { disruptionBudgets: [budget({ maxUnavailable: 1 })] }), request(["data=1Gi,slow"]));
    assert.deepEqual(
      refused.refusals.map((r) => r.message.split(":")[0]),
      ["PodDisruptionBudget db (maxUnavailable 1) covers the pods of statefulset.apps/db"],
    );
    assert.deepEqual(buildPlan(observed(s, { disruptionBudgets: [budget({ minAvailable: 2 })] }), request(["data=1Gi,slow"])).refusals, []);
  });
});
