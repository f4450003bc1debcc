// Command appstor-kube is the test lab's Kubernetes servers in one binary, in the way of the
// hyperkube Kubernetes once shipped and of k3s: most of their packages are shared, and one link
// of one binary costs a fraction of five. It runs the server its name says (a link named
// kube-apiserver, etcd, ...), or the one its first argument names.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// servers maps a server's name to its entry point, which returns the process's exit code.
var servers = map[string]func(args []string) int{}

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args
	if _, ok := servers[name]; !ok && len(os.Args) > 1 {
		name, args = os.Args[1], os.Args[1:]
	}
	run, ok := servers[name]
	if !ok {
		names := make([]string, 0, len(servers))
		for n := range servers {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "appstor-kube: run it as one of %s (a link of that name, or the name as its first argument)\n", strings.Join(names, ", "))
		os.Exit(2)
	}
	os.Args = args
	os.Exit(run(args))
}
