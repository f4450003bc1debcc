//go:build tools

// agnhost, the e2e specs' test program (test/images/agnhost of the same k8s.io/kubernetes module,
// no module of its own), built by build.sh for images.sh: this keeps its modules in go.sum.
package e2e

import _ "k8s.io/kubernetes/test/images/agnhost"
