// Marks the module root (cmd/etcd, tools.go) only. The Kubernetes releases are pinned per minor in
// versions/MINOR.mod and .sum (pin.sh); build.sh builds from one of them with -modfile.
module kubectl-appstorage/controlplane

go 1.23
