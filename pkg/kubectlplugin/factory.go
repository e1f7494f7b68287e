package kubectlplugin

import (
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"

	"github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
)

// Factory gives a command its namespace and clients. The plugin's is built from kubectl's standard
// flags (ConfigFlags: --kubeconfig, --context, -n, ...); tests hand in fake clientsets.
type Factory interface {
	// Namespace is the namespace to work in (-n, else the kubeconfig context's, else "default").
	Namespace() (string, error)
	// Kruise is the apps.kruise.io clientset (the aggregated inplace-apiserver).
	Kruise() (versioned.Interface, error)
	// Kube is the core clientset (Pods, Events, ControllerRevisions).
	Kube() (kubernetes.Interface, error)
}

// NewFactory returns the Factory of the standard kubectl flags.
func NewFactory(flags *genericclioptions.ConfigFlags) Factory { return &configFactory{flags: flags} }

type configFactory struct {
	flags *genericclioptions.ConfigFlags
}

func (f *configFactory) Namespace() (string, error) {
	ns, _, err := f.flags.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

func (f *configFactory) Kruise() (versioned.Interface, error) {
	config, err := f.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return versioned.NewForConfig(config)
}

func (f *configFactory) Kube() (kubernetes.Interface, error) {
	config, err := f.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(config)
}
