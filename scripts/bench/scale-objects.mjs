// The objects of the bench's scale row (5,000 StatefulSets, 15,000 pods, 15,000 claims), created
// directly and many at once, rather than by the StatefulSet controller: kube-controller-manager
// writes at 20 requests a second (its --kube-api-qps), so letting it create 15,000 pods, 15,000
// claims, 5,000 ControllerRevisions and their statuses would take about 40 minutes.
//
// The controller keeps running (the plugin's set needs it and the garbage collector), so every
// object is what the controller itself would have written, and then it has nothing to do: for each
// StatefulSet, its ControllerRevision (same name, hash and data), its pods (owned by it, labelled
// with that revision, with their identity and claim volumes), its claims (named and labelled as the
// controller names them) and its status (what the controller would compute: settled, 0 ready).
// When the controller reaches a StatefulSet before its objects are all there, it creates the
// missing ones itself under the same names, and ours get AlreadyExists: the outcome is the same.
//
// calibrate() checks this against the controller of the running control plane first: it lets
// the controller create one StatefulSet's revision, pod, claim and status, and compares them with
// what these functions build for it. After the creation, quiet() checks that the controller
// changed nothing (no new revision, no status written, no pod replaced).
import { readFileSync } from "node:fs";
import * as https from "node:https";
import yaml from "js-yaml";

