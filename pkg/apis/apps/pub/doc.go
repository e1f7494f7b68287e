// Package pub holds the types and well-known keys that every apps.kruise.io kind shares and that
// also travel outside of stored objects (Pod annotations, readiness gates, subresource bodies).
// They are not versioned: their JSON form is OpenKruise's apps/pub contract.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.kruise.apps.pub
package pub
