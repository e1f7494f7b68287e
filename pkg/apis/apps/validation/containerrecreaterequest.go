package validation

import (
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

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
			"this annotation (at apps.kruise.io/v1beta1, the PreRecreateGrace condition of status.conditions) cannot change once set"))
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
