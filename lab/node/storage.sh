#!/usr/bin/env bash
# The storage users already have, on the test node: minikube's hostpath provisioner (class
# standard) and rancher's local-path-provisioner (class local-path, which kind and k3s ship), built
# from the Go module proxy at the releases pinned in lab/node/storage/go.mod and started in the
# cluster the way their users get them: minikube's addon manifest and local-path-provisioner's
# deploy/local-path-storage.yaml, with the node's workload image and the binary mounted from the cache.
#
#   storage.sh build
#       builds storage-provisioner (k8s.io/minikube/cmd/storage-provisioner) and local-path-provisioner
#       once into ${APPSTORAGE_CACHE:-~/.cache/kubectl-appstorage}/node/storage-KEY/bin and prints
#       that folder (last line)
#   storage.sh up KUBECONFIG API_PORT
#       applies both manifests and waits until both provisioners have started:
#       - kube-system: ServiceAccount, bindings and the Endpoints lock of minikube's addon, and the pod
#         storage-provisioner; class standard (provisioner k8s.io/minikube-hostpath, Immediate, not
#         expandable). A volume is the host folder /tmp/hostpath-provisioner/NAMESPACE/CLAIM, a hostPath
#         PV without node affinity, as in minikube.
#       - local-path-storage: ServiceAccount, roles, ConfigMap local-path-config and the Deployment
#         local-path-provisioner; class local-path (provisioner rancher.io/local-path,
#         WaitForFirstConsumer, not expandable). A volume is a folder under /var/local-path-provisioner
#         (kind's path) made by a helper pod, a hostPath PV with node affinity to the node.
#       KUBECONFIG: a cluster admin. Applying again is harmless; a provisioner pod that runs stays.
#
# Both pods run on the host network: the API server listens on 127.0.0.1 only, and nothing (no
# kube-proxy) serves the kubernetes Service's cluster IP, so KUBERNETES_SERVICE_HOST/PORT point
# client-go's in-cluster config at 127.0.0.1:API_PORT. Neither provisioner opens a port.
# Nothing to stop: the pods go with the node (runtime.sh down); the data folders above are in
# host.sh's list of host paths, so scripts/cluster down removes what the node added there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}/node"
pins="$here/storage"
minikube_mod=k8s.io/minikube
localpath_mod=github.com/rancher/local-path-provisioner
workload_image=appstorage.local/workload:1
# minikube's pvDir (cmd/storage-provisioner/main.go) and kind's nodePathMap.
minikube_dir=/tmp/hostpath-provisioner
localpath_dir=/var/local-path-provisioner

die() { echo "storage: $*" >&2; exit 1; }
log() { echo "storage: $*" >&2; }

# pinned MOD: the version lab/node/storage/go.mod pins.
pinned() { (cd "$pins" && go list -m -f '{{.Version}}' "$1"); }

# build_module MOD PKG OUT LDFLAGS: builds PKG inside a writable copy of MOD at its pinned version,
# with the module's own go.mod and go.sum (minikube's has replace directives, which `go install
# MOD@VERSION` refuses). The download is checked against the hash in lab/node/storage/go.sum.
build_module() {
  local mod=$1 pkg=$2 out=$3 ldflags=$4 dir work
  dir="$(cd "$pins" && go mod download -json "$mod" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')" || true
  [[ -n "$dir" && -d "$dir" ]] || die "the Go module proxy did not give $mod (see: cd lab/node/storage && go mod download -json $mod)"
  work="$(mktemp -d)"
  cp -r "$dir/." "$work/" && chmod -R u+w "$work"
  # -mod=mod: a module zip keeps only vendor/modules.txt, not the vendored code.
  (cd "$work" && CGO_ENABLED=0 GOOS=linux go build -mod=mod -trimpath -ldflags "-s -w $ldflags" -o "$out" "./$pkg") >&2 ||
    { rm -rf "$work"; die "building $mod failed (see above)"; }
  rm -rf "$work"
}

