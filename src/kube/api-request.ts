// The requests the client sends, as data: what a reader may ask (GETs, and the two reviews), what
// only src/kube/write.ts may send (writes), and the one shape the transport puts on the wire.
// Types and pure helpers only, so that the client's pieces depend on data, not on each other.

export type Query = Record<string, string | number | boolean | undefined>;

/** A read: the GET of one object or of a page of a list (watches are client.watch). */
export interface ReadRequest {
  method: "GET";
  path: string;
  query?: Query;
  /** The Accept header; application/json unless asked otherwise (metadata-only lists). */
  accept?: string;
}

/**
 * The named exception to "readers only GET": SelfSubjectAccessReview and SelfSubjectReview are
 * POSTs that create nothing (the server answers from the request and stores no object), and
 * kubectl auth can-i and kubectl auth whoami send them as reads. So src/kube/read.ts may send
 * them, and they are retried like reads.
 */
export const reviewPaths = ["/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "/apis/authentication.k8s.io/v1/selfsubjectreviews"] as const;

export interface ReviewRequest {
  method: "POST";
  /** A POST that changes nothing: safe to retry like a read. */
  idempotent: true;
  path: (typeof reviewPaths)[number];
  body: unknown;
}

/** What any module may ask of the client. */
export type RequestSpec = ReadRequest | ReviewRequest;

/** A request that changes the cluster: sent only by src/kube/write.ts (src/kube/write-access.ts). */
export interface WriteRequest {
  method: "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Query;
  body?: unknown;
  contentType?: string;
}

/** Any request, as the transport sends it. */
export interface WireRequest {
  method: RequestSpec["method"] | WriteRequest["method"];
  path: string;
  query?: Query;
  body?: unknown;
  contentType?: string;
  accept?: string;
  idempotent?: boolean;
}

export interface WatchEvent<T = unknown> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: T;
}

export function queryString(query: Query | undefined): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : "";
}

/**
 * Refuses a write sent as a read. The types already forbid it; this holds for a caller that
 * casts its way past them, so that no module but src/kube/write.ts can change the cluster.
 */
export function assertReadOnly(spec: WireRequest): void {
  if (spec.method === "GET") return;
  if (spec.method === "POST" && spec.idempotent === true && (reviewPaths as readonly string[]).includes(spec.path)) return;
  throw new Error(`${spec.method} ${spec.path} is a write: writes go through src/kube/write.ts`);
}
