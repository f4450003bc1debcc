module kubectl-appstorage/controlplane

go 1.23
