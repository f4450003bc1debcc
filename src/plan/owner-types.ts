// Who else writes the StatefulSet (Argo CD, Flux, Helm, an operator), what was read of it, and how
// it is paused and resumed: data only, apart from the Plan/Journal core (./types.ts), which holds it
// as optional parts. The logic is in ./owner.ts.
import type { KubeObject } from "../api/types";

/** A custom resource this tool reads (and, with --pause-owner, patches): where it is served. */
export interface OwnerResourceRef {
  group: string;
  version: string;
  /** The plural, as in the API path and kubectl's resource.group. */
  resource: string;
  kind: string;
  /** undefined: not known from the StatefulSet (an Argo CD Application in the installation's namespace); looked up by name. */
  namespace?: string;
  name: string;
}

/** One owner object looked for, and what was found. */
export interface ObservedOwner {
  ref: OwnerResourceRef;
  /** undefined: not found (or not readable: see error). */
  object?: KubeObject;
  /** Why it could not be read (forbidden, not served). */
  error?: string;
}

/** How --pause-owner pauses the owner and puts it back: JSON merge patches of its object. */
export interface OwnerPause {
  ref: OwnerResourceRef & { namespace: string };
  /** The patch that stops it writing the StatefulSet. */
  pause: Record<string, unknown>;
  /** The patch that puts back exactly the state that was read before pausing. */
  resume: Record<string, unknown>;
  /** The paused state in words: `spec.syncPolicy.automated removed`. */
  what: string;
  /**
   * An operator's switch: the run leaves it paused after a change that went through, since the
   * operator would make the StatefulSet match its resource again; the user changes the storage in the
   * resource, then resumes it (a run that stops resumes it at once, as for the others).
   */
  keep?: true;
}

export type OwnerManager = "Argo CD" | "Flux" | "Helm" | "operator";

/** Who manages the StatefulSet, how the plan knows, and how to pause and resume it. */
export interface Owner {
  manager: OwnerManager;
  /** What says so: a label, an annotation, an ownerReference. */
  evidence: string;
  /** `Application argocd/shop`, `Kustomization flux-system/apps`, `release db`, `PostgresCluster pg`. */
  object: string;
  /** It would write the StatefulSet while it is changed (automated sync, not suspended), when known. */
  active?: boolean;
  /** How --pause-owner pauses it; absent when it cannot (nothing to pause, or the object could not be read). */
  pause?: OwnerPause;
  /** The exact commands that pause and resume it by hand (each line one way to do it). */
  pauseCommands?: string[];
  resumeCommands?: string[];
  /** What else to know, in words: why it cannot be paused, or is already. */
  notes: string[];
}

/** What the journal keeps of --pause-owner: the patches, and whether the owner is paused now. */
export interface JournalOwner {
  pause: OwnerPause;
  paused: boolean;
}
