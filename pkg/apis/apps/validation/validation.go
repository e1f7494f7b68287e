// Package validation checks apps.kruise.io objects (internal versions) before they are stored.
//
// The rules follow OpenKruise's admission webhooks (what they refuse, this package refuses), with a
// compact Pod template validation of our own in place of Kubernetes' internal core validation.
// Every error carries the path of the field at fault.
package validation

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// MinCRRActiveDeadlineSeconds is the smallest activeDeadlineSeconds a ContainerRecreateRequest may
// ask for (OpenKruise's limit).
const MinCRRActiveDeadlineSeconds = 3

var (
	metadataPath = field.NewPath("metadata")
	specPath     = field.NewPath("spec")
	statusPath   = field.NewPath("status")
)

// ---------------------------------------------------------------------------------------------
// CloneSet
// ---------------------------------------------------------------------------------------------

// ValidateCloneSet validates a CloneSet on creation.
func ValidateCloneSet(cs *apps.CloneSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&cs.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metadataPath)
	return append(allErrs, validateCloneSetSpec(&cs.Spec, specPath)...)
}

// ValidateCloneSetUpdate validates an update of a CloneSet. As in OpenKruise, every field of the spec
// may change except the selector; with updateStrategy.type InPlaceOnly the Pod template may change
// only in what can be updated in place.
func ValidateCloneSetUpdate(newObj, oldObj *apps.CloneSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
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
	return append(allErrs, validateIntOrPercent(s.MaxUnavailable, fldPath.Child("maxUnavailable"))...)
}

var cloneSetUpdateTypes = []apps.CloneSetUpdateStrategyType{
	apps.RecreateCloneSetUpdateStrategyType,
	apps.InPlaceIfPossibleCloneSetUpdateStrategyType,
	apps.InPlaceOnlyCloneSetUpdateStrategyType,
}

func validateCloneSetUpdateStrategy(s *apps.CloneSetUpdateStrategy, replicas int, fldPath *field.Path) field.ErrorList {
	allErrs := validateEnum(s.Type, cloneSetUpdateTypes, fldPath.Child("type"))
	allErrs = append(allErrs, validateIntOrPercent(s.Partition, fldPath.Child("partition"))...)
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
	allErrs := validateIntOrPercent(s.MaxUnavailable, muPath)
	allErrs = append(allErrs, validateIntOrPercent(s.MaxSurge, msPath)...)
	if len(allErrs) > 0 {
		return allErrs
	}
	maxUnavailable, maxSurge := scaledValue(s.MaxUnavailable, replicas), scaledValue(s.MaxSurge, replicas)
	if s.Type == apps.InPlaceOnlyCloneSetUpdateStrategyType && maxSurge > 0 {
		allErrs = append(allErrs, field.Forbidden(msPath,
			"maxSurge cannot be used with updateStrategy.type InPlaceOnly, which never creates extra Pods"))
	}
	if replicas > 0 && maxUnavailable < 1 && maxSurge < 1 {
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

// ---------------------------------------------------------------------------------------------
// Update priority and scatter (shared by CloneSet and SidecarSet)
// ---------------------------------------------------------------------------------------------

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
		allErrs = append(allErrs, validateNonEmptySelector(&w.MatchSelector, p.Child("matchSelector"))...)
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

// ---------------------------------------------------------------------------------------------
// SidecarSet
// ---------------------------------------------------------------------------------------------

// ValidateSidecarSet validates a SidecarSet on creation. SidecarSets are cluster-scoped.
//
// OpenKruise accepts names of letters, digits and '-' (upper case included); the name here must be a
// DNS-1123 label, because it is also used in ControllerRevision names and Pod annotations.
func ValidateSidecarSet(s *apps.SidecarSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&s.ObjectMeta, false, apivalidation.NameIsDNSLabel, metadataPath)
	return append(allErrs, validateSidecarSetSpec(&s.Spec, specPath)...)
}

// ValidateSidecarSetUpdate validates an update of a SidecarSet. The upgrade type of a container that
// already exists cannot change (its Pods run a hot-upgrade pair or a single container).
func ValidateSidecarSetUpdate(newObj, oldObj *apps.SidecarSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	allErrs = append(allErrs, validateSidecarSetSpec(&newObj.Spec, specPath)...)
	oldTypes := map[string]apps.SidecarContainerUpgradeType{}
	for _, c := range oldObj.Spec.Containers {
		oldTypes[c.Name] = c.UpgradeStrategy.UpgradeType
	}
	for i, c := range newObj.Spec.Containers {
		old, ok := oldTypes[c.Name]
		if ok && old != "" && c.UpgradeStrategy.UpgradeType != old {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("containers").Index(i).Child("upgradeStrategy", "upgradeType"),
				fmt.Sprintf("the upgrade type of container %q cannot change from %s; add a container under a new name instead", c.Name, old)))
		}
	}
	return allErrs
}

