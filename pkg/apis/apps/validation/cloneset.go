package validation

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

// ValidateCloneSet validates a CloneSet on creation.
func ValidateCloneSet(cs *apps.CloneSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&cs.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metadataPath)
	allErrs = append(allErrs, validateCloneSetV1beta1Strategy(cs.Annotations)...)
	allErrs = append(allErrs, validateStayInServiceContainers(cs.Annotations, &cs.Spec.Template)...)
	return append(allErrs, validateCloneSetSpec(&cs.Spec, specPath)...)
}

// validateCloneSetV1beta1Strategy validates the v1beta1 update strategy type and podUpdatePolicy
// a CloneSet written at v1beta1 carries in its annotation when the hub's one type cannot say them
// (OnDelete with a podUpdatePolicy, or values that are not OpenKruise's): the errors name the
// v1beta1 fields, the only version that can send them.
func validateCloneSetV1beta1Strategy(annotations map[string]string) field.ErrorList {
	t, policy, ok, err := v1beta1.ParseV1beta1Fields(annotations)
	if err != nil {
		return field.ErrorList{field.Invalid(metadataPath.Child("annotations").Key(v1beta1.V1beta1FieldsAnnotation),
			annotations[v1beta1.V1beta1FieldsAnnotation], "not the v1beta1 fields this server writes: "+err.Error())}
	}
	if !ok {
		return nil
	}
	usPath := specPath.Child("updateStrategy")
	allErrs := validateEnum(t, []string{string(v1beta1.RollingUpdateCloneSetUpdateStrategyType),
		string(v1beta1.OnDeleteCloneSetUpdateStrategyType)}, usPath.Child("type"))
	if policy != "" {
		allErrs = append(allErrs, validateEnum(policy, []string{string(v1beta1.RecreateCloneSetPodUpdateStrategyType),
			string(v1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType), string(v1beta1.InPlaceOnlyCloneSetPodUpdateStrategyType)},
			usPath.Child("rollingUpdate", "podUpdatePolicy"))...)
	}
	return allErrs
}

// ValidateCloneSetUpdate validates an update of a CloneSet. As in OpenKruise, every field of the spec
// may change except the selector; with updateStrategy.type InPlaceOnly the Pod template may change
// only in what can be updated in place.
func ValidateCloneSetUpdate(newObj, oldObj *apps.CloneSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	allErrs = append(allErrs, validateCloneSetV1beta1Strategy(newObj.Annotations)...)
	allErrs = append(allErrs, validateStayInServiceContainers(newObj.Annotations, &newObj.Spec.Template)...)
	allErrs = append(allErrs, validateCloneSetSpec(&newObj.Spec, specPath)...)
	if !apiequality.Semantic.DeepEqual(newObj.Spec.Selector, oldObj.Spec.Selector) {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("selector"),
			"the selector of a CloneSet cannot be changed after creation; create a new CloneSet instead"))
	}
	if newObj.Spec.UpdateStrategy.Type == apps.InPlaceOnlyCloneSetUpdateStrategyType {
		allErrs = append(allErrs, validateInPlaceOnlyTemplateChange(&newObj.Spec.Template.Spec,
			&oldObj.Spec.Template.Spec, specPath.Child("template", "spec"))...)
	}
	return allErrs
}

// ValidateCloneSetStatusUpdate validates an update of a CloneSet's status.
func ValidateCloneSetStatusUpdate(newObj, oldObj *apps.CloneSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	s := &newObj.Status
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, statusPath.Child("observedGeneration"))...)
	allErrs = append(allErrs, validateCounters(statusPath, map[string]int32{
		"replicas":                 s.Replicas,
		"readyReplicas":            s.ReadyReplicas,
		"availableReplicas":        s.AvailableReplicas,
		"updatedReplicas":          s.UpdatedReplicas,
		"updatedReadyReplicas":     s.UpdatedReadyReplicas,
		"updatedAvailableReplicas": s.UpdatedAvailableReplicas,
		"expectedUpdatedReplicas":  s.ExpectedUpdatedReplicas,
	})...)
	return append(allErrs, validateOptionalNonNegative(s.CollisionCount, statusPath.Child("collisionCount"))...)
}

