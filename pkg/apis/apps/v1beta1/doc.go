// Package v1beta1 is the apps.kruise.io/v1beta1 wire version of the kinds OpenKruise v1.9 serves
// there (and stores there). Field names, JSON tags and defaults are OpenKruise's.
//
// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/inplace-dev/inplace/pkg/apis/apps
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-model-package=io.kruise.apps.v1beta1
// +groupName=apps.kruise.io
package v1beta1
