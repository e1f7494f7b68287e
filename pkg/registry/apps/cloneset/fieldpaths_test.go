package cloneset

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestErrorPaths: the errors of a v1beta1 request name v1beta1's fields (the rolling update's
// parameters under rollingUpdate), those of a v1alpha1 request stay as validation made them, and
// the input list is not changed.
func TestErrorPaths(t *testing.T) {
	spec := field.NewPath("spec")
	us := spec.Child("updateStrategy")
	errs := field.ErrorList{
		field.Invalid(us.Child("partition"), "-1", "must be non-negative"),
		field.Invalid(us.Child("maxUnavailable"), "x", "bad"),
		field.Invalid(us.Child("maxSurge"), "1", "InPlaceOnly"),
		field.Required(us.Child("priorityStrategy", "weightPriority").Index(0), "weight"),
		field.Duplicate(us.Child("scatterStrategy").Index(1), "k=v"),
		field.Invalid(us.Child("inPlaceUpdateStrategy", "gracePeriodSeconds"), -1, "must be non-negative"),
		field.NotSupported(us.Child("type"), "OnDelete2", []string{"RollingUpdate", "OnDelete"}),
		field.Invalid(us.Child("rollingUpdate", "podUpdatePolicy"), "x", "bad"),
		field.Invalid(us.Child("partitionX"), "x", "no such hub field: left alone"),
		field.Invalid(spec.Child("scaleStrategy", "disablePVCReuse"), true, "x"),
		field.Invalid(spec.Child("replicas"), -1, "must be non-negative"),
	}
	want := []string{
		"spec.updateStrategy.rollingUpdate.partition",
		"spec.updateStrategy.rollingUpdate.maxUnavailable",
		"spec.updateStrategy.rollingUpdate.maxSurge",
		"spec.updateStrategy.rollingUpdate.priorityStrategy.weightPriority[0]",
		"spec.updateStrategy.rollingUpdate.scatterStrategy[1]",
		"spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.gracePeriodSeconds",
		"spec.updateStrategy.type",
		"spec.updateStrategy.rollingUpdate.podUpdatePolicy",
		"spec.updateStrategy.partitionX",
		"spec.scaleStrategy.enablePVCReuse",
		"spec.replicas",
	}
	got := errorPaths("v1beta1", errs)
	for i, e := range got {
		if e.Field != want[i] {
			t.Errorf("v1beta1 path of %s: %s, want %s", errs[i].Field, e.Field, want[i])
		}
		if e.Detail != errs[i].Detail || e.Type != errs[i].Type {
			t.Errorf("error %d changed beyond its field: %v, was %v", i, e, errs[i])
		}
	}
	if errs[0].Field != "spec.updateStrategy.partition" {
		t.Errorf("the input changed: %s", errs[0].Field)
	}
	for i, e := range errorPaths("v1alpha1", errs) {
		if e.Field != errs[i].Field {
			t.Errorf("v1alpha1 path of %s: %s, want it unchanged", errs[i].Field, e.Field)
		}
	}
}
