// Who else writes the StatefulSet, from its labels, annotations and ownerReferences and from the
// Argo CD Application or Flux Kustomization/HelmRelease they name (as read): Argo CD, Flux, Helm or
// an operator. Each may re-create the old object or revert the new one while it is changed (Argo
// CD's self-heal, Flux's reconcile); the plan names the owner and the exact commands that pause and
// resume it, and with --pause-owner the run does so itself. Pure.
import type { KubeObject, StatefulSet } from "../api/types";
import type { ObservedOwner, Owner, OwnerPause, OwnerResourceRef } from "./owner-types";

const argoApplication = { group: "argoproj.io", version: "v1alpha1", resource: "applications", kind: "Application" } as const;
const fluxKustomization = { group: "kustomize.toolkit.fluxcd.io", version: "v1", resource: "kustomizations", kind: "Kustomization" } as const;
const fluxHelmRelease = { group: "helm.toolkit.fluxcd.io", version: "v2", resource: "helmreleases", kind: "HelmRelease" } as const;

/**
 * Operators whose custom resource has a documented switch that stops them writing its StatefulSet,
 * and where it is: a field of spec, or a label or annotation of the resource. Resumed by putting
 * back the value read before (removed when there was none).
 */
interface OperatorSwitch {
  product: string;
  group: string;
  /** kind: its plural (the API path). */
  kinds: Record<string, string>;
  at: "spec" | "labels" | "annotations";
  key: string;
  value: string | boolean;
}
const operatorSwitches: readonly OperatorSwitch[] = [
  // "When a Prometheus deployment is paused, no actions except for deletion will be performed on the underlying objects."
  {
    product: "Prometheus Operator",
    group: "monitoring.coreos.com",
    kinds: { Prometheus: "prometheuses", PrometheusAgent: "prometheusagents", Alertmanager: "alertmanagers", ThanosRuler: "thanosrulers" },
    at: "spec",
    key: "paused",
    value: true,
  },
  { product: "OpenTelemetry Operator", group: "opentelemetry.io", kinds: { OpenTelemetryCollector: "opentelemetrycollectors" }, at: "spec", key: "managementState", value: "unmanaged" },
  { product: "RabbitMQ Cluster Operator", group: "rabbitmq.com", kinds: { RabbitmqCluster: "rabbitmqclusters" }, at: "labels", key: "rabbitmq.com/pauseReconciliation", value: "true" },
  // managed=false (every ECK version) rather than the newer pause-orchestration, which older operators ignore.
  { product: "ECK", group: "elasticsearch.k8s.elastic.co", kinds: { Elasticsearch: "elasticsearches" }, at: "annotations", key: "eck.k8s.elastic.co/managed", value: "false" },
  { product: "ECK", group: "logstash.k8s.elastic.co", kinds: { Logstash: "logstashes" }, at: "annotations", key: "eck.k8s.elastic.co/managed", value: "false" },
];

/** The StatefulSet's controller, when it is a custom resource of an operator this tool can pause. */
function operatorOf(sts: StatefulSet): { ref: OwnerResourceRef & { namespace: string }; sw: OperatorSwitch } | undefined {
  const controller = sts.metadata.ownerReferences?.find((r) => r.controller);
  if (!controller) return undefined;
  const slash = controller.apiVersion.indexOf("/");
  const group = slash > 0 ? controller.apiVersion.slice(0, slash) : "";
  const sw = operatorSwitches.find((o) => o.group === group && controller.kind in o.kinds);
  if (!sw) return undefined;
  const ref = { group, version: controller.apiVersion.slice(slash + 1), resource: sw.kinds[controller.kind]!, kind: controller.kind, namespace: sts.metadata.namespace!, name: controller.name };
  return { ref, sw };
}

/** Where Argo CD is installed when the StatefulSet does not say (its tracking names the Application alone): the documented default. */
export const argoDefaultNamespace = "argocd";

/** The Application an Argo CD instance name means: `app`, or `namespace_app` for an Application outside Argo CD's own namespace. */
function argoApp(instance: string): { namespace?: string; name: string } {
  const at = instance.indexOf("_");
  return at > 0 ? { namespace: instance.slice(0, at), name: instance.slice(at + 1) } : { name: instance };
}

