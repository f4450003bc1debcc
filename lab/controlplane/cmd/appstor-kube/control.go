package main

import (
	_ "time/tzdata" // CronJob time zones, as kube-apiserver's and kube-controller-manager's own mains have

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // the JSON log format, as in each server's main
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go's metrics, as in each server's main
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric, as in each server's main
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func init() {
	// etcdmain.Main exits the process itself; it returns only if it does not.
	servers["etcd"] = func(args []string) int { etcdmain.Main(args); return 0 }
	servers["kube-apiserver"] = func([]string) int { return cli.Run(apiserver.NewAPIServerCommand()) }
	servers["kube-controller-manager"] = func([]string) int { return cli.Run(controllermanager.NewControllerManagerCommand()) }
}
