package validation

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
)

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
	if spec.StayInService && spec.GracePeriodSeconds > 0 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("stayInService"), true,
			"cannot be combined with gracePeriodSeconds: a grace period is the time the Pod spends out of service before its containers change"))
	}
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
	if spec.StayInService {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("stayInService"), "a SidecarSet upgrade stays in service unless spec.sidecarSet.leaveService is set"))
	}
	return allErrs
}

// validateRemovedKeys checks keys to remove: qualified names, each once, none also set.
func validateRemovedKeys(keys []string, set map[string]string, fldPath *field.Path, setName string) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, k := range keys {
		p := fldPath.Index(i)
		for _, msg := range content.IsLabelKey(k) {
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
