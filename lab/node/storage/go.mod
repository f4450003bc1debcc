// The releases of the storage provisioners users already have, for the test node's classes
// standard and local-path (lab/node/storage.sh). Only the pins: storage.sh reads the versions
// with go list -m and builds each inside a copy of its module, with the module's own go.mod and
// go.sum, as its project does; go.sum here holds each module's hash, so a download that differs
// is refused. No tools.go: do not run go mod tidy here (it would drop both lines).
//
// k8s.io/minikube: v1.25.2, whose storage-provisioner runs: it pins client-go 0.23.4. The releases
// after it pin newer ones (v1.26.1 0.24.3, v1.30.1 0.26.3, v1.34.0 0.31.0), and client-go from 0.24 on
// refuses the endpoints lock that minikube's sig-storage-lib-external-provisioner v6.3.0 asks for
// ("Error creating lock: endpoints lock is removed"); minikube itself still ships the
// storage-provisioner:v5 image, built long before. The provisioner's code (cmd/storage-provisioner,
// pkg/storage) is the same in v1.25.2 and v1.34.0 but for two unused parameters' names.
module kubectl-appstorage/node-storage

go 1.26.0

require (
	github.com/rancher/local-path-provisioner v0.0.30
	k8s.io/minikube v1.25.2
)
