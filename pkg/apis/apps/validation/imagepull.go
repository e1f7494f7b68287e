package validation

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/distribution/reference"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// The rules below are those of OpenKruise's ImagePullJob, ImageListPullJob and NodeImage webhooks
// (pkg/webhook/{imagepulljob,imagelistpulljob,nodeimage}/validating in openkruise/kruise v1.9.0),
// each answered with the offending field instead of one message, plus non-negative timeouts,
// retries and counters, which OpenKruise leaves unchecked.

// MaxImagesPerImageListPullJob is the most images one ImageListPullJob may list (OpenKruise's limit).
const MaxImagesPerImageListPullJob = 255

var (
	completionPolicyTypes = []apps.CompletionPolicyType{apps.Always, apps.Never}
	imagePullPolicies     = []apps.ImagePullPolicy{apps.PullAlways, apps.PullIfNotPresent}
	imagePullPhases       = []apps.ImagePullPhase{apps.ImagePhaseWaiting, apps.ImagePhasePulling, apps.ImagePhaseSucceeded, apps.ImagePhaseFailed}
	syncStatusPhases      = []apps.SyncStatusPhase{apps.SyncStatusSucceeded, apps.SyncStatusFailed}
)

// ---------------------------------------------------------------------------------------------
// ImagePullJob
// ---------------------------------------------------------------------------------------------

// ValidateImagePullJob validates an ImagePullJob on creation.
func ValidateImagePullJob(j *apps.ImagePullJob) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&j.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metadataPath)
	allErrs = append(allErrs, validateImageReference(j.Spec.Image, specPath.Child("image"))...)
	return append(allErrs, validateImagePullJobTemplate(&j.Spec.ImagePullJobTemplate, specPath)...)
}

// ValidateImagePullJobUpdate validates an update of an ImagePullJob: pullSecrets cannot change
// (OpenKruise v1.9), the rest of the spec can.
func ValidateImagePullJobUpdate(newObj, oldObj *apps.ImagePullJob) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	allErrs = append(allErrs, validateImageReference(newObj.Spec.Image, specPath.Child("image"))...)
	allErrs = append(allErrs, validateImagePullJobTemplate(&newObj.Spec.ImagePullJobTemplate, specPath)...)
	if !apiequality.Semantic.DeepEqual(newObj.Spec.PullSecrets, oldObj.Spec.PullSecrets) {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("pullSecrets"), "pullSecrets cannot be changed after creation"))
	}
	return allErrs
}

// ValidateImagePullJobStatusUpdate validates an update of an ImagePullJob's status.
func ValidateImagePullJobStatusUpdate(newObj, oldObj *apps.ImagePullJob) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	s := &newObj.Status
	return append(allErrs, validateCounters(statusPath, map[string]int32{
		"desired": s.Desired, "active": s.Active, "succeeded": s.Succeeded, "failed": s.Failed,
	})...)
}

// ---------------------------------------------------------------------------------------------
// ImageListPullJob
// ---------------------------------------------------------------------------------------------

// ValidateImageListPullJob validates an ImageListPullJob on creation.
func ValidateImageListPullJob(j *apps.ImageListPullJob) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&j.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metadataPath)
	return append(allErrs, validateImageListPullJobSpec(&j.Spec, specPath)...)
}

// ValidateImageListPullJobUpdate validates an update of an ImageListPullJob.
func ValidateImageListPullJobUpdate(newObj, oldObj *apps.ImageListPullJob) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	return append(allErrs, validateImageListPullJobSpec(&newObj.Spec, specPath)...)
}

// ValidateImageListPullJobStatusUpdate validates an update of an ImageListPullJob's status.
func ValidateImageListPullJobStatusUpdate(newObj, oldObj *apps.ImageListPullJob) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	s := &newObj.Status
	return append(allErrs, validateCounters(statusPath, map[string]int32{
		"desired": s.Desired, "active": s.Active, "completed": s.Completed, "succeeded": s.Succeeded,
	})...)
}

