// Package v1alpha1 is the policy.kruise.io/v1alpha1 wire version of PodUnavailableBudget, with OpenKruise's
// field names and JSON tags.
//
// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/inplace-dev/inplace/pkg/apis/policy
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-model-package=io.kruise.policy.v1alpha1
// +groupName=policy.kruise.io
package v1alpha1