// ValidateSidecarSetStatusUpdate validates an update of a SidecarSet's status.
func ValidateSidecarSetStatusUpdate(newObj, oldObj *apps.SidecarSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	s := &newObj.Status
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, statusPath.Child("observedGeneration"))...)
	allErrs = append(allErrs, validateCounters(statusPath, map[string]int32{
		"matchedPods":      s.MatchedPods,
		"updatedPods":      s.UpdatedPods,
		"readyPods":        s.ReadyPods,
		"updatedReadyPods": s.UpdatedReadyPods,
	})...)
	return append(allErrs, validateOptionalNonNegative(s.CollisionCount, statusPath.Child("collisionCount"))...)
}

func validateSidecarSetSpec(spec *apps.SidecarSetSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateRequiredSelector(spec.Selector, fldPath.Child("selector"))
	allErrs = append(allErrs, validateSidecarSetNamespace(spec, fldPath)...)

	volumes, errs := validateVolumes(spec.Volumes, fldPath.Child("volumes"))
	allErrs = append(allErrs, errs...)
	if len(spec.InitContainers) == 0 && len(spec.Containers) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("containers"),
			"a SidecarSet must define at least one container or initContainer to inject"))
	}
	allErrs = append(allErrs, validateContainerLists(sidecarContainers(spec.InitContainers), sidecarContainers(spec.Containers), volumes, fldPath)...)
	for i := range spec.InitContainers {
		allErrs = append(allErrs, validateSidecarContainer(&spec.InitContainers[i], fldPath.Child("initContainers").Index(i))...)
	}
	for i := range spec.Containers {
		allErrs = append(allErrs, validateSidecarContainer(&spec.Containers[i], fldPath.Child("containers").Index(i))...)
	}

	allErrs = append(allErrs, validateSidecarSetUpdateStrategy(spec, fldPath.Child("updateStrategy"))...)
	allErrs = append(allErrs, validateInjectionStrategy(&spec.InjectionStrategy, fldPath.Child("injectionStrategy"))...)
	for i, s := range spec.ImagePullSecrets {
		if s.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("imagePullSecrets").Index(i).Child("name"), "the Secret name is required"))
		}
	}
	allErrs = append(allErrs, validateOptionalNonNegative(spec.RevisionHistoryLimit, fldPath.Child("revisionHistoryLimit"))...)
	return append(allErrs, validatePatchPodMetadata(spec.PatchPodMetadata, fldPath.Child("patchPodMetadata"))...)
}

func validateSidecarSetNamespace(spec *apps.SidecarSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Namespace != "" {
		for _, msg := range apivalidation.ValidateNamespaceName(spec.Namespace, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("namespace"), spec.Namespace, msg))
		}
	}
	if spec.NamespaceSelector == nil {
		return allErrs
	}
	if spec.Namespace != "" {
		return append(allErrs, field.Forbidden(fldPath.Child("namespaceSelector"),
			"namespace and namespaceSelector are mutually exclusive; set only one of them"))
	}
	return append(allErrs, validateNonEmptySelector(spec.NamespaceSelector, fldPath.Child("namespaceSelector"))...)
}

func sidecarContainers(in []apps.SidecarContainer) []corev1.Container {
	out := make([]corev1.Container, len(in))
	for i := range in {
		out[i] = in[i].Container
	}
	return out
}

var (
	podInjectPolicies  = []apps.PodInjectPolicyType{apps.BeforeAppContainerType, apps.AfterAppContainerType}
	upgradeTypes       = []apps.SidecarContainerUpgradeType{apps.SidecarContainerColdUpgrade, apps.SidecarContainerHotUpgrade}
	shareVolumeTypes   = []apps.ShareVolumePolicyType{apps.ShareVolumePolicyEnabled, apps.ShareVolumePolicyDisabled}
	sidecarUpdateTypes = []apps.SidecarSetUpdateStrategyType{apps.RollingUpdateSidecarSetStrategyType, apps.NotUpdateSidecarSetStrategyType}
	injectRevPolicies  = []apps.SidecarSetInjectRevisionPolicy{apps.AlwaysSidecarSetInjectRevisionPolicy, apps.PartialSidecarSetInjectRevisionPolicy}
	patchPolicies      = []apps.SidecarSetPatchPolicyType{apps.SidecarSetRetainPatchPolicy, apps.SidecarSetOverwritePatchPolicy, apps.SidecarSetMergePatchJsonPatchPolicy}
)

// validateSidecarContainer checks what a sidecar adds to a container (the container itself is checked
// by validateContainerLists).
func validateSidecarContainer(c *apps.SidecarContainer, fldPath *field.Path) field.ErrorList {
	allErrs := validateEnum(c.PodInjectPolicy, podInjectPolicies, fldPath.Child("podInjectPolicy"))
	allErrs = append(allErrs, validateEnum(c.ShareVolumePolicy.Type, shareVolumeTypes, fldPath.Child("shareVolumePolicy", "type"))...)
	usPath := fldPath.Child("upgradeStrategy")
	allErrs = append(allErrs, validateEnum(c.UpgradeStrategy.UpgradeType, upgradeTypes, usPath.Child("upgradeType"))...)
	if c.UpgradeStrategy.UpgradeType == apps.SidecarContainerHotUpgrade {
		emptyPath := usPath.Child("hotUpgradeEmptyImage")
		switch c.UpgradeStrategy.HotUpgradeEmptyImage {
		case "":
			allErrs = append(allErrs, field.Required(emptyPath,
				"HotUpgrade needs an image for the idle container of the hot-upgrade pair"))
		case c.Image:
			allErrs = append(allErrs, field.Invalid(emptyPath, c.UpgradeStrategy.HotUpgradeEmptyImage,
				"must differ from the container's image, or the idle container could not be told from the working one"))
		}
	}
	for i := range c.TransferEnv {
		allErrs = append(allErrs, validateTransferEnv(&c.TransferEnv[i], fldPath.Child("transferEnv").Index(i))...)
	}
	return allErrs
}

