// One place that turns API server answers into named errors (403, 404, 409, 410; 5xx as an unknown outcome).

/** A non-2xx answer of the API server, with its Status object when it sent one. */
export class ApiError extends Error {
  /** From a Retry-After header (429, 503). */
  retryAfterSeconds?: number;

  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: { name?: string; kind?: string; causes?: { field?: string; message?: string; reason?: string }[] },
  ) {
    super(message);
  }
}

/** The server could not be reached, or did not answer in time. */
export class UnreachableError extends Error {}

/** The server took the request and sent no answer within --request-timeout (a hung server, a proxy that holds it). */
export class NoAnswerError extends UnreachableError {
  constructor(
    readonly server: string,
    readonly timeoutMs: number,
  ) {
    super(`the server ${server} did not answer within ${timeoutMs / 1000}s; check the server or raise --request-timeout`);
  }
}

export const isNotFound = (e: unknown): e is ApiError => e instanceof ApiError && e.code === 404;
export const isConflict = (e: unknown): e is ApiError => e instanceof ApiError && e.code === 409 && e.reason === "Conflict";
export const isAlreadyExists = (e: unknown): e is ApiError => e instanceof ApiError && e.code === 409 && e.reason === "AlreadyExists";
export const isForbidden = (e: unknown): e is ApiError => e instanceof ApiError && e.code === 403;
export const isGone = (e: unknown): e is ApiError => e instanceof ApiError && e.code === 410;

export function apiErrorFromBody(code: number, body: string): ApiError {
  try {
    const status = JSON.parse(body) as { kind?: string; reason?: string; message?: string; details?: ApiError["details"] };
    if (status.kind === "Status") return new ApiError(code, status.reason ?? "", status.message ?? `HTTP ${code}`, status.details);
  } catch {
    // not JSON: fall through with the raw text
  }
  return new ApiError(code, "", `the server answered HTTP ${code}: ${body.trim().split("\n")[0]?.slice(0, 200) ?? ""}`);
}

/**
 * A write whose outcome is unknown: the connection broke or the server failed after the request
 * may have been applied. Resolve by reading back, never by blindly repeating.
 */
export const isUnknownOutcome = (e: unknown): boolean => e instanceof UnreachableError || (e instanceof ApiError && e.code >= 500);
