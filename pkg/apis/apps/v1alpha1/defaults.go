package v1alpha1

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// The defaults below are OpenKruise's (apis/apps/defaults in openkruise/kruise), so that an object
// read back from inplace looks as it would from OpenKruise.

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_CloneSet fills in CloneSet defaults.
func SetDefaults_CloneSet(obj *CloneSet) {
	if obj.Spec.Replicas == nil {
		obj.Spec.Replicas = ptr.To[int32](1)
	}
	if obj.Spec.RevisionHistoryLimit == nil {
		obj.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	// OpenKruise defaults the pull policy of a CloneSet's (non-init) containers to Always whatever
	// the tag, so that an in-place update to a re-pushed tag pulls it; the rest is kube-apiserver's.
	for i := range obj.Spec.Template.Spec.Containers {
		if c := &obj.Spec.Template.Spec.Containers[i]; c.ImagePullPolicy == "" {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
	SetDefaultsPodSpec(&obj.Spec.Template.Spec)
	SetDefaultsVolumeClaimTemplates(obj.Spec.VolumeClaimTemplates)

	us := &obj.Spec.UpdateStrategy
	switch us.Type {
	case "":
		us.Type = RecreateCloneSetUpdateStrategyType
	case InPlaceIfPossibleCloneSetUpdateStrategyType, InPlaceOnlyCloneSetUpdateStrategyType:
		if us.InPlaceUpdateStrategy == nil {
			us.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{}
		}
	}
	if us.Partition == nil {
		us.Partition = ptr.To(intstr.FromInt32(0))
	}
	if us.MaxUnavailable == nil {
		us.MaxUnavailable = ptr.To(intstr.FromString(DefaultCloneSetMaxUnavailable))
	}
	if us.MaxSurge == nil {
		us.MaxSurge = ptr.To(intstr.FromInt32(0))
	}
}

// SetDefaultsVolumeClaimTemplates fills in what kube-apiserver defaults in a claim.
func SetDefaultsVolumeClaimTemplates(pvcs []corev1.PersistentVolumeClaim) {
	for i := range pvcs {
		pvc := &pvcs[i]
		if pvc.Spec.VolumeMode == nil {
			pvc.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
		if pvc.Status.Phase == "" {
			pvc.Status.Phase = corev1.ClaimPending
		}
	}
}

// SetDefaults_StatefulSet fills in the defaults of a v1alpha1 Advanced StatefulSet: those of
// v1beta1 for the fields v1alpha1 has.
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
	if obj.Spec.Replicas == nil {
		obj.Spec.Replicas = ptr.To[int32](1)
	}
	if obj.Spec.RevisionHistoryLimit == nil {
		obj.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	SetDefaultsPodSpec(&obj.Spec.Template.Spec)
	SetDefaultsVolumeClaimTemplates(obj.Spec.VolumeClaimTemplates)
}

// SetDefaults_DaemonSet fills in Advanced DaemonSet defaults. As in OpenKruise, the deprecated
// rolling update type Surging becomes Standard with maxSurge 1 and maxUnavailable 0, and the Pod
// template is left as written.
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
		if ru.Type == DeprecatedSurgingRollingUpdateType {
			if ru.MaxSurge == nil {
				ru.MaxSurge = ptr.To(intstr.FromInt32(1))
			}
			if ru.MaxUnavailable == nil {
				ru.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			}
		}
		if ru.Type == "" || ru.Type == DeprecatedSurgingRollingUpdateType {
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

// SetDefaults_SidecarSet fills in SidecarSet defaults.
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
	SetDefaultsVolumes(obj.Spec.Volumes)
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
	// A schema default of OpenKruise's CRD, so it is in the stored object, and in the hash.
	if p := c.ResourcesPolicy; p != nil && p.TargetContainersNameRegex == "" {
		p.TargetContainersNameRegex = DefaultTargetContainersNameRegex
	}
	for i := range c.TransferEnv {
		if from := c.TransferEnv[i].SourceContainerNameFrom; from != nil {
			SetDefaultsFieldSelector(from.FieldRef)
		}
	}
	SetDefaultsSidecarContainerFields(&c.Container)
}

// SetDefaults_ContainerRecreateRequest fills in ContainerRecreateRequest defaults. What comes from
// the Pod (statusContext, preStop, ports, labels) is filled by admission, not here.
func SetDefaults_ContainerRecreateRequest(obj *ContainerRecreateRequest) {
	if obj.Spec.Strategy == nil {
		obj.Spec.Strategy = &ContainerRecreateRequestStrategy{}
	}
	if obj.Spec.Strategy.FailurePolicy == "" {
		obj.Spec.Strategy.FailurePolicy = ContainerRecreateRequestFailurePolicyFail
	}
}

// SetDefaultsPodSpec fills in the Pod spec defaults kube-apiserver would, for the fields a workload
// template commonly leaves empty, so that revisions hash the same before and after the Pod exists.
func SetDefaultsPodSpec(spec *corev1.PodSpec) {
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	for i := range spec.InitContainers {
		setDefaultsContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		setDefaultsContainer(&spec.Containers[i])
	}
	SetDefaultsVolumes(spec.Volumes)
}

func setDefaultsContainer(c *corev1.Container) {
	SetDefaultsSidecarContainerFields(c)
	setDefaultsProbe(c.StartupProbe)
}

// SetDefaultsSidecarContainerFields is setDefaultsContainer without the startup probe, as
// OpenKruise defaults a SidecarSet's containers (liveness and readiness probes only): the
// kruise.io/sidecarset-hash of a SidecarSet whose sidecar has a startup probe is then the same.
func SetDefaultsSidecarContainerFields(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil {
			SetDefaultsFieldSelector(from.FieldRef)
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		setDefaultsProbe(p)
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				setDefaultsHTTPGet(h.HTTPGet)
			}
		}
	}
}

// defaultPullPolicy is kube-apiserver's rule: Always when the tag is "latest" or when there is
// neither a tag nor a digest (the tag then defaults to latest), else IfNotPresent. An empty image
// has no tag to read and gets IfNotPresent, as in kube-apiserver.
func defaultPullPolicy(image string) corev1.PullPolicy {
	if image == "" {
		return corev1.PullIfNotPresent
	}
	ref, _, hasDigest := strings.Cut(image, "@")
	name := ref[strings.LastIndex(ref, "/")+1:]
	tag := ""
	if i := strings.LastIndex(name, ":"); i >= 0 {
		tag = name[i+1:]
	}
	if tag == "latest" || (tag == "" && !hasDigest) {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func setDefaultsProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	setDefaultsHTTPGet(p.HTTPGet)
}

func setDefaultsHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func SetDefaultsFieldSelector(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

// SetDefaultsVolumes applies kube-apiserver's volume defaults (as OpenKruise does for templates).
func SetDefaultsVolumes(volumes []corev1.Volume) {
	for i := range volumes {
		v := &volumes[i]
		if v.VolumeSource == (corev1.VolumeSource{}) {
			// kube-apiserver turns a volume with no source into an emptyDir.
			v.EmptyDir = &corev1.EmptyDirVolumeSource{}
		}
		if s := v.ConfigMap; s != nil && s.DefaultMode == nil {
			s.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
		}
		if s := v.Secret; s != nil && s.DefaultMode == nil {
			s.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
		}
		if s := v.HostPath; s != nil && s.Type == nil {
			s.Type = ptr.To(corev1.HostPathUnset)
		}
		if s := v.DownwardAPI; s != nil {
			if s.DefaultMode == nil {
				s.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
			}
			setDefaultsDownwardAPIItems(s.Items)
		}
		if s := v.Projected; s != nil {
			setDefaultsProjected(s)
		}
	}
}

func setDefaultsProjected(s *corev1.ProjectedVolumeSource) {
	if s.DefaultMode == nil {
		s.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
	}
	for j := range s.Sources {
		src := &s.Sources[j]
		if src.DownwardAPI != nil {
			setDefaultsDownwardAPIItems(src.DownwardAPI.Items)
		}
		if t := src.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
			t.ExpirationSeconds = ptr.To[int64](60 * 60)
		}
	}
}

func setDefaultsDownwardAPIItems(items []corev1.DownwardAPIVolumeFile) {
	for k := range items {
		SetDefaultsFieldSelector(items[k].FieldRef)
	}
}

// SetDefaults_ImagePullJob fills in ImagePullJob defaults (OpenKruise's SetDefaultsImagePullJob).
// Parallelism stays unset, as there: unset means 1 to the controller. OpenKruise's webhook also adds
// the finalizer apps.kruise.io/deletion-protection on create for its controller to remove; that is
// left to the controller, which must be running for a delete to finish.
func SetDefaults_ImagePullJob(obj *ImagePullJob) {
	setDefaultsImagePullJobTemplate(&obj.Spec.ImagePullJobTemplate)
	if obj.Spec.ImagePullPolicy == "" {
		obj.Spec.ImagePullPolicy = PullIfNotPresent
	}
}

// SetDefaults_ImageListPullJob fills in ImageListPullJob defaults (OpenKruise's
// SetDefaultsImageListPullJob: not imagePullPolicy, which each ImagePullJob made of it gets).
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
		t.PullPolicy.TimeoutSeconds = ptr.To[int32](DefaultImagePullTimeoutSeconds)
	}
	if t.PullPolicy.BackoffLimit == nil {
		t.PullPolicy.BackoffLimit = ptr.To[int32](DefaultImagePullBackoffLimit)
	}
}

const (
	// DefaultImagePullTimeoutSeconds is the default timeout of one pull.
	DefaultImagePullTimeoutSeconds = 600
	// DefaultImagePullBackoffLimit is the default number of retries of one pull.
	DefaultImagePullBackoffLimit = 3
)

// SetDefaults_NodeImage fills in NodeImage defaults as OpenKruise's webhook does: each tag gets a
// creation time (now) and a pull policy (timeout 600, backoff 3), and the tags of each image, in
// spec and in status, are sorted by tag.
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
				tag.PullPolicy.TimeoutSeconds = ptr.To[int32](DefaultImagePullTimeoutSeconds)
			}
			if tag.PullPolicy.BackoffLimit == nil {
				tag.PullPolicy.BackoffLimit = ptr.To[int32](DefaultImagePullBackoffLimit)
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
