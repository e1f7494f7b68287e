package validation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/features"
)

func validStatefulSet() *apps.StatefulSet {
	cs := validCloneSet()
	return &apps.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", ResourceVersion: "1"},
		Spec: apps.StatefulSetSpec{
			Replicas:             ptr.To[int32](4),
			Selector:             cs.Spec.Selector,
			Template:             cs.Spec.Template,
			VolumeClaimTemplates: cs.Spec.VolumeClaimTemplates,
			ServiceName:          "db",
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			UpdateStrategy: apps.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &apps.RollingUpdateStatefulSetStrategy{
					Partition:             ptr.To[int32](2),
					MaxUnavailable:        intOrStr(intstr.FromString("50%")),
					PodUpdatePolicy:       apps.InPlaceIfPossiblePodUpdateStrategyType,
					UnorderedUpdate:       &apps.UnorderedUpdateStrategy{PriorityStrategy: &pub.UpdatePriorityStrategy{OrderPriority: []pub.UpdatePriorityOrderTerm{{OrderedKey: "rank"}}}},
					InPlaceUpdateStrategy: &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 10},
					MinReadySeconds:       ptr.To[int32](5),
				},
			},
			RevisionHistoryLimit: ptr.To[int32](10),
			ReserveOrdinals:      []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("5-7")},
			ScaleStrategy:        &apps.StatefulSetScaleStrategy{MaxUnavailable: intOrStr(intstr.FromInt32(2))},
			PersistentVolumeClaimRetentionPolicy: &apps.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: apps.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: apps.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			Ordinals: &apps.StatefulSetOrdinals{Start: 1},
		},
	}
}

func TestValidateStatefulSet(t *testing.T) {
	expectErrors(t, ValidateStatefulSet(validStatefulSet()))

	ru := "spec.updateStrategy.rollingUpdate"
	cases := []struct {
		name   string
		mutate func(s *apps.StatefulSet)
		wants  []want
	}{
		{"name not a DNS label", func(s *apps.StatefulSet) { s.Name = "db.main" }, []want{invalid("metadata.name")}},
		{"negative replicas", func(s *apps.StatefulSet) { s.Spec.Replicas = ptr.To[int32](-1) }, []want{invalid("spec.replicas")}},
		{"selector misses the template", func(s *apps.StatefulSet) { s.Spec.Selector.MatchLabels = map[string]string{"app": "other"} },
			[]want{invalid("spec.template.metadata.labels")}},
		{"bad pod management policy", func(s *apps.StatefulSet) { orderedReady(s); s.Spec.PodManagementPolicy = "Sometimes" },
			[]want{notSupported("spec.podManagementPolicy")}},
		{"bad pod update policy", func(s *apps.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = "Swap" },
			[]want{notSupported(ru + ".podUpdatePolicy")}},
		{"negative partition", func(s *apps.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](-1) },
			[]want{invalid(ru + ".partition")}},
		{"minReadySeconds above 300", func(s *apps.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.MinReadySeconds = ptr.To[int32](301) },
			[]want{invalid(ru + ".minReadySeconds")}},
		{"maxUnavailable 0", func(s *apps.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = intOrStr(intstr.FromInt32(0))
		},
			[]want{invalid(ru + ".maxUnavailable")}},
		{"maxUnavailable 2 with OrderedReady", func(s *apps.StatefulSet) {
			s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
			s.Spec.UpdateStrategy.RollingUpdate.UnorderedUpdate = nil
			s.Spec.ScaleStrategy = nil
		}, []want{invalid(ru + ".maxUnavailable")}},
		{"unorderedUpdate with OrderedReady", func(s *apps.StatefulSet) {
			s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = intOrStr(intstr.FromInt32(1))
			s.Spec.ScaleStrategy = nil
		}, []want{forbidden(ru + ".unorderedUpdate")}},
		{"rollingUpdate with OnDelete", func(s *apps.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType },
			[]want{forbidden(ru)}},
		{"reserve ordinal negative and a backwards range", func(s *apps.StatefulSet) {
			s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(-1), intstr.FromString("7-5"), intstr.FromString("x")}
		}, []want{invalid("spec.reserveOrdinals[0]"), invalid("spec.reserveOrdinals[1]"), invalid("spec.reserveOrdinals[2]")}},
		{"bad retention policy", func(s *apps.StatefulSet) { s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Keep" },
			[]want{notSupported("spec.persistentVolumeClaimRetentionPolicy.whenScaled")}},
		{"negative ordinals start", func(s *apps.StatefulSet) { s.Spec.Ordinals.Start = -1 }, []want{invalid("spec.ordinals.start")}},
		{"bad volume claim update strategy", func(s *apps.StatefulSet) { s.Spec.VolumeClaimUpdateStrategy.Type = "Now" },
			[]want{notSupported("spec.volumeClaimUpdateStrategy.type")}},
		{"restart policy Never", func(s *apps.StatefulSet) { s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			[]want{notSupported("spec.template.spec.restartPolicy")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validStatefulSet()
			tc.mutate(s)
			expectErrors(t, ValidateStatefulSet(s), tc.wants...)
		})
	}
}

