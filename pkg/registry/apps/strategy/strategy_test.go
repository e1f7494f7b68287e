package strategy

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/install"
)

// testKind is a CloneSet description with validation that accepts everything, so the tests
// exercise only the shared strategy.
var testKind = Kind[*apps.CloneSet]{
	Resource: "clonesets",
	Validation: Validate(func(*apps.CloneSet) field.ErrorList { return nil },
		func(_, _ *apps.CloneSet) field.ErrorList { return nil }, func(_, _ *apps.CloneSet) field.ErrorList { return nil }),
}

// newStrategy returns the strategy of testKind, in a scheme with the apps.kruise.io versions.
func newStrategy(t *testing.T) Strategy[*apps.CloneSet] {
	t.Helper()
	scheme := runtime.NewScheme()
	install.Install(scheme)
	s, err := New(scheme, testKind)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func cloneSet(replicas int32, statusReplicas int32, generation int64) *apps.CloneSet {
	return &apps.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Generation: generation},
		Spec:       apps.CloneSetSpec{Replicas: ptr.To(replicas)},
		Status:     apps.CloneSetStatus{Replicas: statusReplicas},
	}
}

func TestPrepareForCreateDropsStatusAndStartsGeneration(t *testing.T) {
	s := newStrategy(t)
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
	s := newStrategy(t)
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
	s := newStrategy(t).Status()
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

// TestResetFields: the reset fields are declared for every version the scheme has of the kind,
// since every one of them is served from the one store.
func TestResetFields(t *testing.T) {
	s := newStrategy(t)
	for _, version := range []fieldpath.APIVersion{"apps.kruise.io/v1alpha1", "apps.kruise.io/v1beta1"} {
		main, status := s.GetResetFields()[version], s.Status().GetResetFields()[version]
		if main == nil || main.String() != ".status" {
			t.Errorf("%s: main resource resets %v, want .status", version, main)
		}
		if status == nil || status.String() != ".spec" {
			t.Errorf("%s: status subresource resets %v, want .spec", version, status)
		}
	}
	if n := len(s.GetResetFields()); n != 2 {
		t.Errorf("reset fields for %d versions, want 2", n)
	}
}

// TestKindWithoutStatus: a type without spec and status is refused at start-up.
func TestKindWithoutStatus(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	if _, err := New(scheme, Kind[*apps.Pod]{}); err == nil {
		t.Error("New accepted Pod, whose handle type here has no spec and status")
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