cmd_build() {
  local key bin tmp start mv lv
  mv="$(pinned "$minikube_mod")"; lv="$(pinned "$localpath_mod")"
  # go.sum names every pinned version and hash (go.mod's comments may change without a rebuild).
  key="$(cat "$pins/go.sum" <(go env GOVERSION) | sha256sum | cut -c1-12)"
  bin="$cache/storage-$key/bin"
  mkdir -p "$cache"
  exec 9>"$cache/storage.lock"
  flock 9
  if [[ ! -x "$bin/storage-provisioner" || ! -x "$bin/local-path-provisioner" ]]; then
    rm -rf "$bin".tmp.* # what a failed or killed build left (the lock is held)
    tmp="$bin.tmp.$$"; mkdir -p "$tmp"
    start=$SECONDS
    log "building minikube's storage-provisioner ($mv) and local-path-provisioner $lv (first time only, a few minutes)"
    # The ldflags of each project's own build (minikube's Makefile, local-path-provisioner's scripts/build),
    # plus -checklinkname=0 for minikube: its golang.org/x/net of 2021 reaches into syscall by
    # go:linkname, which Go 1.23 and newer refuse to link unless told ("invalid reference to
    # syscall.recvmsg"; its go.mod is of Go 1.17).
    build_module "$minikube_mod" cmd/storage-provisioner "$tmp/storage-provisioner" "-X k8s.io/minikube/pkg/storage.version=v5 -checklinkname=0"
    build_module "$localpath_mod" . "$tmp/local-path-provisioner" "-X main.VERSION=$lv"
    rm -rf "$bin" && mv "$tmp" "$bin"
    log "built both in $((SECONDS - start))s"
  fi
  exec 9>&-
  echo "$bin"
}

# manifests BIN API_PORT: minikube's addon (deploy/addons/storage-provisioner and storageclass) and
# local-path-provisioner's deploy/local-path-storage.yaml, with this node's image, binaries and
# API server address; everything else as there (names, roles, the ConfigMap's scripts).
manifests() {
  local bin=$1 port=$2
  cat <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: storage-provisioner, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: storage-provisioner}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:persistent-volume-provisioner"}
subjects: [{kind: ServiceAccount, name: storage-provisioner, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: "system:persistent-volume-provisioner", namespace: kube-system}
rules:
- {apiGroups: [""], resources: [endpoints], verbs: [watch, create]}
- {apiGroups: [""], resources: [endpoints], resourceNames: [k8s.io-minikube-hostpath], verbs: [get, update, create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: "system:persistent-volume-provisioner", namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: "system:persistent-volume-provisioner"}
subjects: [{kind: ServiceAccount, name: storage-provisioner, namespace: kube-system}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: k8s.io-minikube-hostpath, namespace: kube-system}
---
apiVersion: v1
kind: Pod
metadata:
  name: storage-provisioner
  namespace: kube-system
  labels: {integration-test: storage-provisioner}
spec:
  serviceAccountName: storage-provisioner
  hostNetwork: true
  containers:
  - name: storage-provisioner
    image: $workload_image
    imagePullPolicy: Never
    command: ["/opt/storage/storage-provisioner"]
    env:
    - {name: KUBERNETES_SERVICE_HOST, value: "127.0.0.1"}
    - {name: KUBERNETES_SERVICE_PORT, value: "$port"}
    volumeMounts:
    # minikube mounts the host's /tmp; only its folder in it here.
    - {name: tmp, mountPath: $minikube_dir}
    - {name: bin, mountPath: /opt/storage, readOnly: true}
  volumes:
  - {name: tmp, hostPath: {path: $minikube_dir, type: DirectoryOrCreate}}
  - {name: bin, hostPath: {path: "$bin", type: Directory}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: standard}
provisioner: k8s.io/minikube-hostpath
---
apiVersion: v1
kind: Namespace
metadata: {name: local-path-storage}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: local-path-provisioner-service-account, namespace: local-path-storage}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: local-path-provisioner-role, namespace: local-path-storage}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list, watch, create, patch, update, delete]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: local-path-provisioner-role}
rules:
- {apiGroups: [""], resources: [nodes, persistentvolumeclaims, configmaps, pods, pods/log], verbs: [get, list, watch]}
- {apiGroups: [""], resources: [persistentvolumes], verbs: [get, list, watch, create, patch, update, delete]}
- {apiGroups: [""], resources: [events], verbs: [create, patch]}
- {apiGroups: [storage.k8s.io], resources: [storageclasses], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: local-path-provisioner-bind, namespace: local-path-storage}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: local-path-provisioner-role}
subjects: [{kind: ServiceAccount, name: local-path-provisioner-service-account, namespace: local-path-storage}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: local-path-provisioner-bind}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: local-path-provisioner-role}
subjects: [{kind: ServiceAccount, name: local-path-provisioner-service-account, namespace: local-path-storage}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: local-path-provisioner, namespace: local-path-storage}
spec:
  replicas: 1
  selector: {matchLabels: {app: local-path-provisioner}}
  template:
    metadata: {labels: {app: local-path-provisioner}}
    spec:
      serviceAccountName: local-path-provisioner-service-account
      hostNetwork: true
      containers:
      - name: local-path-provisioner
        image: $workload_image
        imagePullPolicy: Never
        command: [/opt/storage/local-path-provisioner, --debug, start, --helper-image, $workload_image, --config, /etc/config/config.json]
        volumeMounts:
        - {name: config-volume, mountPath: /etc/config/}
        - {name: bin, mountPath: /opt/storage, readOnly: true}
        env:
        - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: CONFIG_MOUNT_PATH, value: /etc/config/}
        - {name: KUBERNETES_SERVICE_HOST, value: "127.0.0.1"}
        - {name: KUBERNETES_SERVICE_PORT, value: "$port"}
      volumes:
      - {name: config-volume, configMap: {name: local-path-config}}
      - {name: bin, hostPath: {path: "$bin", type: Directory}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local-path}