func validateTransferEnv(t *apps.TransferEnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case t.SourceContainerName != "" && t.SourceContainerNameFrom != nil:
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("sourceContainerNameFrom"),
			"may not be set together with sourceContainerName; set only one of them"))
	case t.SourceContainerName == "" && t.SourceContainerNameFrom == nil:
		allErrs = append(allErrs, field.Required(fldPath.Child("sourceContainerName"),
			"set sourceContainerName or sourceContainerNameFrom to name the container to copy env from"))
	case t.SourceContainerName != "":
		for _, msg := range utilvalidation.IsDNS1123Label(t.SourceContainerName) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("sourceContainerName"), t.SourceContainerName, msg))
		}
	default:
		allErrs = append(allErrs, validateSourceFieldRef(t.SourceContainerNameFrom.FieldRef, fldPath.Child("sourceContainerNameFrom", "fieldRef"))...)
	}

	switch {
	case t.EnvName != "" && len(t.EnvNames) > 0:
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("envNames"), "may not be set together with envName; set only one of them"))
	case t.EnvName == "" && len(t.EnvNames) == 0:
		allErrs = append(allErrs, field.Required(fldPath.Child("envName"), "set envName or envNames to say which env vars to copy"))
	case t.EnvName != "":
		allErrs = append(allErrs, validateEnvName(t.EnvName, fldPath.Child("envName"))...)
	default:
		seen := sets.New[string]()
		for i, name := range t.EnvNames {
			p := fldPath.Child("envNames").Index(i)
			allErrs = append(allErrs, validateEnvName(name, p)...)
			if seen.Has(name) {
				allErrs = append(allErrs, field.Duplicate(p, name))
			}
			seen.Insert(name)
		}
	}
	return allErrs
}

var sourceFieldPaths = []string{"metadata.name", "metadata.labels['<KEY>']", "metadata.annotations['<KEY>']"}

// validateSourceFieldRef checks the Pod field a sidecar reads its source container name from.
func validateSourceFieldRef(ref *corev1.ObjectFieldSelector, fldPath *field.Path) field.ErrorList {
	if ref == nil {
		return field.ErrorList{field.Required(fldPath, "a fieldRef to the Pod field holding the container name is required")}
	}
	if ref.APIVersion != "" && ref.APIVersion != "v1" {
		return field.ErrorList{field.NotSupported(fldPath.Child("apiVersion"), ref.APIVersion, []string{"v1"})}
	}
	fp := ref.FieldPath
	if fp == "metadata.name" {
		return nil
	}
	for _, prefix := range []string{"metadata.labels", "metadata.annotations"} {
		key, ok := subscript(fp, prefix)
		if !ok {
			continue
		}
		var allErrs field.ErrorList
		for _, msg := range content.IsLabelKey(key) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("fieldPath"), fp, msg))
		}
		return allErrs
	}
	return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), fp, sourceFieldPaths)}
}

// subscript returns KEY of PREFIX['KEY'].
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

func validateSidecarSetUpdateStrategy(spec *apps.SidecarSetSpec, fldPath *field.Path) field.ErrorList {
	s := &spec.UpdateStrategy
	allErrs := validateEnum(s.Type, sidecarUpdateTypes, fldPath.Child("type"))
	allErrs = append(allErrs, validateIntOrPercent(s.Partition, fldPath.Child("partition"))...)
	allErrs = append(allErrs, validateIntOrPercent(s.MaxUnavailable, fldPath.Child("maxUnavailable"))...)
	if s.Selector != nil {
		allErrs = append(allErrs, validateNonEmptySelector(s.Selector, fldPath.Child("selector"))...)
		if s.Partition != nil && (s.Partition.Type == intstr.String || s.Partition.IntVal != 0) {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("partition"),
				"partition and selector cannot be used together; use one of them to limit the upgrade"))
		}
	}
	allErrs = append(allErrs, validatePriorityStrategy(s.PriorityStrategy, fldPath.Child("priorityStrategy"))...)
	allErrs = append(allErrs, validateScatterStrategy(s.ScatterStrategy, fldPath.Child("scatterStrategy"))...)
	if s.Type == apps.NotUpdateSidecarSetStrategyType {
		return allErrs
	}
	// Native sidecars (init containers that keep running) cannot be upgraded in place.
	for _, c := range spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("type"), s.Type, fmt.Sprintf(
				"initContainer %q has restartPolicy Always, and such containers cannot be upgraded in place; use NotUpdate", c.Name)))
		}
	}
	return allErrs
}

