package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"

	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// allowPatchPodMetadata writes OpenKruise's patch-metadata allow-list, the key
// SidecarSet_PatchPodMetadata_WhiteList of the ConfigMap kruise-configuration in inplace's
// namespace, with one rule: the annotation keys matching exprs, for the SidecarSets selector
// selects (every one when nil). It is removed when the test ends. With the feature gate
// SidecarSetPatchPodMetadataDefaultsAllowed off (the default), a SidecarSet may patch Pod
// annotations only when such a rule allows them, as with OpenKruise.
func allowPatchPodMetadata(t *testing.T, ctx context.Context, selector *metav1.LabelSelector, exprs ...string) {
	t.Helper()
	rules, err := json.Marshal(sidecarcontrol.PatchMetadataAllowList{Rules: []sidecarcontrol.PatchMetadataAllowRule{
		{Selector: selector, AllowedAnnotationKeyExprs: exprs}}})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: framework.InplaceNamespace, Name: sidecarcontrol.ConfigurationName},
		Data:       map[string]string{sidecarcontrol.PatchMetadataAllowListKey: string(rules)},
	}
	configMaps := framework.Kube.CoreV1().ConfigMaps(framework.InplaceNamespace)
	_, err = configMaps.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("writing the patch-metadata allow-list: %v", err)
	}
	t.Cleanup(func() {
		_ = configMaps.Delete(context.Background(), sidecarcontrol.ConfigurationName, metav1.DeleteOptions{})
	})
}

// patchingSidecarSet is a SidecarSet labelled team that patches the annotation keys into Pods.
func patchingSidecarSet(name, team string, keys ...string) *v1alpha1.SidecarSet {
	set := framework.ScopedSidecarSet(name, name, "web")
	set.Labels = map[string]string{"team": team}
	set.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: framework.AppImageV1}}}
	patch := v1alpha1.SidecarSetPatchPodMetadata{PatchPolicy: v1alpha1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{}}
	for _, key := range keys {
		patch.Annotations[key] = "on"
	}
	set.Spec.PatchPodMetadata = []v1alpha1.SidecarSetPatchPodMetadata{patch}
	return set
}

// wantForbidden fails unless err is a 422 whose message holds each of want.
func wantForbidden(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Errorf("%s: error %v, want 422 Invalid", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q, want it to say %q", what, err, w)
		}
	}
}

// testPatchPodMetadataAllowList (the gate SidecarSetPatchPodMetadataDefaultsAllowed off, the
// default, as OpenKruise's SidecarSet webhook): without the allow-list a SidecarSet that patches
// Pod annotations is refused in both versions, with the field and where to allow it; a rule for
// the SidecarSet's labels lets the keys it names through and refuses the others, by field path;
// a SidecarSet the rule does not select is refused.
func testPatchPodMetadataAllowList(t *testing.T, ctx context.Context) {
	sets := framework.Inplace.AppsV1alpha1().SidecarSets()
	_, err := sets.Create(ctx, patchingSidecarSet("e2e-patch-none", "mesh", "mesh.io/inject"), metav1.CreateOptions{})
	wantForbidden(t, "no allow-list, v1alpha1", err, "spec.patchPodMetadata: Forbidden", "there is no allow-list",
		"ConfigMap "+framework.InplaceNamespace+"/kruise-configuration", "SidecarSetPatchPodMetadataDefaultsAllowed")
	beta := &v1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-patch-none-beta"},
		Spec: v1beta1.SidecarSetSpec{
			Selector:         &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers:       []v1beta1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: framework.AppImageV1}}},
			PatchPodMetadata: []v1beta1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"mesh.io/inject": "on"}}},
		},
	}
	_, err = framework.Inplace.AppsV1beta1().SidecarSets().Create(ctx, beta, metav1.CreateOptions{})
	wantForbidden(t, "no allow-list, v1beta1", err, "spec.patchPodMetadata: Forbidden", "there is no allow-list")

	allowPatchPodMetadata(t, ctx, &metav1.LabelSelector{MatchLabels: map[string]string{"team": "mesh"}}, `^mesh\.io/`)
	framework.CreateSidecarSet(t, ctx, patchingSidecarSet("e2e-patch-allowed", "mesh", "mesh.io/inject", "mesh.io/port"))
	_, err = sets.Create(ctx, patchingSidecarSet("e2e-patch-other-key", "mesh", "mesh.io/inject", "other.io/x"), metav1.CreateOptions{})
	wantForbidden(t, "a key the rule does not allow", err, "spec.patchPodMetadata[0].annotations[other.io/x]: Forbidden")
	if strings.Contains(err.Error(), "annotations[mesh.io/inject]") {
		t.Errorf("an allowed key was refused: %v", err)
	}
	_, err = sets.Create(ctx, patchingSidecarSet("e2e-patch-other-team", "web", "mesh.io/inject"), metav1.CreateOptions{})
	wantForbidden(t, "a SidecarSet no rule selects", err, "spec.patchPodMetadata: Forbidden", "no rule of the allow-list")
}

// testPatchPodMetadataDefaultsAllowed (the gate on): without an allow-list any key may be patched.
func testPatchPodMetadataDefaultsAllowed(t *testing.T, ctx context.Context) {
	framework.CreateSidecarSet(t, ctx, patchingSidecarSet("e2e-patch-gate-on", "mesh", "mesh.io/inject", "other.io/x"))
}
