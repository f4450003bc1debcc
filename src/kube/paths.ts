// API paths of the collections this tool uses; a namespace of undefined is every namespace.
const collection =
  (group: string, resource: string) =>
  (ns: string | undefined, name = "") =>
    `${group}${ns === undefined ? "" : `/namespaces/${encodeURIComponent(ns)}`}/${resource}${name ? `/${encodeURIComponent(name)}` : ""}`;

export const statefulSetsPath = collection("/apis/apps/v1", "statefulsets");
export const secretsPath = collection("/api/v1", "secrets");
export const claimsPath = collection("/api/v1", "persistentvolumeclaims");
export const podsPath = collection("/api/v1", "pods");
export const resourceQuotasPath = collection("/api/v1", "resourcequotas");
export const eventsPath = collection("/api/v1", "events");
export const volumesPath = (name = "") => `/api/v1/persistentvolumes${name ? `/${encodeURIComponent(name)}` : ""}`;

/** The API path of a custom resource (group/version/plural), in a namespace or (undefined) every namespace. */
export function customObjectsPath(group: string, version: string, resource: string, ns: string | undefined, name = ""): string {
  return `/apis/${group}/${version}${ns === undefined ? "" : `/namespaces/${encodeURIComponent(ns)}`}/${resource}${name ? `/${encodeURIComponent(name)}` : ""}`;
}