func validateInjectionStrategy(s *apps.SidecarSetInjectionStrategy, fldPath *field.Path) field.ErrorList {
	r := s.Revision
	if r == nil {
		return nil
	}
	p := fldPath.Child("revision")
	var allErrs field.ErrorList
	if r.RevisionName == nil && r.CustomVersion == nil {
		allErrs = append(allErrs, field.Required(p, "set revisionName or customVersion to say which revision to inject"))
	}
	if r.RevisionName != nil {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(*r.RevisionName) {
			allErrs = append(allErrs, field.Invalid(p.Child("revisionName"), *r.RevisionName, msg))
		}
	}
	if r.CustomVersion != nil {
		for _, msg := range content.IsLabelValue(*r.CustomVersion) {
			allErrs = append(allErrs, field.Invalid(p.Child("customVersion"), *r.CustomVersion, msg))
		}
	}
	return append(allErrs, validateEnum(r.Policy, injectRevPolicies, p.Child("policy"))...)
}

func validatePatchPodMetadata(patches []apps.SidecarSetPatchPodMetadata, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	keys := sets.New[string]()
	for i := range patches {
		patch := &patches[i]
		p := fldPath.Index(i)
		annPath := p.Child("annotations")
		allErrs = append(allErrs, validateEnum(patch.PatchPolicy, patchPolicies, p.Child("patchPolicy"))...)
		if len(patch.Annotations) == 0 {
			allErrs = append(allErrs, field.Required(annPath, "at least one annotation to patch into Pods is required"))
			continue
		}
		allErrs = append(allErrs, apivalidation.ValidateAnnotations(patch.Annotations, annPath)...)
		for _, k := range sets.List(sets.KeySet(patch.Annotations)) {
			if keys.Has(k) {
				allErrs = append(allErrs, field.Duplicate(annPath.Key(k), k))
			}
			keys.Insert(k)
			if patch.PatchPolicy == apps.SidecarSetMergePatchJsonPatchPolicy && !isJSONObject(patch.Annotations[k]) {
				allErrs = append(allErrs, field.Invalid(annPath.Key(k), patch.Annotations[k],
					"must be a JSON object with patchPolicy MergePatchJson"))
			}
		}
	}
	return allErrs
}

func isJSONObject(s string) bool {
	var m map[string]any
	return json.Unmarshal([]byte(s), &m) == nil && m != nil
}

// ---------------------------------------------------------------------------------------------
// ContainerRecreateRequest
// ---------------------------------------------------------------------------------------------

// ValidateContainerRecreateRequest validates a ContainerRecreateRequest on creation.
func ValidateContainerRecreateRequest(crr *apps.ContainerRecreateRequest) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&crr.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metadataPath)
	return append(allErrs, validateCRRSpec(&crr.Spec, specPath)...)
}

// crrImmutableLabels are filled from the Pod on creation and may not change afterwards.
var crrImmutableLabels = []string{v1alpha1.ContainerRecreateRequestPodUIDKey, v1alpha1.ContainerRecreateRequestNodeNameKey}

// ValidateContainerRecreateRequestUpdate validates an update of a ContainerRecreateRequest. Its spec
// is immutable; the only change allowed is recording a container's statusContext where it had none
// (what the server fills in from the Pod).
func ValidateContainerRecreateRequestUpdate(newObj, oldObj *apps.ContainerRecreateRequest) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	for _, key := range crrImmutableLabels {
		if newObj.Labels[key] != oldObj.Labels[key] {
			allErrs = append(allErrs, field.Forbidden(metadataPath.Child("labels").Key(key),
				"this label identifies the Pod of the request and cannot change"))
		}
	}
	key := v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey
	if old, ok := oldObj.Annotations[key]; ok && newObj.Annotations[key] != old {
		allErrs = append(allErrs, field.Forbidden(metadataPath.Child("annotations").Key(key),
			"this annotation cannot change once set"))
	}
	switch {
	case apiequality.Semantic.DeepEqual(newObj.Spec, oldObj.Spec):
	case crrSpecUnchanged(&newObj.Spec, &oldObj.Spec):
		allErrs = append(allErrs, validateCRRSpec(&newObj.Spec, specPath)...)
	default:
		allErrs = append(allErrs, field.Forbidden(specPath,
			"the spec of a ContainerRecreateRequest cannot be changed after creation; delete the request and create a new one"))
	}
	return allErrs
}

func crrSpecUnchanged(newSpec, oldSpec *apps.ContainerRecreateRequestSpec) bool {
	masked := newSpec.DeepCopy()
	if len(masked.Containers) == len(oldSpec.Containers) {
		for i := range masked.Containers {
			if oldSpec.Containers[i].StatusContext == nil {
				masked.Containers[i].StatusContext = nil
			}
		}
	}
	return apiequality.Semantic.DeepEqual(masked, oldSpec)
}

