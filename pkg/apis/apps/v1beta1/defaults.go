package v1beta1

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// The defaults are OpenKruise's (SetDefaultsStatefulSet in openkruise/kruise apis/apps/defaults),
// with the StatefulSetAutoDeletePVC feature on (claims retained unless asked otherwise). The Pod
// template gets the same defaults as every template of the group (v1alpha1's).

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_StatefulSet fills in Advanced StatefulSet defaults.
func SetDefaults_StatefulSet(obj *StatefulSet) {
	if obj.Spec.PodManagementPolicy == "" {
		obj.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	us := &obj.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateStatefulSetStrategyType
	}
	if us.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &RollingUpdateStatefulSetStrategy{}
		}
		ru := us.RollingUpdate
		if ru.Partition == nil {
			ru.Partition = ptr.To[int32](0)
		}
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
		if ru.PodUpdatePolicy == "" {
			ru.PodUpdatePolicy = RecreatePodUpdateStrategyType
		}
		if ru.MinReadySeconds == nil {
			ru.MinReadySeconds = ptr.To[int32](0)
		}
	}
	if obj.Spec.PersistentVolumeClaimRetentionPolicy == nil {
		obj.Spec.PersistentVolumeClaimRetentionPolicy = &StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if p := obj.Spec.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
		p.WhenDeleted = RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p := obj.Spec.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
		p.WhenScaled = RetainPersistentVolumeClaimRetentionPolicyType
	}
	if obj.Spec.Replicas == nil {
		obj.Spec.Replicas = ptr.To[int32](1)
	}
	if obj.Spec.RevisionHistoryLimit == nil {
		obj.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	v1alpha1.SetDefaultsPodSpec(&obj.Spec.Template.Spec)
	v1alpha1.SetDefaultsVolumeClaimTemplates(obj.Spec.VolumeClaimTemplates)
}

// SetDefaults_SidecarSet fills in SidecarSet defaults, those of v1alpha1 (OpenKruise's are the
// same at both versions): an object defaulted at either version converts to the same hub.
func SetDefaults_SidecarSet(obj *SidecarSet) {
	us := &obj.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = RollingUpdateSidecarSetStrategyType
	}
	if us.MaxUnavailable == nil {
		us.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	}
	if us.Partition == nil {
		us.Partition = ptr.To(intstr.FromInt32(0))
	}
	for i := range obj.Spec.InitContainers {
		setDefaultsSidecarContainer(&obj.Spec.InitContainers[i], AfterAppContainerType)
	}
	for i := range obj.Spec.Containers {
		setDefaultsSidecarContainer(&obj.Spec.Containers[i], BeforeAppContainerType)
	}
	v1alpha1.SetDefaultsVolumes(obj.Spec.Volumes)
	if obj.Spec.RevisionHistoryLimit == nil {
		obj.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	for i := range obj.Spec.PatchPodMetadata {
		if obj.Spec.PatchPodMetadata[i].PatchPolicy == "" {
			obj.Spec.PatchPodMetadata[i].PatchPolicy = SidecarSetRetainPatchPolicy
		}
	}
	if r := obj.Spec.InjectionStrategy.Revision; r != nil && r.Policy == "" {
		r.Policy = AlwaysSidecarSetInjectRevisionPolicy
	}
}

func setDefaultsSidecarContainer(c *SidecarContainer, policy PodInjectPolicyType) {
	if c.PodInjectPolicy == "" {
		c.PodInjectPolicy = policy
	}
	if c.UpgradeStrategy.UpgradeType == "" {
		c.UpgradeStrategy.UpgradeType = SidecarContainerColdUpgrade
	}
	if c.ShareVolumePolicy.Type == "" {
		c.ShareVolumePolicy.Type = ShareVolumePolicyDisabled
	}
	if p := c.ResourcesPolicy; p != nil && p.TargetContainersNameRegex == "" {
		p.TargetContainersNameRegex = v1alpha1.DefaultTargetContainersNameRegex
	}
	for i := range c.TransferEnv {
		if from := c.TransferEnv[i].SourceContainerNameFrom; from != nil {
			v1alpha1.SetDefaultsFieldSelector(from.FieldRef)
		}
	}
	v1alpha1.SetDefaultsSidecarContainerFields(&c.Container)
}

