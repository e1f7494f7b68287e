package v1beta1

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// CloneSet conversion between the hub (v1alpha1's shape, which CloneSets are stored at) and
// v1beta1, as OpenKruise's master converts, and lossless both ways:
//
//   - v1beta1's updateStrategy {type, rollingUpdate.podUpdatePolicy} is the hub's one
//     updateStrategy.type: OnDelete is OnDelete, RollingUpdate is the podUpdatePolicy (ReCreate,
//     InPlaceIfPossible, InPlaceOnly); the rolling update's parameters are the hub's
//     updateStrategy fields. A pair the hub's type cannot say (OnDelete with a podUpdatePolicy, or
//     values validation refuses) rides in the hub's (so v1alpha1's) annotation
//     V1beta1FieldsAnnotation; a hub type v1beta1 cannot say rides in V1alpha1FieldsAnnotation.
//   - inPlaceUpdateStrategy.imagePreDownload* are the hub's (v1alpha1's) annotations
//     apps.kruise.io/image-predownload-*, as OpenKruise converts them, so the pre-download
//     controller reads them whichever version wrote them. An annotation value that is not the
//     canonical form of a field value stays an annotation.
//   - scaleStrategy.enablePVCReuse is the hub's disablePVCReuse inverted;
//     scaleStrategy.excludePreparingDelete is the hub's label
//     apps.kruise.io/cloneset-scaling-exclude-preparing-delete "true" (OpenKruise's conversion
//     drops it on the way to v1alpha1; here it stays).

const (
	// V1beta1FieldsAnnotation carries, on a CloneSet read at v1alpha1 (and in etcd, where
	// CloneSets are stored at v1alpha1), what v1beta1 says that v1alpha1 cannot, as JSON. Written
	// back unchanged, it restores it; v1beta1 never shows it.
	V1beta1FieldsAnnotation = "inplace.dev/v1beta1-fields"
	// CloneSetScalingExcludePreparingDeleteLabel is where v1alpha1 keeps v1beta1's
	// spec.scaleStrategy.excludePreparingDelete.
	CloneSetScalingExcludePreparingDeleteLabel = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete"
)

// cloneSetV1beta1Fields is what the hub's fields and annotations alone do not give back of a
// v1beta1 CloneSet: an update strategy type and podUpdatePolicy (Type set) the hub's type does
// not say, and an imagePreDownloadParallelism that is a string of digits, whose annotation reads
// back as a number.
type cloneSetV1beta1Fields struct {
	Type                        *CloneSetUpdateStrategyType   `json:"type,omitempty"`
	PodUpdatePolicy             CloneSetPodUpdateStrategyType `json:"podUpdatePolicy,omitempty"`
	ImagePreDownloadParallelism *intstr.IntOrString           `json:"imagePreDownloadParallelism,omitempty"`
}

// cloneSetV1alpha1Fields is what a v1alpha1 CloneSet says that its v1beta1 view cannot: a type
// with no v1beta1 counterpart, and the absence of inPlaceUpdateStrategy where v1beta1 needs one
// to hold the image pre-download annotations.
type cloneSetV1alpha1Fields struct {
	Type                    *apps.CloneSetUpdateStrategyType `json:"type,omitempty"`
	NoInPlaceUpdateStrategy bool                             `json:"noInPlaceUpdateStrategy,omitempty"`
}

// betaStrategyOf is the v1beta1 type and podUpdatePolicy of a hub type, and whether there is
// one (false for a type validation refuses, or none).
func betaStrategyOf(t apps.CloneSetUpdateStrategyType) (CloneSetUpdateStrategyType, CloneSetPodUpdateStrategyType, bool) {
	switch t {
	case apps.OnDeleteCloneSetUpdateStrategyType:
		return OnDeleteCloneSetUpdateStrategyType, "", true
	case apps.RecreateCloneSetUpdateStrategyType, apps.InPlaceIfPossibleCloneSetUpdateStrategyType, apps.InPlaceOnlyCloneSetUpdateStrategyType:
		return RollingUpdateCloneSetUpdateStrategyType, CloneSetPodUpdateStrategyType(t), true
	}
	return RollingUpdateCloneSetUpdateStrategyType, "", false
}

