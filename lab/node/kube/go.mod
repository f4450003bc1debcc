// Marks the module root (tools.go) only. The node's Kubernetes programs are pinned per minor in
// versions/MINOR.mod and .sum (pin.sh); ../kubelet.sh builds from one of them with -modfile.
module kubectl-appstorage/node

go 1.23
