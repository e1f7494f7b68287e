// Package v1alpha1 is the apps.kruise.io/v1alpha1 wire version: field names, JSON tags and defaults
// are OpenKruise's, so manifests and clients written for OpenKruise work unchanged.
//
// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/inplace-dev/inplace/pkg/apis/apps
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-model-package=io.kruise.apps.v1alpha1
// +groupName=apps.kruise.io
package v1alpha1
