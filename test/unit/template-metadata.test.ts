// Claim template labels and annotations on the command line (--template-label, --template-annotation,
// --overwrite, as kubectl label and annotate), and --relabel-existing: parsing, the words a plan
// writes back (a command that asks for the same change), planning, and what a plan shows.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import type { PersistentVolumeClaim, StatefulSet } from "../../src/api/types";
import { completionRequest } from "../../src/cli/completion";
import { templateKeysAnswer } from "../../src/output/completion";
import { keptSizeLine, renderPlan } from "../../src/output/plan";
import { formatDirective, parseChangeWords, parseDirectives } from "../../src/plan/directive";
import type { ExistingClaimsOptions } from "../../src/plan/existing-claims-types";
import { historyAnnotation, historyOf } from "../../src/plan/history";
import { journalFor } from "../../src/plan/journal";
import { buildUndoPlan } from "../../src/plan/undo";
import { existingClaimNotes, manifestChange } from "../../src/plan/manifest";
import { buildPlan } from "../../src/plan/plan";
import { relabelPatch, remainingPatch } from "../../src/plan/relabel";
import { applyEdits, editsBetween, parseMetadataEdit } from "../../src/plan/template-metadata";
import type { Observed, PlanRequest } from "../../src/plan/types";
import { claim, pod, storageClass, sts } from "../fixtures/builders";
import { commandLine, existingOf } from "../fixtures/command-line";

const now = "2026-12-03T12:00:00.000Z";

describe("--template-label and --template-annotation values: CLAIM:KEY=VALUE sets, CLAIM:KEY- removes", () => {
  const cases: [text: string, kind: "label" | "annotation", want: object][] = [
    ["data:tier=gold", "label", { claim: "data", kind: "label", key: "tier", value: "gold" }],
    ["data:tier-", "label", { claim: "data", kind: "label", key: "tier", value: null }],
    ["data:tier=", "label", { claim: "data", kind: "label", key: "tier", value: "" }],
    ["data:helm.sh/chart=db-2.0.0", "label", { claim: "data", kind: "label", key: "helm.sh/chart", value: "db-2.0.0" }],
    ["pg-data:app.kubernetes.io/version=1.2_3", "label", { claim: "pg-data", kind: "label", key: "app.kubernetes.io/version", value: "1.2_3" }],
    // An annotation's value is free text: '=', ':', ',', spaces, a trailing '-'.
    ["data:note=a=b: c, d-", "annotation", { claim: "data", kind: "annotation", key: "note", value: "a=b: c, d-" }],
    ["data:backup.example.com/schedule-", "annotation", { claim: "data", kind: "annotation", key: "backup.example.com/schedule", value: null }],
  ];
  for (const [text, kind, want] of cases) test(`${kind} ${text}`, () => assert.deepEqual(parseMetadataEdit(text, kind), want));

  const refused: [text: string, kind: "label" | "annotation", why: RegExp][] = [
    ["tier=gold", "label", /--template-label "tier=gold" names no claim template: write CLAIM:KEY=VALUE to set or CLAIM:KEY- to remove, for example --template-label data:tier=gold$/],
    ["Data:tier=gold", "label", /"Data" is not a valid claim template name/],
    [":tier=gold", "label", /"" is not a valid claim template name/],
    ["data:tier", "label", /neither sets nor removes a label: write CLAIM:KEY=VALUE/],
    ["data:=gold", "label", /"" is not a valid label key/],
    ["data:-", "label", /"" is not a valid label key/],
    ["data:tier!=gold", "label", /"tier!" is not a valid label key: a key is an optional DNS prefix/],
    ["data:Example.COM/tier=gold", "label", /its prefix "Example.COM" is not a DNS subdomain/],
    ["data:tier=gold,silver", "label", /"gold,silver" is not a valid label value .*one KEY=VALUE per --template-label, repeat the flag for more, or use --template-annotation for free text/],
    ["data:tier=gold-", "label", /"gold-" is not a valid label value/],
    [`data:tier=${"a".repeat(64)}`, "label", /is not a valid label value/],
    ["data:note", "annotation", /--template-annotation "data:note" neither sets nor removes an annotation/],
  ];
  for (const [text, kind, why] of refused) {
    test(`refuses ${kind} ${text.slice(0, 30)}`, () => {
      assert.throws(() => parseMetadataEdit(text, kind), why);
      // One line, as every usage error.
      assert.throws(
        () => parseMetadataEdit(text, kind),
        (e: Error) => !e.message.includes("\n"),
      );
    });
  }
});

