// One claim's move as a state machine (src/plan/move.ts): a table of observed states and the
// action nextMoveAction chooses for each, then the machine driven through a small world
// (test/fixtures/move-world.ts) from every phase, with a kill after every action, a failed
// verification, copy pods that cannot start and a replica that runs again. Pure.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Pod } from "../../src/api/types";
import { copyPod, copyPodName, newVolumeClaimName, startAnnotation } from "../../src/plan/migrate";
import type { MigrationClaim } from "../../src/plan/migration-types";
import { afterTrouble, copyPodTrouble, movesLeft, nextMoveAction, nodeNote, noteCopyPod, stallSeconds, type Trouble, triesWhileDown, unschedulableSeconds } from "../../src/plan/move";
import type { MoveAction, MoveObserved, MoveRun, MoveStepView, MoveTarget } from "../../src/plan/move-types";
import { act, observe, step, type World, world } from "../fixtures/move-world";

const freshRun = (): MoveRun => ({ created: [], told: {}, seen: {} });

interface Drive {
  actions: MoveAction[];
  stop?: string;
  done: boolean;
}

/**
 * Runs the machine: observe, decide, act; a wait lets the controllers take one step (and fails the
 * test when nothing can change). `killAfter`: after that many actions the run's memory is lost, as
 * when the process is killed and the same command runs again (the journal, `m`, is kept).
 */
function drive(w: World, m: MigrationClaim, target: MoveTarget, opts: { killAfter?: number; run?: MoveRun } = {}): Drive {
  let run = opts.run ?? freshRun();
  const actions: MoveAction[] = [];
  for (let i = 0; i < 1000; i++) {
    const a = nextMoveAction(observe(w, m, target, run));
    if (a.kind === "done") return { actions, done: true };
    if (a.kind === "stop") return { actions, stop: a.message, done: false };
    if (a.kind === "wait") {
      assert.ok(step(w, m), `stuck waiting for ${a.for} (phase ${m.phase})`);
      seeRemoved(w, run);
      continue;
    }
    act(w, a, m, target, run);
    actions.push(a);
    if (actions.length === opts.killAfter) run = freshRun();
  }
  assert.fail(`no end after 1000 decisions: ${actions.map((a) => a.kind).join(", ")}`);
}

/** What the run's watch of a told final-copy pod keeps once kubelet removed it. */
function seeRemoved(w: World, run: MoveRun): void {
  if (w.removedTold && run.told[w.removedTold.metadata.uid!] !== undefined) run.ended = w.removedTold;
  w.removedTold = undefined;
}

/** An action as a plan shows it (kind and what it acts on), to compare with movesLeft. */
function asStep(a: MoveAction, m: MigrationClaim): MoveStepView {
  const copy = copyPodName(m.claim);
  switch (a.kind) {
    case "create-new-claim":
      return { kind: a.kind, object: newVolumeClaimName(m.claim) };
    case "create-copy-pod":
      return { kind: a.kind, object: copy, mode: a.mode, start: a.start };
    case "tell-copy-pod":
    case "remove-copy-pod":
      return { kind: a.kind, object: copy };
    case "record":
      return { kind: a.kind, phase: a.set.phase! };
    case "orphan-delete":
    case "create-statefulset":
      return { kind: a.kind, object: "db" };
    case "evict":
      return { kind: a.kind, object: a.pod };
    case "retain-old-volume":
      return { kind: a.kind, object: a.volume };
    case "delete-claim":
      return { kind: a.kind, object: a.name };
    case "create-moved-claim":
      return { kind: a.kind, object: m.claim };
    case "hold-new-volume":
    case "bind-new-volume":
    case "restore-new-volume-policy":
      return { kind: a.kind };
    default:
      return assert.fail(`not an action a plan shows: ${a.kind}`);
  }
}

/** What a finished move leaves: the claim on the new volume, the old volume kept, nothing of the tool's, every replica back. */
function assertMoved(w: World, m: MigrationClaim): void {
  assert.deepEqual(w.violations, []);
  assert.equal(m.phase, "done");
  const claim = w.claims.get(m.claim)!;
  assert.equal(claim.spec.volumeName, m.newVolume);
  assert.equal(claim.status?.phase, "Bound");
  assert.equal(w.volumes.get(m.volume)?.spec.persistentVolumeReclaimPolicy, "Retain", "the old volume is kept");
  assert.equal(w.volumes.get(m.newVolume!)?.spec.persistentVolumeReclaimPolicy, "Delete", "the new volume has its policy back");
  assert.equal(w.pods.get(copyPodName(m.claim)), undefined, "no copy pod left");
  assert.equal(w.claims.get(newVolumeClaimName(m.claim)), undefined, "no claim of the tool's left");
  assert.ok(w.sts, "the StatefulSet is back");
  for (const p of ["db-0", "db-1", "db-2"]) assert.ok(w.pods.get(p), `${p} runs`);
  assert.equal(w.data.final, w.data.old, "the new volume has the last write");
}

