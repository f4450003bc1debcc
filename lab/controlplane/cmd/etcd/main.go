// Command etcd is the etcd server at the version Kubernetes itself depends on,
// so the test control plane needs no etcd from the operating system.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
