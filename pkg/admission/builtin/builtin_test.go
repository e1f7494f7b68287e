package builtin

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/inplace-dev/inplace/pkg/admission/appsinitializer"
	"github.com/inplace-dev/inplace/pkg/admission/plugin/containerrecreaterequest"
	"github.com/inplace-dev/inplace/pkg/admission/plugin/sidecarset"
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/install"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	inplacefake "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/fake"
	informers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
)

// TestNeedsKube: the ContainerRecreateRequest plugin reads Pods through kube-apiserver; the
// SidecarSet plugin reads only SidecarSets, from this server.
func TestNeedsKube(t *testing.T) {
	if got := NeedsKube(containerrecreaterequest.New()); got == "" {
		t.Error("the ContainerRecreateRequest plugin needs nothing of kube-apiserver, want the core API client")
	}
	if got := NeedsKube(sidecarset.New()); got != "" {
		t.Errorf("the SidecarSet plugin needs %s of kube-apiserver, want nothing", got)
	}
}

func attributes(obj runtime.Object, kind, resource, namespace, name string) admission.Attributes {
	return admission.NewAttributesRecord(obj, nil, apps.Kind(kind).WithVersion(""), namespace, name,
		apps.Resource(resource).WithVersion(""), "", admission.Create, &metav1.CreateOptions{}, false, nil)
}

// TestStandalone: the standalone chain builds with only this group's client and informers (a
// plugin that needs kube-apiserver in it would fail its initialization), hashes a SidecarSet,
// and lets a ContainerRecreateRequest through unchecked (its plugin, skipped, would look its Pod
// up); a plugin disabled by --disable-admission-plugins is left out too.
func TestStandalone(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	o := admission.NewObjectInterfacesFromScheme(scheme)
	client := inplacefake.NewClientset()
	init := appsinitializer.New(client, informers.NewSharedInformerFactory(client, 0), "inplace-system")

	chain, err := Standalone(init, nil)
	if err != nil {
		t.Fatalf("Standalone: %v", err)
	}
	mutating := chain.(admission.MutationInterface)
	set := &apps.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: apps.SidecarSetSpec{Containers: []apps.SidecarContainer{
			{Container: corev1.Container{Name: "agent", Image: "agent:1"}}}},
	}
	if err := mutating.Admit(context.Background(), attributes(set, "SidecarSet", "sidecarsets", "", "agent"), o); err != nil {
		t.Fatalf("admitting a SidecarSet: %v", err)
	}
	if set.Annotations[v1alpha1.SidecarSetHashAnnotation] == "" || set.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation] == "" {
		t.Errorf("SidecarSet annotations %v, want both hashes", set.Annotations)
	}
	crr := &apps.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "restart"},
		Spec:       apps.ContainerRecreateRequestSpec{PodName: "no-such-pod"},
	}
	if err := mutating.Admit(context.Background(), attributes(crr, "ContainerRecreateRequest", "containerrecreaterequests", "default", "restart"), o); err != nil {
		t.Errorf("a ContainerRecreateRequest was checked against kube-apiserver in standalone mode: %v", err)
	}

	chain, err = Standalone(init, []string{sidecarset.PluginName})
	if err != nil {
		t.Fatalf("Standalone with SidecarSet disabled: %v", err)
	}
	set.Annotations = nil
	if err := chain.(admission.MutationInterface).Admit(context.Background(), attributes(set, "SidecarSet", "sidecarsets", "", "agent"), o); err != nil {
		t.Fatalf("admitting a SidecarSet: %v", err)
	}
	if len(set.Annotations) != 0 {
		t.Errorf("SidecarSet plugin disabled, yet annotations %v", set.Annotations)
	}
}
