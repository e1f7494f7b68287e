package validation

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/features"
)

// MaxStatefulSetMinReadySeconds is the largest updateStrategy.rollingUpdate.minReadySeconds of an
// Advanced StatefulSet (OpenKruise's limit).
const MaxStatefulSetMinReadySeconds = 300

// ValidateStatefulSet validates an Advanced StatefulSet on creation. The rules are OpenKruise's
// webhook's, except that the InPlaceUpdateReady readiness gate is not required in the template for
// in-place updates: the controller adds it to the Pods it creates, as for CloneSets.
func ValidateStatefulSet(sts *apps.StatefulSet) field.ErrorList {
	// Pods are named <set>-<ordinal> and take it as their hostname: a DNS label, as for apps/v1.
	allErrs := apivalidation.ValidateObjectMeta(&sts.ObjectMeta, true, apivalidation.NameIsDNSLabel, metadataPath)
	allErrs = append(allErrs, validateStayInServiceContainers(sts.Annotations, &sts.Spec.Template)...)
	return append(allErrs, validateStatefulSetSpec(&sts.Spec, specPath)...)
}

// ValidateStatefulSetUpdate validates an update of an Advanced StatefulSet: as in OpenKruise, the
// selector, serviceName and podManagementPolicy cannot change, and with podUpdatePolicy InPlaceOnly
// the template may change only in what can be updated in place.
func ValidateStatefulSetUpdate(newObj, oldObj *apps.StatefulSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	allErrs = append(allErrs, validateStatefulSetSpec(&newObj.Spec, specPath)...)
	allErrs = append(allErrs, validateStayInServiceContainers(newObj.Annotations, &newObj.Spec.Template)...)
	immutable := []struct {
		name     string
		new, old any
	}{
		{"selector", newObj.Spec.Selector, oldObj.Spec.Selector},
		{"serviceName", newObj.Spec.ServiceName, oldObj.Spec.ServiceName},
		{"podManagementPolicy", newObj.Spec.PodManagementPolicy, oldObj.Spec.PodManagementPolicy},
	}
	for _, f := range immutable {
		if !apiequality.Semantic.DeepEqual(f.new, f.old) {
			allErrs = append(allErrs, field.Forbidden(specPath.Child(f.name),
				"cannot be changed after creation (only replicas, template, updateStrategy, scaleStrategy, volumeClaimTemplates, "+
					"volumeClaimUpdateStrategy, reserveOrdinals, ordinals, lifecycle, revisionHistoryLimit and "+
					"persistentVolumeClaimRetentionPolicy can); create a new StatefulSet instead"))
		}
	}
	if ru := newObj.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.PodUpdatePolicy == apps.InPlaceOnlyPodUpdateStrategyType {
		allErrs = append(allErrs, validateInPlaceOnlyTemplateChange(&newObj.Spec.Template.Spec,
			&oldObj.Spec.Template.Spec, specPath.Child("template", "spec"))...)
	}
	if features.Enabled(features.StatefulSetAutoResizePVCGate) &&
		newObj.Spec.VolumeClaimUpdateStrategy.Type == apps.OnPodRollingUpdateVolumeClaimUpdateStrategyType {
		allErrs = append(allErrs, validateClaimTemplatesResizeOnly(newObj.Spec.VolumeClaimTemplates,
			oldObj.Spec.VolumeClaimTemplates, specPath.Child("volumeClaimTemplates"))...)
	}
	return allErrs
}

// validateClaimTemplatesResizeOnly: with StatefulSetAutoResizePVCGate, claims that follow their
// templates on the rolling update (OnPodRollingUpdate) let the templates change only in what a
// claim can change, as OpenKruise's ValidateVolumeClaimTemplateUpdate: none added, removed or
// renamed, and each keeping its StorageClass and access modes (its size may change). OpenKruise
// also refuses a size change whose StorageClass does not allow expansion; inplace-apiserver does
// not read StorageClasses: the controller then leaves the claims as they are, with an event.
func validateClaimTemplatesResizeOnly(templates, old []corev1.PersistentVolumeClaim, fldPath *field.Path) field.ErrorList {
	if len(templates) != len(old) {
		return field.ErrorList{field.Invalid(fldPath, len(templates),
			"volumeClaimTemplates cannot be added or removed with volumeClaimUpdateStrategy OnPodRollingUpdate")}
	}
	byName := make(map[string]*corev1.PersistentVolumeClaim, len(old))
	for i := range old {
		byName[old[i].Name] = &old[i]
	}
	var allErrs field.ErrorList
	for i, t := range templates {
		o, ok := byName[t.Name]
		if !ok {
			allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("metadata", "name"),
				"volumeClaimTemplates cannot be renamed with volumeClaimUpdateStrategy OnPodRollingUpdate"))
			continue
		}
		sc, oldSC := t.Spec.StorageClassName, o.Spec.StorageClassName
		if (sc != nil && oldSC != nil && *sc != *oldSC) || !apiequality.Semantic.DeepEqual(t.Spec.AccessModes, o.Spec.AccessModes) {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i), t.Name,
				"only the storage size of a volumeClaimTemplate can change with volumeClaimUpdateStrategy OnPodRollingUpdate, not its storageClassName or accessModes"))
		}
	}
	return allErrs
}