/** An HTTPS client for the kubeconfig's current context (client certificate, as scripts/cluster writes it). */
export function apiClient(kubeconfigPath, maxInFlight = 48) {
  const kc = yaml.load(readFileSync(kubeconfigPath, "utf8"));
  const ctx = kc.contexts.find((c) => c.name === kc["current-context"]).context;
  const cluster = kc.clusters.find((c) => c.name === ctx.cluster).cluster;
  const user = kc.users.find((u) => u.name === ctx.user).user;
  const b64 = (s) => Buffer.from(s, "base64");
  const url = new URL(cluster.server);
  const agent = new https.Agent({
    keepAlive: true,
    maxSockets: maxInFlight,
    ca: b64(cluster["certificate-authority-data"]),
    cert: b64(user["client-certificate-data"]),
    key: b64(user["client-key-data"]),
  });
  let inFlight = 0;
  const queue = [];
  const acquire = () => (inFlight < maxInFlight ? (inFlight++, Promise.resolve()) : new Promise((r) => queue.push(r)));
  const release = () => {
    const next = queue.shift();
    if (next) next();
    else inFlight--;
  };
  /** Resolves with { status, body } (body parsed when JSON); never rejects on an HTTP status. */
  async function request(method, path, body) {
    await acquire();
    try {
      for (let attempt = 0; ; attempt++) {
        const r = await once(method, path, body).catch((e) => ({ status: 0, error: e }));
        // 429 and 5xx (a busy server) and broken connections: try again, a little later.
        if ((r.status === 0 || r.status === 429 || r.status >= 500) && attempt < 8) {
          await new Promise((res) => setTimeout(res, 200 * 2 ** attempt));
          continue;
        }
        if (r.status === 0) throw r.error;
        return r;
      }
    } finally {
      release();
    }
  }
  function once(method, path, body) {
    const text = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          hostname: url.hostname,
          port: url.port,
          path,
          method,
          agent,
          headers: { Accept: "application/json", "User-Agent": "appstorage-bench", ...(text !== undefined ? { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) } : {}) },
        },
        (res) => {
          const chunks = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => {
            const raw = Buffer.concat(chunks).toString("utf8");
            let parsed = raw;
            try {
              parsed = JSON.parse(raw);
            } catch {
              // not JSON: kept as text
            }
            resolve({ status: res.statusCode, body: parsed });
          });
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(text);
    });
  }
  /** A write that must succeed, or find the same object already there (AlreadyExists). */
  async function create(path, body) {
    const r = await request("POST", path, body);
    if (r.status === 201 || r.status === 200) return r.body;
    if (r.status === 409 && r.body?.reason === "AlreadyExists") return undefined;
    throw new Error(`POST ${path}: ${r.status} ${typeof r.body === "string" ? r.body : r.body?.message}`);
  }
  async function get(path) {
    const r = await request("GET", path);
    if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${r.body?.message ?? r.body}`);
    return r.body;
  }
  /** Every item of a collection, 500 at a time. */
  async function list(path, query = "") {
    const items = [];
    let cont = "";
    do {
      const page = await get(`${path}?limit=500${query ? `&${query}` : ""}${cont ? `&continue=${encodeURIComponent(cont)}` : ""}`);
      items.push(...(page.items ?? []));
      cont = page.metadata?.continue ?? "";
    } while (cont);
    return items;
  }
  return { request, create, get, list, close: () => agent.destroy() };
}

// ---------------------------------------------------------------------------------------------
// What the StatefulSet controller writes (pkg/controller/statefulset, pkg/controller/history).

/**
 * JSON as Go's encoding/json writes a map: keys sorted, and <, >, &, U+2028 and U+2029 escaped.
 * The controller's revision data is its JSON of the template read back into a map and written
 * again, so this is that text for the template the API server returns.
 */
export function goJson(value) {
  if (value === null || typeof value !== "object") {
    return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  }
  if (Array.isArray(value)) return `[${value.map(goJson).join(",")}]`;
  const keys = Object.keys(value)
    .filter((k) => value[k] !== undefined)
    .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return `{${keys.map((k) => `${goJson(k)}:${goJson(value[k])}`).join(",")}}`;
}

/** The data of the StatefulSet's ControllerRevision: its pod template as a strategic merge patch. */
export function revisionData(sts) {
  return goJson({ spec: { template: { ...sts.spec.template, $patch: "replace" } } });
}

/** FNV-1 (32 bits) of the text, as Go's hash/fnv New32. */
function fnv32(text) {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(text, "utf8")) {
    h = Math.imul(h, 0x01000193) >>> 0;
    h = (h ^ byte) >>> 0;
  }
  return h >>> 0;
}

/**
 * The revision's hash as the controller names it (HashControllerRevision): FNV-1 of the data and
 * then of the collision count in decimal (0 for a new StatefulSet), its decimal digits encoded.
 */
export function revisionHash(data, collisionCount = 0) {
  const alphanums = "bcdfghjklmnpqrstvwxz2456789";
  return [...String(fnv32(`${data}${collisionCount}`))].map((c) => alphanums[c.charCodeAt(0) % alphanums.length]).join("");
}

const ownerRef = (sts) => ({ apiVersion: "apps/v1", kind: "StatefulSet", name: sts.metadata.name, uid: sts.metadata.uid, controller: true, blockOwnerDeletion: true });

/** The ControllerRevision the controller makes for a new StatefulSet, as the text to POST (its data byte for byte). */
export function controllerRevisionText(sts) {
  const data = revisionData(sts);
  const hash = revisionHash(data);
  const metadata = {
    name: `${sts.metadata.name}-${hash}`,
    namespace: sts.metadata.namespace,
    labels: { ...sts.spec.template.metadata.labels, "controller.kubernetes.io/hash": hash },
    ownerReferences: [ownerRef(sts)],
  };
  return { name: metadata.name, text: `{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":${JSON.stringify(metadata)},"data":${data},"revision":1}` };
}

/** Pod `ordinal` as the controller creates it (newVersionedStatefulSetPod). */
export function podFor(sts, ordinal, revisionName) {
  const name = `${sts.metadata.name}-${ordinal}`;
  const t = sts.spec.template;
  const claimVolumes = (sts.spec.volumeClaimTemplates ?? []).map((c) => ({ name: c.metadata.name, persistentVolumeClaim: { claimName: `${c.metadata.name}-${name}` } }));
  const claimNames = new Set(claimVolumes.map((v) => v.name));
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      generateName: `${sts.metadata.name}-`,
      namespace: sts.metadata.namespace,
      labels: {
        ...t.metadata.labels,
        "statefulset.kubernetes.io/pod-name": name,
        "apps.kubernetes.io/pod-index": String(ordinal),
        "controller-revision-hash": revisionName,
      },
      ...(t.metadata.annotations ? { annotations: t.metadata.annotations } : {}),
      ownerReferences: [ownerRef(sts)],
    },
    spec: { ...t.spec, volumes: [...claimVolumes, ...(t.spec.volumes ?? []).filter((v) => !claimNames.has(v.name))], hostname: name, subdomain: sts.spec.serviceName },
  };
}

