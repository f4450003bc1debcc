#!/usr/bin/env bash
# Measures, on a running cluster with the project's CSI driver (scripts/cluster up --node, or
# --nodes 3), what a clone and a snapshot of a claim cost as a user sees them, for claims of several
# sizes filled to 80% with random data:
#   - a clone: a claim with dataSource the filled claim, from its creation to Bound, and a pod that
#     checks the data's sha256 on it;
#   - a snapshot: a VolumeSnapshot of the filled claim, from its creation to readyToUse, and a claim
#     restored from it, from its creation to Bound.
# Every claim of a size is used on the writer's node (a clone stays in its source's zone).
#
#   csi-clone-bench.sh [SIZE...]      default: 1Gi 10Gi
#
# KUBECONFIG: the cluster (default: the node suite's, ~/.cache/kubectl-appstorage/cluster-node, or
# the zones' when that one is not there). Works in a namespace of its own, deleted at the end.
# Needs the image appstorage.local/workload:1 (lab/node/images.sh, loaded by scripts/cluster) and
# the VolumeSnapshotClass appstorage-csi-snapshot (csi.sh, when the snapshotter is built).
set -euo pipefail
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}"
if [[ -z "${KUBECONFIG:-}" ]]; then
  KUBECONFIG="$cache/cluster-node/admin.kubeconfig"
  [[ -f "$KUBECONFIG" ]] || KUBECONFIG="$cache/cluster-zones/admin.kubeconfig"
fi
export KUBECONFIG
ns="clone-bench-$$"
sizes=("$@")
((${#sizes[@]})) || sizes=(1Gi 10Gi)
die() { echo "clone-bench: $*" >&2; exit 1; }
k() { kubectl -n "$ns" "$@"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.1f s", b - a}'; }
# wait_for WHAT JSONPATH VALUE [TIMEOUT]: until WHAT's JSONPATH is VALUE.
wait_for() {
  local what=$1 path=$2 value=$3 timeout=${4:-600} i
  for ((i = 0; i < timeout * 10; i++)); do
    [[ "$(k get "$what" -o jsonpath="$path" 2>/dev/null)" == "$value" ]] && return 0
    sleep 0.1
  done
  k describe "$what" >&2 || true
  die "$what: $path is not $value after ${timeout}s"
}
claim() { # claim NAME SIZE [DATASOURCE-YAML]
  k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $1}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: appstorage-csi
  resources: {requests: {storage: $2}}
${3:-}
YAML
}
pod() { # pod NAME CLAIM NODE COMMAND
  k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  ${3:+nodeSelector: {kubernetes.io/hostname: $3\}}
  containers:
  - name: c
    image: appstorage.local/workload:1
    imagePullPolicy: Never
    command: [sh, -c, "$4"]
    volumeMounts: [{name: v, mountPath: /data}]
  volumes: [{name: v, persistentVolumeClaim: {claimName: $2}}]
YAML
}
mib() { local n=${1%Gi}; echo $((n * 1024 * 8 / 10)); }

kubectl create namespace "$ns" >/dev/null
trap 'kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true' EXIT
for size in "${sizes[@]}"; do
  [[ "$size" =~ ^[0-9]+Gi$ ]] || die "sizes are whole Gi (1Gi, 10Gi), not $size"
  s="${size,,}"
  claim "src-$s" "$size"
  t=$(now)
  pod "write-$s" "src-$s" "" "dd if=/dev/urandom of=/data/fill bs=1M count=$(mib "$size") 2>/dev/null && sha256sum /data/fill > /data/sum && sync"
  wait_for "pod/write-$s" '{.status.phase}' Succeeded 1800
  node="$(k get "pod/write-$s" -o jsonpath='{.spec.nodeName}')"
  echo "$size: wrote $(mib "$size") MiB of random data in $(since "$t") (node $node)"

  t=$(now)
  claim "clone-$s" "$size" "  dataSource: {kind: PersistentVolumeClaim, name: src-$s}"
  pod "check-clone-$s" "clone-$s" "$node" "sha256sum -c /data/sum"
  wait_for "pvc/clone-$s" '{.status.phase}' Bound
  echo "$size: clone Bound $(since "$t") after its creation (pod scheduled, provisioned, bound)"
  wait_for "pod/check-clone-$s" '{.status.phase}' Succeeded 1800
  echo "$size: the clone's data checked (sha256 of $(mib "$size") MiB) $(since "$t") after its creation"

  t=$(now)
  k apply -f - >/dev/null <<YAML
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: snap-$s}
spec:
  volumeSnapshotClassName: appstorage-csi-snapshot
  source: {persistentVolumeClaimName: src-$s}
YAML
  wait_for "volumesnapshot/snap-$s" '{.status.readyToUse}' true
  echo "$size: snapshot readyToUse $(since "$t") after its creation"
  t=$(now)
  claim "restore-$s" "$size" "  dataSource: {kind: VolumeSnapshot, apiGroup: snapshot.storage.k8s.io, name: snap-$s}"
  pod "check-restore-$s" "restore-$s" "$node" "sha256sum -c /data/sum"
  wait_for "pvc/restore-$s" '{.status.phase}' Bound
  echo "$size: restore Bound $(since "$t") after its creation"
  wait_for "pod/check-restore-$s" '{.status.phase}' Succeeded 1800
  echo "$size: the restore's data checked $(since "$t") after its creation"
  k delete pod --all --wait=true >/dev/null
done