// SetDefaults_ImagePullJob fills in ImagePullJob defaults, those of v1alpha1 (OpenKruise's are the
// same at both versions).
func SetDefaults_ImagePullJob(obj *ImagePullJob) {
	setDefaultsImagePullJobTemplate(&obj.Spec.ImagePullJobTemplate)
	if obj.Spec.ImagePullPolicy == "" {
		obj.Spec.ImagePullPolicy = PullIfNotPresent
	}
}

// SetDefaults_ImageListPullJob fills in ImageListPullJob defaults, those of v1alpha1.
func SetDefaults_ImageListPullJob(obj *ImageListPullJob) {
	setDefaultsImagePullJobTemplate(&obj.Spec.ImagePullJobTemplate)
}

func setDefaultsImagePullJobTemplate(t *ImagePullJobTemplate) {
	if t.CompletionPolicy.Type == "" {
		t.CompletionPolicy.Type = Always
	}
	if t.PullPolicy == nil {
		t.PullPolicy = &PullPolicy{}
	}
	if t.PullPolicy.TimeoutSeconds == nil {
		t.PullPolicy.TimeoutSeconds = ptr.To[int32](v1alpha1.DefaultImagePullTimeoutSeconds)
	}
	if t.PullPolicy.BackoffLimit == nil {
		t.PullPolicy.BackoffLimit = ptr.To[int32](v1alpha1.DefaultImagePullBackoffLimit)
	}
}

// SetDefaults_NodeImage fills in NodeImage defaults, those of v1alpha1: each tag gets a creation
// time (now) and a pull policy (timeout 600, backoff 3), and the tags of each image, in spec and
// in status, are sorted by tag.
func SetDefaults_NodeImage(obj *NodeImage) {
	now := metav1.Now()
	for name, image := range obj.Spec.Images {
		for i := range image.Tags {
			tag := &image.Tags[i]
			if tag.CreatedAt == nil {
				tag.CreatedAt = &now
			}
			if tag.PullPolicy == nil {
				tag.PullPolicy = &ImageTagPullPolicy{}
			}
			if tag.PullPolicy.TimeoutSeconds == nil {
				tag.PullPolicy.TimeoutSeconds = ptr.To[int32](v1alpha1.DefaultImagePullTimeoutSeconds)
			}
			if tag.PullPolicy.BackoffLimit == nil {
				tag.PullPolicy.BackoffLimit = ptr.To[int32](v1alpha1.DefaultImagePullBackoffLimit)
			}
		}
		slices.SortStableFunc(image.Tags, func(a, b ImageTagSpec) int { return strings.Compare(a.Tag, b.Tag) })
		obj.Spec.Images[name] = image
	}
	for name, image := range obj.Status.ImageStatuses {
		slices.SortStableFunc(image.Tags, func(a, b ImageTagStatus) int { return strings.Compare(a.Tag, b.Tag) })
		obj.Status.ImageStatuses[name] = image
	}
}