for (const offline of [false, true]) {
  const kind = offline ? "ReadWriteOncePod (offline)" : "ReadWriteOnce";
  describe(`a move of a ${kind} claim, driven through a world`, () => {
    test("from pending: exactly the actions movesLeft shows, in its order; the claim ends on the new volume, the old one kept", () => {
      const { w, m, target } = world({ offline });
      const planned = movesLeft(structuredClone(m), "db").left;
      const r = drive(w, m, target);
      assert.ok(r.done, r.stop);
      assert.deepEqual(
        r.actions.map((a) => asStep(a, m)),
        planned,
      );
      assertMoved(w, m);
    });

    test("resumed from every phase a run records: the rest is what movesLeft shows for that phase", () => {
      const first = world({ offline });
      const phases = drive(first.w, first.m, first.target).actions.filter((a) => a.kind === "record").length;
      for (let k = 1; k < phases; k++) {
        const { w, m, target } = world({ offline });
        let records = 0;
        let run = freshRun();
        // Up to the k-th record, then a new run.
        while (records < k) {
          const a = nextMoveAction(observe(w, m, target, run));
          if (a.kind === "wait") {
            step(w, m);
            seeRemoved(w, run);
          } else {
            act(w, a, m, target, run);
            if (a.kind === "record") records++;
          }
        }
        run = freshRun();
        const planned = movesLeft(structuredClone(m), "db").left;
        const r = drive(w, m, target, { run });
        assert.ok(r.done, r.stop);
        assert.deepEqual(
          r.actions.map((a) => asStep(a, m)),
          planned,
          `resumed at ${m.phase}`,
        );
        assertMoved(w, m);
      }
    });

    test("killed after every action: the next run finishes, nothing is lost, nothing done out of order", () => {
      const total = drive(world({ offline }).w, world({ offline }).m, world({ offline }).target).actions.length;
      const first = world({ offline });
      const n = drive(first.w, first.m, first.target).actions.length;
      assert.ok(n >= 15 && total === n, `${n} actions`);
      for (let k = 1; k < n; k++) {
        const { w, m, target } = world({ offline });
        const r = drive(w, m, target, { killAfter: k });
        assert.ok(r.done, `killed after action ${k}: ${r.stop}`);
        assertMoved(w, m);
      }
    });

    test("a verification that fails: the claim untouched, the StatefulSet back, the move back to its first copy; the next run moves it", () => {
      const { w, m, target } = world({ offline });
      w.verifies = false;
      const original = structuredClone(w.claims.get(m.claim)!);
      const r = drive(w, m, target);
      assert.match(
        r.stop ?? "",
        /^claim data-db-2: verification failed \(the volumes differ: -x \+y\); the claim and its volume pv-old-2 were not changed and statefulset.apps\/db is back; the copy on claim appstorage-new-data-db-2 is removed: run the same command again to copy it anew; db-2 is Ready again on its old volume pv-old-2$/,
      );
      assert.deepEqual(w.claims.get(m.claim), original, "the claim is untouched");
      assert.equal(w.volumes.get(m.volume)?.spec.persistentVolumeReclaimPolicy, "Delete", "the old volume as it was");
      assert.ok(w.sts, "the StatefulSet is back");
      assert.equal(m.phase, "pending", "the next run copies anew: the new volume is not trusted");
      assert.equal(w.claims.get(newVolumeClaimName(m.claim)), undefined, "the copy's claim is removed");
      assert.equal(w.pods.get(copyPodName(m.claim)), undefined, "no copy pod left");
      assert.deepEqual(w.violations, []);
      w.verifies = true;
      const again = drive(w, m, target);
      assert.ok(again.done, again.stop);
      assertMoved(w, m);
    });

    test("interrupted from outside after any action (a wait that timed out, a write that failed): the replica back on its old volume, or the swap finished; the next run moves it", () => {
      const n = drive(world({ offline }).w, world({ offline }).m, world({ offline }).target).actions.length;
      for (let k = 1; k < n; k++) {
        const { w, m, target } = world({ offline });
        const run = freshRun();
        const actions: MoveAction[] = [];
        let end: { stop?: string; done: boolean } | undefined;
        for (let i = 0; i < 1000 && !end; i++) {
          const a = nextMoveAction(observe(w, m, target, run));
          if (a.kind === "done") end = { done: true };
          else if (a.kind === "stop") end = { stop: a.message, done: false };
          else if (a.kind === "wait") {
            assert.ok(step(w, m), `interrupted after action ${k}: stuck waiting for ${a.for} (phase ${m.phase})`);
            seeRemoved(w, run);
          } else {
            act(w, a, m, target, run);
            actions.push(a);
            // What runMove hands the machine (MoveRun.interrupted) when something outside it failed.
            if (actions.length === k) run.interrupted = "timed out after 300s waiting for x";
          }
        }
        assert.ok(end, `interrupted after action ${k}: no end`);
        const where = `interrupted after action ${k} (${actions[k - 1]!.kind}, phase ${m.phase})`;
        assert.deepEqual(w.violations, [], where);
        assert.ok(w.sts, `${where}: the StatefulSet is there`);
        const replica = w.pods.get("db-2");
        assert.ok(replica && !replica.metadata.deletionTimestamp, `${where}: db-2 runs`);
        if (end.done) {
          // Only once the swap had begun: the way up was forward, onto the verified new volume.
          assertMoved(w, m);
          continue;
        }
        assert.match(end.stop ?? "", /^timed out after 300s waiting for x/, where);
        if (actions.some((a) => a.kind === "evict")) assert.match(end.stop ?? "", /; db-2 is Ready again on its old volume pv-old-2$/, where);
        assert.equal(w.claims.get(m.claim)?.metadata.uid, m.uid, `${where}: on its own claim`);
        assert.equal(w.claims.get(m.claim)?.spec.volumeName, m.volume, `${where}: on its old volume`);
        assert.ok(
          (replica.spec?.volumes ?? []).some((v) => v.persistentVolumeClaim?.claimName === m.claim),
          `${where}: db-2 mounts its claim`,
        );
        assert.equal(w.pods.get(copyPodName(m.claim)), undefined, `${where}: no copy pod left`);
        const again = drive(w, m, target);
        assert.ok(again.done, `${where}, then run again: ${again.stop}`);
        assertMoved(w, m);
      }
    });

    test("a copy pod that cannot pull its image: the run stops with the reason, the image and --copy-image; the pod removed; a run with another image goes on", () => {
      const { w, m, target } = world({ offline });
      w.imagePull = true;
      const r = drive(w, m, target);
      assert.match(
        r.stop ?? "",
        new RegExp(
          `^claim data-db-2: copy pod appstorage-copy-data-db-2 cannot start: ImagePullBackOff \\(Back-off pulling image\\); image img:1: pass --copy-image with an image the node can pull or already has .*; the pod was removed \\(and the claim of the new volume, before its first copy\\) and nothing else was changed by this step: then run the same command again${offline ? "; db-2 is Ready again on its old volume pv-old-2" : ""}$`,
        ),
      );
      assert.equal(w.pods.get(copyPodName(m.claim)), undefined, "the pod was removed");
      assert.equal(w.claims.get(newVolumeClaimName(m.claim)), undefined, "and the claim of the new volume: nothing was copied");
      assert.equal(w.claims.get(m.claim)?.metadata.uid, m.uid, "the claim is untouched");
      assert.ok(w.sts, "the StatefulSet is there");
      w.imagePull = false;
      const again = drive(w, m, { ...target, copyImage: "img:2" });
      assert.ok(again.done, again.stop);
      assertMoved(w, m);
    });
  });
}