/** The claims of pod `ordinal` (getPersistentVolumeClaims; retention Retain: no owner). */
export function claimsFor(sts, ordinal) {
  return (sts.spec.volumeClaimTemplates ?? []).map((c) => ({
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: `${c.metadata.name}-${sts.metadata.name}-${ordinal}`, namespace: sts.metadata.namespace, labels: { ...(c.metadata.labels ?? {}), ...sts.spec.selector.matchLabels } },
    spec: c.spec,
  }));
}

/** The status the controller writes once every pod exists at the one revision (none ready without a node). */
export function settledStatus(sts, revisionName) {
  const n = sts.spec.replicas;
  return {
    observedGeneration: sts.metadata.generation,
    replicas: n,
    currentReplicas: n,
    updatedReplicas: n,
    currentRevision: revisionName,
    updateRevision: revisionName,
    collisionCount: 0,
    availableReplicas: 0,
  };
}

const base = (ns, resource, group = "") => `${group ? `/apis/${group}` : "/api/v1"}/namespaces/${ns}/${resource}`;

/** Creates the StatefulSet and everything the controller would create for it; returns the created StatefulSet. */
export async function createStatefulSetWithObjects(api, manifest) {
  const ns = manifest.metadata.namespace;
  const sts = await api.create(base(ns, "statefulsets", "apps/v1"), manifest);
  if (!sts) throw new Error(`statefulset ${ns}/${manifest.metadata.name} already exists`);
  const rev = controllerRevisionText(sts);
  const ordinals = Array.from({ length: sts.spec.replicas }, (_, i) => i);
  await Promise.all([
    api.create(base(ns, "controllerrevisions", "apps/v1"), rev.text),
    ...ordinals.map((i) => api.create(base(ns, "pods"), podFor(sts, i, rev.name))),
    ...ordinals.flatMap((i) => claimsFor(sts, i).map((c) => api.create(base(ns, "persistentvolumeclaims"), c))),
  ]);
  const r = await api.request("PUT", `${base(ns, "statefulsets", "apps/v1")}/${sts.metadata.name}/status`, { ...sts, status: settledStatus(sts, rev.name) });
  // 409: the controller wrote the status first (it reached this StatefulSet before we did).
  if (r.status !== 200 && r.status !== 409) throw new Error(`PUT status of ${ns}/${sts.metadata.name}: ${r.status} ${r.body?.message ?? r.body}`);
  return sts;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pick = (o, keys) => Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
const withoutServiceAccountVolume = (volumes) => (volumes ?? []).filter((v) => !v.name.startsWith("kube-api-access-"));

/**
 * Lets the controller create one StatefulSet's objects (one replica) in `ns`, and compares them
 * with what the functions above build for the same StatefulSet; throws on any difference.
 */
export async function calibrate(api, manifest) {
  const ns = manifest.metadata.namespace;
  const sts0 = await api.create(base(ns, "statefulsets", "apps/v1"), { ...manifest, spec: { ...manifest.spec, replicas: 1 } });
  const name = sts0.metadata.name;
  const deadline = Date.now() + 120_000;
  let sts;
  let pod;
  let claim;
  for (;;) {
    sts = await api.get(`${base(ns, "statefulsets", "apps/v1")}/${name}`);
    pod = (await api.request("GET", `${base(ns, "pods")}/${name}-0`)).body;
    const c = claimsFor(sts, 0)[0];
    claim = (await api.request("GET", `${base(ns, "persistentvolumeclaims")}/${c.metadata.name}`)).body;
    if (sts.status?.observedGeneration === 1 && sts.status?.replicas === 1 && sts.status?.updateRevision && pod?.kind === "Pod" && claim?.kind === "PersistentVolumeClaim") break;
    if (Date.now() > deadline) throw new Error(`scale calibration: the StatefulSet controller did not create ${ns}/${name}'s pod, claim and status in 120 s`);
    await sleep(500);
  }
  const rev = controllerRevisionText(sts);
  const problems = [];
  const same = (what, a, b) => {
    if (goJson(a) !== goJson(b)) problems.push(`${what}: the controller's ${goJson(a)}, ours ${goJson(b)}`);
  };
  same("revision name", sts.status.updateRevision, rev.name);
  const controllerRev = await api.get(`${base(ns, "controllerrevisions", "apps/v1")}/${sts.status.updateRevision}`);
  same("revision data", controllerRev.data, JSON.parse(revisionData(sts)));
  same("revision labels", controllerRev.metadata.labels, JSON.parse(rev.text).metadata.labels);
  const ours = podFor(sts, 0, sts.status.updateRevision);
  const metaKeys = ["name", "generateName", "labels", "annotations", "ownerReferences", "finalizers"];
  same("pod metadata", pick(pod.metadata, metaKeys), pick(ours.metadata, metaKeys));
  same("pod volumes", withoutServiceAccountVolume(pod.spec.volumes), ours.spec.volumes);
  same("pod hostname and subdomain", pick(pod.spec, ["hostname", "subdomain"]), pick(ours.spec, ["hostname", "subdomain"]));
  const ourClaim = claimsFor(sts, 0)[0];
  same("claim labels and owners", pick(claim.metadata, ["labels", "ownerReferences"]), pick(ourClaim.metadata, ["labels", "ownerReferences"]));
  same("claim spec", pick(claim.spec, ["accessModes", "resources", "volumeMode", "storageClassName"]), pick(ourClaim.spec, ["accessModes", "resources", "volumeMode", "storageClassName"]));
  const status = settledStatus(sts, sts.status.updateRevision);
  same("status", pick(sts.status, Object.keys(status)), status);
  if (problems.length) throw new Error(`scale calibration: what the bench would create differs from what the StatefulSet controller creates:\n  ${problems.join("\n  ")}`);
  // Then the controller makes the rest of this one's replicas, as for any StatefulSet.
  const scaled = await api.request("PUT", `${base(ns, "statefulsets", "apps/v1")}/${name}/scale`, {
    apiVersion: "autoscaling/v1",
    kind: "Scale",
    metadata: { name, namespace: ns },
    spec: { replicas: manifest.spec.replicas },
  });
  if (scaled.status !== 200) throw new Error(`scale calibration: scaling ${ns}/${name} to ${manifest.spec.replicas}: ${scaled.status} ${scaled.body?.message ?? scaled.body}`);
  for (;;) {
    const s = await api.get(`${base(ns, "statefulsets", "apps/v1")}/${name}`);
    const st = s.status ?? {};
    const n = manifest.spec.replicas;
    if (st.observedGeneration === s.metadata.generation && st.replicas === n && st.currentReplicas === n && st.updatedReplicas === n) return;
    if (Date.now() > deadline) throw new Error(`scale calibration: the StatefulSet controller did not scale ${ns}/${name} to ${n} in 120 s`);
    await sleep(500);
  }
}

/** Waits until each namespace has its default service account (pods are refused before it exists). */
export async function waitServiceAccounts(api, namespaces, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (const ns of namespaces) {
    while ((await api.request("GET", `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status !== 200) {
      if (Date.now() > deadline) throw new Error(`scale: namespace ${ns} has no default service account after ${timeoutMs / 1000} s`);
      await sleep(200);
    }
  }
}

/**
 * Creates the StatefulSets (manifests) with their objects, many at once, and reports progress.
 * Returns the created StatefulSets.
 */
export async function createScale(api, manifests, log) {
  const created = [];
  const started = Date.now();
  let next = 0;
  // Each worker creates one StatefulSet's objects at a time; the client bounds the requests in flight.
  const worker = async () => {
    while (next < manifests.length) {
      const m = manifests[next++];
      created.push(await createStatefulSetWithObjects(api, m));
      if (created.length % 500 === 0) log(`scale: ${created.length}/${manifests.length} StatefulSets with their objects (${Math.round((Date.now() - started) / 1000)} s)`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return created;
}

/** Every StatefulSet, ControllerRevision, pod and claim in these namespaces, and the cluster's counts. */
export async function snapshotObjects(api, namespaces) {
  const wanted = new Set(namespaces);
  const [sets, revisions, pods, claims] = await Promise.all(
    ["/apis/apps/v1/statefulsets", "/apis/apps/v1/controllerrevisions", "/api/v1/pods", "/api/v1/persistentvolumeclaims"].map((p) => api.list(p)),
  );
  const mine = (items) => items.filter((o) => wanted.has(o.metadata.namespace));
  return { sets: mine(sets), revisions: mine(revisions), pods: mine(pods), claims: mine(claims), cluster: { statefulSets: sets.length, pods: pods.length, claims: claims.length } };
}

const kinds = ["sets", "revisions", "pods", "claims"];
const objectKey = (kind, o) => `${kind}/${o.metadata.namespace}/${o.metadata.name}`;
/** Each object's resourceVersion, by kind, namespace and name. */
const versionsOf = (snap) => new Map(kinds.flatMap((kind) => snap[kind].map((o) => [objectKey(kind, o), o.metadata.resourceVersion])));

/**
 * What differs between the objects and what the StatefulSet controller writes for their StatefulSets
 * (the functions above, which calibrate() checked against it): each revision's name, labels, owner
 * and data; each pod's identity, labels, owner and claim volumes; each claim's labels, owners and
 * spec; each StatefulSet's status. One line per difference.
 */
export function differencesFromController(snap) {
  const problems = [];
  const sets = new Map(snap.sets.map((o) => [`${o.metadata.namespace}/${o.metadata.name}`, o]));
  const owner = (o) => sets.get(`${o.metadata.namespace}/${(o.metadata.ownerReferences ?? []).find((r) => r.controller)?.name}`);
  const same = (what, a, b) => {
    if (goJson(a) !== goJson(b)) problems.push(`${what}: ${goJson(a)}, not ${goJson(b)}`);
  };
  for (const sts of snap.sets) {
    const rev = controllerRevisionText(sts).name;
    same(`statefulset ${sts.metadata.namespace}/${sts.metadata.name} status`, pick(sts.status ?? {}, Object.keys(settledStatus(sts, rev))), settledStatus(sts, rev));
  }
  for (const rev of snap.revisions) {
    const sts = owner(rev);
    if (!sts) {
      problems.push(`controllerrevision ${rev.metadata.namespace}/${rev.metadata.name} has no StatefulSet`);
      continue;
    }
    const ours = JSON.parse(controllerRevisionText(sts).text);
    same(
      `controllerrevision ${rev.metadata.namespace}/${rev.metadata.name}`,
      { ...pick(rev.metadata, ["name", "namespace", "labels", "ownerReferences"]), data: rev.data },
      { ...ours.metadata, data: ours.data },
    );
  }
  const metaKeys = ["name", "generateName", "labels", "annotations", "ownerReferences", "finalizers"];
  for (const pod of snap.pods) {
    const sts = owner(pod);
    if (!sts) {
      problems.push(`pod ${pod.metadata.namespace}/${pod.metadata.name} has no StatefulSet`);
      continue;
    }
    const ours = podFor(sts, Number(pod.metadata.labels?.["apps.kubernetes.io/pod-index"]), controllerRevisionText(sts).name);
    same(`pod ${pod.metadata.namespace}/${pod.metadata.name}`, pick(pod.metadata, metaKeys), pick(ours.metadata, metaKeys));
    same(`pod ${pod.metadata.namespace}/${pod.metadata.name} volumes`, withoutServiceAccountVolume(pod.spec.volumes), ours.spec.volumes);
  }
  const specKeys = ["accessModes", "resources", "volumeMode", "storageClassName"];
  for (const claim of snap.claims) {
    const m = /^(.+)-(\d+)$/.exec(claim.metadata.name);
    const sts = sets.get(`${claim.metadata.namespace}/${claim.metadata.labels?.app}`);
    const ours = sts && m ? claimsFor(sts, Number(m[2])).find((c) => c.metadata.name === claim.metadata.name) : undefined;
    if (!ours) {
      problems.push(`claim ${claim.metadata.namespace}/${claim.metadata.name} is no claim of a StatefulSet`);
      continue;
    }
    same(
      `claim ${claim.metadata.namespace}/${claim.metadata.name}`,
      { ...pick(claim.metadata, ["labels", "ownerReferences"]), ...pick(claim.spec, specKeys) },
      { ...pick(ours.metadata, ["labels", "ownerReferences"]), ...pick(ours.spec, specKeys) },
    );
  }
  return problems;
}

/**
 * What changed between two snapshots, beyond what a set of the StatefulSets `changed` (names
 * "namespace/name") must change: those are re-created (a new uid), their pods and revision are
 * adopted (their controller reference names the new uid) and nothing else of them changes; every
 * other object keeps its resourceVersion. One line per object that changed otherwise.
 */
export function changedBeyond(before, after, changed) {
  const problems = [];
  const mineOf = (kind, o) => {
    const ns = o.metadata.namespace;
    if (kind === "sets") return changed.has(`${ns}/${o.metadata.name}`);
    if (kind === "claims") return false; // claims are the data: a set changes none
    return changed.has(`${ns}/${(o.metadata.ownerReferences ?? []).find((r) => r.controller)?.name}`);
  };
  const strip = (o) => {
    const { resourceVersion, managedFields, ownerReferences, ...metadata } = o.metadata;
    return goJson({ ...o, metadata });
  };
  for (const kind of kinds) {
    const was = new Map(before[kind].map((o) => [objectKey(kind, o), o]));
    const is = new Map(after[kind].map((o) => [objectKey(kind, o), o]));
    for (const [k, o] of was) if (!is.has(k)) problems.push(`${k} is gone`);
    for (const [k, o] of is) {
      const b = was.get(k);
      if (!b) problems.push(`${k} is new`);
      else if (kind === "sets" && mineOf(kind, b)) {
        if (o.metadata.uid === b.metadata.uid) problems.push(`${k} was not re-created`);
      } else if (o.metadata.resourceVersion === b.metadata.resourceVersion) continue;
      else if (!mineOf(kind, b)) problems.push(`${k} changed (resourceVersion ${b.metadata.resourceVersion} -> ${o.metadata.resourceVersion})`);
      else if (o.metadata.uid !== b.metadata.uid || strip(o) !== strip(b)) problems.push(`${k} changed beyond its adoption`);
    }
  }
  return problems;
}

/**
 * Waits until the controller has nothing left to do (no StatefulSet, ControllerRevision, pod or
 * claim in these namespaces changed for `quietMs`), then checks that no pod was replaced, that
 * every StatefulSet is settled with one ControllerRevision, that every object is what the controller
 * itself would have written (differencesFromController), and counts what the controller wrote itself
 * when it reached a StatefulSet before the bench had written all of its objects. Returns the counts,
 * in the namespaces and in the whole cluster, and the snapshot.
 */
export async function quiet(api, namespaces, expect, quietMs = 10_000, timeoutMs = 600_000) {
  const key = (o) => `${o.metadata.namespace}/${o.metadata.name}`;
  const first = await snapshotObjects(api, namespaces);
  const deadline = Date.now() + timeoutMs;
  let a = first;
  let b;
  for (;;) {
    await sleep(quietMs);
    b = await snapshotObjects(api, namespaces);
    const before = versionsOf(a);
    const now = versionsOf(b);
    const written = [...now].filter(([k, v]) => before.get(k) !== v).length;
    if (written === 0 && now.size === before.size) break;
    if (Date.now() > deadline) throw new Error(`scale: the controllers were still writing after ${timeoutMs / 1000} s (${written} objects in ${quietMs / 1000} s)`);
    a = b;
  }
  const podUids = new Map(first.pods.map((o) => [key(o), o.metadata.uid]));
  const replaced = b.pods.filter((p) => podUids.get(key(p)) !== p.metadata.uid).length;
  const counts = { statefulSets: b.sets.length, revisions: b.revisions.length, pods: b.pods.length, claims: b.claims.length };
  const unsettled = b.sets.filter(
    (s) => s.status?.updateRevision !== s.status?.currentRevision || s.status?.replicas !== s.spec.replicas || s.status?.observedGeneration !== s.metadata.generation,
  ).length;
  if (counts.statefulSets !== expect.statefulSets || counts.revisions !== expect.statefulSets || counts.pods !== expect.pods || counts.claims !== expect.claims || replaced || unsettled) {
    throw new Error(
      `scale: the objects are not as created: ${JSON.stringify(counts)} (expected ${JSON.stringify({ ...expect, revisions: expect.statefulSets })}), ${replaced} pods replaced or gone, ${unsettled} unsettled`,
    );
  }
  const differences = differencesFromController(b);
  if (differences.length) throw new Error(`scale: ${differences.length} objects differ from what the StatefulSet controller writes, first:\n  ${differences.slice(0, 10).join("\n  ")}`);
  // managedFields name who wrote what: the controller as kube-controller-manager, the bench by its user agent.
  const byController = (items, subresource) =>
    items.filter((o) => (o.metadata.managedFields ?? []).some((f) => f.manager === "kube-controller-manager" && (f.subresource ?? "") === subresource)).length;
  const controllerWrote = {
    revisions: byController(b.revisions, ""),
    pods: byController(b.pods, ""),
    claims: byController(b.claims, ""),
    statuses: byController(b.sets, "status"),
  };
  return { ...counts, controllerWrote, cluster: b.cluster, snapshot: b };
}
