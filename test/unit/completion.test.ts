import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { completionRequest, completionScript } from "../../src/cli/completion";
import type { CompletionRequest } from "../../src/commands/completion";
import { claimTemplateAnswer, Directive, formatAnswer, namedAnswer, namespaceAnswer, statefulSetAnswer, storageClassAnswer } from "../../src/output/completion";
import { commandDefs, kubeFlagDefs } from "../../src/cli/flags";
import { parseArgs } from "../../src/cli/root";
import { storageClass, sts } from "../fixtures/builders";

function help(command?: string): string {
  const p = parseArgs(command ? [command, "--help"] : ["--help"]);
  assert.equal(p.kind, "text");
  return p.kind === "text" ? p.text : "";
}

const request = (...words: string[]): CompletionRequest => completionRequest(words);

function values(r: CompletionRequest): string[] {
  assert.equal(r.kind, "answer", JSON.stringify(r));
  return r.kind === "answer" ? r.answer.candidates.map((c) => c.value) : [];
}

function directive(r: CompletionRequest): number {
  return r.kind === "answer" ? r.answer.directive : -1;
}

describe("completionRequest: what the word under the cursor needs", () => {
  test("subcommands, with descriptions, never files", () => {
    const r = request("");
    assert.deepEqual(values(r), ["show", "diff", "set", "history", "undo", "rbac", "completion", "version", "options"]);
    assert.equal(directive(r), Directive.NoFileComp);
    assert.ok(r.kind === "answer" && r.answer.candidates[0]!.description?.startsWith("Show claim templates"));
  });
  test("subcommands by prefix", () => assert.deepEqual(values(request("s")), ["show", "set"]));
  test("the hidden __complete and help are not offered", () => {
    assert.ok(!values(request("_")).length);
    assert.ok(!values(request("h")).includes("help"));
  });
  test("an unknown command completes nothing", () => assert.deepEqual(values(request("frobnicate", "")), []));

  test("every flag of a command, long and short, from the table that builds the parser", () => {
    const offered = values(request("set", "-"));
    for (const flag of ["--kubeconfig", "--context", "--namespace", "-n", "--request-timeout", "--dry-run", "--yes", "-y", "--force", "--timeout", "--output", "-o", "--help"]) {
      assert.ok(offered.includes(flag), flag);
    }
    assert.ok(offered.includes("--selector") && offered.includes("--all-namespaces"), "set -l SELECTOR [-A]");
    assert.ok(values(request("undo", "-")).includes("--selector"), "undo -l SELECTOR, as kubectl rollout undo");
    assert.ok(offered.includes("--parallel") && values(request("undo", "-")).includes("--parallel"), "set and undo --parallel");
    assert.ok(!offered.includes("--version"));
  });
  test("each flag of every command and every kubectl global flag is offered, and is in the command's help", () => {
    for (const command of ["show", "diff", "set"]) {
      const offered = values(request(command, "--"));
      const text = help(command);
      for (const flag of commandDefs.find((c) => c.name === command)!.flags) {
        assert.ok(offered.includes(`--${flag.name}`), `${command} --${flag.name}`);
        assert.ok(text.includes(`--${flag.name}=`), `${command} --help shows --${flag.name}`);
      }
      // kubectl's global flags are offered everywhere, and printed once, by options.
      for (const flag of kubeFlagDefs) {
        assert.ok(offered.includes(`--${flag.name}`), `${command} --${flag.name}`);
        assert.ok(!text.includes(`--${flag.name}=`), `${command} --help leaves --${flag.name} to options`);
        assert.ok(help("options").includes(`--${flag.name}=`), `options shows --${flag.name}`);
      }
    }
  });
  test("a repeatable flag (--as-group) is offered again; a plain one is not", () => {
    const offered = values(request("show", "--as-group", "a", "--context", "c", "--"));
    assert.ok(offered.includes("--as-group"));
    assert.ok(!offered.includes("--context"));
  });
  test("-- offers long flags only", () => assert.ok(values(request("show", "--")).every((v) => v.startsWith("--"))));
  test("a flag already given is not offered again", () => {
    const offered = values(request("show", "-A", "--"));
    assert.ok(!offered.includes("--all-namespaces"));
    assert.ok(offered.includes("--selector"));
  });

  const flagValues: [string[], string[]][] = [
    [
      ["show", "-o", ""],
      ["table", "wide", "json", "yaml", "jsonpath=", "jsonpath-as-json=", "custom-columns="],
    ],
    [
      ["show", "--output", "j"],
      ["json", "jsonpath=", "jsonpath-as-json="],
    ],
    [["show", "--output=w"], ["--output=wide"]],
    [
      ["diff", "-o", ""],
      ["json", "yaml"],
    ],
    [
      ["set", "db", "data=2Gi", "--dry-run="],
      ["--dry-run=none", "--dry-run=client", "--dry-run=server"],
    ],
    [
      ["set", "db", "-o", ""],
      ["json", "yaml", "name"],
    ],
    [
      ["completion", ""],
      ["bash", "zsh", "fish", "powershell"],
    ],
    [["set", "--timeout", ""], []],
  ];
  for (const [words, expected] of flagValues) {
    test(`${JSON.stringify(words)} -> ${JSON.stringify(expected)}`, () => {
      const r = request(...words);
      assert.deepEqual(values(r), expected);
      // A value that takes an argument (jsonpath=) is completed without a space after it.
      assert.equal(directive(r), expected.some((v) => v.endsWith("=")) ? Directive.NoSpace | Directive.NoFileComp : Directive.NoFileComp);
    });
  }
  test("--kubeconfig completes file names", () => assert.equal(directive(request("show", "--kubeconfig", "")), Directive.Default));

  test("the first positional of show, diff and set is a StatefulSet, with the connection flags typed so far", () => {
    for (const command of ["show", "diff", "set"]) {
      assert.deepEqual(request("--kubeconfig", "/k", command, "-n", "prod", "--context=c1", "--request-timeout", "3s", "--as", "bob", "we"), {
        kind: "statefulsets",
        flags: { kubeconfig: "/k", namespace: "prod", context: "c1", requestTimeoutMs: 3000, as: "bob" },
        prefix: "we",
      });
    }
  });
  test("-nprod and --namespace=prod count as the namespace", () => {
    assert.deepEqual(request("show", "-nprod", ""), { kind: "statefulsets", flags: { namespace: "prod" }, prefix: "" });
    assert.deepEqual(request("show", "--namespace=prod", ""), { kind: "statefulsets", flags: { namespace: "prod" }, prefix: "" });
  });
  test("boolean flags take no value", () => assert.deepEqual(request("show", "-A", ""), { kind: "statefulsets", flags: {}, prefix: "" }));
  test("as kubectl, a bare --dry-run takes no value: the next word is a positional", () => {
    assert.deepEqual(request("set", "web", "--dry-run", ""), { kind: "claimTemplates", flags: {}, statefulSet: "web", prefix: "", given: [] });
  });
  test("repeated connection flags: the last one wins, as in the parser", () => {
    assert.deepEqual(request("show", "-n", "a", "-n", "b", "--context", "x", "--context=y", ""), { kind: "statefulsets", flags: { namespace: "b", context: "y" }, prefix: "" });
  });
  test("after the StatefulSet of set and diff: claim templates, minus those already given", () => {
    assert.deepEqual(request("set", "web", "data=2Gi", "--yes", "lo"), { kind: "claimTemplates", flags: {}, statefulSet: "web", prefix: "lo", given: ["data"] });
    assert.deepEqual(request("diff", "-n", "x", "web", ""), { kind: "claimTemplates", flags: { namespace: "x" }, statefulSet: "web", prefix: "", given: [] });
  });
  test("show takes one StatefulSet", () => assert.deepEqual(values(request("show", "web", "")), []));
  test("--context, --cluster and --user complete names from the kubeconfig files typed so far", () => {
    assert.deepEqual(request("show", "--kubeconfig", "/k", "--context", "pr"), { kind: "kubeconfigNames", what: "context", flags: { kubeconfig: "/k" }, prefix: "pr" });
    assert.deepEqual(request("set", "--cluster=lo"), { kind: "kubeconfigNames", what: "cluster", flags: {}, prefix: "--cluster=lo" });
    assert.deepEqual(request("diff", "--user", ""), { kind: "kubeconfigNames", what: "user", flags: {}, prefix: "" });
    assert.deepEqual(
      namedAnswer(["prod", "dev", "preview"], "pr").candidates.map((c) => c.value),
      ["preview", "prod"],
    );
    assert.deepEqual(
      namedAnswer(["local", "remote"], "--cluster=lo").candidates.map((c) => c.value),
      ["--cluster=local"],
    );
  });
  test("-n completes namespaces", () => assert.deepEqual(request("show", "-n", "pr"), { kind: "namespaces", flags: {}, prefix: "pr" }));
});