// SetDefaults_DaemonSet fills in Advanced DaemonSet defaults, those of v1alpha1. v1beta1 has no
// Surging rolling update type; one sent anyway is defaulted as v1alpha1 does (Standard, maxSurge
// 1, maxUnavailable 0), so that the object is the same whichever version sent it.
func SetDefaults_DaemonSet(obj *DaemonSet) {
	if obj.Spec.BurstReplicas == nil {
		obj.Spec.BurstReplicas = ptr.To(intstr.FromInt32(250))
	}
	us := &obj.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = RollingUpdateDaemonSetStrategyType
	}
	if us.Type == RollingUpdateDaemonSetStrategyType {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &RollingUpdateDaemonSet{}
		}
		ru := us.RollingUpdate
		surging := ru.Type == RollingUpdateType(v1alpha1.DeprecatedSurgingRollingUpdateType)
		if surging {
			if ru.MaxSurge == nil {
				ru.MaxSurge = ptr.To(intstr.FromInt32(1))
			}
			if ru.MaxUnavailable == nil {
				ru.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			}
		}
		if ru.Type == "" || surging {
			ru.Type = StandardRollingUpdateType
		}
		if ru.MaxUnavailable == nil && ru.MaxSurge == nil {
			ru.MaxUnavailable = ptr.To(intstr.FromInt32(1))
			ru.MaxSurge = ptr.To(intstr.FromInt32(0))
		}
	}
	if obj.Spec.RevisionHistoryLimit == nil {
		obj.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
}

// SetDefaults_ContainerRecreateRequest fills in ContainerRecreateRequest defaults, those of
// v1alpha1: a strategy with failurePolicy Fail. What comes from the Pod is filled by admission.
func SetDefaults_ContainerRecreateRequest(obj *ContainerRecreateRequest) {
	if obj.Spec.Strategy == nil {
		obj.Spec.Strategy = &ContainerRecreateRequestStrategy{}
	}
	if obj.Spec.Strategy.FailurePolicy == "" {
		obj.Spec.Strategy.FailurePolicy = ContainerRecreateRequestFailurePolicyFail
	}
}

// SetDefaults_CloneSet fills in CloneSet defaults, OpenKruise master's for v1beta1: those of
// v1alpha1 under rollingUpdate (podUpdatePolicy ReCreate, partition 0, maxUnavailable 20%,
// maxSurge 0) when the type is RollingUpdate, none for OnDelete; the Pod template gets v1alpha1's
// template defaults, so that the object is the same whichever version sent it.
func SetDefaults_CloneSet(obj *CloneSet) {
	if obj.Spec.Replicas == nil {
		obj.Spec.Replicas = ptr.To[int32](1)
	}
	if obj.Spec.RevisionHistoryLimit == nil {
		obj.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	// As v1alpha1: containers pull Always whatever the tag, so that an in-place update to a
	// re-pushed tag pulls it.
	for i := range obj.Spec.Template.Spec.Containers {
		if c := &obj.Spec.Template.Spec.Containers[i]; c.ImagePullPolicy == "" {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
	v1alpha1.SetDefaultsPodSpec(&obj.Spec.Template.Spec)
	v1alpha1.SetDefaultsVolumeClaimTemplates(obj.Spec.VolumeClaimTemplates)

	us := &obj.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = RollingUpdateCloneSetUpdateStrategyType
	}
	if us.Type != RollingUpdateCloneSetUpdateStrategyType {
		return
	}
	if us.RollingUpdate == nil {
		us.RollingUpdate = &RollingUpdateCloneSetStrategy{}
	}
	ru := us.RollingUpdate
	if ru.PodUpdatePolicy == "" {
		ru.PodUpdatePolicy = RecreateCloneSetPodUpdateStrategyType
	}
	if (ru.PodUpdatePolicy == InPlaceIfPossibleCloneSetPodUpdateStrategyType || ru.PodUpdatePolicy == InPlaceOnlyCloneSetPodUpdateStrategyType) &&
		ru.InPlaceUpdateStrategy == nil {
		ru.InPlaceUpdateStrategy = &InPlaceUpdateStrategy{}
	}
	if ru.Partition == nil {
		ru.Partition = ptr.To(intstr.FromInt32(0))
	}
	if ru.MaxUnavailable == nil {
		ru.MaxUnavailable = ptr.To(intstr.FromString(v1alpha1.DefaultCloneSetMaxUnavailable))
	}
	if ru.MaxSurge == nil {
		ru.MaxSurge = ptr.To(intstr.FromInt32(0))
	}
}