func validateCloneSetSpec(spec *apps.CloneSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	replicas := 1 // the default, for scaling percentages when replicas was left out
	if spec.Replicas != nil {
		replicas = int(*spec.Replicas)
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.Replicas), fldPath.Child("replicas"))...)
	}
	allErrs = append(allErrs, validateSelectorMatchesTemplate(spec.Selector, &spec.Template, fldPath)...)

	tmplPath := fldPath.Child("template")
	volumes, errs := validateVolumes(spec.Template.Spec.Volumes, tmplPath.Child("spec", "volumes"))
	allErrs = append(allErrs, errs...)
	claims, errs := validateVolumeClaimTemplates(spec.VolumeClaimTemplates, volumes, fldPath.Child("volumeClaimTemplates"))
	allErrs = append(allErrs, errs...)
	allErrs = append(allErrs, validatePodTemplate(&spec.Template, volumes.Union(claims), tmplPath)...)

	allErrs = append(allErrs, validateCloneSetScaleStrategy(&spec.ScaleStrategy, fldPath.Child("scaleStrategy"))...)
	allErrs = append(allErrs, validateCloneSetUpdateStrategy(&spec.UpdateStrategy, replicas, fldPath.Child("updateStrategy"))...)
	allErrs = append(allErrs, validateOptionalNonNegative(spec.RevisionHistoryLimit, fldPath.Child("revisionHistoryLimit"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	allErrs = append(allErrs, validateLifecycle(spec.Lifecycle, fldPath.Child("lifecycle"))...)
	return append(allErrs, validateProgressDeadline(spec, fldPath.Child("progressDeadlineSeconds"))...)
}

// validateProgressDeadline checks progressDeadlineSeconds as OpenKruise does: not negative and,
// unless it is math.MaxInt32 (which means no deadline), greater than minReadySeconds, as no Pod
// can become available, and so the CloneSet either, before minReadySeconds have passed.
func validateProgressDeadline(spec *apps.CloneSetSpec, fldPath *field.Path) field.ErrorList {
	pds := spec.ProgressDeadlineSeconds
	if pds == nil {
		return nil
	}
	allErrs := apivalidation.ValidateNonnegativeField(int64(*pds), fldPath)
	if *pds != math.MaxInt32 && *pds <= spec.MinReadySeconds {
		allErrs = append(allErrs, field.Invalid(fldPath, *pds, "must be greater than minReadySeconds"))
	}
	return allErrs
}

// validateSelectorMatchesTemplate checks a workload selector: required, valid, not empty, and
// matching the labels of the Pods the workload creates.
func validateSelectorMatchesTemplate(sel *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateRequiredSelector(sel, fldPath.Child("selector"))
	if len(allErrs) > 0 {
		return allErrs
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return append(allErrs, field.Invalid(fldPath.Child("selector"), metav1.FormatLabelSelector(sel), err.Error()))
	}
	if !selector.Matches(labels.Set(tmpl.Labels)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("template", "metadata", "labels"), tmpl.Labels,
			fmt.Sprintf("must match the selector %q, or the workload would not own the Pods it creates", selector.String())))
	}
	return allErrs
}

func validateVolumeClaimTemplates(pvcs []corev1.PersistentVolumeClaim, volumes sets.Set[string], fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range pvcs {
		pvc := &pvcs[i]
		p := fldPath.Index(i)
		namePath := p.Child("metadata", "name")
		switch {
		case pvc.Name == "":
			allErrs = append(allErrs, field.Required(namePath, "each volume claim template needs a name, used as the volume name in the Pods"))
		case len(utilvalidation.IsDNS1123Label(pvc.Name)) > 0:
			for _, msg := range utilvalidation.IsDNS1123Label(pvc.Name) {
				allErrs = append(allErrs, field.Invalid(namePath, pvc.Name, msg))
			}
		case names.Has(pvc.Name):
			allErrs = append(allErrs, field.Duplicate(namePath, pvc.Name))
		case volumes.Has(pvc.Name):
			allErrs = append(allErrs, field.Invalid(namePath, pvc.Name,
				"a volume of this name is already defined in spec.template.spec.volumes"))
		}
		names.Insert(pvc.Name)
		if len(pvc.Spec.AccessModes) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("spec", "accessModes"), "at least one access mode is required"))
		}
		if _, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
			allErrs = append(allErrs, field.Required(p.Child("spec", "resources", "requests").Key(string(corev1.ResourceStorage)),
				"the storage size to request is required"))
		}
		allErrs = append(allErrs, validateResourceList(pvc.Spec.Resources.Requests, p.Child("spec", "resources", "requests"))...)
	}
	return names, allErrs
}

func validateCloneSetScaleStrategy(s *apps.CloneSetScaleStrategy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, name := range s.PodsToDelete {
		p := fldPath.Child("podsToDelete").Index(i)
		if msgs := utilvalidation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			allErrs = append(allErrs, field.Invalid(p, name, "must be a Pod name: "+strings.Join(msgs, "; ")))
		} else if seen.Has(name) {
			allErrs = append(allErrs, field.Duplicate(p, name))
		}
		seen.Insert(name)
	}
	return append(allErrs, ValidateIntOrPercent(s.MaxUnavailable, fldPath.Child("maxUnavailable"))...)
}