describe("answers from the cluster", () => {
  const web = sts("web").withClaim("data", "1Gi", "fast").withClaim("logs", "2Gi").build();
  const db = sts("db").withClaim("pgdata", "10Gi").build();
  test("StatefulSet names by prefix, sorted, described by their claim templates", () => {
    const a = statefulSetAnswer([web, db, sts("empty").build()], "");
    assert.deepEqual(a.candidates, [
      { value: "db", description: "claim templates: pgdata" },
      { value: "empty", description: "no claim templates" },
      { value: "web", description: "claim templates: data, logs" },
    ]);
    assert.equal(a.directive, Directive.NoFileComp);
    assert.deepEqual(
      statefulSetAnswer([web, db], "w").candidates.map((c) => c.value),
      ["web"],
    );
  });
  test("claim templates as NAME= with no space after, described by their current size and class", () => {
    const a = claimTemplateAnswer(web, "", []);
    assert.deepEqual(a.candidates, [
      { value: "data=", description: "now 1Gi, fast" },
      { value: "logs=", description: "now 2Gi" },
    ]);
    assert.equal(a.directive, Directive.NoSpace | Directive.NoFileComp);
    assert.deepEqual(
      claimTemplateAnswer(web, "l", []).candidates.map((c) => c.value),
      ["logs="],
    );
    assert.deepEqual(
      claimTemplateAnswer(web, "", ["data"]).candidates.map((c) => c.value),
      ["logs="],
    );
  });
  test("nothing for an unknown StatefulSet or once the size is being typed", () => {
    assert.deepEqual(claimTemplateAnswer(undefined, "", []).candidates, []);
    assert.deepEqual(claimTemplateAnswer(web, "data=1", []).candidates, []);
  });
  test("namespaces by prefix", () =>
    assert.deepEqual(
      namespaceAnswer(["prod", "default", "preview"], "pr").candidates.map((c) => c.value),
      ["preview", "prod"],
    ));
});

