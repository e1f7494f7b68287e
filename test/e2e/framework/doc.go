// Package framework is the e2e test framework of inplace: what every e2e test needs to reach the
// real local cluster and wait on it, written once.
//
//   - harness.go: Main, the TestMain of an e2e test package: builds the inplace programs of the
//     source tree, brings the cluster up with hack/local-up.sh, runs the tests in a child process,
//     always brings the cluster down (INPLACE_E2E_REUSE_CLUSTER=1 uses a running cluster as it
//     is; INPLACE_E2E_IN_CLUSTER=1 or =ha installs inplace from artifacts/deploy).
//   - cluster.go: the clients (Kube, Inplace, DynamicClient, AdminConfig), namespaces,
//     ServiceAccount credentials, the APIServices, the second node.
//   - wait.go: Poll, the one poll-with-deadline helper every wait is written with; Context.
//   - kubectl.go: the real kubectl (_output/bin/kubectl) as cluster-admin.
//   - pod.go, inplaceupdate.go: Pods, their status and a record of their events; the
//     pods/inplaceupdate subresource.
//   - cri.go: the nodes' containerd through the CRI (what crictl reads).
//   - programs.go: the inplace programs as processes (host or in-cluster), their restart, their
//     /metrics.
//   - crr.go, cloneset.go, statefulset.go, daemonset.go, sidecarset.go: each kind's create,
//     update and wait-until helpers.
//
// Helpers take the *testing.T and fail the test themselves; every wait has a deadline.
package framework