// orderedReady drops what only Parallel allows.
func orderedReady(s *apps.StatefulSet) {
	s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	s.Spec.UpdateStrategy.RollingUpdate.UnorderedUpdate = nil
	s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = intOrStr(intstr.FromInt32(1))
	s.Spec.ScaleStrategy = nil
}

func TestValidateStatefulSetUpdate(t *testing.T) {
	old := validStatefulSet()
	ok := validStatefulSet()
	ok.Spec.Replicas = ptr.To[int32](6)
	ok.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	ok.Spec.ReserveOrdinals = nil
	expectErrors(t, ValidateStatefulSetUpdate(ok, old))

	bad := validStatefulSet()
	bad.Spec.ServiceName = "other"
	bad.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}
	expectErrors(t, ValidateStatefulSetUpdate(bad, old), forbidden("spec.selector"), forbidden("spec.serviceName"))

	inPlaceOnly := validStatefulSet()
	inPlaceOnly.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = apps.InPlaceOnlyPodUpdateStrategyType
	oldOnly := inPlaceOnly.DeepCopy()
	inPlaceOnly.Spec.Template.Spec.Containers[0].Env = nil
	expectErrors(t, ValidateStatefulSetUpdate(inPlaceOnly, oldOnly), forbidden("spec.template.spec"))
}

func TestValidateStatefulSetStatusUpdate(t *testing.T) {
	old := validStatefulSet()
	s := old.DeepCopy()
	s.Status.UpdatedReadyReplicas = -1
	expectErrors(t, ValidateStatefulSetStatusUpdate(s, old), invalid("status.updatedReadyReplicas"))
}

// With StatefulSetAutoResizePVCGate and OnPodRollingUpdate, a claim template may change only in
// its size (OpenKruise's ValidateVolumeClaimTemplateUpdate); without either, in anything.
func TestValidateStatefulSetClaimTemplatesResizeOnly(t *testing.T) {
	old := validStatefulSet()
	old.Spec.VolumeClaimUpdateStrategy.Type = apps.OnPodRollingUpdateVolumeClaimUpdateStrategyType
	resized := old.DeepCopy()
	resized.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
	otherModes := old.DeepCopy()
	otherModes.Spec.VolumeClaimTemplates[0].Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	renamed := old.DeepCopy()
	renamed.Spec.VolumeClaimTemplates[0].Name = "logs"
	renamed.Spec.Template.Spec.Containers[0].VolumeMounts = nil
	added := old.DeepCopy()
	extra := *added.Spec.VolumeClaimTemplates[0].DeepCopy()
	extra.Name = "logs"
	added.Spec.VolumeClaimTemplates = append(added.Spec.VolumeClaimTemplates, extra)

	// Gate off: any change.
	for _, s := range []*apps.StatefulSet{resized, otherModes, added} {
		expectErrors(t, ValidateStatefulSetUpdate(s, old))
	}
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.StatefulSetAutoResizePVCGate, true)
	expectErrors(t, ValidateStatefulSetUpdate(resized, old))
	expectErrors(t, ValidateStatefulSetUpdate(otherModes, old), invalid("spec.volumeClaimTemplates[0]"))
	expectErrors(t, ValidateStatefulSetUpdate(added, old), invalid("spec.volumeClaimTemplates"))
	expectErrors(t, ValidateStatefulSetUpdate(renamed, old), forbidden("spec.volumeClaimTemplates[0].metadata.name"))
	onDelete := otherModes.DeepCopy()
	onDelete.Spec.VolumeClaimUpdateStrategy.Type = apps.OnPVCDeleteVolumeClaimUpdateStrategyType
	expectErrors(t, ValidateStatefulSetUpdate(onDelete, old))
}
