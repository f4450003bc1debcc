// client-node's KubeConfig, for users with an auth provider (gcp, azure, oidc: credentials.ts
// hands them over). Imported by name from a module of its own so that the bundle keeps only what
// KubeConfig needs (not the generated API clients and models, 14 MB), and imported lazily so
// that nobody else pays for initialising it.
export { KubeConfig } from "@kubernetes/client-node";
