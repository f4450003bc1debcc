// How kubectl names a StatefulSet in what it prints: `statefulset.apps/NAME`, and where it is.
// One place, so that every message, progress line and -o name says it the same way.

export const statefulSetRef = (name: string): string => `statefulset.apps/${name}`;

/** `statefulset.apps/NAME in namespace NS`: a run over several namespaces names both. */
export const statefulSetIn = (name: string, namespace: string): string => `${statefulSetRef(name)} in namespace ${namespace}`;
