// Package validation checks PodUnavailableBudgets (internal version) as OpenKruise's webhook does,
// with the field path and a sentence for each error.
package validation

import (
	"encoding/json"
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsvalidation "github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/apis/policy"
	"github.com/inplace-dev/inplace/pkg/apis/policy/v1alpha1"
)

// ValidatePodUnavailableBudget checks a new budget.
func ValidatePodUnavailableBudget(pub *policy.PodUnavailableBudget) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&pub.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateAnnotations(pub.Annotations, field.NewPath("metadata", "annotations"))...)
	return append(allErrs, validateSpec(&pub.Spec, field.NewPath("spec"))...)
}

// ValidatePodUnavailableBudgetUpdate checks an update: as a new budget, and what it protects
// (selector, targetRef) does not change, as OpenKruise refuses.
func ValidatePodUnavailableBudgetUpdate(pub, old *policy.PodUnavailableBudget) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&pub.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateAnnotations(pub.Annotations, field.NewPath("metadata", "annotations"))...)
	allErrs = append(allErrs, validateSpec(&pub.Spec, field.NewPath("spec"))...)
	if !apiequality.Semantic.DeepEqual(pub.Spec.Selector, old.Spec.Selector) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "selector"),
			"cannot be changed: create a new PodUnavailableBudget for other Pods"))
	}
	if !apiequality.Semantic.DeepEqual(pub.Spec.TargetReference, old.Spec.TargetReference) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "targetRef"),
			"cannot be changed: create a new PodUnavailableBudget for another workload"))
	}
	return allErrs
}

// ValidatePodUnavailableBudgetStatusUpdate checks a status write: counters not negative.
func ValidatePodUnavailableBudgetStatusUpdate(pub, old *policy.PodUnavailableBudget) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&pub.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st, fldPath := pub.Status, field.NewPath("status")
	for _, c := range []struct {
		name string
		v    int64
	}{{"observedGeneration", st.ObservedGeneration}, {"unavailableAllowed", int64(st.UnavailableAllowed)}, {"currentAvailable", int64(st.CurrentAvailable)},
		{"desiredAvailable", int64(st.DesiredAvailable)}, {"totalReplicas", int64(st.TotalReplicas)}} {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(c.v, fldPath.Child(c.name))...)
	}
	return allErrs
}

// validateAnnotations: the v1alpha1 annotations a conversion could not read stay on the object;
// refuse them here, naming them (OpenKruise's webhook refuses the same values).
func validateAnnotations(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if v, ok := annotations[v1alpha1.PubProtectOperationAnnotation]; ok {
		if _, bad, ok := v1alpha1.ParseProtectOperations(v); !ok {
			allErrs = append(allErrs, field.Invalid(fldPath.Key(v1alpha1.PubProtectOperationAnnotation), v,
				fmt.Sprintf("%q is not an operation: list DELETE, UPDATE, EVICT or RESIZE, comma-separated", bad)))
		}
	}
	if v, ok := annotations[v1alpha1.PubProtectTotalReplicasAnnotation]; ok {
		if _, err := v1alpha1.ParseProtectTotalReplicas(v); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Key(v1alpha1.PubProtectTotalReplicasAnnotation), v,
				"must be a whole number of Pods (a 32-bit integer)"))
		}
	}
	if v, ok := annotations[v1alpha1.V1beta1FieldsAnnotation]; ok {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(v), &fields); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Key(v1alpha1.V1beta1FieldsAnnotation), v,
				"must be the JSON inplace writes for v1beta1's fields ({\"ignoredPodSelector\": ...}); remove it to clear them"))
		}
	}
	return allErrs
}

func validateSpec(spec *policy.PodUnavailableBudgetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case spec.Selector == nil && spec.TargetReference == nil:
		allErrs = append(allErrs, field.Required(fldPath.Child("selector"), "give selector or targetRef: the Pods the budget protects"))
	case spec.Selector != nil && spec.TargetReference != nil:
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("targetRef"), "selector and targetRef are mutually exclusive: give one"))
	case spec.TargetReference != nil:
		allErrs = append(allErrs, validateTargetReference(spec.TargetReference, fldPath.Child("targetRef"))...)
	default:
		allErrs = append(allErrs, appsvalidation.ValidateNonEmptySelector(spec.Selector, fldPath.Child("selector"))...)
	}
	switch {
	case spec.MaxUnavailable == nil && spec.MinAvailable == nil:
		allErrs = append(allErrs, field.Required(fldPath.Child("maxUnavailable"), "give maxUnavailable or minAvailable"))
	case spec.MaxUnavailable != nil && spec.MinAvailable != nil:
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("minAvailable"), "maxUnavailable and minAvailable are mutually exclusive: give one"))
	default:
		allErrs = append(allErrs, appsvalidation.ValidateIntOrPercent(spec.MaxUnavailable, fldPath.Child("maxUnavailable"))...)
		allErrs = append(allErrs, appsvalidation.ValidateIntOrPercent(spec.MinAvailable, fldPath.Child("minAvailable"))...)
	}
	seen := map[policy.PubOperation]bool{}
	for i, op := range spec.ProtectOperations {
		p := fldPath.Child("protectOperations").Index(i)
		switch {
		case !slices.Contains(policy.PubOperations, op):
			allErrs = append(allErrs, field.NotSupported(p, op, policy.PubOperations))
		case seen[op]:
			allErrs = append(allErrs, field.Duplicate(p, op))
		}
		seen[op] = true
	}
	if spec.ProtectTotalReplicas != nil && *spec.ProtectTotalReplicas < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("protectTotalReplicas"), *spec.ProtectTotalReplicas, "must be at least 1"))
	}
	if spec.IgnoredPodSelector != nil {
		allErrs = append(allErrs, appsvalidation.ValidateNonEmptySelector(spec.IgnoredPodSelector, fldPath.Child("ignoredPodSelector"))...)
	}
	return allErrs
}

func validateTargetReference(ref *policy.TargetReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref.APIVersion == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("apiVersion"), "the workload's apiVersion, e.g. apps.kruise.io/v1alpha1"))
	} else if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	if ref.Kind == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("kind"), "the workload's kind, e.g. CloneSet"))
	}
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), "the workload's name"))
	}
	return allErrs
}
