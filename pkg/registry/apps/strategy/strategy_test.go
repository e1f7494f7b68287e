package strategy

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
)

// testKind is a CloneSet description with validation that accepts everything, so the tests
// exercise only the shared strategy.
var testKind = Kind[*apps.CloneSet]{
	Resource:    "clonesets",
	APIVersions: []string{"apps.kruise.io/v1alpha1"},
	Validation: Validate(func(*apps.CloneSet) field.ErrorList { return nil },
		func(_, _ *apps.CloneSet) field.ErrorList { return nil }, func(_, _ *apps.CloneSet) field.ErrorList { return nil }),
}

func cloneSet(replicas int32, statusReplicas int32, generation int64) *apps.CloneSet {
	return &apps.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Generation: generation},
		Spec:       apps.CloneSetSpec{Replicas: ptr.To(replicas)},
		Status:     apps.CloneSetStatus{Replicas: statusReplicas},
	}
}

func TestPrepareForCreateDropsStatusAndStartsGeneration(t *testing.T) {
	s := New(runtime.NewScheme(), testKind)
	obj := cloneSet(3, 7, 42)
	s.PrepareForCreate(context.Background(), obj)
	if obj.Status.Replicas != 0 {
		t.Errorf("status.replicas = %d, want the client's status dropped", obj.Status.Replicas)
	}
	if obj.Generation != 1 {
		t.Errorf("generation = %d, want 1", obj.Generation)
	}
	if *obj.Spec.Replicas != 3 {
		t.Errorf("spec changed: replicas = %d", *obj.Spec.Replicas)
	}
}

func TestPrepareForUpdate(t *testing.T) {
	s := New(runtime.NewScheme(), testKind)
	for _, tc := range []struct {
		name           string
		newReplicas    int32
		wantGeneration int64
	}{
		{"spec change bumps generation", 5, 3},
		{"no spec change keeps generation", 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := cloneSet(2, 2, 2)
			obj := cloneSet(tc.newReplicas, 99, 0)
			obj.Labels = map[string]string{"changed": "metadata"}
			s.PrepareForUpdate(context.Background(), obj, old)
			if obj.Status.Replicas != 2 {
				t.Errorf("status.replicas = %d, want the stored 2 (status is not writable here)", obj.Status.Replicas)
			}
			if obj.Generation != tc.wantGeneration {
				t.Errorf("generation = %d, want %d", obj.Generation, tc.wantGeneration)
			}
		})
	}
}

func TestStatusStrategyKeepsSpec(t *testing.T) {
	s := NewStatus(runtime.NewScheme(), testKind)
	old := cloneSet(2, 0, 4)
	obj := cloneSet(9, 2, 0)
	s.PrepareForUpdate(context.Background(), obj, old)
	if *obj.Spec.Replicas != 2 {
		t.Errorf("spec.replicas = %d, want the stored 2 (spec is not writable through /status)", *obj.Spec.Replicas)
	}
	if obj.Status.Replicas != 2 {
		t.Errorf("status.replicas = %d, want the written 2", obj.Status.Replicas)
	}
	if obj.Generation != 4 {
		t.Errorf("generation = %d, want the stored 4", obj.Generation)
	}
}

func TestResetFields(t *testing.T) {
	main := New(runtime.NewScheme(), testKind).GetResetFields()["apps.kruise.io/v1alpha1"]
	status := NewStatus(runtime.NewScheme(), testKind).GetResetFields()["apps.kruise.io/v1alpha1"]
	if main == nil || main.String() != ".status" {
		t.Errorf("main resource resets %v, want .status", main)
	}
	if status == nil || status.String() != ".spec" {
		t.Errorf("status subresource resets %v, want .spec", status)
	}
}

func TestGetAttrs(t *testing.T) {
	obj := cloneSet(1, 0, 1)
	obj.Labels = map[string]string{"app": "x"}
	ls, fs, err := GetAttrs(obj)
	if err != nil {
		t.Fatal(err)
	}
	if ls.Get("app") != "x" || fs.Get("metadata.name") != "c" || fs.Get("metadata.namespace") != "ns" {
		t.Errorf("labels %v fields %v", ls, fs)
	}
}
