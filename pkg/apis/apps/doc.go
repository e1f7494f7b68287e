// Package apps is the internal (hub) version of the apps.kruise.io API: the form the server's
// registry, validation and admission work on. Every served version converts to and from it.
//
// +k8s:deepcopy-gen=package
// +groupName=apps.kruise.io
package apps
