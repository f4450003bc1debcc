// Marks the root of the lab's Go module (the servers in controlplane/cmd, Kubernetes' e2e specs in
// specs, the programs controlplane/tools.go names). Its modules are pinned per Kubernetes minor in
// controlplane/versions/MINOR.mod and .sum (controlplane/pin.sh); every build uses one with -modfile.
// The folders with a go.mod of their own (node/csi, node/storage, tools/helm, tools/krew,
// tools/actionlint) are modules apart.
module kubectl-appstorage/lab

go 1.23