// hubStrategyOf is the hub type of a v1beta1 type and podUpdatePolicy, as OpenKruise converts:
// OnDelete whatever the policy, else the policy, ReCreate for none or an unknown one.
func hubStrategyOf(t CloneSetUpdateStrategyType, p CloneSetPodUpdateStrategyType) apps.CloneSetUpdateStrategyType {
	if t == OnDeleteCloneSetUpdateStrategyType {
		return apps.OnDeleteCloneSetUpdateStrategyType
	}
	switch p {
	case InPlaceIfPossibleCloneSetPodUpdateStrategyType, InPlaceOnlyCloneSetPodUpdateStrategyType:
		return apps.CloneSetUpdateStrategyType(p)
	}
	return apps.RecreateCloneSetUpdateStrategyType
}

// ParseV1beta1Fields reads the v1beta1 update strategy type and podUpdatePolicy carried in a hub
// CloneSet's V1beta1FieldsAnnotation, for validation; ok is false when there is none.
func ParseV1beta1Fields(annotations map[string]string) (t, podUpdatePolicy string, ok bool, err error) {
	data, ok := annotations[V1beta1FieldsAnnotation]
	if !ok {
		return "", "", false, nil
	}
	var f cloneSetV1beta1Fields
	if err := json.Unmarshal([]byte(data), &f); err != nil {
		return "", "", true, err
	}
	if f.Type == nil {
		return "", "", false, nil
	}
	return string(*f.Type), string(f.PodUpdatePolicy), true, nil
}

