package sidecarsetpatch

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/kubernetes/fake"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
)

func sidecarSet(labels map[string]string, annotationKeys ...string) *apps.SidecarSet {
	s := &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh", Labels: labels}}
	for _, key := range annotationKeys {
		s.Spec.PatchPodMetadata = append(s.Spec.PatchPodMetadata, apps.SidecarSetPatchPodMetadata{Annotations: map[string]string{key: "v"}})
	}
	return s
}

func create(set *apps.SidecarSet) admission.Attributes {
	return admission.NewAttributesRecord(set, nil, apps.Kind("SidecarSet").WithVersion(""), "", set.Name,
		apps.Resource("sidecarsets").WithVersion(""), "", admission.Create, &metav1.CreateOptions{}, false, nil)
}

func update(set, old *apps.SidecarSet, subresource string) admission.Attributes {
	return admission.NewAttributesRecord(set, old, apps.Kind("SidecarSet").WithVersion(""), "", set.Name,
		apps.Resource("sidecarsets").WithVersion(""), subresource, admission.Update, &metav1.UpdateOptions{}, false, nil)
}

// plugin returns the plugin reading the ConfigMaps given (in namespace inplace-system).
func plugin(t *testing.T, objects ...runtime.Object) *Plugin {
	t.Helper()
	p := New()
	p.SetExternalKubeClientSet(fake.NewClientset(objects...))
	p.SetInplaceNamespace("inplace-system")
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	return p
}

func allowList(value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "inplace-system", Name: sidecarcontrol.ConfigurationName},
		Data:       map[string]string{sidecarcontrol.PatchMetadataAllowListKey: value},
	}
}

// TestValidate: the allow-list in inplace's namespace decides, as OpenKruise's; each refusal is a
// 422 naming the field and where the allow-list is.
func TestValidate(t *testing.T) {
	meshOnly := allowList(`{"rules":[{"selector":{"matchLabels":{"team":"mesh"}},"allowedAnnotationKeyExprs":["^mesh\\.io/"]}]}`)
	cases := []struct {
		name string
		cm   *corev1.ConfigMap
		set  *apps.SidecarSet
		want string // "" allowed, else the start of the 422's message
	}{
		{name: "no patchPodMetadata, no allow-list", set: sidecarSet(nil)},
		{name: "no allow-list", set: sidecarSet(nil, "mesh.io/a"),
			want: `SidecarSet.apps.kruise.io "mesh" is invalid: spec.patchPodMetadata: Forbidden: a SidecarSet may patch only the Pod annotations an allow-list names, and there is no allow-list (key SidecarSet_PatchPodMetadata_WhiteList of ConfigMap inplace-system/kruise-configuration)`},
		{name: "allowed", cm: meshOnly, set: sidecarSet(map[string]string{"team": "mesh"}, "mesh.io/a", "mesh.io/b")},
		{name: "key not allowed", cm: meshOnly, set: sidecarSet(map[string]string{"team": "mesh"}, "mesh.io/a", "other/b"),
			want: `SidecarSet.apps.kruise.io "mesh" is invalid: spec.patchPodMetadata[1].annotations[other/b]: Forbidden`},
		{name: "no rule for this SidecarSet", cm: meshOnly, set: sidecarSet(map[string]string{"team": "web"}, "mesh.io/a"),
			want: `SidecarSet.apps.kruise.io "mesh" is invalid: spec.patchPodMetadata: Forbidden: a SidecarSet may patch only the Pod annotations an allow-list names, and no rule`},
		{name: "broken allow-list", cm: allowList(`{"rules":[{"allowedAnnotationKeyExprs":["("]}]}`), set: sidecarSet(nil, "mesh.io/a"),
			want: `SidecarSet.apps.kruise.io "mesh" is invalid: spec.patchPodMetadata: Forbidden: the allow-list (key SidecarSet_PatchPodMetadata_WhiteList of ConfigMap inplace-system/kruise-configuration) cannot be used`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			if tc.cm != nil {
				objects = append(objects, tc.cm)
			}
			err := plugin(t, objects...).Validate(context.Background(), create(tc.set), nil)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want a 422 starting with %q", err, tc.want)
			}
		})
	}
}

// TestDefaultsAllowed: with OpenKruise's gate on, no allow-list allows everything; a rule for the
// SidecarSet still decides.
func TestDefaultsAllowed(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.SidecarSetPatchPodMetadataDefaultsAllowed, true)
	if err := plugin(t).Validate(context.Background(), create(sidecarSet(nil, "any/key")), nil); err != nil {
		t.Errorf("no allow-list, gate on: %v", err)
	}
	cm := allowList(`{"rules":[{"allowedAnnotationKeyExprs":["^mesh\\.io/"]}]}`)
	if err := plugin(t, cm).Validate(context.Background(), create(sidecarSet(nil, "any/key")), nil); !apierrors.IsInvalid(err) {
		t.Errorf("a rule that does not allow the key, gate on: %v, want 422", err)
	}
}

// TestUpdate: an update is checked when it changes patchPodMetadata or the labels, not otherwise
// (a finalizer removed from a SidecarSet written under an older allow-list goes through); the
// status subresource is never checked.
func TestUpdate(t *testing.T) {
	p := plugin(t) // no allow-list: every check refuses
	old := sidecarSet(map[string]string{"team": "mesh"}, "mesh.io/a")
	old.Finalizers = []string{"example.com/keep"}
	unrelated := old.DeepCopy()
	unrelated.Finalizers = nil
	if err := p.Validate(context.Background(), update(unrelated, old, ""), nil); err != nil {
		t.Errorf("an update that leaves patchPodMetadata and labels alone: %v", err)
	}
	if err := p.Validate(context.Background(), update(sidecarSet(map[string]string{"team": "mesh"}, "mesh.io/b"), old, ""), nil); !apierrors.IsInvalid(err) {
		t.Errorf("an update of patchPodMetadata: %v, want 422", err)
	}
	if err := p.Validate(context.Background(), update(sidecarSet(map[string]string{"team": "web"}, "mesh.io/a"), old, ""), nil); !apierrors.IsInvalid(err) {
		t.Errorf("an update of the labels: %v, want 422", err)
	}
	if err := p.Validate(context.Background(), update(sidecarSet(nil, "mesh.io/b"), old, "status"), nil); err != nil {
		t.Errorf("a status update: %v", err)
	}
}
