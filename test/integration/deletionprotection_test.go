package integration

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// TestDeletionProtection: with ResourcesDeletionProtection on, a CloneSet labelled
// policy.kruise.io/delete-protection=Always cannot be deleted (403, OpenKruise's message), one
// labelled Cascading cannot while it has replicas and can once scaled to 0, and without the label
// the deletion goes through. The gate is process-wide: this test is not parallel (the parallel
// ones wait until it ends) and sets it back when done.
func TestDeletionProtection(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.ResourcesDeletionProtection, true)
	s := framework.StartServer(t)
	ctx := testContext(t)
	sets := s.Client.AppsV1alpha1().CloneSets("default")
	create := func(name, protection string) {
		t.Helper()
		cs := newCloneSet(name)
		if protection != "" {
			cs.Labels = map[string]string{"policy.kruise.io/delete-protection": protection}
		}
		if _, err := sets.Create(ctx, cs, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating CloneSet %s: %v", name, err)
		}
	}
	refused := func(name, want string) {
		t.Helper()
		err := sets.Delete(ctx, name, metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "forbidden by ResourcesProtectionDeletion") || !strings.Contains(err.Error(), want) {
			t.Fatalf("deleting CloneSet %s: %v; want 403 forbidden by ResourcesProtectionDeletion, saying %q", name, err, want)
		}
		if _, err := sets.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("CloneSet %s after a refused delete: %v", name, err)
		}
	}
	create("always", "Always")
	refused("always", "delete-protection=Always")
	create("cascading", "Cascading")
	refused("cascading", "replicas 2>0")
	cs, err := sets.Get(ctx, "cascading", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs.Spec.Replicas = ptr.To[int32](0)
	if _, err := sets.Update(ctx, cs, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sets.Delete(ctx, "cascading", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the Cascading CloneSet scaled to 0: %v", err)
	}
	create("plain", "")
	if err := sets.Delete(ctx, "plain", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting an unprotected CloneSet: %v", err)
	}
	// A collection delete holds back the protected one and deletes the rest.
	create("other", "")
	err = sets.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("deletecollection with a protected CloneSet: %v, want 403", err)
	}
	if _, err := sets.Get(ctx, "always", metav1.GetOptions{}); err != nil {
		t.Errorf("the protected CloneSet after deletecollection: %v", err)
	}
}