func validateImageListPullJobSpec(spec *apps.ImageListPullJobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	imagesPath := fldPath.Child("images")
	switch {
	case len(spec.Images) == 0:
		allErrs = append(allErrs, field.Required(imagesPath, "at least one image is required"))
	case len(spec.Images) > MaxImagesPerImageListPullJob:
		allErrs = append(allErrs, field.TooMany(imagesPath, len(spec.Images), MaxImagesPerImageListPullJob))
	}
	seen := sets.New[string]()
	for i, image := range spec.Images {
		if seen.Has(image) {
			allErrs = append(allErrs, field.Duplicate(imagesPath.Index(i), image))
			continue
		}
		seen.Insert(image)
		allErrs = append(allErrs, validateImageReference(image, imagesPath.Index(i))...)
	}
	return append(allErrs, validateImagePullJobTemplate(&spec.ImagePullJobTemplate, fldPath)...)
}

// ---------------------------------------------------------------------------------------------
// What the two jobs share
// ---------------------------------------------------------------------------------------------

// validateImageReference checks image is a reference a container runtime can pull: the parser is
// the one OpenKruise's daemon and the kubelet use (github.com/distribution/reference), so what
// passes here is what the daemon will be able to pull by name.
func validateImageReference(image string, fldPath *field.Path) field.ErrorList {
	if image == "" {
		return field.ErrorList{field.Required(fldPath, "an image reference is required")}
	}
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return field.ErrorList{field.Invalid(fldPath, image, fmt.Sprintf("not a valid image reference: %v", err))}
	}
	return nil
}

func validateImagePullJobTemplate(t *apps.ImagePullJobTemplate, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, name := range t.PullSecrets {
		for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("pullSecrets").Index(i), name, msg))
		}
	}
	if sel := t.Selector; sel != nil {
		selPath := fldPath.Child("selector")
		if len(sel.Names) > 0 && len(sel.MatchLabels)+len(sel.MatchExpressions) > 0 {
			allErrs = append(allErrs, field.Forbidden(selPath.Child("names"),
				"names and a label selector (matchLabels, matchExpressions) cannot both be set"))
		}
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(&sel.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
		seen := sets.New[string]()
		for i, name := range sel.Names {
			if seen.Has(name) {
				allErrs = append(allErrs, field.Duplicate(selPath.Child("names").Index(i), name))
			}
			seen.Insert(name)
		}
	}
	if sel := t.PodSelector; sel != nil {
		podPath := fldPath.Child("podSelector")
		if t.Selector != nil {
			allErrs = append(allErrs, field.Forbidden(podPath, "selector and podSelector cannot both be set"))
		}
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(&sel.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, podPath)...)
	}
	allErrs = append(allErrs, validateParallelism(t.Parallelism, fldPath.Child("parallelism"))...)
	timeout := int64(v1alpha1.DefaultImagePullTimeoutSeconds)
	if p := t.PullPolicy; p != nil {
		pullPath := fldPath.Child("pullPolicy")
		allErrs = append(allErrs, validateOptionalNonNegative(p.TimeoutSeconds, pullPath.Child("timeoutSeconds"))...)
		allErrs = append(allErrs, validateOptionalNonNegative(p.BackoffLimit, pullPath.Child("backoffLimit"))...)
		if p.TimeoutSeconds != nil {
			timeout = int64(*p.TimeoutSeconds)
		}
	}
	allErrs = append(allErrs, validateCompletionPolicy(&t.CompletionPolicy, timeout, fldPath.Child("completionPolicy"))...)
	return append(allErrs, validateEnum(t.ImagePullPolicy, imagePullPolicies, fldPath.Child("imagePullPolicy"))...)
}

// validateParallelism checks a job's parallelism: a non-negative integer, given as a number or
// as a string of digits. OpenKruise refuses a percentage (its controller reads the value with
// IntValue, which makes "50%" 0: a job paused for ever).
func validateParallelism(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	switch v.Type {
	case intstr.Int:
		if v.IntVal < 0 {
			return field.ErrorList{field.Invalid(fldPath, v.IntVal, "must be greater than or equal to 0")}
		}
	case intstr.String:
		if strings.HasSuffix(v.StrVal, "%") {
			return field.ErrorList{field.Invalid(fldPath, v.StrVal, "must be a number of nodes, not a percentage")}
		}
		n, err := strconv.ParseInt(v.StrVal, 10, 32)
		if err != nil {
			return field.ErrorList{field.Invalid(fldPath, v.StrVal, "must be an integer")}
		}
		if n < 0 {
			return field.ErrorList{field.Invalid(fldPath, v.StrVal, "must be greater than or equal to 0")}
		}
	default:
		return field.ErrorList{field.Invalid(fldPath, v.String(), "must be an integer")}
	}
	return nil
}