var (
	crrPhases          = []apps.ContainerRecreateRequestPhase{apps.ContainerRecreateRequestPending, apps.ContainerRecreateRequestRecreating, apps.ContainerRecreateRequestCompleted}
	crrContainerPhases = []apps.ContainerRecreateRequestPhase{apps.ContainerRecreateRequestPending, apps.ContainerRecreateRequestRecreating, apps.ContainerRecreateRequestSucceeded, apps.ContainerRecreateRequestFailed}
	crrFailurePolicies = []apps.ContainerRecreateRequestFailurePolicyType{apps.ContainerRecreateRequestFailurePolicyFail, apps.ContainerRecreateRequestFailurePolicyIgnore}
)

// ValidateContainerRecreateRequestStatusUpdate validates an update of a ContainerRecreateRequest's
// status. A completed request stays completed.
func ValidateContainerRecreateRequestStatusUpdate(newObj, oldObj *apps.ContainerRecreateRequest) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	s := &newObj.Status
	allErrs = append(allErrs, validateEnum(s.Phase, crrPhases, statusPath.Child("phase"))...)
	if oldObj.Status.Phase == apps.ContainerRecreateRequestCompleted && s.Phase != apps.ContainerRecreateRequestCompleted {
		allErrs = append(allErrs, field.Forbidden(statusPath.Child("phase"), "a completed request cannot go back to another phase"))
	}
	seen := sets.New[string]()
	for i, st := range s.ContainerRecreateStates {
		p := statusPath.Child("containerRecreateStates").Index(i)
		allErrs = append(allErrs, validateContainerName(st.Name, seen, p.Child("name"))...)
		allErrs = append(allErrs, validateEnum(st.Phase, crrContainerPhases, p.Child("phase"))...)
	}
	return allErrs
}

func validateCRRSpec(spec *apps.ContainerRecreateRequestSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.PodName == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("podName"), "the name of the Pod whose containers to recreate is required"))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(spec.PodName) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("podName"), spec.PodName, msg))
		}
	}
	if len(spec.Containers) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("containers"), "at least one container to recreate is required"))
	}
	seen := sets.New[string]()
	for i := range spec.Containers {
		allErrs = append(allErrs, validateCRRContainer(&spec.Containers[i], seen, fldPath.Child("containers").Index(i))...)
	}
	if spec.Strategy != nil {
		allErrs = append(allErrs, validateCRRStrategy(spec.Strategy, fldPath.Child("strategy"))...)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && *d < MinCRRActiveDeadlineSeconds {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), *d,
			fmt.Sprintf("must be at least %d seconds", MinCRRActiveDeadlineSeconds)))
	}
	// A request whose waits outlast its deadline could never recreate anything.
	if d, s := spec.ActiveDeadlineSeconds, spec.Strategy; d != nil && *d >= MinCRRActiveDeadlineSeconds && s != nil {
		if u := s.UnreadyGracePeriodSeconds; u != nil && *u >= *d {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("strategy", "unreadyGracePeriodSeconds"), *u,
				fmt.Sprintf("must be less than activeDeadlineSeconds (%d): the request would end before any container is stopped", *d)))
		}
		if m := int64(s.MinStartedSeconds); m >= *d {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("strategy", "minStartedSeconds"), m,
				fmt.Sprintf("must be less than activeDeadlineSeconds (%d): the request would end before a container counts as started", *d)))
		}
	}
	return append(allErrs, validateOptionalNonNegative(spec.TTLSecondsAfterFinished, fldPath.Child("ttlSecondsAfterFinished"))...)
}

func validateCRRContainer(c *apps.ContainerRecreateRequestContainer, seen sets.Set[string], fldPath *field.Path) field.ErrorList {
	allErrs := validateContainerName(c.Name, seen, fldPath.Child("name"))
	allErrs = append(allErrs, validatePorts(c.Ports, fldPath.Child("ports"))...)
	if c.PreStop != nil && countSetPointers(*c.PreStop) != 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("preStop"), "", "must have exactly one of exec, httpGet or tcpSocket"))
	}
	if sc := c.StatusContext; sc != nil {
		p := fldPath.Child("statusContext")
		if sc.ContainerID == "" {
			allErrs = append(allErrs, field.Required(p.Child("containerID"), "the ID of the container instance to recreate is required"))
		}
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(sc.RestartCount), p.Child("restartCount"))...)
	}
	return allErrs
}

func validateCRRStrategy(s *apps.ContainerRecreateRequestStrategy, fldPath *field.Path) field.ErrorList {
	allErrs := validateEnum(s.FailurePolicy, crrFailurePolicies, fldPath.Child("failurePolicy"))
	allErrs = append(allErrs, validateOptionalNonNegative(s.TerminationGracePeriodSeconds, fldPath.Child("terminationGracePeriodSeconds"))...)
	allErrs = append(allErrs, validateOptionalNonNegative(s.UnreadyGracePeriodSeconds, fldPath.Child("unreadyGracePeriodSeconds"))...)
	return append(allErrs, apivalidation.ValidateNonnegativeField(int64(s.MinStartedSeconds), fldPath.Child("minStartedSeconds"))...)
}

// ---------------------------------------------------------------------------------------------
// InPlaceUpdate (body of POST pods/NAME/inplaceupdate)
// ---------------------------------------------------------------------------------------------

