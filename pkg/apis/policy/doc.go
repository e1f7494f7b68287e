// Package policy is the internal (hub) version of the policy.kruise.io API (PodUnavailableBudget):
// the form the server's registry, validation and enforcement work on. Every served version
// converts to and from it.
//
// +k8s:deepcopy-gen=package
// +groupName=policy.kruise.io
package policy
