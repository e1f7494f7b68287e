package validation

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
)

// ValidateSidecarSet validates a SidecarSet on creation. SidecarSets are cluster-scoped.
//
// OpenKruise accepts names of letters, digits and '-' (upper case included); the name here must be a
// DNS-1123 label, because it is also used in ControllerRevision names and Pod annotations.
func ValidateSidecarSet(s *apps.SidecarSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&s.ObjectMeta, false, apivalidation.NameIsDNSLabel, metadataPath)
	allErrs = append(allErrs, validateSidecarSetCanary(s, nil)...)
	return append(allErrs, validateSidecarSetSpec(&s.Spec, specPath)...)
}

// ValidateSidecarSetUpdate validates an update of a SidecarSet. The upgrade type of a container that
// already exists cannot change (its Pods run a hot-upgrade pair or a single container).
func ValidateSidecarSetUpdate(newObj, oldObj *apps.SidecarSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	allErrs = append(allErrs, validateSidecarSetCanary(newObj, oldObj)...)
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
		allErrs = append(allErrs, validateResourcesPolicy(&spec.InitContainers[i], true, fldPath.Child("initContainers").Index(i))...)
	}
	for i := range spec.Containers {
		allErrs = append(allErrs, validateSidecarContainer(&spec.Containers[i], fldPath.Child("containers").Index(i))...)
		allErrs = append(allErrs, validateResourcesPolicy(&spec.Containers[i], false, fldPath.Child("containers").Index(i))...)
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
	return append(allErrs, ValidateNonEmptySelector(spec.NamespaceSelector, fldPath.Child("namespaceSelector"))...)
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
	allErrs = append(allErrs, ValidateIntOrPercent(s.Partition, fldPath.Child("partition"))...)
	allErrs = append(allErrs, ValidateIntOrPercent(s.MaxUnavailable, fldPath.Child("maxUnavailable"))...)
	if s.Selector != nil {
		allErrs = append(allErrs, ValidateNonEmptySelector(s.Selector, fldPath.Child("selector"))...)
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
	// Native sidecars (init containers that keep running) are upgraded in place by a new image, as
	// containers are (OpenKruise refuses RollingUpdate with one). A hot upgrade of one is not
	// supported: its pair would be two native sidecars, which the upgrade does not flip.
	for i, c := range spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways &&
			c.UpgradeStrategy.UpgradeType == apps.SidecarContainerHotUpgrade {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("type"), s.Type, fmt.Sprintf(
				"initContainer %q (spec.initContainers[%d]) is a native sidecar with upgradeType HotUpgrade, which cannot be upgraded in place; use ColdUpgrade, or NotUpdate", c.Name, i)))
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
