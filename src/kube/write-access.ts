// The client's write capability: a symbol-keyed method of the KubeClient that only a module
// importing this symbol can call. The client (client.ts) provides it, and src/kube/write.ts,
// which names every write this tool makes, calls it; a dependency-cruiser rule in npm test lets
// no other module import this one, so everyone else holds a client that can only read.
export const sendWrite: unique symbol = Symbol("kubectl-appstorage write");