provisioner: rancher.io/local-path
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
---
apiVersion: v1
kind: ConfigMap
metadata: {name: local-path-config, namespace: local-path-storage}
data:
  config.json: |-
    {"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": ["$localpath_dir"]}]}
  setup: |-
    #!/bin/sh
    set -eu
    mkdir -m 0777 -p "\$VOL_DIR"
  teardown: |-
    #!/bin/sh
    set -eu
    rm -rf "\$VOL_DIR"
  helperPod.yaml: |-
    apiVersion: v1
    kind: Pod
    metadata:
      name: helper-pod
    spec:
      priorityClassName: system-node-critical
      tolerations:
        - key: node.kubernetes.io/disk-pressure
          operator: Exists
          effect: NoSchedule
      containers:
      - name: helper-pod
        image: $workload_image
        imagePullPolicy: IfNotPresent
YAML
}

# started KUBECONFIG NAMESPACE SELECTOR LINE: whether the pod's log has LINE (its "started" message).
started() {
  # Not grep -q: its early exit would fail the pipe (pipefail) while kubectl still writes.
  kubectl --kubeconfig "$1" logs -n "$2" -l "$3" --tail=-1 2>/dev/null | grep "$4" >/dev/null
}

cmd_up() {
  [[ $# -eq 2 ]] || die "usage: storage.sh up KUBECONFIG API_PORT"
  local kubeconfig=$1 port=$2 bin i
  [[ -f "$kubeconfig" ]] || die "kubeconfig $kubeconfig does not exist"
  bin="$(cmd_build | tail -n 1)"
  # A pod's volumes cannot change: minikube's pod of an older build goes first (the Deployment
  # of local-path-provisioner rolls by itself).
  local was
  was="$(kubectl --kubeconfig "$kubeconfig" get pod -n kube-system storage-provisioner -o jsonpath='{.spec.volumes[?(@.name=="bin")].hostPath.path}' 2>/dev/null || true)"
  if [[ -n "$was" && "$was" != "$bin" ]]; then
    kubectl --kubeconfig "$kubeconfig" delete pod -n kube-system storage-provisioner --wait=true >/dev/null
  fi
  manifests "$bin" "$port" | kubectl --kubeconfig "$kubeconfig" apply -f - >/dev/null
  # Started: minikube's once it leads (its Endpoints lock), local-path's once its controller runs.
  for ((i = 0; i < 900; i++)); do
    started "$kubeconfig" kube-system integration-test=storage-provisioner "Started provisioner controller" &&
      started "$kubeconfig" local-path-storage app=local-path-provisioner "Provisioner started" && break
    sleep 0.1
  done
  if ((i == 900)); then
    kubectl --kubeconfig "$kubeconfig" get pods -A -o wide >&2 || true
    kubectl --kubeconfig "$kubeconfig" logs -n kube-system storage-provisioner --tail=20 >&2 || true
    kubectl --kubeconfig "$kubeconfig" logs -n local-path-storage deploy/local-path-provisioner --tail=20 >&2 || true
    die "the provisioners of standard and local-path did not start in 90s"
  fi
  log "classes standard (minikube's storage-provisioner) and local-path (local-path-provisioner) ready"
}

case "${1:-}" in
  build) cmd_build ;;
  up) shift; cmd_up "$@" ;;
  *) echo "usage: lab/node/storage.sh build | up KUBECONFIG API_PORT" >&2; exit 2 ;;
esac