// resizableResources are the container resources Kubernetes can change in a running Pod.
var resizableResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// ValidateInPlaceUpdate validates the body of an in-place update request.
func ValidateInPlaceUpdate(u *apps.InPlaceUpdate) field.ErrorList {
	spec := &u.Spec
	var allErrs field.ErrorList
	md := spec.Metadata
	if len(spec.Containers) == 0 && spec.SidecarSet == nil && (md == nil || len(md.Labels)+len(md.Annotations)+len(md.RemoveLabels)+len(md.RemoveAnnotations) == 0) {
		allErrs = append(allErrs, field.Required(specPath.Child("containers"),
			"an in-place update must change at least one container, or the Pod's labels or annotations"))
	}
	// A workload's revision becomes the Pod's controller-revision-hash label; a SidecarSet's hash
	// (64 characters) goes into an annotation (validateSidecarSetUpgrade).
	if spec.Revision != "" && spec.SidecarSet == nil {
		for _, msg := range content.IsLabelValue(spec.Revision) {
			allErrs = append(allErrs, field.Invalid(specPath.Child("revision"), spec.Revision, "must be usable as a Pod label value: "+msg))
		}
	}
	seen := sets.New[string]()
	for i := range spec.Containers {
		allErrs = append(allErrs, validateInPlaceUpdateContainer(&spec.Containers[i], seen, specPath.Child("containers").Index(i))...)
	}
	if md != nil {
		mdPath := specPath.Child("metadata")
		allErrs = append(allErrs, metav1validation.ValidateLabels(md.Labels, mdPath.Child("labels"))...)
		allErrs = append(allErrs, apivalidation.ValidateAnnotations(md.Annotations, mdPath.Child("annotations"))...)
		allErrs = append(allErrs, validateRemovedKeys(md.RemoveLabels, md.Labels, mdPath.Child("removeLabels"), "labels")...)
		allErrs = append(allErrs, validateRemovedKeys(md.RemoveAnnotations, md.Annotations, mdPath.Child("removeAnnotations"), "annotations")...)
	}
	allErrs = append(allErrs, metav1validation.ValidateLabels(spec.CompletionLabels, specPath.Child("completionLabels"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.GracePeriodSeconds), specPath.Child("gracePeriodSeconds"))...)
	if spec.SidecarSet != nil {
		allErrs = append(allErrs, validateSidecarSetUpgrade(spec)...)
	}
	return allErrs
}

// validateSidecarSetUpgrade checks an in-place update that is a SidecarSet's upgrade of its
// sidecars: a named SidecarSet and revision (its hash), images and annotations only.
func validateSidecarSetUpgrade(spec *apps.InPlaceUpdateSpec) field.ErrorList {
	var allErrs field.ErrorList
	ssPath := specPath.Child("sidecarSet")
	if spec.SidecarSet.Name == "" {
		allErrs = append(allErrs, field.Required(ssPath.Child("name"), "the SidecarSet whose sidecars are upgraded"))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.SidecarSet.Name, false) {
			allErrs = append(allErrs, field.Invalid(ssPath.Child("name"), spec.SidecarSet.Name, msg))
		}
	}
	if spec.Revision == "" {
		allErrs = append(allErrs, field.Required(specPath.Child("revision"), "a SidecarSet upgrade names the SidecarSet's hash it upgrades to"))
	} else if len(spec.Revision) > 253 || strings.ContainsFunc(spec.Revision, unicode.IsSpace) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("revision"), spec.Revision, "a SidecarSet's hash (kruise.io/sidecarset-hash): at most 253 characters, no whitespace"))
	}
	for i := range spec.Containers {
		if spec.Containers[i].Resources != nil {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("containers").Index(i).Child("resources"), "a SidecarSet upgrade changes images only"))
		}
	}
	if md := spec.Metadata; md != nil {
		// A hot upgrade records which container of a pair works and their versions, and an
		// upgrade writes the SidecarSet's patchPodMetadata (annotations); no labels, and nothing
		// removed. The annotations this engine writes itself are refused by the engine.
		mdPath := specPath.Child("metadata")
		if len(md.Labels) > 0 {
			allErrs = append(allErrs, field.Forbidden(mdPath.Child("labels"), "a SidecarSet upgrade sets no labels"))
		}
		if len(md.RemoveLabels) > 0 {
			allErrs = append(allErrs, field.Forbidden(mdPath.Child("removeLabels"), "a SidecarSet upgrade removes no labels"))
		}
		if len(md.RemoveAnnotations) > 0 {
			allErrs = append(allErrs, field.Forbidden(mdPath.Child("removeAnnotations"), "a SidecarSet upgrade removes no annotations"))
		}
	}
	if spec.GracePeriodSeconds != 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("gracePeriodSeconds"), "a SidecarSet upgrade has no grace period"))
	}
	if len(spec.CompletionLabels) > 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("completionLabels"), "a SidecarSet upgrade sets no labels"))
	}
	return allErrs
}

