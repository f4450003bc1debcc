// The hidden `__complete WORDS...`: answers shell completion in cobra's protocol (see
// src/cli/completion.ts), looking up StatefulSets, their claim templates and namespaces with
// read-only requests. It never fails: kubectl prints a completer's stderr on the user's
// terminal and drops every candidate when it exits non-zero, so any problem (no kubeconfig, an
// unreachable server, no permission) is an empty answer.
import { type Answer, claimTemplateAnswer, completionRequest, Directive, formatAnswer, namedAnswer, namespaceAnswer, statefulSetAnswer, templateKeysAnswer } from "../cli/completion";
import { loadKubeconfig } from "../kube/kubeconfig-loader";
import { getStatefulSet, listAll, listStatefulSets } from "../kube/read";
import type { KubeObject } from "../api/types";
import { connectWith, type CommandDeps } from "./deps";

/** The hidden `__complete WORDS...` (cobra's protocol; `__completeNoDesc` without descriptions). */
export interface CompleteOptions {
  words: string[];
  descriptions: boolean;
}

/** A TAB press should not hang for kubectl's 30 s default on an unreachable server. */
const completionRequestTimeoutMs = 5000;

async function lookUp(opts: CompleteOptions, deps: CommandDeps): Promise<Answer> {
  const request = completionRequest(opts.words);
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