var cloneSetUpdateTypes = []apps.CloneSetUpdateStrategyType{
	apps.RecreateCloneSetUpdateStrategyType,
	apps.InPlaceIfPossibleCloneSetUpdateStrategyType,
	apps.InPlaceOnlyCloneSetUpdateStrategyType,
	apps.OnDeleteCloneSetUpdateStrategyType,
}

func validateCloneSetUpdateStrategy(s *apps.CloneSetUpdateStrategy, replicas int, fldPath *field.Path) field.ErrorList {
	allErrs := validateEnum(s.Type, cloneSetUpdateTypes, fldPath.Child("type"))
	allErrs = append(allErrs, ValidateIntOrPercent(s.Partition, fldPath.Child("partition"))...)
	allErrs = append(allErrs, validateSurgeAndUnavailable(s, replicas, fldPath)...)
	allErrs = append(allErrs, validatePriorityStrategy(s.PriorityStrategy, fldPath.Child("priorityStrategy"))...)
	allErrs = append(allErrs, validateScatterStrategy(s.ScatterStrategy, fldPath.Child("scatterStrategy"))...)
	if s.InPlaceUpdateStrategy != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(s.InPlaceUpdateStrategy.GracePeriodSeconds),
			fldPath.Child("inPlaceUpdateStrategy", "gracePeriodSeconds"))...)
	}
	return allErrs
}

// validateSurgeAndUnavailable applies OpenKruise's rules: both are counts or percentages, they may
// not both round to 0 (the update could never start), and InPlaceOnly never surges.
func validateSurgeAndUnavailable(s *apps.CloneSetUpdateStrategy, replicas int, fldPath *field.Path) field.ErrorList {
	muPath, msPath := fldPath.Child("maxUnavailable"), fldPath.Child("maxSurge")
	allErrs := ValidateIntOrPercent(s.MaxUnavailable, muPath)
	allErrs = append(allErrs, ValidateIntOrPercent(s.MaxSurge, msPath)...)
	if len(allErrs) > 0 {
		return allErrs
	}
	maxUnavailable, maxSurge := scaledValue(s.MaxUnavailable, replicas), scaledValue(s.MaxSurge, replicas)
	if s.Type == apps.InPlaceOnlyCloneSetUpdateStrategyType && maxSurge > 0 {
		allErrs = append(allErrs, field.Forbidden(msPath,
			"maxSurge cannot be used with updateStrategy.type InPlaceOnly, which never creates extra Pods"))
	}
	// OnDelete updates no Pod, and v1beta1 gives it no rolling update parameters to default.
	if replicas > 0 && maxUnavailable < 1 && maxSurge < 1 && s.Type != apps.OnDeleteCloneSetUpdateStrategyType {
		allErrs = append(allErrs, field.Invalid(muPath, s.MaxUnavailable.String(), fmt.Sprintf(
			"maxUnavailable and maxSurge may not both be 0 for %d replicas, or no Pod could ever be updated", replicas)))
	}
	return allErrs
}

// validateInPlaceOnlyTemplateChange refuses template changes that cannot be made in place: only
// container images and resources may change.
func validateInPlaceOnlyTemplateChange(newSpec, oldSpec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	const msg = "with updateStrategy.type InPlaceOnly only the images and resources of existing containers may change; " +
		"use InPlaceIfPossible to allow other changes (which recreate Pods)"
	if len(newSpec.Containers) != len(oldSpec.Containers) {
		return field.ErrorList{field.Forbidden(fldPath.Child("containers"), msg)}
	}
	masked := newSpec.DeepCopy()
	for i := range masked.Containers {
		masked.Containers[i].Image = oldSpec.Containers[i].Image
		masked.Containers[i].Resources = oldSpec.Containers[i].Resources
	}
	if !apiequality.Semantic.DeepEqual(masked, oldSpec) {
		return field.ErrorList{field.Forbidden(fldPath, msg)}
	}
	return nil
}

type namedHook struct {
	name string
	hook *pub.LifecycleHook
}

func validateLifecycle(l *pub.Lifecycle, fldPath *field.Path) field.ErrorList {
	if l == nil {
		return nil
	}
	var allErrs field.ErrorList
	for _, h := range []namedHook{{"preDelete", l.PreDelete}, {"inPlaceUpdate", l.InPlaceUpdate}, {"preNormal", l.PreNormal}} {
		if h.hook == nil {
			continue
		}
		p := fldPath.Child(h.name)
		allErrs = append(allErrs, metav1validation.ValidateLabels(h.hook.LabelsHandler, p.Child("labelsHandler"))...)
		for i, f := range h.hook.FinalizersHandler {
			allErrs = append(allErrs, apivalidation.ValidateFinalizerName(f, p.Child("finalizersHandler").Index(i))...)
		}
	}
	return allErrs
}