// validateRemovedKeys checks keys to remove: qualified names, each once, none also set.
func validateRemovedKeys(keys []string, set map[string]string, fldPath *field.Path, setName string) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, k := range keys {
		p := fldPath.Index(i)
		for _, msg := range content.IsQualifiedName(k) {
			allErrs = append(allErrs, field.Invalid(p, k, msg))
		}
		if seen.Has(k) {
			allErrs = append(allErrs, field.Duplicate(p, k))
		}
		seen.Insert(k)
		if _, ok := set[k]; ok {
			allErrs = append(allErrs, field.Invalid(p, k, fmt.Sprintf("also set in %s: a key is either set or removed", setName)))
		}
	}
	return allErrs
}

func validateInPlaceUpdateContainer(c *apps.InPlaceUpdateContainer, seen sets.Set[string], fldPath *field.Path) field.ErrorList {
	allErrs := validateContainerName(c.Name, seen, fldPath.Child("name"))
	if c.Image == "" && c.Resources == nil {
		return append(allErrs, field.Required(fldPath.Child("image"), "set the new image or the new resources of the container, or both"))
	}
	allErrs = append(allErrs, validateImage(c.Image, false, fldPath.Child("image"))...)
	if c.Resources == nil {
		return allErrs
	}
	rPath := fldPath.Child("resources")
	allErrs = append(allErrs, validateResources(c.Resources, rPath)...)
	for _, kind := range []struct {
		name string
		list corev1.ResourceList
	}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
		for _, name := range sortedResourceNames(kind.list) {
			if !slices.Contains(resizableResources, name) {
				allErrs = append(allErrs, field.NotSupported(rPath.Child(kind.name).Key(string(name)), name, resizableResources))
			}
		}
	}
	if len(c.Resources.Claims) > 0 {
		allErrs = append(allErrs, field.Forbidden(rPath.Child("claims"), "resource claims cannot change in place"))
	}
	return allErrs
}

// ---------------------------------------------------------------------------------------------
// Pod template and containers
// ---------------------------------------------------------------------------------------------

// validatePodTemplate checks a workload's Pod template. Its volumes were checked by the caller, which
// passes the names a container may mount (template volumes and volume claim templates).
func validatePodTemplate(t *corev1.PodTemplateSpec, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	metaPath, specPath := fldPath.Child("metadata"), fldPath.Child("spec")
	allErrs := metav1validation.ValidateLabels(t.Labels, metaPath.Child("labels"))
	allErrs = append(allErrs, apivalidation.ValidateAnnotations(t.Annotations, metaPath.Child("annotations"))...)

	spec := &t.Spec
	if len(spec.Containers) == 0 {
		allErrs = append(allErrs, field.Required(specPath.Child("containers"), "the Pod template needs at least one container"))
	}
	allErrs = append(allErrs, validateContainerLists(spec.InitContainers, spec.Containers, volumes, specPath)...)
	if spec.RestartPolicy != "" && spec.RestartPolicy != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("restartPolicy"), spec.RestartPolicy,
			[]corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("activeDeadlineSeconds"),
			"Pods of a workload run until replaced; activeDeadlineSeconds is not supported"))
	}
	return append(allErrs, validateOptionalNonNegative(spec.TerminationGracePeriodSeconds, specPath.Child("terminationGracePeriodSeconds"))...)
}

// validateContainerLists checks init containers and containers, whose names must be unique across both.
func validateContainerLists(initContainers, containers []corev1.Container, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range initContainers {
		allErrs = append(allErrs, validateContainer(&initContainers[i], true, names, volumes, fldPath.Child("initContainers").Index(i))...)
	}
	for i := range containers {
		allErrs = append(allErrs, validateContainer(&containers[i], false, names, volumes, fldPath.Child("containers").Index(i))...)
	}
	return allErrs
}

var pullPolicies = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}

func validateContainer(c *corev1.Container, isInit bool, names, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	allErrs := validateContainerName(c.Name, names, fldPath.Child("name"))
	allErrs = append(allErrs, validateImage(c.Image, true, fldPath.Child("image"))...)
	allErrs = append(allErrs, validateEnum(c.ImagePullPolicy, pullPolicies, fldPath.Child("imagePullPolicy"))...)
	allErrs = append(allErrs, validatePorts(c.Ports, fldPath.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(c.Env, fldPath.Child("env"))...)
	allErrs = append(allErrs, validateResources(&c.Resources, fldPath.Child("resources"))...)
	allErrs = append(allErrs, validateVolumeMounts(c, volumes, fldPath)...)
	if isInit && c.RestartPolicy != nil && *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("restartPolicy"), *c.RestartPolicy,
			[]corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
	}
	return allErrs
}

// validateContainerName checks a container name is set, a DNS-1123 label, and not in seen (to which it
// is added).
func validateContainerName(name string, seen sets.Set[string], fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "the container name is required")}
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	if seen.Has(name) {
		allErrs = append(allErrs, field.Duplicate(fldPath, name))
	}
	seen.Insert(name)
	return allErrs
}

func validateImage(image string, required bool, fldPath *field.Path) field.ErrorList {
	if image == "" {
		if required {
			return field.ErrorList{field.Required(fldPath, "the container image is required")}
		}
		return nil
	}
	if strings.TrimSpace(image) != image {
		return field.ErrorList{field.Invalid(fldPath, image, "must not have leading or trailing whitespace")}
	}
	return nil
}

