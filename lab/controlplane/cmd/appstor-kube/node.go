//go:build node

package main

import (
	"context"

	"k8s.io/component-base/cli"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// The node's servers, in pins that carry what they need (the newest; see build.sh).
func init() {
	servers["kubelet"] = func([]string) int { return cli.Run(kubelet.NewKubeletCommand(context.Background())) }
	servers["kube-scheduler"] = func([]string) int { return cli.Run(scheduler.NewSchedulerCommand()) }
}
