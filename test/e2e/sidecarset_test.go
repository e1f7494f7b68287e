package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/sidecarset"
)

// TestSidecarSetAdmission: inplace-apiserver's SidecarSet admission writes OpenKruise's hash
// annotations (the hash changes with an image, the hash without image does not) and refuses, with
// 422, a SidecarSet that injects a container of the same name as another one selecting the same
// Pods.
func TestSidecarSetAdmission(t *testing.T) {
	ctx := testContext(t)
	app := "e2e-sidecar-" + utilrand.String(5)
	newSet := func(name, container, image string) *v1alpha1.SidecarSet {
		return &v1alpha1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.SidecarSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
				Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{
					Name: container, Image: image, ImagePullPolicy: corev1.PullNever}}},
			},
		}
	}
	sets := inplace.AppsV1alpha1().SidecarSets()
	first, err := sets.Create(ctx, newSet(app+"-a", "agent", appImageV1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sets.Delete(context.Background(), first.Name, metav1.DeleteOptions{}) })
	hash, _ := sidecarset.Hash(first)
	withoutImage, _ := sidecarset.HashWithoutImage(first)
	if first.Annotations[v1alpha1.SidecarSetHashAnnotation] != hash || first.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation] != withoutImage {
		t.Fatalf("annotations %v, want hash %s and hash without image %s", first.Annotations, hash, withoutImage)
	}

	first.Spec.Containers[0].Image = "inplace.local/app:v2"
	updated, err := sets.Update(ctx, first, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Annotations[v1alpha1.SidecarSetHashAnnotation] == hash || updated.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation] != withoutImage {
		t.Errorf("after an image change: %v; before: hash %s, without image %s", updated.Annotations, hash, withoutImage)
	}

	// The admission cache may lag the first SidecarSet by a moment: retry until it answers 422.
	poll(t, ctx, rbacTimeout, "a clashing SidecarSet refused", func(ctx context.Context) (bool, error) {
		s, err := sets.Create(ctx, newSet(app+"-b", "agent", appImageV1), metav1.CreateOptions{})
		if err == nil {
			_ = sets.Delete(ctx, s.Name, metav1.DeleteOptions{})
			return false, nil
		}
		return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "SidecarSet "+first.Name) &&
			strings.Contains(err.Error(), "container agent"), err
	})
	other, err := sets.Create(ctx, newSet(app+"-c", "proxy", appImageV1), metav1.CreateOptions{})
	if err != nil {
		t.Errorf("a SidecarSet with another container name: %v", err)
	} else {
		_ = sets.Delete(ctx, other.Name, metav1.DeleteOptions{})
	}
}
