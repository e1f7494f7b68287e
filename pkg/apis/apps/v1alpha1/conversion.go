package v1alpha1

import (
	"encoding/json"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// StatefulSetV1beta1FieldsAnnotation carries, on an Advanced StatefulSet read at v1alpha1, the
// spec fields of v1beta1 (the storage version) that v1alpha1 does not have, as JSON. Written back
// unchanged by a v1alpha1 client, it restores them, so reading and updating through v1alpha1 loses
// nothing: the way Kubernetes keeps newer fields across an older version (autoscaling/v1's
// HorizontalPodAutoscaler does the same). OpenKruise's own conversion drops them instead. The
// status fields v1alpha1 lacks (updatedReadyReplicas, updatedAvailableReplicas, volumeClaims) are
// not carried: the controller writes status through v1beta1.
const StatefulSetV1beta1FieldsAnnotation = "inplace.dev/v1beta1-fields"

// statefulSetV1beta1Fields are the spec fields of a v1beta1 Advanced StatefulSet that v1alpha1
// lacks, with the JSON names of v1beta1.
type statefulSetV1beta1Fields struct {
	VolumeClaimUpdateStrategy            *apps.VolumeClaimUpdateStrategy                       `json:"volumeClaimUpdateStrategy,omitempty"`
	ReserveOrdinals                      []intstr.IntOrString                                  `json:"reserveOrdinals,omitempty"`
	Lifecycle                            *pub.Lifecycle                                        `json:"lifecycle,omitempty"`
	ScaleStrategy                        *apps.StatefulSetScaleStrategy                        `json:"scaleStrategy,omitempty"`
	PersistentVolumeClaimRetentionPolicy *apps.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	Ordinals                             *apps.StatefulSetOrdinals                             `json:"ordinals,omitempty"`
}

// v1beta1Fields picks the fields of spec that v1alpha1 lacks, leaving out a retention policy
// that is the default (Retain, Retain): every stored object has one, and v1alpha1 readers should
// not see an annotation for it. It returns nil when there is nothing to carry.
func v1beta1Fields(spec *apps.StatefulSetSpec) *statefulSetV1beta1Fields {
	f := statefulSetV1beta1Fields{
		ReserveOrdinals: spec.ReserveOrdinals,
		Lifecycle:       spec.Lifecycle,
		ScaleStrategy:   spec.ScaleStrategy,
		Ordinals:        spec.Ordinals,
	}
	if spec.VolumeClaimUpdateStrategy != (apps.VolumeClaimUpdateStrategy{}) {
		f.VolumeClaimUpdateStrategy = &spec.VolumeClaimUpdateStrategy
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil && !isDefaultRetention(p) {
		f.PersistentVolumeClaimRetentionPolicy = p
	}
	if f.VolumeClaimUpdateStrategy == nil && f.ReserveOrdinals == nil && f.Lifecycle == nil &&
		f.ScaleStrategy == nil && f.PersistentVolumeClaimRetentionPolicy == nil && f.Ordinals == nil {
		return nil
	}
	return &f
}

func isDefaultRetention(p *apps.StatefulSetPersistentVolumeClaimRetentionPolicy) bool {
	return p.WhenDeleted == apps.RetainPersistentVolumeClaimRetentionPolicyType &&
		p.WhenScaled == apps.RetainPersistentVolumeClaimRetentionPolicyType
}

// Convert_apps_StatefulSet_To_v1alpha1_StatefulSet converts the hub to v1alpha1, the v1beta1-only
// spec fields into StatefulSetV1beta1FieldsAnnotation.
func Convert_apps_StatefulSet_To_v1alpha1_StatefulSet(in *apps.StatefulSet, out *StatefulSet, s conversion.Scope) error {
	if err := autoConvert_apps_StatefulSet_To_v1alpha1_StatefulSet(in, out, s); err != nil {
		return err
	}
	extra := v1beta1Fields(&in.Spec)
	if extra == nil {
		return nil
	}
	data, err := json.Marshal(extra)
	if err != nil {
		return fmt.Errorf("encoding the v1beta1 fields of StatefulSet %s/%s: %w", in.Namespace, in.Name, err)
	}
	// The generated conversion shares the annotation map with in: write into a copy.
	out.Annotations = maps.Clone(out.Annotations)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[StatefulSetV1beta1FieldsAnnotation] = string(data)
	return nil
}

// Convert_v1alpha1_StatefulSet_To_apps_StatefulSet converts v1alpha1 to the hub, restoring the
// v1beta1-only spec fields from StatefulSetV1beta1FieldsAnnotation (and dropping it).
func Convert_v1alpha1_StatefulSet_To_apps_StatefulSet(in *StatefulSet, out *apps.StatefulSet, s conversion.Scope) error {
	if err := autoConvert_v1alpha1_StatefulSet_To_apps_StatefulSet(in, out, s); err != nil {
		return err
	}
	data, ok := in.Annotations[StatefulSetV1beta1FieldsAnnotation]
	if !ok {
		return nil
	}
	var extra statefulSetV1beta1Fields
	if err := json.Unmarshal([]byte(data), &extra); err != nil {
		return fmt.Errorf("metadata.annotations[%s]: not the v1beta1 fields this server wrote: %w", StatefulSetV1beta1FieldsAnnotation, err)
	}
	out.Annotations = maps.Clone(out.Annotations)
	delete(out.Annotations, StatefulSetV1beta1FieldsAnnotation)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	if extra.VolumeClaimUpdateStrategy != nil {
		out.Spec.VolumeClaimUpdateStrategy = *extra.VolumeClaimUpdateStrategy
	}
	out.Spec.ReserveOrdinals = extra.ReserveOrdinals
	out.Spec.Lifecycle = extra.Lifecycle
	out.Spec.ScaleStrategy = extra.ScaleStrategy
	out.Spec.PersistentVolumeClaimRetentionPolicy = extra.PersistentVolumeClaimRetentionPolicy
	out.Spec.Ordinals = extra.Ordinals
	return nil
}

// Convert_apps_StatefulSetSpec_To_v1alpha1_StatefulSetSpec converts the fields v1alpha1 has; the
// others are carried by Convert_apps_StatefulSet_To_v1alpha1_StatefulSet.
func Convert_apps_StatefulSetSpec_To_v1alpha1_StatefulSetSpec(in *apps.StatefulSetSpec, out *StatefulSetSpec, s conversion.Scope) error {
	return autoConvert_apps_StatefulSetSpec_To_v1alpha1_StatefulSetSpec(in, out, s)
}

// Convert_apps_StatefulSetStatus_To_v1alpha1_StatefulSetStatus drops the status fields v1alpha1
// lacks; the controller writes status through v1beta1.
func Convert_apps_StatefulSetStatus_To_v1alpha1_StatefulSetStatus(in *apps.StatefulSetStatus, out *StatefulSetStatus, s conversion.Scope) error {
	return autoConvert_apps_StatefulSetStatus_To_v1alpha1_StatefulSetStatus(in, out, s)
}