describe("a final copy bounded by its progress", () => {
  /** Runs the machine with the told final copy's pod as `final` says each step (moving or not), the clock a second a step, until it stops or is done. */
  function driveFinal(w: World, m: MigrationClaim, target: MoveTarget, run: MoveRun, final: (step: number) => "moving" | "quiet" | "ends"): Drive {
    const actions: MoveAction[] = [];
    let n = 0;
    for (let i = 0; i < 5000; i++) {
      const o = observe(w, m, target, run);
      noteCopyPod(run, o.copyPod, o.now);
      const a = nextMoveAction(o);
      if (a.kind === "done") return { actions, done: true };
      if (a.kind === "stop") return { actions, stop: a.message, done: false };
      if (a.kind !== "wait") {
        act(w, a, m, target, run);
        actions.push(a);
        continue;
      }
      const copy = w.pods.get(copyPodName(m.claim));
      const told = copy && copy.metadata.deletionTimestamp && run.told[copy.metadata.uid!] !== undefined;
      if (told && a.progress && final(n++) !== "ends") {
        // The told pod copies (Ready: its bytes move) or is quiet; it does not end.
        copy.status = running(final(n - 1) === "moving");
        w.clock += 1000;
        continue;
      }
      step(w, m);
      seeRemoved(w, run);
    }
    return assert.fail(`no end: ${actions.map((a) => a.kind).join(", ")}`);
  }

  test("a final copy that moves bytes for ten times --timeout: waited for, the move finishes", () => {
    const { w, m, target } = world();
    const r = driveFinal(w, m, target, freshRun(), (k) => (k < 3000 ? "moving" : "ends"));
    assert.ok(r.done, r.stop);
    assertMoved(w, m);
  });

  test(`a final copy quiet for ${stallSeconds}s: stopped, the replica back on its old volume, the copy kept; the next run goes on from the first copy`, () => {
    const { w, m, target } = world();
    const r = driveFinal(w, m, target, freshRun(), (k) => (k < 30 ? "moving" : "quiet"));
    assert.match(r.stop ?? "", /moved no byte for 120s .*; db-2 is Ready again on its old volume pv-old-2$/);
    assert.equal(m.phase, "copied", "back to the first copy done");
    const kept = w.claims.get(newVolumeClaimName(m.claim));
    assert.ok(kept, "the new volume's claim (and what was copied) is kept");
    assert.equal(w.pods.get(copyPodName(m.claim)), undefined, "the stalled copy pod is removed");
    assert.ok(w.sts && w.pods.get("db-2") && !w.pods.get("db-2")!.metadata.deletionTimestamp, "the replica is back");
    assert.equal(w.claims.get(m.claim)?.metadata.uid, m.uid, "on its own claim, as it was");
    assert.deepEqual(w.violations, []);
    const again = drive(w, m, target);
    assert.ok(again.done, again.stop);
    assertMoved(w, m);
    assert.equal(w.claims.get(m.claim)?.spec.volumeName, kept.spec.volumeName, "the rerun's final copy went onto the same new volume");
  });
});

describe("a move whose replica runs again while it must be down", () => {
  test("the StatefulSet re-created by someone after the replica stopped: stopped again, the final copy made again", () => {
    const { w, m, target } = world();
    const run = freshRun();
    while (m.phase !== "stopped") {
      const a = nextMoveAction(observe(w, m, target, run));
      if (a.kind === "wait") {
        step(w, m);
        seeRemoved(w, run);
      } else act(w, a, m, target, run);
    }
    w.sts = { ...structuredClone(target.desired), metadata: { name: "db", namespace: "default", uid: "uid-gitops" } };
    step(w, m);
    const back = nextMoveAction(observe(w, m, target, run));
    assert.deepEqual(back, { kind: "record", set: { phase: "copied" }, warn: "db-2 runs again (its StatefulSet was re-created meanwhile): stopping it again before the final copy" });
    const r = drive(w, m, target, { run });
    assert.ok(r.done, r.stop);
    assertMoved(w, m);
  });
});