// ValidateStatefulSetStatusUpdate validates an update of an Advanced StatefulSet's status.
func ValidateStatefulSetStatusUpdate(newObj, oldObj *apps.StatefulSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	s := &newObj.Status
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, statusPath.Child("observedGeneration"))...)
	allErrs = append(allErrs, validateCounters(statusPath, map[string]int32{
		"replicas":                 s.Replicas,
		"readyReplicas":            s.ReadyReplicas,
		"availableReplicas":        s.AvailableReplicas,
		"currentReplicas":          s.CurrentReplicas,
		"updatedReplicas":          s.UpdatedReplicas,
		"updatedReadyReplicas":     s.UpdatedReadyReplicas,
		"updatedAvailableReplicas": s.UpdatedAvailableReplicas,
	})...)
	return append(allErrs, validateOptionalNonNegative(s.CollisionCount, statusPath.Child("collisionCount"))...)
}

var (
	podManagementPolicies  = []appsv1.PodManagementPolicyType{appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement}
	statefulSetUpdateTypes = []appsv1.StatefulSetUpdateStrategyType{appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType}
	podUpdatePolicies      = []apps.PodUpdateStrategyType{apps.RecreatePodUpdateStrategyType, apps.InPlaceIfPossiblePodUpdateStrategyType, apps.InPlaceOnlyPodUpdateStrategyType}
	claimUpdateTypes       = []apps.VolumeClaimUpdateStrategyType{apps.OnPodRollingUpdateVolumeClaimUpdateStrategyType, apps.OnPVCDeleteVolumeClaimUpdateStrategyType}
	retentionPolicies      = []apps.PersistentVolumeClaimRetentionPolicyType{apps.RetainPersistentVolumeClaimRetentionPolicyType, apps.DeletePersistentVolumeClaimRetentionPolicyType}
)

func validateStatefulSetSpec(spec *apps.StatefulSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Replicas != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.Replicas), fldPath.Child("replicas"))...)
	}
	allErrs = append(allErrs, validateSelectorMatchesTemplate(spec.Selector, &spec.Template, fldPath)...)
	tmplPath := fldPath.Child("template")
	volumes, errs := validateVolumes(spec.Template.Spec.Volumes, tmplPath.Child("spec", "volumes"))
	allErrs = append(allErrs, errs...)
	claims, errs := validateVolumeClaimTemplates(spec.VolumeClaimTemplates, volumes, fldPath.Child("volumeClaimTemplates"))
	allErrs = append(allErrs, errs...)
	allErrs = append(allErrs, validatePodTemplate(&spec.Template, volumes.Union(claims), tmplPath)...)

	allErrs = append(allErrs, validateEnum(spec.PodManagementPolicy, podManagementPolicies, fldPath.Child("podManagementPolicy"))...)
	allErrs = append(allErrs, validateEnum(spec.VolumeClaimUpdateStrategy.Type, claimUpdateTypes, fldPath.Child("volumeClaimUpdateStrategy", "type"))...)
	allErrs = append(allErrs, validateStatefulSetUpdateStrategy(spec, fldPath.Child("updateStrategy"))...)
	allErrs = append(allErrs, validateOptionalNonNegative(spec.RevisionHistoryLimit, fldPath.Child("revisionHistoryLimit"))...)
	allErrs = append(allErrs, validateReserveOrdinals(spec.ReserveOrdinals, fldPath.Child("reserveOrdinals"))...)
	allErrs = append(allErrs, validateLifecycle(spec.Lifecycle, fldPath.Child("lifecycle"))...)
	if s := spec.ScaleStrategy; s != nil && s.MaxUnavailable != nil {
		allErrs = append(allErrs, validateStatefulSetMaxUnavailable(s.MaxUnavailable, spec.PodManagementPolicy, fldPath.Child("scaleStrategy", "maxUnavailable"))...)
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		pPath := fldPath.Child("persistentVolumeClaimRetentionPolicy")
		allErrs = append(allErrs, validateEnum(p.WhenDeleted, retentionPolicies, pPath.Child("whenDeleted"))...)
		allErrs = append(allErrs, validateEnum(p.WhenScaled, retentionPolicies, pPath.Child("whenScaled"))...)
	}
	if o := spec.Ordinals; o != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(o.Start), fldPath.Child("ordinals", "start"))...)
	}
	return allErrs
}