// validateCompletionPolicy checks the type (Always or Never; defaulted to Always) and that the
// deadline and TTL are only set with Always. With Always the deadline is positive and no shorter
// than one pull's timeout (OpenKruise: "activeDeadlineSeconds must be greater than
// pullPolicy.timeoutSeconds"); the TTL may be 0 (delete as soon as finished).
func validateCompletionPolicy(p *apps.CompletionPolicy, pullTimeout int64, fldPath *field.Path) field.ErrorList {
	allErrs := validateEnum(p.Type, completionPolicyTypes, fldPath.Child("type"))
	deadlinePath, ttlPath := fldPath.Child("activeDeadlineSeconds"), fldPath.Child("ttlSecondsAfterFinished")
	if p.Type == apps.Never {
		if p.ActiveDeadlineSeconds != nil {
			allErrs = append(allErrs, field.Forbidden(deadlinePath, "may only be set with completionPolicy type Always"))
		}
		if p.TTLSecondsAfterFinished != nil {
			allErrs = append(allErrs, field.Forbidden(ttlPath, "may only be set with completionPolicy type Always"))
		}
		return allErrs
	}
	if d := p.ActiveDeadlineSeconds; d != nil {
		switch {
		case *d <= 0:
			allErrs = append(allErrs, field.Invalid(deadlinePath, *d, "must be greater than 0"))
		case *d < pullTimeout:
			allErrs = append(allErrs, field.Invalid(deadlinePath, *d,
				fmt.Sprintf("must not be less than pullPolicy.timeoutSeconds (%d)", pullTimeout)))
		}
	}
	return append(allErrs, validateOptionalNonNegative(p.TTLSecondsAfterFinished, ttlPath)...)
}

// ---------------------------------------------------------------------------------------------
// NodeImage
// ---------------------------------------------------------------------------------------------

// ValidateNodeImage validates a NodeImage on creation. It is named after its node, so its name is
// a node name (a DNS subdomain).
func ValidateNodeImage(n *apps.NodeImage) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&n.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, metadataPath)
	return append(allErrs, validateNodeImageSpec(&n.Spec, specPath)...)
}

// ValidateNodeImageUpdate validates an update of a NodeImage.
func ValidateNodeImageUpdate(newObj, oldObj *apps.NodeImage) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	return append(allErrs, validateNodeImageSpec(&newObj.Spec, specPath)...)
}

// ValidateNodeImageStatusUpdate validates an update of a NodeImage's status: counters, phases and
// progress of each tag, no tag twice.
func ValidateNodeImageStatusUpdate(newObj, oldObj *apps.NodeImage) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newObj.ObjectMeta, &oldObj.ObjectMeta, metadataPath)
	s := &newObj.Status
	allErrs = append(allErrs, validateCounters(statusPath, map[string]int32{
		"desired": s.Desired, "succeeded": s.Succeeded, "failed": s.Failed, "pulling": s.Pulling, "waiting": s.Waiting,
	})...)
	statusesPath := statusPath.Child("imageStatuses")
	for _, name := range slices.Sorted(maps.Keys(s.ImageStatuses)) {
		tagsPath := statusesPath.Key(name).Child("tags")
		seen := sets.New[string]()
		for i, tag := range s.ImageStatuses[name].Tags {
			tagPath := tagsPath.Index(i)
			if tag.Tag == "" {
				allErrs = append(allErrs, field.Required(tagPath.Child("tag"), "the tag this status is for is required"))
			} else if seen.Has(tag.Tag) {
				allErrs = append(allErrs, field.Duplicate(tagPath.Child("tag"), tag.Tag))
			}
			seen.Insert(tag.Tag)
			if tag.Phase == "" {
				allErrs = append(allErrs, field.Required(tagPath.Child("phase"), "one of Waiting, Pulling, Succeeded, Failed"))
			}
			allErrs = append(allErrs, validateEnum(tag.Phase, imagePullPhases, tagPath.Child("phase"))...)
			if tag.Progress < 0 || tag.Progress > 100 {
				allErrs = append(allErrs, field.Invalid(tagPath.Child("progress"), tag.Progress, "must be between 0 and 100"))
			}
			allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(tag.Version, tagPath.Child("version"))...)
		}
	}
	if fs := s.FirstSyncStatus; fs != nil {
		allErrs = append(allErrs, validateEnum(fs.Status, syncStatusPhases, statusPath.Child("firstSyncStatus", "status"))...)
	}
	return allErrs
}

