// The fault proxy's own logic (test/shared/faultproxy.ts): naming requests, and the write checks the
// reliability suite relies on. If these were wrong, the suite would prove less than it says.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { describeRequest, journalWrite, renewalGapMs, type SeenRequest, writeDisciplineViolations } from "../shared/faultproxy";

describe("describeRequest", () => {
  const cases: [string, string, string][] = [
    ["GET", "/apis/apps/v1/namespaces/x/statefulsets/db", "get statefulsets"],
    ["GET", "/apis/apps/v1/namespaces/x/statefulsets?fieldSelector=metadata.name%3Ddb&watch=1&allowWatchBookmarks=true", "watch statefulsets"],
    ["GET", "/api/v1/namespaces/x/pods?labelSelector=app%3Ddb&limit=500", "list pods"],
    ["GET", "/api/v1/namespaces/x", "get namespaces"],
    ["GET", "/apis/storage.k8s.io/v1/storageclasses?limit=500", "list storageclasses"],
    ["POST", "/api/v1/namespaces/x/secrets", "create secrets"],
    ["PUT", "/api/v1/namespaces/x/secrets/appstorage-journal-db", "update secrets"],
    ["DELETE", "/apis/apps/v1/namespaces/x/statefulsets/db", "delete statefulsets"],
    ["PATCH", "/api/v1/namespaces/x/persistentvolumeclaims/data-db-0?dryRun=All", "dry-run patch persistentvolumeclaims"],
    ["POST", "/api/v1/namespaces/x/pods/db-0/eviction", "create pods/eviction"],
    ["POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "create selfsubjectaccessreviews"],
  ];
  for (const [method, path, signature] of cases) test(`${method} ${path}`, () => assert.equal(describeRequest(method, path).signature, signature));
});

type Entry = [method: string, path: string, body: string, extra?: Partial<SeenRequest>];
function log(entries: Entry[]): SeenRequest[] {
  return entries.map(([method, path, body, extra], index) => ({
    index,
    method,
    path,
    ...describeRequest(method, path),
    bodyHash: body,
    reachedServer: true,
    serverStatus: 200,
    eventsDelivered: 0,
    at: index,
    ...extra,
  }));
}
const secret = "/api/v1/namespaces/x/secrets/appstorage-journal-db";

describe("writeDisciplineViolations", () => {
  const sts = "/apis/apps/v1/namespaces/x/statefulsets";
  const pods = "/api/v1/namespaces/x/pods";
  const review = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
  const claim = "/api/v1/namespaces/x/persistentvolumeclaims/c?dryRun=All";
  // What the proxy saw, and the violations reported: one pattern each, in order.
  const cases: [string, Entry[], RegExp[]][] = [
    [
      "a clean run",
      [
        ["GET", secret, ""],
        ["POST", "/api/v1/namespaces/x/secrets", "a"],
        ["PUT", secret, "b"],
        ["PUT", secret, "c"],
        ["DELETE", secret, "d"],
      ],
      [],
    ],
    [
      "the same write twice at the server",
      [
        ["PUT", secret, "b"],
        ["PUT", secret, "b"],
      ],
      [/^write repeated: #0 and #1 update secrets /],
    ],
    [
      "the same create after the server deleted an object of that collection makes a new object: not a repeat",
      [
        ["POST", sts, "s"],
        ["DELETE", `${sts}/db`, "d"],
        ["POST", sts, "s"],
      ],
      [],
    ],
    [
      "the same create after a delete the server refused is a repeat: a refused delete changes nothing",
      [
        ["POST", sts, "s"],
        ["DELETE", `${sts}/db`, "d", { serverStatus: 409 }],
        ["POST", sts, "s"],
      ],
      [/^write repeated: #0 and #2 create statefulsets /],
    ],
    [
      "a retry after a 429 from the server is not a repeat",
      [
        ["PUT", secret, "b", { serverStatus: 429 }],
        ["PUT", secret, "b"],
      ],
      [],
    ],
    [
      "a repeat of a write that never reached the server is not a repeat",
      [
        ["PUT", secret, "b", { reachedServer: false, fault: "reset-before" }],
        ["GET", secret, ""],
        ["PUT", secret, "b"],
      ],
      [],
    ],
    [
      "an unknown outcome followed by a write instead of a read",
      [
        ["PUT", secret, "b", { reachedServer: false, fault: "reset-before" }],
        ["PUT", secret, "b2"],
      ],
      [/followed by a write/],
    ],
    [
      "an unknown outcome of an eviction is read back through its pod (list pods), then another eviction may follow",
      [
        ["POST", `${pods}/db-2/eviction`, "e2", { fault: "reset-after" }],
        ["GET", pods, ""],
        ["POST", `${pods}/db-1/eviction`, "e1"],
      ],
      [],
    ],
    [
      "an unknown outcome of an eviction followed by another eviction without a read",
      [
        ["POST", `${pods}/db-2/eviction`, "e2", { fault: "reset-after" }],
        ["POST", `${pods}/db-1/eviction`, "e1"],
      ],
      [/^the unknown outcome of #0 create pods\/eviction \(reset-after\) was followed by a write \(#1 create pods\/eviction\) without a read$/],
    ],
    [
      "reviews and dry runs are not writes",
      [
        ["POST", review, "r"],
        ["POST", review, "r"],
        ["PATCH", claim, "p"],
        ["PATCH", claim, "p"],
      ],
      [],
    ],
  ];
  for (const [name, entries, want] of cases) {
    test(name, () => {
      const problems = writeDisciplineViolations(log(entries));
      assert.equal(problems.length, want.length, problems.join("\n"));
      want.forEach((pattern, i) => assert.match(problems[i]!, pattern));
    });
  }
});

/** A journal Secret's body as the plugin writes it. */
function journalBody(journal: Record<string, unknown>, name = "appstorage-journal-db"): Buffer {
  return Buffer.from(JSON.stringify({ metadata: { name }, data: { "journal.json": Buffer.from(JSON.stringify(journal)).toString("base64") } }));
}
const at = (s: number) => new Date(Date.UTC(2026, 11, 1, 12, 0, s)).toISOString();

describe("journal writes", () => {
  const first = journalWrite(journalBody({ step: "started", request: ["set"], updatedAt: at(0), leaseExpires: at(15) }), undefined)!;
  test("the first write records a step, with its lease", () => {
    assert.equal(first.kind, "step");
    assert.equal(first.step, "started");
    assert.equal(first.leaseSeconds, 15);
    assert.equal(first.secret, "appstorage-journal-db");
  });
  test("the same journal with later timestamps is a renewal; another step is a step; a lease that ends at once is a release", () => {
    assert.equal(journalWrite(journalBody({ step: "started", request: ["set"], updatedAt: at(5), leaseExpires: at(20) }), first)!.kind, "renewal");
    assert.equal(journalWrite(journalBody({ step: "deleted", request: ["set"], updatedAt: at(1), leaseExpires: at(16) }), first)!.kind, "step");
    assert.equal(journalWrite(journalBody({ step: "started", request: ["set"], updatedAt: at(2), leaseExpires: at(2) }), first)!.kind, "release");
  });
  test("not a journal: another Secret, a body that is not JSON", () => {
    assert.equal(journalWrite(Buffer.from(JSON.stringify({ metadata: { name: "s" }, data: { other: "eA==" } })), undefined), undefined);
    assert.equal(journalWrite(Buffer.from("{"), undefined), undefined);
  });

  const journalLog = (gaps: number[], kinds: ("step" | "renewal")[], secret = "appstorage-journal-db") => {
    let t = 0;
    return gaps.map((gap, index): SeenRequest => {
      t += gap;
      return {
        index,
        method: "PUT",
        path: `/api/v1/namespaces/x/secrets/${secret}`,
        ...describeRequest("PUT", `/api/v1/namespaces/x/secrets/${secret}`),
        bodyHash: String(index),
        reachedServer: true,
        serverStatus: 200,
        eventsDelivered: 0,
        at: t,
        journal: { kind: kinds[index]!, secret, step: "deleted", digest: "d", leaseSeconds: 15 },
      };
    });
  };
  test("a renewal a lease third after the last write is no repeat", () => {
    assert.deepEqual(writeDisciplineViolations(journalLog([0, 5000, 5010], ["step", "renewal", "renewal"])), []);
  });
  test("the same journal again after a write the server did not record (a fault, a 429) is no repeat", () => {
    const faulted = journalLog([0, 10, 30], ["step", "renewal", "renewal"]);
    faulted[0] = { ...faulted[0]!, reachedServer: false, fault: "429" };
    faulted[1] = { ...faulted[1]!, serverStatus: 429 };
    assert.deepEqual(writeDisciplineViolations(faulted), []);
  });
  test("the same journal again at once, though its timestamps differ, is a repeated write", () => {
    const problems = writeDisciplineViolations(journalLog([0, 40], ["step", "renewal"]));
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /write repeated: journal #0 and #1 record the same \(step deleted\), 40 ms apart/);
    assert.equal(writeDisciplineViolations(journalLog([0, renewalGapMs - 1], ["step", "renewal"])).length, 1);
  });
});
