// Package appsinitializer hands inplace's built-in admission plugins the clients and informers of
// this group (apps.kruise.io) that they ask for, as k8s.io/apiserver's own initializer does for
// the core API (WantsExternalKubeClientSet, WantsExternalKubeInformerFactory).
package appsinitializer

import (
	"k8s.io/apiserver/pkg/admission"

	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	informers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
)

// WantsInplaceClientSet is a plugin that reads or writes apps.kruise.io objects through this
// server's loopback client.
type WantsInplaceClientSet interface {
	SetInplaceClientSet(clientset.Interface)
	admission.InitializationValidator
}

// WantsInplaceInformerFactory is a plugin that reads apps.kruise.io objects from shared
// informers (started once the server runs).
type WantsInplaceInformerFactory interface {
	SetInplaceInformerFactory(informers.SharedInformerFactory)
	admission.InitializationValidator
}

// WantsInplaceNamespace is a plugin that reads objects kept in inplace's own namespace.
type WantsInplaceNamespace interface {
	SetInplaceNamespace(string)
}

type pluginInitializer struct {
	client    clientset.Interface
	informers informers.SharedInformerFactory
	namespace string
}

var _ admission.PluginInitializer = pluginInitializer{}

// New returns an initializer that hands plugins client, informers and inplace's namespace.
func New(client clientset.Interface, informers informers.SharedInformerFactory, namespace string) admission.PluginInitializer {
	return pluginInitializer{client: client, informers: informers, namespace: namespace}
}

// Initialize gives a plugin what it wants.
func (i pluginInitializer) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(WantsInplaceClientSet); ok {
		wants.SetInplaceClientSet(i.client)
	}
	if wants, ok := plugin.(WantsInplaceInformerFactory); ok {
		wants.SetInplaceInformerFactory(i.informers)
	}
	if wants, ok := plugin.(WantsInplaceNamespace); ok {
		wants.SetInplaceNamespace(i.namespace)
	}
}
