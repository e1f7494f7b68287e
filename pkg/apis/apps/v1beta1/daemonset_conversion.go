package v1beta1

import (
	"maps"
	"strconv"

	"k8s.io/apimachinery/pkg/conversion"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
)

// Advanced DaemonSet conversion between the hub and v1beta1, as OpenKruise v1.9 converts: v1beta1's
// spec.scaleStrategy.partitionedScaling is v1alpha1's (and the hub's) annotation
// daemonset.kruise.io/progressive-create-pod, and status.updateRevision is status.daemonSetHash.
// A scaleStrategy with partitionedScaling false is kept as the annotation's "false", which
// OpenKruise's conversion drops.

// ProgressiveCreatePodAnnotation is where v1alpha1 keeps v1beta1's spec.scaleStrategy.partitionedScaling.
const ProgressiveCreatePodAnnotation = "daemonset.kruise.io/progressive-create-pod"

// Convert_apps_DaemonSet_To_v1beta1_DaemonSet converts the hub to v1beta1, the annotation (when
// "true" or "false") into spec.scaleStrategy.
func Convert_apps_DaemonSet_To_v1beta1_DaemonSet(in *apps.DaemonSet, out *DaemonSet, s conversion.Scope) error {
	if err := autoConvert_apps_DaemonSet_To_v1beta1_DaemonSet(in, out, s); err != nil {
		return err
	}
	if v, ok := in.Annotations[ProgressiveCreatePodAnnotation]; ok {
		if partitioned, err := strconv.ParseBool(v); err == nil && strconv.FormatBool(partitioned) == v {
			out.Spec.ScaleStrategy = &DaemonSetScaleStrategy{PartitionedScaling: partitioned}
			out.Annotations = withoutKey(out.Annotations, ProgressiveCreatePodAnnotation)
		}
	}
	return nil
}

// Convert_v1beta1_DaemonSet_To_apps_DaemonSet converts v1beta1 to the hub, spec.scaleStrategy
// into the annotation.
func Convert_v1beta1_DaemonSet_To_apps_DaemonSet(in *DaemonSet, out *apps.DaemonSet, s conversion.Scope) error {
	if err := autoConvert_v1beta1_DaemonSet_To_apps_DaemonSet(in, out, s); err != nil {
		return err
	}
	if in.Spec.ScaleStrategy != nil {
		out.Annotations = maps.Clone(out.Annotations)
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[ProgressiveCreatePodAnnotation] = strconv.FormatBool(in.Spec.ScaleStrategy.PartitionedScaling)
	}
	return nil
}

// Convert_v1beta1_DaemonSetSpec_To_apps_DaemonSetSpec converts the fields the hub has in its
// spec; scaleStrategy is handled by Convert_v1beta1_DaemonSet_To_apps_DaemonSet.
func Convert_v1beta1_DaemonSetSpec_To_apps_DaemonSetSpec(in *DaemonSetSpec, out *apps.DaemonSetSpec, s conversion.Scope) error {
	return autoConvert_v1beta1_DaemonSetSpec_To_apps_DaemonSetSpec(in, out, s)
}

// Convert_apps_DaemonSetStatus_To_v1beta1_DaemonSetStatus converts the status, daemonSetHash
// into updateRevision.
func Convert_apps_DaemonSetStatus_To_v1beta1_DaemonSetStatus(in *apps.DaemonSetStatus, out *DaemonSetStatus, s conversion.Scope) error {
	if err := autoConvert_apps_DaemonSetStatus_To_v1beta1_DaemonSetStatus(in, out, s); err != nil {
		return err
	}
	out.UpdateRevision = in.DaemonSetHash
	return nil
}

// Convert_v1beta1_DaemonSetStatus_To_apps_DaemonSetStatus converts the status, updateRevision
// into daemonSetHash.
func Convert_v1beta1_DaemonSetStatus_To_apps_DaemonSetStatus(in *DaemonSetStatus, out *apps.DaemonSetStatus, s conversion.Scope) error {
	if err := autoConvert_v1beta1_DaemonSetStatus_To_apps_DaemonSetStatus(in, out, s); err != nil {
		return err
	}
	out.DaemonSetHash = in.UpdateRevision
	return nil
}
