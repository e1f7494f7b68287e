package fake

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	acv1alpha1 "github.com/inplace-dev/inplace/pkg/generated/applyconfiguration/apps/v1alpha1"
)

// TestFieldManagedClientset: the field-managed fake clientset (NewClientset) creates every kind
// and applies to it, which needs each kind's structured schema under the name the type converter
// asks for (its OpenAPI model name, io.kruise.apps.*; hack/update-codegen.sh and models-schema
// see to it). It once failed with "no type found matching: io.kruise.apps.v1alpha1.CloneSet".
func TestFieldManagedClientset(t *testing.T) {
	ctx := context.Background()
	cs := NewClientset()
	meta := metav1.ObjectMeta{Name: "a", Namespace: "ns"}
	a := cs.AppsV1alpha1()
	for kind, create := range map[string]func() error{
		"CloneSet": func() error {
			_, err := a.CloneSets("ns").Create(ctx, &v1alpha1.CloneSet{ObjectMeta: meta}, metav1.CreateOptions{})
			return err
		},
		"SidecarSet": func() error {
			_, err := a.SidecarSets().Create(ctx, &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
			return err
		},
		"ContainerRecreateRequest": func() error {
			_, err := a.ContainerRecreateRequests("ns").Create(ctx, &v1alpha1.ContainerRecreateRequest{ObjectMeta: meta}, metav1.CreateOptions{})
			return err
		},
		"ImagePullJob": func() error {
			_, err := a.ImagePullJobs("ns").Create(ctx, &v1alpha1.ImagePullJob{ObjectMeta: meta}, metav1.CreateOptions{})
			return err
		},
		"ImageListPullJob": func() error {
			_, err := a.ImageListPullJobs("ns").Create(ctx, &v1alpha1.ImageListPullJob{ObjectMeta: meta}, metav1.CreateOptions{})
			return err
		},
		"NodeImage": func() error {
			_, err := a.NodeImages().Create(ctx, &v1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
			return err
		},
		"DaemonSet": func() error {
			_, err := a.DaemonSets("ns").Create(ctx, &v1alpha1.DaemonSet{ObjectMeta: meta}, metav1.CreateOptions{})
			return err
		},
		"StatefulSet v1alpha1": func() error {
			_, err := a.StatefulSets("ns").Create(ctx, &v1alpha1.StatefulSet{ObjectMeta: meta}, metav1.CreateOptions{})
			return err
		},
		"StatefulSet v1beta1": func() error {
			_, err := cs.AppsV1beta1().StatefulSets("ns").Create(ctx, &v1beta1.StatefulSet{ObjectMeta: meta}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); err != nil {
			t.Errorf("creating a %s: %v", kind, err)
		}
	}

	// Apply merges by field owner, and Extract gives back what a manager owns.
	applied, err := a.CloneSets("ns").Apply(ctx,
		acv1alpha1.CloneSet("a", "ns").WithSpec(acv1alpha1.CloneSetSpec().WithReplicas(3)),
		metav1.ApplyOptions{FieldManager: "scaler"})
	if err != nil {
		t.Fatalf("applying replicas to the CloneSet: %v", err)
	}
	if ptr.Deref(applied.Spec.Replicas, 0) != 3 {
		t.Errorf("applied CloneSet replicas %v, want 3", applied.Spec.Replicas)
	}
	owned, err := acv1alpha1.ExtractCloneSet(applied, "scaler")
	if err != nil {
		t.Fatalf("extracting the scaler's fields: %v", err)
	}
	if owned.Spec == nil || ptr.Deref(owned.Spec.Replicas, 0) != 3 {
		t.Errorf("the scaler's fields %+v, want spec.replicas 3", owned.Spec)
	}
}
