package validation

import (
	"slices"
	"strconv"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateRequiredSelector checks a selector that must be set, valid and not empty.
func validateRequiredSelector(sel *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(fldPath, "a label selector is required")}
	}
	return ValidateNonEmptySelector(sel, fldPath)
}

// ValidateNonEmptySelector checks a selector is valid and selects something: OpenKruise refuses
// empty selectors, which would match every Pod (policy.kruise.io's validation uses it too).
func ValidateNonEmptySelector(sel *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	allErrs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, fldPath)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, "{}",
			"an empty selector would match every Pod; give at least one matchLabels or matchExpressions entry"))
	}
	return allErrs
}

// validateEnum checks v is one of allowed; empty means "the default" and is accepted (defaulting
// fills it in before objects are stored).
func validateEnum[T ~string](v T, allowed []T, fldPath *field.Path) field.ErrorList {
	if v == "" || slices.Contains(allowed, v) {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, v, allowed)}
}

func validateOptionalNonNegative[T int32 | int64](v *T, fldPath *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	return apivalidation.ValidateNonnegativeField(int64(*v), fldPath)
}

// validateCounters checks status counters are non-negative, in a stable order.
func validateCounters(fldPath *field.Path, counters map[string]int32) field.ErrorList {
	var allErrs field.ErrorList
	for _, name := range sets.List(sets.KeySet(counters)) {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(counters[name]), fldPath.Child(name))...)
	}
	return allErrs
}

// ValidateIntOrPercent checks a count or percentage: a non-negative integer, or "N%" with N <= 100
// (policy.kruise.io's validation uses it too).
func ValidateIntOrPercent(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	switch v.Type {
	case intstr.Int:
		if v.IntVal < 0 {
			return field.ErrorList{field.Invalid(fldPath, v.IntVal, "must be greater than or equal to 0")}
		}
	case intstr.String:
		pct, ok := parsePercent(v.StrVal)
		if !ok {
			return field.ErrorList{field.Invalid(fldPath, v.StrVal, "must be an integer, or a percentage string such as '20%'")}
		}
		if pct > 100 {
			return field.ErrorList{field.Invalid(fldPath, v.StrVal, "must not be greater than 100%")}
		}
	default:
		return field.ErrorList{field.Invalid(fldPath, v.String(), "must be an integer or a percentage")}
	}
	return nil
}

func parsePercent(s string) (int, bool) {
	if len(utilvalidation.IsValidPercent(s)) > 0 {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
	return n, err == nil
}

// scaledValue resolves a valid count or percentage against total, rounding percentages up as
// OpenKruise does; nil is 0.
func scaledValue(v *intstr.IntOrString, total int) int {
	if v == nil {
		return 0
	}
	if v.Type == intstr.Int {
		return int(v.IntVal)
	}
	pct, _ := parsePercent(v.StrVal)
	return (pct*total + 99) / 100
}