describe("parseChangeWords: directives and the template flags, per claim template", () => {
  test("a directive gets its template's labels and annotations; a template named only by a flag gets a directive of its own, after the others", () => {
    const ds = parseChangeWords({ directives: ["data=2Gi"], labels: ["data:tier=gold", "logs:tier=bronze", "data:old-"], annotations: ["data:backup=daily"] });
    assert.deepEqual(ds, [
      { claim: "data", size: "2Gi", labels: { tier: "gold", old: null }, annotations: { backup: "daily" } },
      { claim: "logs", labels: { tier: "bronze" } },
    ]);
  });
  test("a key given twice for one template is refused, as kubectl label refuses to set and remove one key", () => {
    assert.throws(() => parseChangeWords({ directives: [], labels: ["data:tier=gold", "data:tier-"] }), /label "tier" of claim template data is given twice; give it once/);
    // The same key as a label and an annotation are two keys.
    assert.equal(parseChangeWords({ directives: [], labels: ["data:tier=gold"], annotations: ["data:tier=x"] }).length, 1);
  });
  test("nothing at all is refused as before", () => assert.throws(() => parseChangeWords({ directives: [] }), /no change given/));
});

/** The words of a text as a POSIX shell splits them (the text is what the journal's finish command prints). */
function shellWords(text: string): string[] {
  const r = spawnSync("sh", ["-c", `printf '%s\\n' ${text}`], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split("\n").slice(0, -1);
}

describe("formatDirective: the words that ask for the same change again (the journal's finish command, the history)", () => {
  const cases: [what: string, directives: string[], labels: string[], annotations: string[], text: string[]][] = [
    ["a size", ["data=2Gi"], [], [], ["data=2Gi"]],
    ["a size and labels, keys sorted", ["data=2Gi,fast"], ["data:tier=gold", "data:app-"], [], ["data=2Gi,fast --template-label=data:app- --template-label=data:tier=gold"]],
    ["labels only", [], ["data:tier=gold"], [], ["--template-label=data:tier=gold"]],
    ["an annotation with spaces and a quote, quoted for the shell", [], [], ["data:note=it's a db, daily"], ["'--template-annotation=data:note=it'\\''s a db, daily'"]],
  ];
  for (const [what, directives, labels, annotations, text] of cases) {
    test(what, () => {
      const ds = parseChangeWords({ directives, labels, annotations });
      assert.deepEqual(ds.map(formatDirective), text);
      // Typed back (through a real shell), the words ask for exactly these directives.
      const parsed = commandLine(["set", "db", ...shellWords(text.join(" "))]);
      assert.equal(parsed.kind, "set");
      if (parsed.kind !== "set") return;
      assert.deepEqual(parseChangeWords({ directives: parsed.directives, labels: parsed.templateLabels ?? [], annotations: parsed.templateAnnotations ?? [] }), ds);
    });
  }
  test("a manifest's change of labels is the same words (set -f's journal can be finished by a command line)", () => {
    const live = sts("db")
      .withClaim("data", "1Gi")
      .edit((s) => (s.spec.volumeClaimTemplates![0]!.metadata.labels = { "helm.sh/chart": "db-1.0.0", old: "x" }))
      .live();
    const wanted = sts("db")
      .withClaim("data", "2Gi")
      .edit((s) => (s.spec.volumeClaimTemplates![0]!.metadata.labels = { "helm.sh/chart": "db-2.0.0" }))
      .build();
    const text = manifestChange(live, wanted).directives.map(formatDirective);
    assert.deepEqual(text, ["data=2Gi --template-label=data:helm.sh/chart=db-2.0.0 --template-label=data:old-"]);
  });
});

describe("applyEdits and editsBetween", () => {
  test("set, change, remove; a removed key that is not there is nothing", () => {
    assert.deepEqual(applyEdits({ a: "1", b: "2" }, { a: "9", b: null, c: "3", d: null }), { a: "9", c: "3" });
    assert.deepEqual(applyEdits(undefined, { a: "1" }), { a: "1" });
  });
  test("the edits from one map to another, keys sorted", () => {
    assert.deepEqual(editsBetween({ b: "2", a: "1", c: "3" }, { a: "1", b: "9", d: "4" }), { b: "9", c: null, d: "4" });
    assert.deepEqual(editsBetween(undefined, undefined), {});
  });
});

/** data: 1Gi of class fast (expands), labels app=db (the selector's, on claims) and tier=silver on the template. */
function live(labels: Record<string, string> = { tier: "silver", chart: "db-1" }, annotations?: Record<string, string>): StatefulSet {
  return sts("db")
    .withClaim("data", "1Gi", "fast")
    .replicas(2)
    .edit((s) => {
      s.spec.volumeClaimTemplates![0]!.metadata.labels = labels;
      if (annotations) s.spec.volumeClaimTemplates![0]!.metadata.annotations = annotations;
    })
    .live("uid-db", "42");
}

/** A claim as the StatefulSet controller made it from the template: its labels plus the selector's, and the binder's annotations. */
function made(name: string, labels: Record<string, string>, size = "1Gi", cls = "fast"): PersistentVolumeClaim {
  const c = claim(name, size, { capacity: size, storageClass: cls });
  c.metadata.labels = { ...labels, app: "db" };
  c.metadata.annotations = { "pv.kubernetes.io/bind-completed": "yes", mine: "kept" };
  c.metadata.resourceVersion = "7";
  return c;
}

function observed(s: StatefulSet, claims: PersistentVolumeClaim[], extra: Partial<Observed> = {}): Observed {
  return {
    statefulSet: s,
    claims,
    pods: [pod("db-0", s), pod("db-1", s)],
    storageClasses: [storageClass("fast", { expandable: true }), storageClass("fixed", { expandable: false })],
    user: "alice",
    now,
    ...extra,
  };
}

const relabel: ExistingClaimsOptions = { resize: false, vac: false, waitResize: false, restartPods: false, relabel: true };
const ask = (words: { directives?: string[]; labels?: string[]; annotations?: string[] }, more: Partial<PlanRequest> = {}): PlanRequest => ({
  namespace: "prod",
  name: "db",
  directives: parseChangeWords({ directives: words.directives ?? [], labels: words.labels ?? [], annotations: words.annotations ?? [] }),
  force: false,
  ...more,
});
const claims = () => [made("data-db-0", { tier: "silver", chart: "db-1" }), made("data-db-1", { tier: "silver", chart: "db-1" })];

describe("planning template labels: the template changes as kubectl label would change an object", () => {
  test("a new key and a removed one: the template's labels after, the re-create steps, the request as words", () => {
    const plan = buildPlan(observed(live(), claims()), ask({ labels: ["data:zone=a", "data:chart-"] }));
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(plan.desired.spec.volumeClaimTemplates![0]!.metadata.labels, { tier: "silver", zone: "a" });
    assert.deepEqual(plan.changes[0]!.before.labels, { tier: "silver", chart: "db-1" });
    assert.deepEqual(plan.changes[0]!.after.labels, { tier: "silver", zone: "a" });
    assert.deepEqual(plan.request, ["--template-label=data:chart- --template-label=data:zone=a"]);
    assert.ok(plan.steps.includes("create") && !plan.steps.includes("label-claims"), "existing claims are left alone without --relabel-existing");
    assert.match(renderPlan(plan), /claim template data: 1Gi, class fast, labels chart=db-1,tier=silver -> 1Gi, class fast, labels tier=silver,zone=a/);
  });
  test("another value needs --overwrite, as kubectl label: refused (never forced), and nothing else differs with it", () => {
    const without = buildPlan(observed(live(), claims()), ask({ labels: ["data:tier=gold"] }, { force: true }));
    assert.deepEqual(
      without.refusals.map((r) => [r.message, r.forceable]),
      [["'tier' already has a value (silver) on claim template data, and --overwrite is false; add --overwrite to change it", false]],
    );
    const withIt = buildPlan(observed(live(), claims()), ask({ labels: ["data:tier=gold"] }, { overwrite: true }));
    assert.deepEqual(withIt.refusals, []);
    assert.equal(withIt.desired.spec.volumeClaimTemplates![0]!.metadata.labels!["tier"], "gold");
    // The same value again is no change, with or without --overwrite.
    assert.equal(buildPlan(observed(live(), claims()), ask({ labels: ["data:tier=silver"] })).noChange, true);
  });
  test("removing a key the template does not have is a warning, and no change", () => {
    const plan = buildPlan(observed(live(), claims()), ask({ annotations: ["data:backup-"] }));
    assert.deepEqual(plan.refusals, []);
    assert.ok(plan.warnings.includes('annotation "backup" not found on claim template data; nothing to remove'));
    assert.equal(plan.noChange, true);
  });
  test("the last key removed leaves no empty map on the template", () => {
    const plan = buildPlan(observed(live({ tier: "silver" }), claims()), ask({ labels: ["data:tier-"] }));
    assert.equal(plan.desired.spec.volumeClaimTemplates![0]!.metadata.labels, undefined);
  });
  test("an unknown claim template is refused as for a size", () => {
    const plan = buildPlan(observed(live(), claims()), ask({ labels: ["logs:tier=gold"] }));
    assert.match(plan.refusals[0]!.message, /claim template "logs" not found in statefulset.apps\/db \(it has: data\)/);
  });
});

describe("relabelPatch: a claim gets its template's labels and annotations; what it has besides is kept", () => {
  const after = live({ tier: "gold", zone: "a" }, { backup: "daily" }).spec.volumeClaimTemplates![0]!;
  const before = live({ tier: "silver", chart: "db-1", app: "other" }).spec.volumeClaimTemplates![0]!;
  test("changed and new keys set, keys the change drops removed, the selector's and everyone else's kept", () => {
    const c = made("data-db-0", { tier: "silver", chart: "db-1", team: "x" });
    assert.deepEqual(relabelPatch(c, after, before, { app: "db" }), { labels: { tier: "gold", zone: "a", chart: null }, annotations: { backup: "daily" } });
  });
  test("a claim already as its template: nothing", () => {
    const c = made("data-db-0", { tier: "gold", zone: "a" });
    c.metadata.annotations = { ...c.metadata.annotations, backup: "daily" };
    assert.deepEqual(relabelPatch(c, after, before, { app: "db" }), {});
  });
  test("remainingPatch: what a claim still lacks of a planned patch (a rerun sends only that)", () => {
    const c = made("data-db-0", { tier: "gold" });
    assert.deepEqual(remainingPatch({ labels: { tier: "gold", zone: "a", chart: null } }, c), { labels: { zone: "a" } });
    assert.deepEqual(remainingPatch({ labels: { tier: "gold" } }, c), {});
  });
});

describe("--relabel-existing: a step of the plan, in the journal, decided from the claims as they are", () => {
  test("every claim of the named templates gets a patch; the step comes before the StatefulSet is touched", () => {
    const plan = buildPlan(observed(live(), claims()), ask({ directives: ["data=2Gi"], labels: ["data:tier=gold", "data:chart-"] }, { overwrite: true, existing: relabel }));
    assert.deepEqual(plan.refusals, []);
    assert.deepEqual(plan.steps, ["write-journal", "label-claims", "orphan-delete", "wait-gone", "create", "verify", "record", "remove-journal"]);
    assert.deepEqual(
      plan.existing!.relabel!.map((c) => [c.name, c.patch]),
      [
        ["data-db-0", { labels: { tier: "gold", chart: null } }],
        ["data-db-1", { labels: { tier: "gold", chart: null } }],
      ],
    );
    const journal = journalFor(plan, { holder: "h", by: "alice", now: new Date(now) });
    assert.deepEqual(
      journal.existing!.relabel!.map((c) => c.name),
      ["data-db-0", "data-db-1"],
    );
    assert.deepEqual(journal.existing!.options.relabel, true);
    const text = renderPlan(plan);
    assert.match(text, /data-db-0 +0 +Bound .* keeps 1Gi \(template 2Gi\); gets labels chart-, tier=gold\n/);
    assert.match(text, /existing claims: 2 of 2 get their template's labels and annotations \(a patch of their metadata, no restart\)/);
    assert.match(text, /2\. make the labels and annotations of the existing claims their template's \(patch metadata only, no restart\) before the StatefulSet is touched/);
  });
  test("claims already labelled (a rerun): no step; templates already as asked: nothing to change", () => {
    const done = [made("data-db-0", { tier: "gold" }), made("data-db-1", { tier: "gold" })];
    const after = live({ tier: "gold" });
    const plan = buildPlan(observed(after, done), ask({ labels: ["data:tier=gold"] }, { existing: relabel }));
    assert.equal(plan.noChange, true);
    assert.deepEqual(plan.steps, []);
    assert.deepEqual(
      plan.existing!.relabel!.map((c) => c.patch),
      [{}, {}],
    );
  });
  test("templates already as asked, claims not: only the claims change, the StatefulSet is not re-created", () => {
    const after = live({ tier: "gold" });
    const plan = buildPlan(observed(after, claims()), ask({ labels: ["data:tier=gold"] }, { existing: relabel }));
    assert.deepEqual(plan.steps, ["label-claims"]);
    assert.equal(plan.noChange, false);
    // Without a change of the template nothing is known to be dropped: chart stays on the claims.
    assert.deepEqual(plan.existing!.relabel![0]!.patch, { labels: { tier: "gold" } });
  });
  test("set -f covers every template of the manifest, also one it leaves equal", () => {
    const after = live({ tier: "gold" });
    const plan = buildPlan(observed(after, claims()), { namespace: "prod", name: "db", directives: [], force: false, overwrite: true, templates: ["data"], existing: relabel });
    assert.deepEqual(plan.steps, ["label-claims"]);
  });
});

describe("set -f says what it leaves to existing claims, naming the flag that does it", () => {
  /** What the plan of set -f says: the notes of the manifest path, then the line every plan has about sizes. */
  const plan = (s: StatefulSet, cs: PersistentVolumeClaim[], wanted: StatefulSet, options?: ExistingClaimsOptions) => {
    const o = observed(s, cs);
    const p = buildPlan(o, {
      namespace: "prod",
      name: "db",
      directives: manifestChange(s, wanted).directives,
      force: false,
      overwrite: true,
      templates: ["data"],
      ...(options ? { existing: options } : {}),
    });
    return [keptSizeLine(p), ...existingClaimNotes(p, o, options)].filter(Boolean);
  };
  const v2 = (size: string, cls: string, labels: Record<string, string>) =>
    sts("db")
      .withClaim("data", size, cls)
      .replicas(2)
      .edit((s) => (s.spec.volumeClaimTemplates![0]!.metadata.labels = labels))
      .build();
  test("a bigger template on a class that expands: --resize-existing; other labels: --relabel-existing", () => {
    assert.deepEqual(plan(live(), claims(), v2("2Gi", "fast", { tier: "gold" })), [
      "existing claims keep their size: data-db-0, data-db-1 (1Gi, template data 2Gi): add --resize-existing to grow them too\n",
      "existing claim(s) data-db-0, data-db-1 keep their labels and annotations; template data's differ: add --relabel-existing to patch them (no restart)",
    ]);
  });
  test("the same line, from the same function, as the plain path's plan (set db data=2Gi)", () => {
    const o = observed(live(), claims());
    const plain = buildPlan(o, { namespace: "prod", name: "db", directives: parseDirectives(["data=2Gi"]), force: false });
    const fromManifest = plan(live(), claims(), v2("2Gi", "fast", { tier: "silver", chart: "db-1" }));
    assert.deepEqual([keptSizeLine(plain)], fromManifest);
    assert.ok(renderPlan(plain).includes(keptSizeLine(plain)));
  });
  test("a class that cannot expand, or another class: --migrate-existing", () => {
    const fixed = [made("data-db-0", { tier: "silver", chart: "db-1" }, "1Gi", "fixed"), made("data-db-1", { tier: "silver", chart: "db-1" }, "1Gi", "fixed")];
    const s = live();
    s.spec.volumeClaimTemplates![0]!.spec.storageClassName = "fixed";
    assert.deepEqual(plan(s, fixed, v2("2Gi", "fixed", { tier: "silver", chart: "db-1" })), [
      "existing claims keep their size: data-db-0, data-db-1 (1Gi, template data 2Gi): their class does not expand volumes; add --migrate-existing to move them to new volumes, the data copied\n",
    ]);
    assert.deepEqual(plan(live(), claims(), v2("1Gi", "fixed", { tier: "silver", chart: "db-1" })), [
      "existing claim(s) data-db-0, data-db-1 (class fast) keep their storage class (a claim's class never changes); template data now names fixed: add --migrate-existing to move them, the data copied",
    ]);
  });
  test("with the flags given, nothing is said", () => {
    assert.deepEqual(plan(live(), claims(), v2("2Gi", "fast", { tier: "gold" }), { resize: true, vac: false, waitResize: false, restartPods: false, relabel: true }), []);
  });
});

describe("the command line of the template flags", () => {
  const refused: [args: string[], why: RegExp][] = [
    [["set", "db", "data=2Gi", "--overwrite"], /--overwrite lets --template-label and --template-annotation change a key that has a value; add one of them, or drop --overwrite$/],
    [["set", "-f", "-", "--template-label", "data:a=b"], /-f FILE takes the claim templates' labels and annotations from the manifest: drop --template-label/],
    [["set", "--plan", "p.json", "--template-annotation", "data:a=b"], /--plan FILE applies the plan as it is: give no StatefulSet, directive, --template-label/],
    [["diff", "db"], /diff needs a StatefulSet name and at least one CLAIM=SIZE\[,CLASS\] directive \(or --template-label CLAIM:KEY=VALUE\)/],
    [["set", "db", "data=2Gi", "--relabel-existing", "--migrate-existing"], /--migrate-existing re-creates the claims it moves .*run set --relabel-existing after the move$/],
  ];
  for (const [args, why] of refused) test(`refuses ${args.join(" ")}`, () => assert.throws(() => existingOf(commandLine(args)), why));
  test("a flag alone is a change; repeated flags keep every value; --relabel-existing alone is existing-claims work", () => {
    const p = commandLine(["set", "db", "--template-label", "data:a=b", "--template-label=data:c-", "--template-annotation", "data:n=x y", "--overwrite", "--relabel-existing"]);
    assert.equal(p.kind, "set");
    if (p.kind !== "set") return;
    assert.deepEqual([p.templateLabels, p.templateAnnotations, p.overwrite], [["data:a=b", "data:c-"], ["data:n=x y"], true]);
    assert.deepEqual(existingOf(p), { resize: false, vac: false, waitResize: false, restartPods: false, relabel: true });
    assert.equal(commandLine(["diff", "-l", "app=db", "--template-label", "data:a=b"]).kind, "diff");
  });
});

describe("completion of --template-label and --template-annotation", () => {
  const s = live({ tier: "silver" }, { backup: "daily" });
  test("the words ask for the StatefulSet's templates, not with -l", () => {
    assert.deepEqual(completionRequest(["set", "db", "--template-label", "da"]), { kind: "templateKeys", flags: {}, statefulSet: "db", which: "label", prefix: "da", shown: "" });
    assert.deepEqual(completionRequest(["diff", "db", "-n", "prod", "--template-annotation=data:"]), {
      kind: "templateKeys",
      flags: { namespace: "prod" },
      statefulSet: "db",
      which: "annotation",
      prefix: "data:",
      shown: "--template-annotation=",
    });
    assert.deepEqual(completionRequest(["set", "-l", "app=db", "--template-label", ""]), { kind: "answer", answer: { candidates: [], directive: 4 } });
  });
  test("first the claim templates, then the template's keys to change or remove", () => {
    assert.deepEqual(
      templateKeysAnswer(s, "label", "", "").candidates.map((c) => c.value),
      ["data:"],
    );
    assert.deepEqual(
      templateKeysAnswer(s, "label", "data:", "").candidates.map((c) => [c.value, c.description]),
      [
        ["data:tier=", "change (now silver)"],
        ["data:tier-", "remove"],
      ],
    );
    assert.deepEqual(
      templateKeysAnswer(s, "annotation", "data:b", "--template-annotation=").candidates.map((c) => c.value),
      ["--template-annotation=data:backup=", "--template-annotation=data:backup-"],
    );
  });
});

describe("history and undo carry the templates' labels and annotations", () => {
  /** The object as the server holds it after the plan was applied. */
  const applied = (desired: StatefulSet): StatefulSet => ({ ...desired, metadata: { ...desired.metadata, uid: "uid-db-2", resourceVersion: "50", creationTimestamp: now } });
  test("undo puts back the labels a change set and removed", () => {
    const plan = buildPlan(observed(live(), claims()), ask({ directives: ["data=2Gi"], labels: ["data:tier=gold", "data:chart-"], annotations: ["data:backup=daily"] }, { overwrite: true }));
    const after = applied(plan.desired);
    const undo = buildUndoPlan(observed(after, claims()), { namespace: "prod", name: "db", force: false });
    assert.deepEqual(undo.refusals, []);
    const t = undo.desired.spec.volumeClaimTemplates![0]!;
    assert.deepEqual([t.spec.resources!.requests!["storage"], t.metadata.labels, t.metadata.annotations], ["1Gi", { tier: "silver", chart: "db-1" }, undefined]);
    assert.deepEqual(undo.request, ["data=1Gi --template-label=data:chart=db-1 --template-label=data:tier=silver --template-annotation=data:backup-"]);
  });
  test("a revision recorded before the history kept labels leaves the labels as they are", () => {
    const plan = buildPlan(observed(live(), claims()), ask({ directives: ["data=2Gi"], labels: ["data:tier=gold"] }, { overwrite: true }));
    const after = applied(plan.desired);
    const old = JSON.parse(after.metadata.annotations![historyAnnotation]!) as { revisions: Record<string, unknown>[] };
    for (const r of old.revisions) {
      delete r["labelled"];
      for (const t of r["templates"] as { metadata: Record<string, unknown> }[]) t.metadata = { name: t.metadata["name"] };
    }
    after.metadata.annotations![historyAnnotation] = JSON.stringify(old);
    const undo = buildUndoPlan(observed(after, claims()), { namespace: "prod", name: "db", force: false });
    assert.deepEqual(undo.desired.spec.volumeClaimTemplates![0]!.metadata.labels, { tier: "gold", chart: "db-1" }, "labels untouched, the size undone");
    assert.equal(undo.desired.spec.volumeClaimTemplates![0]!.spec.resources!.requests!["storage"], "1Gi");
  });
  test("a change of labels alone is a revision of its own", () => {
    const plan = buildPlan(observed(live(), claims()), ask({ labels: ["data:zone=a"] }));
    assert.deepEqual(
      historyOf(applied(plan.desired)).map((r) => r.change ?? "<none>"),
      ["<none>", "--template-label=data:zone=a"],
    );
  });
});

test("set -f words Helm's ownership as what comes next, set as what to update", () => {
  const helmed = live();
  helmed.metadata.labels = { ...helmed.metadata.labels, "app.kubernetes.io/managed-by": "Helm" };
  const warning = (fromManifest: boolean) => buildPlan(observed(helmed, claims()), ask({ directives: ["data=2Gi"] }, { fromManifest })).warnings.find((w) => w.includes("managed by Helm"));
  assert.equal(warning(true), "statefulset.apps/db is managed by Helm: its claim templates become this manifest's; upgrade or sync with the same manifest next");
  assert.equal(warning(false), "statefulset.apps/db is managed by Helm: update the claim templates there too, or its next sync will fight this change");
});
