// The command that finishes an interrupted run repeats every flag of the run that finishing it needs
// (src/plan/finish.ts): its -f files, --copy-image, --timeout, the connection flags, the classes in
// its directives; never a credential.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { finishCommand, runFinish } from "../../src/plan/finish";
import { defaultCopyImage } from "../../src/plan/migration-types";
import type { Journal } from "../../src/plan/types";
import { sts } from "../fixtures/builders";

function journal(more: Partial<Journal> = {}): Journal {
  const s = sts("db", "prod").withClaim("data", "1Gi", "fast").build();
  return {
    apiVersion: "appstorage.kubectl.io/v1alpha1",
    kind: "Journal",
    namespace: "prod",
    name: "db",
    originalUid: "u1",
    originalResourceVersion: "1",
    request: ["data=2Gi,slow"],
    step: "migrating",
    startedAt: "2026-12-01T10:00:00Z",
    updatedAt: "2026-12-01T10:00:00Z",
    by: "alice",
    holder: "h",
    leaseExpires: "2026-12-01T10:00:15Z",
    pods: [],
    claims: [],
    original: s,
    desired: s,
    ...more,
  };
}

const migration = (copyImage: string) => ({ copyImage, claims: [] });

describe("finish it with", () => {
  test("every flag the run was given that finishing it needs, in one order; the classes are in the directives", () => {
    const finish = runFinish({
      timeoutMs: 600_000,
      connection: { kubeconfig: "/home/a/.kube/prod config", context: "prod", asGroups: ["ops", "dba"], requestTimeoutMs: 10_000, insecureSkipTlsVerify: true },
    });
    assert.equal(
      finishCommand(journal({ migration: migration("registry.local/busybox:1"), finish })),
      "kubectl appstorage set db data=2Gi,slow --migrate-existing --copy-image registry.local/busybox:1 --timeout 600s --kubeconfig '/home/a/.kube/prod config' --context prod --insecure-skip-tls-verify --as-group ops --as-group dba --request-timeout 10s -n prod",
    );
  });

  test("set -f: the same files again; the default copy image and --timeout need no flag", () => {
    const finish = runFinish({ filenames: ["/src/app/db.yaml", "/src/app/more.yaml"], timeoutMs: 300_000, connection: {} });
    assert.equal(finishCommand(journal({ migration: migration(defaultCopyImage), finish })), "kubectl appstorage set -f /src/app/db.yaml -f /src/app/more.yaml --migrate-existing -n prod");
  });

  test("set -f - (standard input cannot be given again): the StatefulSet and its directives instead", () => {
    const finish = runFinish({ filenames: ["-"], connection: { context: "c" } });
    assert.equal(finishCommand(journal({ finish })), "kubectl appstorage set db data=2Gi,slow --context c -n prod");
  });

  test("a credential is never recorded: its flag comes with a placeholder", () => {
    const finish = runFinish({ connection: { server: "https://k:6443", token: "s3cr3t", username: "bob", password: "pw" } });
    assert.ok(!JSON.stringify(finish).includes("s3cr3t") && !JSON.stringify(finish).includes("pw"), JSON.stringify(finish));
    assert.equal(finishCommand(journal({ finish })), "kubectl appstorage set db data=2Gi,slow --server https://k:6443 --token '<TOKEN>' --username bob --password '<PASSWORD>' -n prod");
  });

  test("the request is the change as recorded (words with spaces: a directive and its --template-label), not quoted again", () => {
    assert.equal(
      finishCommand(journal({ request: ["data=2Gi --template-label=data:tier=gold"], finish: runFinish({ connection: {} }) })),
      "kubectl appstorage set db data=2Gi --template-label=data:tier=gold -n prod",
    );
  });

  test("undo, and a journal written before runs recorded their flags", () => {
    assert.equal(finishCommand(journal({ command: "undo", finish: runFinish({ connection: { context: "c" } }) })), "kubectl appstorage undo db --context c -n prod");
    assert.equal(finishCommand(journal()), "kubectl appstorage set db data=2Gi,slow -n prod");
  });
});
