// Package e2e tests inplace on a real single-node cluster of this machine: kube-apiserver,
// kubelet and containerd started by hack/local-up.sh, with inplace-apiserver aggregated into it
// by hack/local-up.d/10-inplace-apiserver.sh, exercised through kube-apiserver with client-go,
// the generated clientset and the real kubectl (_output/bin/kubectl).
//
// The harness (TestMain) brings the cluster up, runs the tests in a child process and always
// brings the cluster down afterwards: after a failure, a panic or a -timeout in a test too,
// since those end only the child. It needs root; without it, or without a binary it needs, it
// fails (it never skips).
//
//	make test-e2e                                     # or:
//	INPLACE_REPO_ROOT=$PWD go test -count=1 -v ./test/e2e/...
//
// INPLACE_E2E_IN_CLUSTER=1 (make test-e2e-in-cluster) runs inplace in the cluster instead, from
// artifacts/deploy and inplace's own image, the way users install it.
//
// For quicker iteration, INPLACE_E2E_REUSE_CLUSTER=1 runs the tests against a cluster already
// brought up with hack/local-up.sh (and inplace programs as they run there): no build, no
// local-up, no local-down. Without it (the default) the harness always brings the cluster up and
// down.
//
//	hack/local-up.sh && INPLACE_E2E_REUSE_CLUSTER=1 go test -count=1 -v ./test/e2e/ -run InPlaceUpdate
package e2e

import (
	"testing"

	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestMain is the harness: one cluster for the whole package (framework.Main).
func TestMain(m *testing.M) {
	framework.Main(m)
}