// validateNodeImageSpec checks at most 256 images, each image name with each of its tags a pullable
// reference (a tag, or a digest such as sha256:...), no tag twice, a non-negative version, and the
// pull policy OpenKruise requires (ttlSecondsAfterFinished set; the rest is defaulted).
func validateNodeImageSpec(spec *apps.NodeImageSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	imagesPath := fldPath.Child("images")
	if len(spec.Images) > v1alpha1.MaxImagesPerNodeImage {
		allErrs = append(allErrs, field.TooMany(imagesPath, len(spec.Images), v1alpha1.MaxImagesPerNodeImage))
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Images)) {
		image := spec.Images[name]
		imagePath := imagesPath.Key(name)
		if name == "" {
			allErrs = append(allErrs, field.Required(imagePath, "an image name is required"))
			continue
		}
		if named, err := reference.ParseNormalizedNamed(name); err != nil {
			allErrs = append(allErrs, field.Invalid(imagePath, name, fmt.Sprintf("not a valid image name: %v", err)))
			continue
		} else if !reference.IsNameOnly(named) {
			allErrs = append(allErrs, field.Invalid(imagePath, name, "must be an image name without tag or digest (those go in tags)"))
			continue
		}
		for i, s := range image.PullSecrets {
			secretPath := imagePath.Child("pullSecrets").Index(i)
			for _, msg := range apivalidation.ValidateNamespaceName(s.Namespace, false) {
				allErrs = append(allErrs, field.Invalid(secretPath.Child("namespace"), s.Namespace, msg))
			}
			for _, msg := range apivalidation.NameIsDNSSubdomain(s.Name, false) {
				allErrs = append(allErrs, field.Invalid(secretPath.Child("name"), s.Name, msg))
			}
		}
		seen := sets.New[string]()
		for i, tag := range image.Tags {
			allErrs = append(allErrs, validateImageTagSpec(name, &tag, seen, imagePath.Child("tags").Index(i))...)
		}
	}
	return allErrs
}

func validateImageTagSpec(name string, tag *apps.ImageTagSpec, seen sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	tagPath := fldPath.Child("tag")
	switch {
	case tag.Tag == "":
		allErrs = append(allErrs, field.Required(tagPath, "a tag or digest is required"))
	case seen.Has(tag.Tag):
		allErrs = append(allErrs, field.Duplicate(tagPath, tag.Tag))
	default:
		ref := name + ":" + tag.Tag
		if strings.Contains(tag.Tag, ":") { // a digest
			ref = name + "@" + tag.Tag
		}
		if _, err := reference.ParseNormalizedNamed(ref); err != nil {
			allErrs = append(allErrs, field.Invalid(tagPath, tag.Tag, fmt.Sprintf("not a valid tag or digest of %s: %v", name, err)))
		}
	}
	seen.Insert(tag.Tag)
	if tag.CreatedAt == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("createdAt"), "the time the tag was added is required"))
	}
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(tag.Version, fldPath.Child("version"))...)
	allErrs = append(allErrs, validateEnum(tag.ImagePullPolicy, imagePullPolicies, fldPath.Child("imagePullPolicy"))...)
	pullPath := fldPath.Child("pullPolicy")
	p := tag.PullPolicy
	if p == nil {
		return append(allErrs, field.Required(pullPath, "a pull policy with ttlSecondsAfterFinished is required"))
	}
	allErrs = append(allErrs, validateOptionalNonNegative(p.TimeoutSeconds, pullPath.Child("timeoutSeconds"))...)
	allErrs = append(allErrs, validateOptionalNonNegative(p.BackoffLimit, pullPath.Child("backoffLimit"))...)
	if p.TTLSecondsAfterFinished == nil {
		allErrs = append(allErrs, field.Required(pullPath.Child("ttlSecondsAfterFinished"), "OpenKruise requires it for every tag"))
	} else {
		allErrs = append(allErrs, validateOptionalNonNegative(p.TTLSecondsAfterFinished, pullPath.Child("ttlSecondsAfterFinished"))...)
	}
	if d := p.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		allErrs = append(allErrs, field.Invalid(pullPath.Child("activeDeadlineSeconds"), *d, "must be greater than 0"))
	}
	return allErrs
}