// Convert_apps_CloneSet_To_v1beta1_CloneSet converts the hub to v1beta1.
func Convert_apps_CloneSet_To_v1beta1_CloneSet(in *apps.CloneSet, out *CloneSet, s conversion.Scope) error {
	if err := autoConvert_apps_CloneSet_To_v1beta1_CloneSet(in, out, s); err != nil {
		return err
	}
	// The generated conversion shares the metadata maps with in: change copies.
	out.Annotations, out.Labels = maps.Clone(out.Annotations), maps.Clone(out.Labels)
	if in.Labels[CloneSetScalingExcludePreparingDeleteLabel] == "true" {
		out.Spec.ScaleStrategy.ExcludePreparingDelete = true
		delete(out.Labels, CloneSetScalingExcludePreparingDeleteLabel)
	}

	hub := &in.Spec.UpdateStrategy
	var alpha cloneSetV1alpha1Fields
	t, policy, ok := betaStrategyOf(hub.Type)
	if !ok {
		alpha.Type = &hub.Type
	}
	var beta cloneSetV1beta1Fields
	if data, found := in.Annotations[V1beta1FieldsAnnotation]; found {
		delete(out.Annotations, V1beta1FieldsAnnotation)
		// Unreadable, it is dropped: the hub's own fields are the truth.
		_ = json.Unmarshal([]byte(data), &beta)
		// What a v1alpha1 client changed since (the type) wins over what was carried.
		if beta.Type != nil && hubStrategyOf(*beta.Type, beta.PodUpdatePolicy) == hub.Type {
			t, policy = *beta.Type, beta.PodUpdatePolicy
		}
	}
	ru := RollingUpdateCloneSetStrategy{
		Partition:        hub.Partition,
		MaxUnavailable:   hub.MaxUnavailable,
		MaxSurge:         hub.MaxSurge,
		PodUpdatePolicy:  policy,
		Paused:           hub.Paused,
		PriorityStrategy: hub.PriorityStrategy,
		ScatterStrategy:  hub.ScatterStrategy,
	}
	pre := takePreDownload(out.Annotations)
	if p := beta.ImagePreDownloadParallelism; p != nil && pre.ImagePreDownloadParallelism != nil && p.String() == pre.ImagePreDownloadParallelism.String() {
		pre.ImagePreDownloadParallelism = p
	}
	if hub.InPlaceUpdateStrategy != nil || pre != (InPlaceUpdateStrategy{}) {
		ips := pre
		if hub.InPlaceUpdateStrategy != nil {
			ips.GracePeriodSeconds = hub.InPlaceUpdateStrategy.GracePeriodSeconds
		} else {
			alpha.NoInPlaceUpdateStrategy = true
		}
		ru.InPlaceUpdateStrategy = &ips
	}
	out.Spec.UpdateStrategy = CloneSetUpdateStrategy{Type: t}
	if !isEmptyRollingUpdate(&ru) {
		out.Spec.UpdateStrategy.RollingUpdate = &ru
	}

	if alpha != (cloneSetV1alpha1Fields{}) {
		data, err := json.Marshal(alpha)
		if err != nil {
			return fmt.Errorf("encoding the v1alpha1 fields of CloneSet %s/%s: %w", in.Namespace, in.Name, err)
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[V1alpha1FieldsAnnotation] = string(data)
	}
	out.Annotations, out.Labels = nilIfEmpty(out.Annotations), nilIfEmpty(out.Labels)
	return nil
}

// Convert_v1beta1_CloneSet_To_apps_CloneSet converts v1beta1 to the hub.
func Convert_v1beta1_CloneSet_To_apps_CloneSet(in *CloneSet, out *apps.CloneSet, s conversion.Scope) error {
	if err := autoConvert_v1beta1_CloneSet_To_apps_CloneSet(in, out, s); err != nil {
		return err
	}
	out.Annotations, out.Labels = maps.Clone(out.Annotations), maps.Clone(out.Labels)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	if in.Spec.ScaleStrategy.ExcludePreparingDelete {
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[CloneSetScalingExcludePreparingDeleteLabel] = "true"
	}

	var alpha cloneSetV1alpha1Fields
	if data, found := in.Annotations[V1alpha1FieldsAnnotation]; found {
		delete(out.Annotations, V1alpha1FieldsAnnotation)
		if err := json.Unmarshal([]byte(data), &alpha); err != nil {
			return fmt.Errorf("metadata.annotations[%s]: not the v1alpha1 fields this server wrote: %w", V1alpha1FieldsAnnotation, err)
		}
	}
	beta := &in.Spec.UpdateStrategy
	ru := beta.RollingUpdate
	if ru == nil {
		ru = &RollingUpdateCloneSetStrategy{}
	}
	hub := apps.CloneSetUpdateStrategy{
		Type:             hubStrategyOf(beta.Type, ru.PodUpdatePolicy),
		Partition:        ru.Partition,
		MaxUnavailable:   ru.MaxUnavailable,
		MaxSurge:         ru.MaxSurge,
		Paused:           ru.Paused,
		PriorityStrategy: ru.PriorityStrategy,
		ScatterStrategy:  ru.ScatterStrategy,
	}
	var carried cloneSetV1beta1Fields
	t, policy, _ := betaStrategyOf(hub.Type)
	switch {
	case alpha.Type != nil && beta.Type == RollingUpdateCloneSetUpdateStrategyType && ru.PodUpdatePolicy == "":
		// Still the view of a v1alpha1 type v1beta1 cannot say: give it back.
		hub.Type = *alpha.Type
	case t != beta.Type || policy != ru.PodUpdatePolicy:
		carried.Type, carried.PodUpdatePolicy = &beta.Type, ru.PodUpdatePolicy
	}
	if ips := ru.InPlaceUpdateStrategy; ips != nil {
		putPreDownload(out.Annotations, ips)
		if p := ips.ImagePreDownloadParallelism; p != nil && intstr.Parse(p.String()) != *p {
			carried.ImagePreDownloadParallelism = p
		}
		if ips.GracePeriodSeconds != 0 || !alpha.NoInPlaceUpdateStrategy {
			hub.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{GracePeriodSeconds: ips.GracePeriodSeconds}
		}
	}
	if carried != (cloneSetV1beta1Fields{}) {
		data, err := json.Marshal(carried)
		if err != nil {
			return fmt.Errorf("encoding the v1beta1 fields of CloneSet %s/%s: %w", in.Namespace, in.Name, err)
		}
		out.Annotations[V1beta1FieldsAnnotation] = string(data)
	}
	out.Spec.UpdateStrategy = hub
	out.Annotations, out.Labels = nilIfEmpty(out.Annotations), nilIfEmpty(out.Labels)
	return nil
}

// Convert_apps_CloneSetScaleStrategy_To_v1beta1_CloneSetScaleStrategy inverts disablePVCReuse;
// excludePreparingDelete is the label, handled by Convert_apps_CloneSet_To_v1beta1_CloneSet.
func Convert_apps_CloneSetScaleStrategy_To_v1beta1_CloneSetScaleStrategy(in *apps.CloneSetScaleStrategy, out *CloneSetScaleStrategy, s conversion.Scope) error {
	if err := autoConvert_apps_CloneSetScaleStrategy_To_v1beta1_CloneSetScaleStrategy(in, out, s); err != nil {
		return err
	}
	out.EnablePVCReuse = !in.DisablePVCReuse
	return nil
}

// Convert_v1beta1_CloneSetScaleStrategy_To_apps_CloneSetScaleStrategy inverts enablePVCReuse.
func Convert_v1beta1_CloneSetScaleStrategy_To_apps_CloneSetScaleStrategy(in *CloneSetScaleStrategy, out *apps.CloneSetScaleStrategy, s conversion.Scope) error {
	if err := autoConvert_v1beta1_CloneSetScaleStrategy_To_apps_CloneSetScaleStrategy(in, out, s); err != nil {
		return err
	}
	out.DisablePVCReuse = !in.EnablePVCReuse
	return nil
}

// Convert_apps_CloneSetUpdateStrategy_To_v1beta1_CloneSetUpdateStrategy does nothing: the update
// strategy needs the object's metadata and is converted by Convert_apps_CloneSet_To_v1beta1_CloneSet.
func Convert_apps_CloneSetUpdateStrategy_To_v1beta1_CloneSetUpdateStrategy(*apps.CloneSetUpdateStrategy, *CloneSetUpdateStrategy, conversion.Scope) error {
	return nil
}

// Convert_v1beta1_CloneSetUpdateStrategy_To_apps_CloneSetUpdateStrategy does nothing: the update
// strategy needs the object's metadata and is converted by Convert_v1beta1_CloneSet_To_apps_CloneSet.
func Convert_v1beta1_CloneSetUpdateStrategy_To_apps_CloneSetUpdateStrategy(*CloneSetUpdateStrategy, *apps.CloneSetUpdateStrategy, conversion.Scope) error {
	return nil
}

// takePreDownload moves the image pre-download annotations whose values are the canonical form
// of a field value out of annotations and into the fields of an InPlaceUpdateStrategy.
func takePreDownload(annotations map[string]string) InPlaceUpdateStrategy {
	var ips InPlaceUpdateStrategy
	if v, ok := annotations[v1alpha1.ImagePreDownloadParallelismKey]; ok {
		if p := intstr.Parse(v); p.String() == v {
			ips.ImagePreDownloadParallelism = &p
			delete(annotations, v1alpha1.ImagePreDownloadParallelismKey)
		}
	}
	for key, field := range map[string]**int32{
		v1alpha1.ImagePreDownloadTimeoutSecondsKey:   &ips.ImagePreDownloadTimeoutSeconds,
		v1alpha1.ImagePreDownloadMinUpdatedReadyPods: &ips.ImagePreDownloadMinUpdatedReadyPods,
	} {
		if v, ok := annotations[key]; ok {
			if n, err := strconv.ParseInt(v, 10, 32); err == nil && strconv.FormatInt(n, 10) == v {
				*field = ptr.To(int32(n))
				delete(annotations, key)
			}
		}
	}
	return ips
}

// putPreDownload writes the image pre-download fields of ips as the annotations v1alpha1 reads.
func putPreDownload(annotations map[string]string, ips *InPlaceUpdateStrategy) {
	if p := ips.ImagePreDownloadParallelism; p != nil {
		annotations[v1alpha1.ImagePreDownloadParallelismKey] = p.String()
	}
	if n := ips.ImagePreDownloadTimeoutSeconds; n != nil {
		annotations[v1alpha1.ImagePreDownloadTimeoutSecondsKey] = strconv.FormatInt(int64(*n), 10)
	}
	if n := ips.ImagePreDownloadMinUpdatedReadyPods; n != nil {
		annotations[v1alpha1.ImagePreDownloadMinUpdatedReadyPods] = strconv.FormatInt(int64(*n), 10)
	}
}

// isEmptyRollingUpdate tells whether ru says nothing (then v1beta1 shows no rollingUpdate).
func isEmptyRollingUpdate(ru *RollingUpdateCloneSetStrategy) bool {
	return ru.Partition == nil && ru.MaxUnavailable == nil && ru.MaxSurge == nil && ru.PodUpdatePolicy == "" &&
		!ru.Paused && ru.PriorityStrategy == nil && ru.ScatterStrategy == nil && ru.InPlaceUpdateStrategy == nil
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
