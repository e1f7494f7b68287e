package validation

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// ValidateDaemonSet validates an Advanced DaemonSet on creation (OpenKruise's webhook's rules).
func ValidateDaemonSet(ds *apps.DaemonSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&ds.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metadataPath)
	allErrs = append(allErrs, refuseStayInServiceContainers(ds.Annotations)...)
	return append(allErrs, validateDaemonSetSpec(&ds.Spec, specPath)...)
}

// ValidateDaemonSetUpdate validates an update of an Advanced DaemonSet: the selector cannot change.
func ValidateDaemonSetUpdate(newObj, oldObj *apps.DaemonSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	allErrs = append(allErrs, validateDaemonSetSpec(&newObj.Spec, specPath)...)
	allErrs = append(allErrs, refuseStayInServiceContainers(newObj.Annotations)...)
	if !apiequality.Semantic.DeepEqual(newObj.Spec.Selector, oldObj.Spec.Selector) {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("selector"),
			"the selector of a DaemonSet cannot be changed after creation; create a new DaemonSet instead"))
	}
	return allErrs
}

// ValidateDaemonSetStatusUpdate validates an update of an Advanced DaemonSet's status.
func ValidateDaemonSetStatusUpdate(newObj, oldObj *apps.DaemonSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	s := &newObj.Status
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, statusPath.Child("observedGeneration"))...)
	allErrs = append(allErrs, validateCounters(statusPath, map[string]int32{
		"currentNumberScheduled": s.CurrentNumberScheduled,
		"numberMisscheduled":     s.NumberMisscheduled,
		"desiredNumberScheduled": s.DesiredNumberScheduled,
		"numberReady":            s.NumberReady,
		"updatedNumberScheduled": s.UpdatedNumberScheduled,
		"numberAvailable":        s.NumberAvailable,
		"numberUnavailable":      s.NumberUnavailable,
	})...)
	return append(allErrs, validateOptionalNonNegative(s.CollisionCount, statusPath.Child("collisionCount"))...)
}

var (
	daemonSetUpdateTypes = []apps.DaemonSetUpdateStrategyType{apps.RollingUpdateDaemonSetStrategyType, apps.OnDeleteDaemonSetStrategyType}
	rollingUpdateTypes   = []apps.RollingUpdateType{apps.StandardRollingUpdateType, apps.InplaceRollingUpdateType, apps.DeprecatedSurgingRollingUpdateType}
)

func validateDaemonSetSpec(spec *apps.DaemonSetSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateSelectorMatchesTemplate(spec.Selector, &spec.Template, fldPath)
	tmplPath := fldPath.Child("template")
	volumes, errs := validateVolumes(spec.Template.Spec.Volumes, tmplPath.Child("spec", "volumes"))
	allErrs = append(allErrs, errs...)
	allErrs = append(allErrs, validatePodTemplate(&spec.Template, volumes, tmplPath)...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	allErrs = append(allErrs, ValidateIntOrPercent(spec.BurstReplicas, fldPath.Child("burstReplicas"))...)
	allErrs = append(allErrs, validateOptionalNonNegative(spec.RevisionHistoryLimit, fldPath.Child("revisionHistoryLimit"))...)
	allErrs = append(allErrs, validateLifecycle(spec.Lifecycle, fldPath.Child("lifecycle"))...)
	if spec.Lifecycle != nil && spec.Lifecycle.InPlaceUpdate != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("lifecycle", "inPlaceUpdate"),
			"a DaemonSet has no inPlaceUpdate hook (OpenKruise's DaemonSet has none); use preDelete"))
	}
	return append(allErrs, validateDaemonSetUpdateStrategy(&spec.UpdateStrategy, fldPath.Child("updateStrategy"))...)
}

func validateDaemonSetUpdateStrategy(s *apps.DaemonSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	allErrs := validateEnum(s.Type, daemonSetUpdateTypes, fldPath.Child("type"))
	ru := s.RollingUpdate
	if ru == nil {
		return allErrs
	}
	ruPath := fldPath.Child("rollingUpdate")
	if s.Type == apps.OnDeleteDaemonSetStrategyType {
		return append(allErrs, field.Forbidden(ruPath, "only allowed with updateStrategy.type RollingUpdate"))
	}
	allErrs = append(allErrs, validateEnum(ru.Type, rollingUpdateTypes, ruPath.Child("rollingUpdateType"))...)
	muPath, msPath := ruPath.Child("maxUnavailable"), ruPath.Child("maxSurge")
	errs := append(ValidateIntOrPercent(ru.MaxUnavailable, muPath), ValidateIntOrPercent(ru.MaxSurge, msPath)...)
	allErrs = append(allErrs, errs...)
	if len(errs) == 0 {
		// Judged on the values as written (a percentage counts as non-zero), as OpenKruise does:
		// one Pod per node cannot both surge and go unavailable, and must do one of them.
		unavailable, surge := nonZero(ru.MaxUnavailable), nonZero(ru.MaxSurge)
		switch {
		case unavailable && surge:
			allErrs = append(allErrs, field.Invalid(msPath, ru.MaxSurge.String(), "may not be set when maxUnavailable is non-zero"))
		case !unavailable && !surge:
			allErrs = append(allErrs, field.Required(muPath, "cannot be 0 when maxSurge is 0, or no Pod could ever be updated"))
		}
		if ru.Type == apps.InplaceRollingUpdateType && surge {
			allErrs = append(allErrs, field.Invalid(msPath, ru.MaxSurge.String(), "must be 0 with rollingUpdateType InPlaceIfPossible, which updates the Pod in place"))
		}
		if ru.Type == apps.DeprecatedSurgingRollingUpdateType && unavailable {
			allErrs = append(allErrs, field.Invalid(muPath, ru.MaxUnavailable.String(), "must be 0 with rollingUpdateType Surging"))
		}
	}
	if ru.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(ru.Selector, metav1validation.LabelSelectorValidationOptions{}, ruPath.Child("selector"))...)
	}
	return append(allErrs, ValidateIntOrPercent(ru.Partition, ruPath.Child("partition"))...)
}

func nonZero(v *intstr.IntOrString) bool {
	return v != nil && scaledValue(v, 100) != 0
}

// refuseStayInServiceContainers refuses pub.StayInServiceContainersKey on an Advanced DaemonSet:
// its Pods have no lifecycle state, so a Pod that stays Ready through its update would not count
// against maxUnavailable and the update would reach every node at once.
func refuseStayInServiceContainers(annotations map[string]string) field.ErrorList {
	if _, ok := annotations[pub.StayInServiceContainersKey]; !ok {
		return nil
	}
	return field.ErrorList{field.Forbidden(metadataPath.Child("annotations").Key(pub.StayInServiceContainersKey),
		"only for CloneSets and Advanced StatefulSets: an Advanced DaemonSet counts a Pod unavailable by its readiness alone, so Pods that stay in service during an update would not be held to maxUnavailable")}
}