var protocols = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}

func validatePorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := fldPath.Index(i)
		if port.Name != "" {
			for _, msg := range utilvalidation.IsValidPortName(port.Name) {
				allErrs = append(allErrs, field.Invalid(p.Child("name"), port.Name, msg))
			}
			if names.Has(port.Name) {
				allErrs = append(allErrs, field.Duplicate(p.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(p.Child("containerPort"), "the port number is required"))
		} else {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.ContainerPort)) {
				allErrs = append(allErrs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.HostPort)) {
				allErrs = append(allErrs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		allErrs = append(allErrs, validateEnum(port.Protocol, protocols, p.Child("protocol"))...)
	}
	return allErrs
}

func validateEnv(env []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range env {
		p := fldPath.Index(i)
		allErrs = append(allErrs, validateEnvName(ev.Name, p.Child("name"))...)
		if ev.ValueFrom == nil {
			continue
		}
		if ev.Value != "" {
			allErrs = append(allErrs, field.Invalid(p.Child("valueFrom"), "", "may not be set when `value` is not empty"))
		} else if countSetPointers(*ev.ValueFrom) != 1 {
			allErrs = append(allErrs, field.Invalid(p.Child("valueFrom"), "",
				"must have exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef"))
		}
	}
	return allErrs
}

// validateEnvName uses Kubernetes' relaxed rule (GA since 1.34): any printable ASCII but '='.
func validateEnvName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "the env var name is required")}
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsRelaxedEnvVarName(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

// validateResources checks quantities are non-negative and requests do not exceed limits.
func validateResources(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	allErrs := validateResourceList(r.Limits, fldPath.Child("limits"))
	allErrs = append(allErrs, validateResourceList(r.Requests, fldPath.Child("requests"))...)
	for _, name := range sortedResourceNames(r.Requests) {
		req := r.Requests[name]
		if limit, ok := r.Limits[name]; ok && req.Cmp(limit) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to the %s limit of %s", name, limit.String())))
		}
	}
	return allErrs
}

func validateResourceList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, name := range sortedResourceNames(list) {
		p := fldPath.Key(string(name))
		for _, msg := range content.IsLabelKey(string(name)) {
			allErrs = append(allErrs, field.Invalid(p, name, "is not a valid resource name: "+msg))
		}
		if q := list[name]; q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
	}
	return allErrs
}

func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	return sets.List(sets.KeySet(list))
}

func validateVolumeMounts(c *corev1.Container, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	const unknown = "must name a volume defined in this object (its volumes, or volumeClaimTemplates)"
	var allErrs field.ErrorList
	paths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		p := fldPath.Child("volumeMounts").Index(i)
		if m.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), "the name of the volume to mount is required"))
		} else if !volumes.Has(m.Name) {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), m.Name, unknown))
		}
		if m.MountPath == "" {
			allErrs = append(allErrs, field.Required(p.Child("mountPath"), "the path to mount the volume at is required"))
		} else if paths.Has(m.MountPath) {
			allErrs = append(allErrs, field.Duplicate(p.Child("mountPath"), m.MountPath))
		}
		paths.Insert(m.MountPath)
	}
	for i, d := range c.VolumeDevices {
		if !volumes.Has(d.Name) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("volumeDevices").Index(i).Child("name"), d.Name, unknown))
		}
	}
	return allErrs
}

// validateVolumes checks Pod volumes and returns their names.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range volumes {
		v := &volumes[i]
		p := fldPath.Index(i)
		if v.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), "the volume name is required"))
		} else if msgs := utilvalidation.IsDNS1123Label(v.Name); len(msgs) > 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), v.Name, strings.Join(msgs, "; ")))
		} else if names.Has(v.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), v.Name))
		}
		names.Insert(v.Name)
		switch n := countSetPointers(v.VolumeSource); {
		case n == 0:
			allErrs = append(allErrs, field.Required(p, "a volume source (emptyDir, configMap, secret, persistentVolumeClaim, ...) is required"))
		case n > 1:
			allErrs = append(allErrs, field.Forbidden(p, "may not have more than one volume source"))
		}
	}
	return names, allErrs
}

// countSetPointers counts the non-nil pointer fields of a struct of optional members (a one-of).
func countSetPointers(v any) int {
	rv := reflect.ValueOf(v)
	n := 0
	for i := range rv.NumField() {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

// ---------------------------------------------------------------------------------------------
// Small shared helpers
// ---------------------------------------------------------------------------------------------

// validateRequiredSelector checks a selector that must be set, valid and not empty.
func validateRequiredSelector(sel *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(fldPath, "a label selector is required")}
	}
	return validateNonEmptySelector(sel, fldPath)
}

// validateNonEmptySelector checks a selector is valid and selects something: OpenKruise refuses
// empty selectors, which would match every Pod.
func validateNonEmptySelector(sel *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
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

// validateIntOrPercent checks a count or percentage: a non-negative integer, or "N%" with N <= 100.
func validateIntOrPercent(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
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
