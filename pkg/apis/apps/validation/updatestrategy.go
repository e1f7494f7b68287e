package validation

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

func validatePriorityStrategy(s *pub.UpdatePriorityStrategy, fldPath *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var allErrs field.ErrorList
	if len(s.WeightPriority) > 0 && len(s.OrderPriority) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath, "only one of weightPriority and orderPriority may be set"))
	}
	for i := range s.WeightPriority {
		w := &s.WeightPriority[i]
		p := fldPath.Child("weightPriority").Index(i)
		if w.Weight < 0 || w.Weight > 100 {
			allErrs = append(allErrs, field.Invalid(p.Child("weight"), w.Weight, "must be between 0 and 100"))
		}
		allErrs = append(allErrs, ValidateNonEmptySelector(&w.MatchSelector, p.Child("matchSelector"))...)
	}
	for i, o := range s.OrderPriority {
		if o.OrderedKey == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("orderPriority").Index(i).Child("orderedKey"),
				"the label key whose integer value orders Pods is required"))
		}
	}
	return allErrs
}

func validateScatterStrategy(s pub.UpdateScatterStrategy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, term := range s {
		p := fldPath.Index(i)
		if term.Key == "" {
			allErrs = append(allErrs, field.Required(p.Child("key"), "the label key of the Pods to scatter is required"))
			continue
		}
		id := term.Key + "=" + term.Value
		if seen.Has(id) {
			allErrs = append(allErrs, field.Duplicate(p, id))
		}
		seen.Insert(id)
	}
	return allErrs
}