// The table: hand-made states and the one action for each.
const target: MoveTarget = world().target;
const base = (phase: MigrationClaim["phase"], more: Partial<MoveObserved> = {}): MoveObserved => {
  const { w, m } = world();
  m.phase = phase;
  m.copiedSince = 100;
  return { ...observe(w, m, target, freshRun()), ...more };
};
const pod = (mode: "copy" | "sync", start: "wait" | "go", status: Pod["status"], image = "img:1"): Pod => {
  const { m } = world();
  const p = copyPod(m, "default", "db", mode, image, start);
  return { ...p, metadata: { ...p.metadata, uid: "uid-copy" }, status };
};
const waiting = (reason: string, message = "") => ({ phase: "Pending", containerStatuses: [{ name: "copy", state: { waiting: { reason, message } } }] });
const unschedulable = { phase: "Pending", conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable", message: "0/1 nodes are available: 1 Insufficient memory." }] };
const ended = (phase: "Succeeded" | "Failed", report: Record<string, unknown>) => ({ phase, containerStatuses: [{ name: "copy", state: { terminated: { message: JSON.stringify(report) } } }] });
const running = (ready = false) => ({ phase: "Running", conditions: [{ type: "Ready", status: ready ? "True" : "False" }] });
const withNewClaim = (o: MoveObserved): MoveObserved => ({
  ...o,
  newClaim: { metadata: { name: newVolumeClaimName("data-db-2"), uid: "uid-new" }, spec: { volumeName: "pv-new" }, status: { phase: "Bound" } },
});
const mineRun = (told?: number): MoveRun => ({ created: ["uid-copy"], told: told !== undefined ? { "uid-copy": told } : {}, seen: { "uid-copy": 0 } });

const table: { name: string; o: () => MoveObserved; expect: (a: MoveAction) => void }[] = [
  { name: "pending, no claim of the new volume: create it", o: () => base("pending"), expect: (a) => assert.deepEqual(a, { kind: "create-new-claim" }) },
  {
    name: "pending, the new claim, no copy pod: the first copy's pod",
    o: () => withNewClaim(base("pending")),
    expect: (a) => assert.deepEqual(a, { kind: "create-copy-pod", mode: "copy", start: "go" }),
  },
  {
    name: "a class that binds at once (provisionOn): the copy pod only once the new claim is bound, then at once",
    o: () => {
      const o = withNewClaim(base("pending"));
      return { ...o, m: { ...o.m, provisionOn: "node-b" }, newClaim: { ...o.newClaim!, spec: {}, status: { phase: "Pending" } } };
    },
    expect: (a) => {
      assert.equal(a.kind === "wait" && a.on, "new-claim");
      assert.match(a.kind === "wait" ? a.for : "", /^claim appstorage-new-data-db-2 to bind \(class \S+ makes its volume where node node-b is, before any pod mounts it\)/);
    },
  },
  {
    name: "a class that binds at once, the new claim bound: the first copy's pod",
    o: () => {
      const o = withNewClaim(base("pending"));
      return { ...o, m: { ...o.m, provisionOn: "node-b" } };
    },
    expect: (a) => assert.deepEqual(a, { kind: "create-copy-pod", mode: "copy", start: "go" }),
  },
  {
    name: "the first copy's pod runs: wait for it",
    o: () => withNewClaim(base("pending", { copyPod: pod("copy", "go", running()) })),
    expect: (a) => assert.equal(a.kind === "wait" && a.on, "copy-pod"),
  },
  {
    name: "the first copy's pod ended with its report: record copied, with when it began and the new volume",
    o: () => withNewClaim(base("pending", { copyPod: pod("copy", "go", ended("Succeeded", { since: 1234, bytes: 5 })) })),
    expect: (a) => assert.deepEqual(a.kind === "record" && a.set, { phase: "copied", copiedSince: 1234, newVolume: "pv-new" }),
  },
  {
    name: "a first copy's pod of an earlier run that failed: removed (this run starts another)",
    o: () => withNewClaim(base("pending", { copyPod: pod("copy", "go", ended("Failed", { error: "disk full" })) })),
    expect: (a) => assert.deepEqual(a, { kind: "remove-copy-pod", uid: "uid-copy" }),
  },
  {
    name: "this run's first copy failed: the run fails with the pod's error",
    o: () => withNewClaim(base("pending", { copyPod: pod("copy", "go", ended("Failed", { error: "disk full" })), run: mineRun() })),
    expect: (a) => assert.match(a.kind === "fail" ? a.message : "", /^claim data-db-2: the copy failed \(disk full\); nothing was changed on the claim/),
  },
  {
    name: "a copy pod with another image (a rerun with --copy-image): removed",
    o: () => withNewClaim(base("pending", { copyPod: pod("copy", "go", waiting("ImagePullBackOff"), "other:1") })),
    expect: (a) => assert.deepEqual(a, { kind: "remove-copy-pod", uid: "uid-copy" }),
  },
  ...["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError"].map((reason) => ({
    name: `a copy pod waiting with ${reason}: the run fails at once, naming it and the image`,
    o: () => withNewClaim(base("pending", { copyPod: pod("copy", "go", waiting(reason, "some detail")) })),
    expect: (a: MoveAction) => {
      assert.equal(a.kind, "fail");
      assert.match(a.kind === "fail" ? a.message : "", new RegExp(`cannot start: ${reason} \\(some detail\\); image img:1: `));
      if (/Image/.test(reason)) assert.match(a.kind === "fail" ? a.message : "", /pass --copy-image/);
    },
  })),
  {
    name: `a copy pod Unschedulable for less than ${unschedulableSeconds}s: wait (an Immediate claim may still bind)`,
    o: () => withNewClaim(base("pending", { copyPod: pod("copy", "go", unschedulable), run: { ...freshRun(), seen: { "uid-copy": 0 } }, now: 5000 })),
    expect: (a) => assert.equal(a.kind, "wait"),
  },
  {
    name: `a copy pod Unschedulable for ${unschedulableSeconds}s: the run fails with the scheduler's message and where the pod must run`,
    o: () => withNewClaim(base("pending", { copyPod: pod("copy", "go", unschedulable), run: { ...freshRun(), seen: { "uid-copy": 0 } }, now: unschedulableSeconds * 1000 })),
    expect: (a) =>
      assert.match(
        a.kind === "fail" ? a.message : "",
        /cannot start: Unschedulable \(0\/1 nodes are available: 1 Insufficient memory\.\); image img:1: the copy pod must run on node node-a, where the claim's replica runs, and tolerates only the taints that node had when the change was planned \(none\): make room there/,
      ),
  },
  {
    name: "a copy pod Unschedulable on a tainted node: the message names the taints it tolerates (its node's, as planned), never every taint",
    o: () => {
      const o = withNewClaim(base("pending", { copyPod: pod("copy", "go", unschedulable), run: { ...freshRun(), seen: { "uid-copy": 0 } }, now: unschedulableSeconds * 1000 }));
      return { ...o, m: { ...o.m, tolerations: [{ key: "dedicated", operator: "Equal", value: "db", effect: "NoSchedule" }] } };
    },
    expect: (a) => assert.match(a.kind === "fail" ? a.message : "", /tolerates only the taints that node had when the change was planned \(dedicated:NoSchedule\)/),
  },
  {
    name: "the server refused this run's copy pod (a ResourceQuota): the run fails saying which and what to do",
    o: () => withNewClaim(base("pending", { run: { ...freshRun(), refused: 'pods "appstorage-copy-data-db-2" is forbidden: exceeded quota: q, requested: pods=1, used: pods=3, limited: pods=3' } })),
    expect: (a) => assert.match(a.kind === "fail" ? a.message : "", /exceeded quota.*a ResourceQuota of namespace default has no room for it: raise it \(kubectl describe resourcequota -n default\)/),
  },
  {
    name: "copied, the first copy's pod still there: removed",
    o: () => withNewClaim(base("copied", { copyPod: pod("copy", "go", ended("Succeeded", { since: 1 })) })),
    expect: (a) => assert.equal(a.kind, "remove-copy-pod"),
  },
  {
    name: "copied, the replica runs, no copy pod: the final copy's pod, waiting",
    o: () => withNewClaim(base("copied")),
    expect: (a) => assert.deepEqual(a, { kind: "create-copy-pod", mode: "sync", start: "wait" }),
  },
  {
    name: "copied, the waiting pod is not running yet: wait for it (its start is not downtime)",
    o: () => withNewClaim(base("copied", { copyPod: pod("sync", "wait", { phase: "Pending" }) })),
    expect: (a) => assert.equal(a.kind === "wait" && a.on, "copy-pod"),
  },
  {
    name: "copied, the waiting pod runs, another replica not Ready: wait (never two down)",
    o: () => {
      const o = withNewClaim(base("copied", { copyPod: pod("sync", "wait", running()) }));
      o.pods.find((p) => p.metadata.name === "db-0")!.status = running(false);
      return o;
    },
    expect: (a) => assert.equal(a.kind === "wait" && a.on, "pods"),
  },
  {
    name: "copied, every other replica Ready: orphan-delete the StatefulSet, exactly as read",
    o: () => withNewClaim(base("copied", { copyPod: pod("sync", "wait", running()) })),
    expect: (a) => assert.equal(a.kind, "orphan-delete"),
  },
  {
    name: "copied, the replica's node cordoned meanwhile: the run fails before the replica stops, with what to do",
    o: () => withNewClaim(base("copied", { copyPod: pod("sync", "wait", running()), replicaNodeCordoned: "node-b" })),
    expect: (a) =>
      assert.deepEqual(a, {
        kind: "fail",
        // The claim is as it was: a StatefulSet that is gone would come back (here it is there).
        restore: true,
        message:
          "node node-b, where db-2 runs, was cordoned during the move: stopped before db-2 stops (it could not start on that node again); db-2 runs on its old volume and claim data-db-2 is as it was: uncordon the node (kubectl uncordon node-b), then run the same command again",
      }),
  },
  {
    name: "copied, the StatefulSet re-created by someone with other claim templates: the run fails",
    o: () => {
      const o = withNewClaim(base("copied", { copyPod: pod("sync", "wait", running()) }));
      o.statefulSet = { ...o.statefulSet!, metadata: { ...o.statefulSet!.metadata, uid: "uid-other" }, spec: { ...o.statefulSet!.spec, volumeClaimTemplates: [] } };
      return o;
    },
    expect: (a) => assert.match(a.kind === "fail" ? a.message : "", /re-created by someone else \(uid uid-other\) with other claim templates/),
  },
  {
    name: "copied, the StatefulSet gone, the replica runs: evict it",
    o: () => withNewClaim(base("copied", { statefulSet: undefined, copyPod: pod("sync", "wait", running()) })),
    expect: (a) => assert.equal(a.kind === "evict" && a.pod, "db-2"),
  },
  {
    name: "copied, the replica gone: record stopped",
    o: () => {
      const o = withNewClaim(base("copied", { statefulSet: undefined, copyPod: pod("sync", "wait", running()) }));
      return { ...o, pods: o.pods.filter((p) => p.metadata.name !== "db-2") };
    },
    expect: (a) => assert.deepEqual(a, { kind: "record", set: { phase: "stopped" } }),
  },
  {
    name: "stopped, the replica runs again: back to copied (stopped again, copied again)",
    o: () => withNewClaim(base("stopped", { statefulSet: undefined })),
    expect: (a) => assert.deepEqual(a.kind === "record" && a.set, { phase: "copied" }),
  },
  {
    name: "stopped, the pod waits: tell it to go",
    o: () => {
      const o = withNewClaim(base("stopped", { statefulSet: undefined, copyPod: pod("sync", "wait", running()) }));
      return { ...o, pods: o.pods.filter((p) => p.metadata.name !== "db-2") };
    },
    expect: (a) => assert.deepEqual(a, { kind: "tell-copy-pod", uid: "uid-copy" }),
  },
  {
    name: "stopped, a final copy's pod told by an earlier run: removed (it may have copied before the replica last ran)",
    o: () => {
      const o = withNewClaim(base("stopped", { statefulSet: undefined, copyPod: pod("sync", "go", running(true)) }));
      return { ...o, pods: o.pods.filter((p) => p.metadata.name !== "db-2") };
    },
    expect: (a) => assert.equal(a.kind, "remove-copy-pod"),
  },
  {
    name: "stopped, the final copy's pod this run told (deleted, still copying): wait for it",
    o: () => {
      const p = { ...pod("sync", "wait", running(false)), metadata: { ...pod("sync", "wait", running(false)).metadata, deletionTimestamp: "now" } };
      const o = withNewClaim(base("stopped", { statefulSet: undefined, copyPod: p, run: mineRun(0) }));
      return { ...o, pods: o.pods.filter((x) => x.metadata.name !== "db-2") };
    },
    expect: (a) => assert.equal(a.kind === "wait" && a.on, "copy-pod"),
  },
  {
    name: "stopped, the told pod removed by kubelet once it ended: its last state, as this run's watch saw it, records verified",
    o: () => {
      const o = withNewClaim(
        base("stopped", { statefulSet: undefined, copyPod: undefined, run: { ...mineRun(0), ended: pod("sync", "wait", ended("Succeeded", { files: 2, bytes: 4, src: "d", dst: "d" })) } }),
      );
      return { ...o, pods: o.pods.filter((x) => x.metadata.name !== "db-2") };
    },
    expect: (a) => assert.deepEqual(a.kind === "record" && a.set, { phase: "verified", verified: { files: 2, bytes: 4, digest: "d" } }),
  },
  {
    name: "stopped, this run's final copy verified equal: record verified with the counts and digest",
    o: () => {
      const o = withNewClaim(base("stopped", { statefulSet: undefined, copyPod: pod("sync", "go", ended("Succeeded", { files: 3, bytes: 9, src: "abc", dst: "abc" })), run: mineRun(0) }));
      return { ...o, pods: o.pods.filter((p) => p.metadata.name !== "db-2") };
    },
    expect: (a) => assert.deepEqual(a.kind === "record" && a.set, { phase: "verified", verified: { files: 3, bytes: 9, digest: "abc" } }),
  },
  {
    name: "stopped, this run's final copy differs: fail, back to pending (the new volume is copied anew), the StatefulSet to come back",
    o: () => {
      const o = withNewClaim(base("stopped", { statefulSet: undefined, copyPod: pod("sync", "go", ended("Failed", { src: "a", dst: "b", diff: "-x" })), run: mineRun(0) }));
      return { ...o, pods: o.pods.filter((p) => p.metadata.name !== "db-2") };
    },
    expect: (a) => assert.deepEqual(a.kind === "fail" && [a.restore, a.phase], [true, "pending"]),
  },
  {
    name: "verified, the claim re-created by someone else on another volume: fail, the StatefulSet not brought back",
    o: () => {
      const o = withNewClaim(base("verified", { statefulSet: undefined }));
      o.m.newVolume = "pv-new";
      o.newClaim = undefined;
      o.newVolume = { metadata: { name: "pv-new" }, spec: { persistentVolumeReclaimPolicy: "Retain" } };
      o.claim = { metadata: { name: "data-db-2", uid: "uid-someone" }, spec: { volumeName: "pv-other" } };
      return { ...o, pods: o.pods.filter((p) => p.metadata.name !== "db-2") };
    },
    expect: (a) => assert.deepEqual(a.kind === "fail" && [a.restore, /created again by someone else/.test(a.message)], [false, true]),
  },
  {
    name: "failed, a copy pod left: removed first",
    o: () => base("stopped", { copyPod: pod("sync", "go", running()), run: { ...freshRun(), failure: { message: "x", restore: true } } }),
    expect: (a) => assert.equal(a.kind, "remove-copy-pod"),
  },
  {
    name: "failed, no StatefulSet, restore: create it",
    o: () => base("copied", { statefulSet: undefined, run: { ...freshRun(), failure: { message: "x", restore: true } } }),
    expect: (a) => assert.deepEqual(a, { kind: "create-statefulset" }),
  },
  {
    name: "failed, nothing left to undo: stop with the failure's message",
    o: () => base("copied", { run: { ...freshRun(), failure: { message: "the reason", restore: true } } }),
    expect: (a) => assert.deepEqual(a, { kind: "stop", message: "the reason" }),
  },
  {
    name: "failed, the replica stopped by the move: the StatefulSet first, then the copy pod (a told one removed at once, not awaited)",
    o: () => {
      const told = pod("sync", "wait", running());
      told.metadata = { ...told.metadata, deletionTimestamp: "now", deletionGracePeriodSeconds: 86_400 };
      const o = base("copied", { statefulSet: undefined, copyPod: told, run: { ...mineRun(0), failure: { message: "x", restore: true, replicaDown: true } } });
      return { ...o, pods: o.pods.filter((p) => p.metadata.name !== "db-2") };
    },
    expect: (a) => assert.deepEqual(a, { kind: "create-statefulset" }),
  },
  {
    name: "failed, the StatefulSet back, a told copy pod still copying: removed at once (its grace period is a day)",
    o: () => {
      const told = pod("sync", "wait", running());
      told.metadata = { ...told.metadata, deletionTimestamp: "now", deletionGracePeriodSeconds: 86_400 };
      return base("copied", { copyPod: told, run: { ...mineRun(0), failure: { message: "x", restore: true, replicaDown: true } } });
    },
    expect: (a) => assert.deepEqual(a, { kind: "remove-copy-pod", uid: "uid-copy" }),
  },
  {
    name: "failed, the move had stopped the replica: wait until it is Ready again on its old volume, then stop saying so",
    o: () => {
      const o = base("copied", { run: { ...freshRun(), failure: { message: "the reason", restore: true, replicaDown: true } } });
      o.pods.find((p) => p.metadata.name === "db-2")!.status = running(false);
      return o;
    },
    expect: (a) => assert.deepEqual(a.kind === "wait" && [a.on, a.for], ["pods", "db-2 to be Ready again on its old volume pv-old-2 (claim data-db-2 as it was)"]),
  },
  {
    name: "failed, the replica Ready again: stop with the failure's message and where the replica is",
    o: () => base("copied", { run: { ...freshRun(), failure: { message: "the reason", restore: true, replicaDown: true } } }),
    expect: (a) => assert.deepEqual(a, { kind: "stop", message: "the reason; db-2 is Ready again on its old volume pv-old-2" }),
  },
  {
    name: "failed before its first copy was recorded, a copy that stalled: the claim of the new volume is kept for the next run",
    o: () => withNewClaim(base("pending", { run: { ...freshRun(), failure: { message: "stalled", restore: true, keepCopy: true } } })),
    expect: (a) => assert.deepEqual(a, { kind: "stop", message: "stalled" }),
  },
  {
    name: "interrupted from outside (a wait timed out) with the replica stopped: fail, back a phase, the replica to come back",
    o: () => {
      const o = withNewClaim(base("stopped", { statefulSet: undefined, run: { ...freshRun(), interrupted: "timed out after 300s waiting for x" } }));
      return { ...o, pods: o.pods.filter((p) => p.metadata.name !== "db-2") };
    },
    expect: (a) => assert.deepEqual(a, { kind: "fail", message: "timed out after 300s waiting for x", restore: true, replicaDown: true, phase: "copied" }),
  },
  {
    name: "interrupted from outside once the swap has begun (the old claim deleted): no way back, the swap goes on",
    o: () => {
      const o = withNewClaim(base("verified", { statefulSet: undefined, run: { ...freshRun(), interrupted: "a write failed" } }));
      o.m.newVolume = "pv-new";
      o.newVolume = { metadata: { name: "pv-new" }, spec: { persistentVolumeReclaimPolicy: "Retain" } };
      o.claim = { ...o.claim!, metadata: { ...o.claim!.metadata, deletionTimestamp: "now" } };
      return { ...o, pods: o.pods.filter((p) => p.metadata.name !== "db-2") };
    },
    expect: (a) => assert.notEqual(a.kind, "fail"),
  },
  {
    name: "stopped, the told final copy runs: a wait bounded by its progress, not by --timeout",
    o: () => {
      const p = { ...pod("sync", "wait", running(true)), metadata: { ...pod("sync", "wait", running(true)).metadata, deletionTimestamp: "now", deletionGracePeriodSeconds: 86_400 } };
      const o = withNewClaim(base("stopped", { statefulSet: undefined, copyPod: p, run: mineRun(0) }));
      return { ...o, pods: o.pods.filter((x) => x.metadata.name !== "db-2") };
    },
    expect: (a) => assert.deepEqual(a.kind === "wait" && [a.on, a.progress], ["copy-pod", true]),
  },
  {
    name: `stopped, the told final copy moved no byte for ${stallSeconds}s: fail, back to copied, the copy kept, the replica to come back`,
    o: () => {
      const p = { ...pod("sync", "wait", running(false)), metadata: { ...pod("sync", "wait", running(false)).metadata, deletionTimestamp: "now", deletionGracePeriodSeconds: 86_400 } };
      const o = withNewClaim(
        base("stopped", { statefulSet: undefined, copyPod: p, run: { ...mineRun(0), running: { "uid-copy": 0 }, progress: { "uid-copy": 5000 } }, now: 5000 + stallSeconds * 1000 }),
      );
      return { ...o, pods: o.pods.filter((x) => x.metadata.name !== "db-2") };
    },
    expect: (a) => {
      assert.deepEqual(a.kind === "fail" && [a.restore, a.replicaDown, a.phase, a.keepCopy], [true, true, "copied", true]);
      assert.match(
        a.kind === "fail" ? a.message : "",
        /^claim data-db-2: copy pod appstorage-copy-data-db-2 moved no byte for 120s \(a copy may be quiet for 120s; see kubectl describe pod appstorage-copy-data-db-2 -n default and its node\); the copy was stopped, and what it copied is kept on claim appstorage-new-data-db-2 for the next run: run the same command again$/,
      );
    },
  },
  {
    name: `stopped, the told final copy quiet for less than ${stallSeconds}s since its last progress: still waiting`,
    o: () => {
      const p = { ...pod("sync", "wait", running(false)), metadata: { ...pod("sync", "wait", running(false)).metadata, deletionTimestamp: "now", deletionGracePeriodSeconds: 86_400 } };
      const o = withNewClaim(
        base("stopped", { statefulSet: undefined, copyPod: p, run: { ...mineRun(0), running: { "uid-copy": 0 }, progress: { "uid-copy": 5000 } }, now: 4000 + stallSeconds * 1000 }),
      );
      return { ...o, pods: o.pods.filter((x) => x.metadata.name !== "db-2") };
    },
    expect: (a) => assert.equal(a.kind, "wait"),
  },
  {
    name: "the first copy runs (the replica too): a wait bounded by its progress, not by --timeout",
    o: () => withNewClaim(base("pending", { copyPod: pod("copy", "go", running(true)), run: mineRun() })),
    expect: (a) => assert.deepEqual(a.kind === "wait" && [a.on, a.progress], ["copy-pod", true]),
  },
  {
    name: "the first copy not running yet (Pending): a wait that --timeout bounds",
    o: () => withNewClaim(base("pending", { copyPod: pod("copy", "go", { phase: "Pending" }), run: mineRun() })),
    expect: (a) => assert.deepEqual(a.kind === "wait" && [a.on, a.progress], ["copy-pod", undefined]),
  },
  {
    name: `the first copy moved no byte for ${stallSeconds}s: fail, what it copied kept for the next run, the replica never stopped`,
    o: () =>
      withNewClaim(base("pending", { copyPod: pod("copy", "go", running(false)), run: { ...mineRun(), running: { "uid-copy": 0 }, progress: { "uid-copy": 1000 } }, now: 1000 + stallSeconds * 1000 })),
    expect: (a) => {
      assert.deepEqual(a.kind === "fail" && { restore: a.restore, replicaDown: a.replicaDown, phase: a.phase, keepCopy: a.keepCopy }, {
        restore: true,
        replicaDown: undefined,
        phase: undefined,
        keepCopy: true,
      });
      assert.match(a.kind === "fail" ? a.message : "", /^claim data-db-2: copy pod appstorage-copy-data-db-2 moved no byte for 120s /);
    },
  },
  {
    name: `the first copy quiet since it was first seen running, for less than ${stallSeconds}s: still waiting`,
    o: () => withNewClaim(base("pending", { copyPod: pod("copy", "go", running(false)), run: { ...mineRun(), running: { "uid-copy": 1000 } }, now: stallSeconds * 1000 })),
    expect: (a) => assert.equal(a.kind, "wait"),
  },
  {
    name: "interrupted, and the move went on to done meanwhile (a delete of the claim whose answer was lost, which the server did): done, not a failure",
    o: () => base("done", { run: { ...freshRun(), interrupted: "the server did not answer" } }),
    expect: (a) => assert.deepEqual(a, { kind: "done" }),
  },
  { name: "done: done", o: () => base("done"), expect: (a) => assert.deepEqual(a, { kind: "done" }) },
];

describe("nextMoveAction over observed states", () => {
  for (const c of table) test(c.name, () => c.expect(nextMoveAction(c.o())));
});

describe("copyPodTrouble", () => {
  test("a running, a pending or an ended pod has none; a waiting reason or a long Unschedulable has", () => {
    assert.equal(copyPodTrouble(pod("copy", "go", running()), 100), undefined);
    assert.equal(copyPodTrouble(pod("copy", "go", { phase: "Pending" }), 100), undefined);
    assert.equal(copyPodTrouble(pod("copy", "go", waiting("ContainerCreating")), 100), undefined);
    assert.equal(copyPodTrouble(pod("copy", "go", ended("Failed", {})), 100), undefined);
    assert.deepEqual(copyPodTrouble(pod("copy", "go", waiting("ErrImagePull", "not found\nmore")), 0), { reason: "ErrImagePull", message: "not found" });
    assert.equal(copyPodTrouble(pod("copy", "go", unschedulable), unschedulableSeconds - 1), undefined);
    assert.equal(copyPodTrouble(pod("copy", "go", unschedulable), unschedulableSeconds)?.reason, "Unschedulable");
    assert.equal(startAnnotation, "appstorage.kubectl.io/start");
  });
});

describe("nodeNote: a move that timed out on a node's pods names the node and what to do", () => {
  const notReady = { status: { conditions: [{ type: "Ready", status: "Unknown", reason: "NodeStatusUnknown", lastHeartbeatTime: "2026-12-07T03:00:00Z" }] } };
  test("a node whose kubelet stopped reporting", () => {
    assert.equal(
      nodeNote("data-db-2", "node-c", notReady, false),
      "; node node-c, where claim data-db-2's move runs, is not Ready (Ready Unknown, NodeStatusUnknown, its kubelet last reported at 2026-12-07T03:00:00Z): the claim and its old volume are as they were, and the move goes on from where it stopped: once node node-c is Ready again (kubectl get node node-c), run the same command again",
    );
  });
  test("after the swap: the claim is on its new volume, the old one kept", () => {
    assert.match(nodeNote("data-db-2", "node-c", notReady, true), /: claim data-db-2 is on its new volume and its old volume is kept, and the move goes on/);
  });
  test("a Ready node adds nothing; a node that may not be read (a namespace admin) is named with where to look; a node gone", () => {
    assert.equal(nodeNote("data-db-2", "node-c", { status: { conditions: [{ type: "Ready", status: "True" }] } }, false), "");
    assert.equal(
      nodeNote("data-db-2", "node-c", "unreadable", false),
      "; the pods of claim data-db-2's move run on node node-c: if it is not Ready, the claim and its old volume are as they were, and the move goes on from where it stopped: once node node-c is Ready again (kubectl get node node-c), run the same command again",
    );
    assert.match(nodeNote("data-db-2", "node-c", undefined, false), /^; node node-c, where claim data-db-2's move runs, no longer exists: /);
  });
});

describe("noteCopyPod: what a run learns of a copy pod each time it sees one", () => {
  test("when it first saw it, first saw it run, and last saw its bytes move (Ready)", () => {
    const run = freshRun();
    const p = pod("copy", "go", { phase: "Pending" });
    noteCopyPod(run, p, 1000);
    assert.deepEqual([run.seen["uid-copy"], run.running, run.progress], [1000, undefined, undefined]);
    noteCopyPod(run, { ...p, status: running(false) }, 2000);
    assert.deepEqual([run.seen["uid-copy"], run.running, run.progress], [1000, { "uid-copy": 2000 }, undefined]);
    noteCopyPod(run, { ...p, status: running(true) }, 3000);
    noteCopyPod(run, { ...p, status: running(false) }, 4000);
    assert.deepEqual([run.running, run.progress], [{ "uid-copy": 2000 }, { "uid-copy": 3000 }], "first seen running stays; the last progress is when it was last Ready");
    noteCopyPod(run, undefined, 5000);
    assert.deepEqual(run.progress, { "uid-copy": 3000 }, "no pod: nothing learned");
  });
});

describe("afterTrouble: what a run does after a failure outside the machine", () => {
  const t = (more: Partial<Trouble>): Trouble => ({ mayBeDown: true, windingDown: false, timedOut: false, tries: 1, elapsedMs: 0, timeoutMs: 300_000, swapBegun: false, phase: "copied", ...more });
  const cases: { name: string; t: Trouble; want: ReturnType<typeof afterTrouble> }[] = [
    { name: "nothing down because of this run (and the StatefulSet not deleted by it): the run ends there, as before any change", t: t({ mayBeDown: false, phase: "pending" }), want: "end" },
    { name: "the replica may be down, its claim as it was: handed to the machine, which brings it back", t: t({ phase: "stopped" }), want: "back" },
    { name: "a wait that timed out with the replica down: back as well", t: t({ phase: "stopped", timedOut: true }), want: "back" },
    { name: "the copy verified, a request that failed: forward onto the new volume first", t: t({ phase: "verified" }), want: "forward" },
    { name: `the copy verified, forward failed ${triesWhileDown} times: back onto the old volume`, t: t({ phase: "verified", tries: triesWhileDown + 1 }), want: "back" },
    { name: "the copy verified, forward for longer than --timeout: back", t: t({ phase: "verified", tries: 2, elapsedMs: 300_001 }), want: "back" },
    { name: "the copy verified, a wait that timed out: back (a wait is not tried again)", t: t({ phase: "verified", timedOut: true }), want: "back" },
    { name: "the swap begun, a request that failed: forward only, however many tries", t: t({ phase: "verified", swapBegun: true, tries: 10, elapsedMs: 299_000 }), want: "forward" },
    { name: "the swap begun, forward for longer than --timeout: the run ends saying where the replica is", t: t({ phase: "swapped", swapBegun: true, tries: 10, elapsedMs: 300_001 }), want: "down" },
    { name: "the swap begun, a wait that timed out: the machine's own words end the run", t: t({ phase: "swapped", swapBegun: true, timedOut: true }), want: "end" },
    { name: "winding down, a request that failed: tried again", t: t({ windingDown: "failure", tries: 2 }), want: "again" },
    { name: "winding down after an interruption: tried again", t: t({ windingDown: "interrupted", tries: triesWhileDown }), want: "again" },
    { name: `winding down failed ${triesWhileDown + 1} times: the run ends saying where the replica is`, t: t({ windingDown: "failure", tries: triesWhileDown + 1 }), want: "down" },
    { name: "winding down, a wait that timed out: the run ends saying where the replica is", t: t({ windingDown: "interrupted", timedOut: true }), want: "down" },
  ];
  for (const k of cases) test(k.name, () => assert.equal(afterTrouble(k.t), k.want));
});