/** The Argo CD instance the StatefulSet is tracked by, and how it is known. */
function argoInstance(sts: StatefulSet): { instance: string; evidence: string; weak: boolean } | undefined {
  const annotations = sts.metadata.annotations ?? {};
  const labels = sts.metadata.labels ?? {};
  const tracking = annotations["argocd.argoproj.io/tracking-id"];
  // app-name:group/kind:namespace/name
  if (tracking && tracking.includes(":")) return { instance: tracking.slice(0, tracking.indexOf(":")), evidence: `annotation argocd.argoproj.io/tracking-id=${tracking}`, weak: false };
  const own = labels["argocd.argoproj.io/instance"];
  if (own) return { instance: own, evidence: `label argocd.argoproj.io/instance=${own}`, weak: false };
  // Argo CD's label tracking uses app.kubernetes.io/instance, which Helm charts set too: only an Application of that name says it is Argo CD's.
  const shared = labels["app.kubernetes.io/instance"];
  if (shared) return { instance: shared, evidence: `label app.kubernetes.io/instance=${shared}`, weak: true };
  return undefined;
}

function fluxOwner(sts: StatefulSet): (OwnerResourceRef & { evidence: string }) | undefined {
  const labels = sts.metadata.labels ?? {};
  for (const [prefix, ref] of [
    ["helm.toolkit.fluxcd.io", fluxHelmRelease],
    ["kustomize.toolkit.fluxcd.io", fluxKustomization],
  ] as const) {
    const name = labels[`${prefix}/name`];
    const namespace = labels[`${prefix}/namespace`];
    if (name && namespace) return { ...ref, name, namespace, evidence: `labels ${prefix}/name=${name}, ${prefix}/namespace=${namespace}` };
  }
  return undefined;
}

/** The Argo CD or Flux objects the StatefulSet names: what is read (src/commands/observe-owner.ts) before planning. */
export function ownerLookups(sts: StatefulSet): OwnerResourceRef[] {
  const flux = fluxOwner(sts);
  if (flux) {
    const { evidence: _evidence, ...ref } = flux;
    return [ref];
  }
  const lookups: OwnerResourceRef[] = [];
  const argo = argoInstance(sts);
  if (argo) {
    const app = argoApp(argo.instance);
    lookups.push({ ...argoApplication, name: app.name, ...(app.namespace ? { namespace: app.namespace } : {}) });
  }
  // Also beside an app.kubernetes.io/instance label, which operators set too (Prometheus Operator does).
  const operator = operatorOf(sts);
  if (operator) lookups.push(operator.ref);
  return lookups;
}

