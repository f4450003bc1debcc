/** Thrown for a kubeconfig, context or flag problem found before any request; one line, says what to do. */
export class ConfigError extends Error {}
