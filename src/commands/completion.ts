// The hidden `__complete WORDS...`: answers shell completion in cobra's protocol (src/cli/completion.ts
// decides from the words what the word under the cursor needs; src/output/completion.ts renders), looking up StatefulSets, their claim templates, storage classes and namespaces with
// read-only requests. It never fails: kubectl prints a completer's stderr on the user's
// terminal and drops every candidate when it exits non-zero, so any problem (no kubeconfig, an
// unreachable server, no permission) is an empty answer.
import type { KubeFlags } from "../kube/kube-flags";
import { type Answer, claimTemplateAnswer, Directive, formatAnswer, namedAnswer, namespaceAnswer, statefulSetAnswer, storageClassAnswer, templateKeysAnswer } from "../output/completion";
import { loadKubeconfig } from "../kube/kubeconfig-loader";
import { getStatefulSet, listAll, listStatefulSets, listStorageClasses } from "../kube/read";
import type { KubeObject } from "../api/types";
import { connectWith, type CommandDeps } from "./deps";

/** The hidden `__complete WORDS...` (cobra's protocol; `__completeNoDesc` without descriptions). */
export interface CompleteOptions {
  /** What the word under the cursor needs, from the words typed (src/cli/completion.ts). */
  request: CompletionRequest;
  descriptions: boolean;
}

/** What the word under the cursor needs: an answer now, or a lookup in the cluster first. */
export type CompletionRequest =
  | { kind: "answer"; answer: Answer }
  | { kind: "statefulsets"; flags: KubeFlags; prefix: string }
  | { kind: "claimTemplates"; flags: KubeFlags; statefulSet: string; prefix: string; given: string[] }
  /** CLAIM=SIZE, and no class yet: the cluster's storage classes, after what is typed up to the last comma (head). */
  | { kind: "storageClasses"; flags: KubeFlags; head: string; prefix: string }
  /** --template-label, --template-annotation: CLAIM: of the StatefulSet's templates, then that template's keys. */
  | { kind: "templateKeys"; flags: KubeFlags; statefulSet: string; which: "label" | "annotation"; prefix: string; shown: string }
  | { kind: "namespaces"; flags: KubeFlags; prefix: string }
  /** Names from the kubeconfig files (no request): --context, --cluster, --user. */
  | { kind: "kubeconfigNames"; what: "context" | "cluster" | "user"; flags: KubeFlags; prefix: string };

/** A TAB press should not hang for kubectl's 30 s default on an unreachable server. */
const completionRequestTimeoutMs = 5000;

async function lookUp(opts: CompleteOptions, deps: CommandDeps): Promise<Answer> {
  const request = opts.request;
  if (request.kind === "answer") return request.answer;
  if (request.kind === "kubeconfigNames") {
    const { config } = loadKubeconfig(request.flags.kubeconfig, deps.env, deps.platform);
    const names = request.what === "context" ? config.contexts : request.what === "cluster" ? config.clusters : config.users;
    return namedAnswer([...names.keys()], request.prefix);
  }
  // Never log requests into the completion answer: -v typed on the line is ignored here.
  const { verbosity: _ignored, ...flags } = request.flags;
  const client = await connectWith(deps, flags, { requestTimeoutMs: completionRequestTimeoutMs, quiet: true });
  switch (request.kind) {
    case "statefulsets":
      return statefulSetAnswer(await listStatefulSets(client, client.namespace), request.prefix);
    case "claimTemplates":
      return claimTemplateAnswer(await getStatefulSet(client, client.namespace, request.statefulSet), request.prefix, request.given);
    case "storageClasses":
      return storageClassAnswer(await listStorageClasses(client), request.head, request.prefix);
    case "templateKeys":
      return templateKeysAnswer(await getStatefulSet(client, client.namespace, request.statefulSet), request.which, request.prefix, request.shown);
    case "namespaces": {
      const namespaces = await listAll<KubeObject>(client, "/api/v1/namespaces");
      return namespaceAnswer(
        namespaces.map((n) => n.metadata.name ?? ""),
        request.prefix,
      );
    }
  }
}

export async function runComplete(opts: CompleteOptions, deps: CommandDeps): Promise<void> {
  let answer: Answer;
  try {
    answer = await lookUp(opts, deps);
  } catch (e) {
    if (deps.env["APPSTORAGE_DEBUG"]) deps.streams.errOut.write(`completion: ${e instanceof Error ? e.message : String(e)}\n`);
    answer = { candidates: [], directive: Directive.NoFileComp };
  }
  deps.streams.out.write(formatAnswer(answer, opts.descriptions));
}