/** A word for the shell, single-quoted when it needs it. */
const shellWord = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`);

/** The kubectl command that applies a JSON merge patch to the owner's object. */
export function patchCommand(ref: OwnerResourceRef & { namespace: string }, patch: unknown): string {
  return `kubectl patch ${ref.resource}.${ref.group} ${ref.name} -n ${ref.namespace} --type merge -p ${shellWord(JSON.stringify(patch))}`;
}

const specOf = (o: KubeObject | undefined) => (o?.["spec"] ?? {}) as Record<string, unknown>;
const managedByArgo = (o: KubeObject) =>
  "argocd.argoproj.io/tracking-id" in (o.metadata.annotations ?? {}) || "argocd.argoproj.io/instance" in (o.metadata.labels ?? {}) || "app.kubernetes.io/instance" in (o.metadata.labels ?? {});

/** Argo CD: automated sync (and self-heal) is spec.syncPolicy.automated; removing it pauses it, putting it back as read resumes it. */
function argoOwner(sts: StatefulSet, argo: { instance: string; evidence: string }, seen: ObservedOwner | undefined): Owner {
  const app = argoApp(argo.instance);
  const namespace = seen?.object?.metadata.namespace ?? app.namespace ?? argoDefaultNamespace;
  const ref = { ...argoApplication, name: app.name, namespace };
  const notes: string[] = [];
  const options = sts.metadata.annotations?.["argocd.argoproj.io/sync-options"] ?? "";
  if (/(^|,)\s*Replace=true/.test(options))
    notes.push(
      "the StatefulSet's sync option Replace=true has Argo CD delete and re-create it with background propagation, which deletes its pods too (argo-cd#8501): keep the Application paused until this change is done",
    );
  const off = { spec: { syncPolicy: { automated: null } } };
  const owner: Owner = { manager: "Argo CD", evidence: argo.evidence, object: `Application ${namespace}/${app.name}`, notes };
  if (!seen?.object) {
    notes.push(
      `Application ${namespace}/${app.name} could not be read (${seen?.error ?? "not found"}), so whether it syncs automatically is not known; ${app.namespace ? "" : `it was looked for in namespace ${argoDefaultNamespace}, Argo CD's default; `}pause it by hand`,
    );
    // What it had is not known here: saved first, put back after.
    const get = `kubectl get ${ref.resource}.${ref.group} ${ref.name} -n ${namespace}`;
    return {
      ...owner,
      pauseCommands: [`${get} -o jsonpath='{.spec.syncPolicy.automated}' > automated.json && ${patchCommand(ref, off)}`],
      resumeCommands: [`kubectl patch ${ref.resource}.${ref.group} ${ref.name} -n ${namespace} --type merge -p "{\\"spec\\":{\\"syncPolicy\\":{\\"automated\\":$(cat automated.json)}}}"`],
    };
  }
  const automated = (specOf(seen.object)["syncPolicy"] as { automated?: Record<string, unknown> } | undefined)?.automated;
  if (managedByArgo(seen.object))
    notes.push(
      `Application ${namespace}/${app.name} is itself managed by Argo CD (app of apps): a parent with self-heal puts its automated sync back while it is paused; pause the parent the same way first`,
    );
  if (!automated || automated["enabled"] === false) {
    notes.push(`Application ${namespace}/${app.name} has no automated sync: it changes the StatefulSet only when someone syncs it; do not sync it until this change is done`);
    return { ...owner, active: false };
  }
  const pause: OwnerPause = { ref, pause: off, resume: { spec: { syncPolicy: { automated } } }, what: "spec.syncPolicy.automated removed (no automated sync, no self-heal)" };
  return { ...owner, active: true, pause, pauseCommands: [patchCommand(ref, pause.pause)], resumeCommands: [patchCommand(ref, pause.resume)] };
}

/** Flux: spec.suspend of the Kustomization or HelmRelease; `flux suspend` and `flux resume` set it. */
function fluxOwnerOf(flux: OwnerResourceRef & { namespace: string; evidence: string }, seen: ObservedOwner | undefined): Owner {
  const { evidence, ...ref } = flux;
  const word = ref.kind.toLowerCase();
  const notes: string[] = [];
  const owner: Owner = { manager: "Flux", evidence, object: `${ref.kind} ${ref.namespace}/${ref.name}`, notes };
  const byHand = {
    pauseCommands: [`flux suspend ${word} ${ref.name} -n ${ref.namespace}`, patchCommand(ref, { spec: { suspend: true } })],
    resumeCommands: [`flux resume ${word} ${ref.name} -n ${ref.namespace}`, patchCommand(ref, { spec: { suspend: null } })],
  };
  if (!seen?.object) {
    notes.push(`${owner.object} could not be read (${seen?.error ?? "not found"}), so whether it is suspended is not known; pause it by hand`);
    return { ...owner, ...byHand };
  }
  const suspend = specOf(seen.object)["suspend"];
  if (suspend === true) {
    notes.push(`${owner.object} is suspended (spec.suspend: true): it does not reconcile until someone resumes it; leave it so until this change is done`);
    return { ...owner, active: false };
  }
  const pause: OwnerPause = { ref, pause: { spec: { suspend: true } }, resume: { spec: { suspend: suspend === undefined ? null : suspend } }, what: "spec.suspend: true" };
  return { ...owner, active: true, pause, pauseCommands: byHand.pauseCommands, resumeCommands: [byHand.resumeCommands[0]!, patchCommand(ref, pause.resume)] };
}

/** A patch that sets the switch to value (null: removes it). */
function switchPatch(sw: OperatorSwitch, value: unknown): Record<string, unknown> {
  return sw.at === "spec" ? { spec: { [sw.key]: value } } : { metadata: { [sw.at]: { [sw.key]: value } } };
}

function switchValue(sw: OperatorSwitch, o: KubeObject): unknown {
  return sw.at === "spec" ? specOf(o)[sw.key] : o.metadata[sw.at]?.[sw.key];
}

/** An operator's custom resource with a known switch (operatorSwitches): paused by setting it, resumed by putting back what was read. */
function operatorOwner(
  controller: { kind: string; name: string; apiVersion: string },
  op: { ref: OwnerResourceRef & { namespace: string }; sw: OperatorSwitch },
  seen: ObservedOwner | undefined,
): Owner {
  const { ref, sw } = op;
  const where = sw.at === "spec" ? `spec.${sw.key}` : `${sw.at === "labels" ? "label" : "annotation"} ${sw.key}`;
  const notes = [`when it is resumed, ${sw.product} makes the StatefulSet match ${controller.kind} ${ref.name} again: change the storage in the ${controller.kind} too before resuming it`];
  const owner: Owner = {
    manager: "operator",
    evidence: `ownerReference ${controller.kind} ${controller.name} (${controller.apiVersion})`,
    object: `${controller.kind} ${ref.namespace}/${ref.name} (${sw.product})`,
    notes,
  };
  const pausePatch = switchPatch(sw, sw.value);
  if (!seen?.object) {
    notes.unshift(`${controller.kind} ${ref.namespace}/${ref.name} could not be read (${seen?.error ?? "not found"}), so whether it is paused is not known; pause it by hand`);
    return { ...owner, active: true, pauseCommands: [patchCommand(ref, pausePatch)], resumeCommands: [patchCommand(ref, switchPatch(sw, null))] };
  }
  const now = switchValue(sw, seen.object);
  if (String(now) === String(sw.value)) {
    notes.unshift(
      `${controller.kind} ${ref.namespace}/${ref.name} is paused (${where}: ${JSON.stringify(sw.value)}): ${sw.product} does not write its StatefulSet until someone resumes it; leave it so until this change is done`,
    );
    return { ...owner, active: false };
  }
  const pause: OwnerPause = { ref, pause: pausePatch, resume: switchPatch(sw, now === undefined ? null : now), what: `${where}: ${JSON.stringify(sw.value)}`, keep: true };
  return { ...owner, active: true, pause, pauseCommands: [patchCommand(ref, pause.pause)], resumeCommands: [patchCommand(ref, pause.resume)] };
}

const helmRelease = (sts: StatefulSet) =>
  sts.metadata.annotations?.["meta.helm.sh/release-name"] ?? (sts.metadata.labels?.["app.kubernetes.io/managed-by"] === "Helm" ? sts.metadata.labels?.["app.kubernetes.io/instance"] : undefined);

/** Who manages the StatefulSet, from what it says and what was read of the objects it names; undefined: nobody known. */
export function describeOwner(sts: StatefulSet, owners: readonly ObservedOwner[] | undefined): Owner | undefined {
  const seenOf = (ref: { group: string; name: string }) => owners?.find((o) => o.ref.group === ref.group && o.ref.name === ref.name);
  const flux = fluxOwner(sts);
  if (flux) return fluxOwnerOf({ ...flux, namespace: flux.namespace! }, seenOf(flux));
  const argo = argoInstance(sts);
  if (argo) {
    const app = argoApp(argo.instance);
    const seen = seenOf({ group: argoApplication.group, name: app.name });
    // app.kubernetes.io/instance alone is Argo CD's only when its Application exists; else it is a chart's label.
    if (!argo.weak || seen?.object) return argoOwner(sts, argo, seen);
  }
  const annotations = sts.metadata.annotations ?? {};
  if (sts.metadata.labels?.["app.kubernetes.io/managed-by"] === "Helm" || Object.keys(annotations).some((k) => k.startsWith("meta.helm.sh/"))) {
    const release = helmRelease(sts);
    return {
      manager: "Helm",
      evidence: annotations["meta.helm.sh/release-name"] ? `annotation meta.helm.sh/release-name=${release}` : "label app.kubernetes.io/managed-by=Helm",
      object: `release ${release ?? "(unnamed)"}`,
      active: false,
      notes: [
        `Helm changes it only when someone runs helm upgrade, rollback or uninstall of release ${release ?? "(unnamed)"} (there is nothing to pause): run none of them until this change is done`,
      ],
    };
  }
  const keys = [...Object.keys(sts.metadata.labels ?? {}), ...Object.keys(annotations)];
  const fluxKey = keys.find((k) => k.startsWith("kustomize.toolkit.fluxcd.io/") || k.startsWith("helm.toolkit.fluxcd.io/"));
  if (fluxKey)
    return { manager: "Flux", evidence: `label ${fluxKey}`, object: "a Kustomization or HelmRelease", notes: ["its labels do not name the object that applies it: suspend it by hand (flux suspend)"] };
  if (Object.keys(annotations).some((k) => k.startsWith("argocd.argoproj.io/")))
    return { manager: "Argo CD", evidence: "an argocd.argoproj.io/ annotation", object: "an Application", notes: ["no Application is named by its tracking: pause the one that deploys it by hand"] };
  const controller = sts.metadata.ownerReferences?.find((r) => r.controller);
  const operator = operatorOf(sts);
  if (controller && operator) return operatorOwner(controller, operator, seenOf(operator.ref));
  if (controller)
    return {
      manager: "operator",
      evidence: `ownerReference ${controller.kind} ${controller.name} (${controller.apiVersion})`,
      object: `${controller.kind} ${controller.name}`,
      active: true,
      notes: [`no pause this tool knows for ${controller.kind}: scale its operator down while this runs, or change the storage through the ${controller.kind}`],
    };
  return undefined;
}

/** The operators --pause-owner knows, in words. */
const knownOperators = () => `the operators ${[...new Set(operatorSwitches.map((o) => o.product))].join(", ")}`;

/** The words of an owner: `Argo CD (Application argocd/shop, annotation ...)`. */
export const ownerText = (o: Owner) => `${o.manager} (${o.object}; ${o.evidence})`;

/** What the plan says of the owner and, with --pause-owner, the pause the run makes (or why it cannot). */
export function ownerFindings(owner: Owner | undefined, ref: string, pauseOwner: boolean | undefined): { refusals: string[]; warnings: string[]; pause?: OwnerPause } {
  const byHand = (o: Owner) => (o.pauseCommands?.length ? `pause it with: ${o.pauseCommands.join("  or  ")}; resume it after with: ${o.resumeCommands!.join("  or  ")}` : "");
  if (!pauseOwner) {
    // An operator without a known switch: the controller refusal (rules.ts) says what to do.
    if (!owner || (owner.manager === "operator" && !owner.pauseCommands && owner.active !== false)) return { refusals: [], warnings: [] };
    // Said with the commands when it may act on its own (or could not be read); else its notes say why not (rules.ts names the manager).
    const how = owner.active !== false ? [byHand(owner), owner.pause ? "or pass --pause-owner" : ""].filter(Boolean).join(", ") : "";
    const head = owner.active !== false ? [`${ref} is managed by ${ownerText(owner)}${owner.active ? ", which may re-create or revert it while it is changed" : ""}${how ? `: ${how}` : ""}`] : [];
    return { refusals: [], warnings: [...head, ...owner.notes.map((n) => `${owner.manager}: ${n}`)] };
  }
  if (!owner)
    return { refusals: [`--pause-owner: nothing that this tool can pause manages ${ref} (no Argo CD or Flux label or annotation on it, no operator it knows); drop --pause-owner`], warnings: [] };
  if (owner.manager === "Helm" || (owner.manager === "operator" && !owner.pauseCommands && owner.active !== false))
    return { refusals: [`--pause-owner pauses Argo CD, Flux and ${knownOperators()}; ${ref} is managed by ${ownerText(owner)}: ${owner.notes.join("; ")}; drop --pause-owner`], warnings: [] };
  if (owner.pause?.keep)
    return {
      refusals: [],
      warnings: [
        `--pause-owner leaves ${owner.pause.ref.kind} ${owner.pause.ref.namespace}/${owner.pause.ref.name} paused (${owner.pause.what}) when the change is done, as its operator would make the StatefulSet match it again: change the storage in the ${owner.pause.ref.kind} to match, then resume it with: ${owner.resumeCommands!.join("  or  ")}`,
      ],
      pause: owner.pause,
    };
  if (owner.pause) return { refusals: [], warnings: owner.notes.map((n) => `${owner.manager}: ${n}`), pause: owner.pause };
  if (owner.active === false) return { refusals: [], warnings: [`--pause-owner: ${ownerText(owner)} needs no pause: ${owner.notes.join("; ")}`] };
  return {
    refusals: [`--pause-owner: ${ownerText(owner)} cannot be paused by this tool: ${owner.notes.join("; ")}${byHand(owner) ? `: ${byHand(owner)}` : ""}; then run without --pause-owner`],
    warnings: [],
  };
}