describe("storage classes after CLAIM=SIZE,", () => {
  test("a size and a comma ask for the cluster's storage classes; the typed part before the class is kept", () => {
    for (const command of ["set", "diff"]) {
      assert.deepEqual(request(command, "db", "data=2Gi,"), { kind: "storageClasses", flags: {}, head: "data=2Gi,", prefix: "" });
      assert.deepEqual(request(command, "-n", "prod", "db", "logs=1Gi", "data=2Gi,fa"), { kind: "storageClasses", flags: { namespace: "prod" }, head: "data=2Gi,", prefix: "fa" });
    }
    assert.deepEqual(request("set", "db", "data=size=2Gi,vac=gold,"), { kind: "storageClasses", flags: {}, head: "data=size=2Gi,vac=gold,", prefix: "" });
  });
  test("not once a class is given, nor before a size", () => {
    for (const word of ["data=2Gi,fast,", "data=fast,", "data=", "data=2Gi"]) assert.equal(request("set", "db", word).kind, "claimTemplates", word);
  });
  test("each class by name, after the directive typed so far, described by what it does with volumes", () => {
    const csi = storageClass("csi-hostpath-sc", { expandable: true, default: true });
    csi.provisioner = "hostpath.csi.k8s.io";
    const a = storageClassAnswer([storageClass("standard"), csi], "data=2Gi,", "");
    assert.deepEqual(a.candidates, [
      { value: "data=2Gi,csi-hostpath-sc", description: "hostpath.csi.k8s.io, the default, volumes expand" },
      { value: "data=2Gi,standard", description: "example.com/test, volumes do not expand" },
    ]);
    assert.equal(a.directive, Directive.NoFileComp);
    assert.deepEqual(
      storageClassAnswer([storageClass("standard"), csi], "data=2Gi,", "st").candidates.map((c) => c.value),
      ["data=2Gi,standard"],
    );
  });
});

describe("cobra's __complete output", () => {
  const a = { candidates: [{ value: "data=", description: "now 1Gi,\tfast" }, { value: "logs=" }], directive: 6 };
  test("one candidate a line, value<TAB>description, then :directive", () => assert.equal(formatAnswer(a, true), "data=\tnow 1Gi, fast\nlogs=\n:6\n"));
  test("__completeNoDesc drops descriptions", () => assert.equal(formatAnswer(a, false), "data=\nlogs=\n:6\n"));
  test("no candidates is the directive alone", () => assert.equal(formatAnswer({ candidates: [], directive: 4 }, true), ":4\n"));
});

describe("completion scripts", () => {
  test("parseArgs: completion SHELL is text for each of the four shells; __complete is the hidden command", () => {
    for (const shell of ["bash", "zsh", "fish", "powershell"] as const) assert.deepEqual(parseArgs(["completion", shell]), { kind: "text", text: completionScript(shell) });
    assert.deepEqual(parseArgs(["__complete", "set", ""]), { kind: "complete", request: completionRequest(["set", ""]), descriptions: true });
    assert.deepEqual(parseArgs(["__completeNoDesc", ""]), { kind: "complete", request: completionRequest([""]), descriptions: false });
    assert.throws(() => parseArgs(["completion", "tcsh"]), /Unsupported shell type "tcsh": use one of bash, zsh, fish, powershell$/);
    assert.ok(!help().includes("__complete"));
  });
  test("each script registers kubectl-appstorage and calls the hidden command", () => {
    assert.match(completionScript("bash"), /complete -o default -F _kubectl_appstorage kubectl-appstorage/);
    assert.match(completionScript("bash"), /__completeNoDesc/);
    assert.match(completionScript("zsh"), /^#compdef kubectl-appstorage/);
    assert.match(completionScript("zsh"), /compdef _kubectl_appstorage kubectl-appstorage/);
  });
});
