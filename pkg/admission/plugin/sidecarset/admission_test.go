package sidecarset

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/install"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	inplacefake "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/fake"
	informers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
)

func sidecarSet(name, app, container, image string) *apps.SidecarSet {
	return &apps.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apps.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Containers: []apps.SidecarContainer{{Container: corev1.Container{Name: container, Image: image}}},
		},
	}
}

// plugin returns the plugin with existing SidecarSets in its cache, and the scheme's conversions.
func plugin(t *testing.T, existing ...*v1alpha1.SidecarSet) (*Plugin, admission.ObjectInterfaces) {
	t.Helper()
	scheme := runtime.NewScheme()
	install.Install(scheme)
	f := informers.NewSharedInformerFactory(inplacefake.NewClientset(), 0)
	p := New()
	p.SetInplaceInformerFactory(f)
	for _, s := range existing {
		if err := f.Apps().V1alpha1().SidecarSets().Informer().GetIndexer().Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	return p, admission.NewObjectInterfacesFromScheme(scheme)
}

func create(s *apps.SidecarSet) admission.Attributes {
	return admission.NewAttributesRecord(s, nil, apps.Kind("SidecarSet").WithVersion(""), "", s.Name,
		apps.Resource("sidecarsets").WithVersion(""), "", admission.Create, &metav1.CreateOptions{}, false, nil)
}

func TestHashAnnotations(t *testing.T) {
	p, o := plugin(t)
	s := sidecarSet("log-agent", "web", "agent", "agent:1")
	if err := p.Admit(context.Background(), create(s), o); err != nil {
		t.Fatalf("Admit: %v", err)
	}
	wire := &v1alpha1.SidecarSet{}
	if err := o.GetObjectConvertor().Convert(s, wire, nil); err != nil {
		t.Fatal(err)
	}
	hash, _ := sidecarcontrol.Hash(wire)
	withoutImage, _ := sidecarcontrol.HashWithoutImage(wire)
	if s.Annotations[v1alpha1.SidecarSetHashAnnotation] != hash || s.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation] != withoutImage {
		t.Fatalf("annotations %v, want hash %s and without image %s", s.Annotations, hash, withoutImage)
	}
	// A new image changes the hash, not the hash without image.
	s2 := sidecarSet("log-agent", "web", "agent", "agent:2")
	if err := p.Admit(context.Background(), create(s2), o); err != nil {
		t.Fatal(err)
	}
	if s2.Annotations[v1alpha1.SidecarSetHashAnnotation] == hash || s2.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation] != withoutImage {
		t.Errorf("after an image change: %v; before: hash %s without image %s", s2.Annotations, hash, withoutImage)
	}
}

func TestClashRefused(t *testing.T) {
	existing := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "first"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: "agent:1"}}},
		},
	}
	p, o := plugin(t, existing)
	err := p.Admit(context.Background(), create(sidecarSet("second", "web", "agent", "other:1")), o)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "SidecarSet first") || !strings.Contains(err.Error(), "container agent") {
		t.Errorf("clashing SidecarSet: %v, want 422 naming SidecarSet first and container agent", err)
	}
	for name, s := range map[string]*apps.SidecarSet{
		"other selector":  sidecarSet("second", "db", "agent", "other:1"),
		"other container": sidecarSet("second", "web", "proxy", "proxy:1"),
		"itself, updated": sidecarSet("first", "web", "agent", "agent:2"),
	} {
		if err := p.Admit(context.Background(), create(s), o); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
