package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
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
