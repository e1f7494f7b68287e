package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// The path of the annotation naming a canary's base SidecarSet, for the errors about it.
var sidecarSetBasePath = metadataPath.Child("annotations").Key(v1alpha1.SidecarSetBaseAnnotation)

// validateSidecarSetCanary checks what OpenKruise master's validateSidecarSetCanaryAnnotations
// checks without reading other SidecarSets (the SidecarSet admission plugin checks that the base
// exists and is not a canary): a canary (v1alpha1.SidecarSetCanaryBase) cannot be its own base,
// cannot change its base on update (oldObj nil on create; as OpenKruise, a SidecarSet that had no
// base annotation cannot become a canary), and only injects: its updateStrategy.type must be
// NotUpdate, since its Pods are upgraded by nobody (the base skips them, being not injected there).
// A SidecarSet that is not a canary is not checked, whatever its annotations.
func validateSidecarSetCanary(newObj, oldObj *apps.SidecarSet) field.ErrorList {
	canary, base := v1alpha1.SidecarSetCanaryBase(newObj.Annotations)
	if !canary {
		return nil
	}
	var allErrs field.ErrorList
	if base == newObj.Name {
		allErrs = append(allErrs, field.Invalid(sidecarSetBasePath, base, "a canary SidecarSet cannot be its own base"))
	}
	if oldObj != nil {
		if oldBase := oldObj.Annotations[v1alpha1.SidecarSetBaseAnnotation]; oldBase != base {
			allErrs = append(allErrs, field.Invalid(sidecarSetBasePath, base, fmt.Sprintf(
				"the base of a canary SidecarSet is immutable (was %q); create a new canary SidecarSet for another base", oldBase)))
		}
	}
	if t := newObj.Spec.UpdateStrategy.Type; t != apps.NotUpdateSidecarSetStrategyType {
		allErrs = append(allErrs, field.Invalid(specPath.Child("updateStrategy", "type"), t, fmt.Sprintf(
			"a canary SidecarSet (annotation %s) only injects: updateStrategy.type must be %s",
			v1alpha1.SidecarSetCanaryAnnotation, apps.NotUpdateSidecarSetStrategyType)))
	}
	return allErrs
}