func validateStatefulSetUpdateStrategy(spec *apps.StatefulSetSpec, fldPath *field.Path) field.ErrorList {
	s := &spec.UpdateStrategy
	allErrs := validateEnum(s.Type, statefulSetUpdateTypes, fldPath.Child("type"))
	ru := s.RollingUpdate
	if ru == nil {
		return allErrs
	}
	ruPath := fldPath.Child("rollingUpdate")
	if s.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return append(allErrs, field.Forbidden(ruPath, "only allowed with updateStrategy.type RollingUpdate"))
	}
	allErrs = append(allErrs, validateOptionalNonNegative(ru.Partition, ruPath.Child("partition"))...)
	if ru.MinReadySeconds != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*ru.MinReadySeconds), ruPath.Child("minReadySeconds"))...)
		if *ru.MinReadySeconds > MaxStatefulSetMinReadySeconds {
			allErrs = append(allErrs, field.Invalid(ruPath.Child("minReadySeconds"), *ru.MinReadySeconds,
				fmt.Sprintf("must be no more than %d seconds", MaxStatefulSetMinReadySeconds)))
		}
	}
	if ru.MaxUnavailable != nil {
		allErrs = append(allErrs, validateStatefulSetMaxUnavailable(ru.MaxUnavailable, spec.PodManagementPolicy, ruPath.Child("maxUnavailable"))...)
	}
	allErrs = append(allErrs, validateEnum(ru.PodUpdatePolicy, podUpdatePolicies, ruPath.Child("podUpdatePolicy"))...)
	if ru.UnorderedUpdate != nil {
		uPath := ruPath.Child("unorderedUpdate")
		if spec.PodManagementPolicy != appsv1.ParallelPodManagement {
			allErrs = append(allErrs, field.Forbidden(uPath,
				"only allowed with podManagementPolicy Parallel: OrderedReady updates Pods in reverse ordinal order"))
		}
		allErrs = append(allErrs, validatePriorityStrategy(ru.UnorderedUpdate.PriorityStrategy, uPath.Child("priorityStrategy"))...)
	}
	if ru.InPlaceUpdateStrategy != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(ru.InPlaceUpdateStrategy.GracePeriodSeconds),
			ruPath.Child("inPlaceUpdateStrategy", "gracePeriodSeconds"))...)
	}
	return allErrs
}

// validateStatefulSetMaxUnavailable applies OpenKruise's rules: at least 1 (a percentage rounds
// up), and above 1 only with podManagementPolicy Parallel, since OrderedReady waits for each Pod.
func validateStatefulSetMaxUnavailable(v *intstr.IntOrString, policy appsv1.PodManagementPolicyType, fldPath *field.Path) field.ErrorList {
	if errs := ValidateIntOrPercent(v, fldPath); len(errs) > 0 {
		return errs
	}
	if scaledValue(v, 1) < 1 {
		return field.ErrorList{field.Invalid(fldPath, v.String(), "must be at least 1, or no Pod could ever be updated")}
	}
	if policy != appsv1.ParallelPodManagement && (v.Type != intstr.Int || v.IntVal != 1) {
		return field.ErrorList{field.Invalid(fldPath, v.String(),
			"must be 1 unless podManagementPolicy is Parallel: OrderedReady updates one Pod at a time")}
	}
	return nil
}

// validateReserveOrdinals checks each entry: a non-negative ordinal, or a range "a-b" with a <= b.
func validateReserveOrdinals(ordinals []intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, o := range ordinals {
		p := fldPath.Index(i)
		switch o.Type {
		case intstr.Int:
			if o.IntVal < 0 {
				allErrs = append(allErrs, field.Invalid(p, o.IntVal, "must be greater than or equal to 0"))
			}
		default:
			if _, _, err := ParseOrdinalRange(o.StrVal); err != nil {
				allErrs = append(allErrs, field.Invalid(p, o.StrVal, err.Error()))
			}
		}
	}
	return allErrs
}

// ParseOrdinalRange parses a reserveOrdinals range "a-b" (both ends included, 0 <= a <= b).
func ParseOrdinalRange(s string) (int, int, error) {
	from, to, ok := strings.Cut(s, "-")
	a, errA := strconv.Atoi(strings.TrimSpace(from))
	b, errB := strconv.Atoi(strings.TrimSpace(to))
	if !ok || errA != nil || errB != nil || a < 0 || b < 0 {
		return 0, 0, fmt.Errorf("must be an ordinal or a range of ordinals such as \"5-10\"")
	}
	if a > b {
		return 0, 0, fmt.Errorf("the range starts after it ends")
	}
	return a, b, nil
}
