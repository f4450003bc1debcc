// Shell completion's answers in cobra's protocol, the pure part of rendering them: one candidate a
// line ("value<TAB>description"), then ":<directive>". Which word needs what is decided by
// src/cli/completion.ts (from the command-line table); the cluster's lookups by
// src/commands/completion.ts, which turns what it read into an answer here.
import type { StatefulSet, StorageClass } from "../api/types";

/** cobra's ShellCompDirective bits; 0 lets the shell fall back to file names. */
export const Directive = { Default: 0, Error: 1, NoSpace: 2, NoFileComp: 4 } as const;

export interface Candidate {
  value: string;
  description?: string;
}

export interface Answer {
  candidates: Candidate[];
  directive: number;
}

export function matching(values: readonly Candidate[], prefix: string): Candidate[] {
  return values.filter((c) => c.value.startsWith(prefix));
}

/** Storage class names after CLAIM=SIZE, (head), each described by what it does with volumes. */
export function storageClassAnswer(classes: readonly StorageClass[], head: string, prefix: string): Answer {
  const candidates = [...classes]
    .filter((c) => c.metadata.name)
    .sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : 1))
    .map((c) => {
      const isDefault = c.metadata.annotations?.["storageclass.kubernetes.io/is-default-class"] === "true";
      const what = [c.provisioner, isDefault ? "the default" : "", c.allowVolumeExpansion ? "volumes expand" : "volumes do not expand"].filter(Boolean).join(", ");
      return { value: `${head}${c.metadata.name}`, description: what };
    });
  return { candidates: matching(candidates, head + prefix), directive: Directive.NoFileComp };
}

/** StatefulSet names, each described by its claim templates. */
export function statefulSetAnswer(statefulSets: readonly StatefulSet[], prefix: string): Answer {
  const candidates = statefulSets.map((s) => {
    const templates = (s.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name).filter(Boolean);
    return { value: s.metadata.name ?? "", description: templates.length ? `claim templates: ${templates.join(", ")}` : "no claim templates" };
  });
  return { candidates: matching(candidates, prefix).sort((a, b) => a.value.localeCompare(b.value)), directive: Directive.NoFileComp };
}

/** "NAME=" for each claim template not named yet; no space after it, the size comes next. */
export function claimTemplateAnswer(statefulSet: StatefulSet | undefined, prefix: string, given: readonly string[]): Answer {
  if (!statefulSet || prefix.includes("=")) return { candidates: [], directive: Directive.NoFileComp };
  const candidates = (statefulSet.spec.volumeClaimTemplates ?? [])
    .filter((t) => t.metadata.name && !given.includes(t.metadata.name))
    .map((t) => {
      const size = t.spec.resources?.requests?.["storage"];
      const described = [size, t.spec.storageClassName].filter(Boolean).join(", ");
      return { value: `${t.metadata.name}=`, ...(described ? { description: `now ${described}` } : {}) };
    });
  return { candidates: matching(candidates, prefix), directive: Directive.NoSpace | Directive.NoFileComp };
}

/**
 * --template-label and --template-annotation: "CLAIM:" for each claim template, then, after it,
 * each key the template has, to change (KEY=) or remove (KEY-), described by its value now.
 */
export function templateKeysAnswer(statefulSet: StatefulSet | undefined, which: "label" | "annotation", prefix: string, shown: string): Answer {
  const templates = statefulSet?.spec.volumeClaimTemplates ?? [];
  const colon = prefix.indexOf(":");
  if (colon < 0) {
    const candidates = templates.filter((t) => t.metadata.name).map((t) => ({ value: `${shown}${t.metadata.name}:`, description: `a ${which} of claim template ${t.metadata.name}` }));
    return { candidates: matching(candidates, shown + prefix), directive: Directive.NoSpace | Directive.NoFileComp };
  }
  const claim = prefix.slice(0, colon);
  const template = templates.find((t) => t.metadata.name === claim);
  const now = (which === "label" ? template?.metadata.labels : template?.metadata.annotations) ?? {};
  const candidates = Object.keys(now)
    .sort()
    .flatMap((key) => [
      { value: `${shown}${claim}:${key}=`, description: `change (now ${now[key]})` },
      { value: `${shown}${claim}:${key}-`, description: "remove" },
    ]);
  return { candidates: matching(candidates, shown + prefix), directive: Directive.NoSpace | Directive.NoFileComp };
}

/** Context, cluster or user names, sorted; `shown` is kept when completing --context=NAME. */
export function namedAnswer(names: readonly string[], prefix: string): Answer {
  const eq = prefix.startsWith("--") ? prefix.indexOf("=") + 1 : 0;
  const head = prefix.slice(0, eq);
  return {
    candidates: matching(
      [...names].sort().map((n) => ({ value: head + n })),
      prefix,
    ),
    directive: Directive.NoFileComp,
  };
}

export function namespaceAnswer(names: readonly string[], prefix: string): Answer {
  return {
    candidates: matching(
      [...names].sort().map((value) => ({ value })),
      prefix,
    ),
    directive: Directive.NoFileComp,
  };
}

/** cobra's __complete output; __completeNoDesc drops the descriptions. */
export function formatAnswer(a: Answer, descriptions: boolean): string {
  const lines = a.candidates.map((c) => (descriptions && c.description ? `${c.value}\t${c.description.replace(/\s+/g, " ")}` : c.value));
  return [...lines, `:${a.directive}`, ""].join("\n");
}
