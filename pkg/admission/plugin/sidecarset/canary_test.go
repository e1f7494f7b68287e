package sidecarset

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	inplacefake "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/fake"
)

const basePath = "metadata.annotations[apps.kruise.io/sidecarset-base]"

func existingSidecarSet(name string, annotations map[string]string) *v1alpha1.SidecarSet {
	return &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: "agent:1"}}},
		},
	}
}

func canaryAnnotations(base string) map[string]string {
	return map[string]string{v1alpha1.SidecarSetCanaryAnnotation: "true", v1alpha1.SidecarSetBaseAnnotation: base}
}

// newCanary is a canary of base selecting app=web,track=canary (a subset of the base's Pods), with
// the base's container name, as OpenKruise's e2e builds one.
func newCanary(name, base string) *apps.SidecarSet {
	s := sidecarSet(name, "web", "agent", "agent:canary")
	s.Spec.Selector.MatchLabels["track"] = "canary"
	s.Annotations = canaryAnnotations(base)
	s.Spec.UpdateStrategy.Type = apps.NotUpdateSidecarSetStrategyType
	return s
}

func update(s *apps.SidecarSet) admission.Attributes {
	return admission.NewAttributesRecord(s, s.DeepCopy(), apps.Kind("SidecarSet").WithVersion(""), "", s.Name,
		apps.Resource("sidecarsets").WithVersion(""), "", admission.Update, &metav1.UpdateOptions{}, false, nil)
}

func expectInvalidAt(t *testing.T, err error, path, detail string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want 422 Invalid", err)
	}
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		if c.Field == path && strings.Contains(c.Message, detail) {
			return
		}
	}
	t.Errorf("got %v, want a cause at %s saying %q", err, path, detail)
}

// The cases of OpenKruise master's TestValidateSidecarSetCanaryAnnotations that read the base.
func TestCanaryBase(t *testing.T) {
	base := existingSidecarSet("base", nil)
	baseIsCanary := existingSidecarSet("base1", canaryAnnotations("other-base"))
	baseIsCanary.Spec.Containers[0].Name = "other"
	p, o := plugin(t, base, baseIsCanary)

	// The base exists: allowed, though the canary has the base's container name and selects some
	// of its Pods.
	if err := p.Admit(context.Background(), create(newCanary("canary", "base")), o); err != nil {
		t.Errorf("canary of an existing base: %v", err)
	}
	expectInvalidAt(t, p.Admit(context.Background(), create(newCanary("canary", "missing")), o),
		basePath, "the base SidecarSet missing of this canary (annotation apps.kruise.io/sidecarset-canary) does not exist")
	expectInvalidAt(t, p.Admit(context.Background(), create(newCanary("canary", "base1")), o),
		basePath, "the base SidecarSet base1 is itself a canary (of other-base)")
	// Not a canary ("TRUE"): the base is not read, and the SidecarSet clashes with "base" as any other.
	notCanary := newCanary("canary", "missing")
	notCanary.Annotations[v1alpha1.SidecarSetCanaryAnnotation] = "TRUE"
	expectInvalidAt(t, p.Admit(context.Background(), create(notCanary), o), "spec", "may select the same Pods as SidecarSet base")
}

// A base created just before its canary may not be in the plugin's cache yet: it is read live.
func TestCanaryBaseNotCachedYet(t *testing.T) {
	p, o := plugin(t)
	p.SetInplaceClientSet(inplacefake.NewClientset(existingSidecarSet("base", nil)))
	if err := p.Admit(context.Background(), create(newCanary("canary", "base")), o); err != nil {
		t.Errorf("canary of a base not cached yet: %v", err)
	}
	p.SetInplaceClientSet(inplacefake.NewClientset())
	expectInvalidAt(t, p.Admit(context.Background(), create(newCanary("canary", "base")), o), basePath, "does not exist")
}

// A canary and its base do not clash, either way round; a canary still clashes with the other
// SidecarSets, another canary of the same base included (as OpenKruise).
func TestCanaryClashes(t *testing.T) {
	canary := existingSidecarSet("canary", canaryAnnotations("base"))
	canary.Spec.Selector.MatchLabels["track"] = "canary"
	canary.Spec.UpdateStrategy.Type = v1alpha1.NotUpdateSidecarSetStrategyType
	unrelated := existingSidecarSet("unrelated", nil)
	unrelated.Spec.Containers[0].Name = "proxy"
	p, o := plugin(t, existingSidecarSet("base", nil), canary, unrelated)

	// The base, updated while its canary has the same container name.
	if err := p.Admit(context.Background(), update(sidecarSet("base", "web", "agent", "agent:2")), o); err != nil {
		t.Errorf("base update: %v", err)
	}
	// The canary, updated.
	if err := p.Admit(context.Background(), update(newCanary("canary", "base")), o); err != nil {
		t.Errorf("canary update: %v", err)
	}
	withProxy := newCanary("canary", "base")
	withProxy.Spec.Containers = append(withProxy.Spec.Containers, apps.SidecarContainer{Container: corev1.Container{Name: "proxy", Image: "proxy:1"}})
	err := p.Admit(context.Background(), update(withProxy), o)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "SidecarSet unrelated: container proxy") {
		t.Errorf("canary with unrelated's container: %v, want a clash with unrelated", err)
	}
	err = p.Admit(context.Background(), create(newCanary("canary2", "base")), o)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "SidecarSet canary:") {
		t.Errorf("second canary of base: %v, want a clash with canary", err)
	}
}
