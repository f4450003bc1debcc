// Package e2e is a Ginkgo test binary made of Kubernetes' own e2e specs (k8s.io/kubernetes/test/e2e
// at the pinned release): the StatefulSet specs of test/e2e/apps and the external storage suite
// (test/e2e/storage/external, driven by testdriver.yaml). build.sh compiles it with go test -c.
//
// It does not import k8s.io/kubernetes/test/e2e itself: that package brings every cloud provider
// (gce, aws, azure, ...) and a suite setup that can purge namespaces (--clean-start). The setup here
// is the part of it this cluster needs: wait for the nodes, count them, learn the IP family.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	utilnet "k8s.io/utils/net"

	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	e2enode "k8s.io/kubernetes/test/e2e/framework/node"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	testfixtures "k8s.io/kubernetes/test/fixtures"

	// Freezes the feature and environment labels before the specs use them.
	_ "k8s.io/kubernetes/test/e2e/feature"

	// The specs.
	_ "k8s.io/kubernetes/test/e2e/apps"
	_ "k8s.io/kubernetes/test/e2e/storage/external"

	// The framework's hooks: dumps on failure, metrics, node helpers; and the log flags.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	_ "k8s.io/component-base/logs/testinit"
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/utils/ktesting/format"
)

func TestMain(m *testing.M) {
	showVersion := flag.Bool("version", false, "print the Kubernetes release these specs come from and exit")
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Get())
		os.Exit(0)
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "e2e.test: unexpected arguments %v (flags only)\n", flag.Args())
		os.Exit(2)
	}
	// Manifests (the StatefulSet specs' statefulset/*) come from the files compiled into the binary.
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	testfiles.AddFileSource(testfixtures.GetTestFixturesFS())
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

var _ = ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
	c, err := framework.LoadClientset()
	framework.ExpectNoError(err, "loading the client from --kubeconfig")
	framework.ExpectNoError(e2enode.WaitForAllNodesSchedulable(ctx, c, framework.NewTimeoutContext().NodeSchedulable))
	if framework.TestContext.CloudConfig.NumNodes == framework.DefaultNumNodes {
		nodes, err := e2enode.GetReadySchedulableNodes(ctx, c)
		framework.ExpectNoError(err)
		framework.TestContext.CloudConfig.NumNodes = len(nodes.Items)
	}
	if v, err := c.Discovery().ServerVersion(); err == nil {
		framework.Logf("e2e specs of %s against kube-apiserver %s", version.Get().GitVersion, v.GitVersion)
	}
	return nil
}, func(ctx context.Context, _ []byte) {
	// Every Ginkgo process needs this, not only the first: some specs pick addresses by it.
	c, err := framework.LoadClientset()
	framework.ExpectNoError(err, "loading the client from --kubeconfig")
	svc, err := c.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	framework.ExpectNoError(err, "reading the kubernetes service for the cluster's IP family")
	framework.TestContext.IPFamily = "ipv4"
	if utilnet.IsIPv6String(svc.Spec.ClusterIP) {
		framework.TestContext.IPFamily = "ipv6"
	}
})

func TestE2E(t *testing.T) {
	// InitLogs turns contextual logging off; the framework's loggers expect it on.
	logs.InitLogs()
	defer logs.FlushLogs()
	klog.EnableContextualLogging(true)
	gomega.RegisterFailHandler(framework.Fail)
	suiteConfig, reporterConfig := framework.CreateGinkgoConfig()
	ginkgo.RunSpecs(t, "kubectl-appstorage: Kubernetes e2e specs", suiteConfig, reporterConfig)
}
