package v1beta1

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// ContainerRecreateRequest conversion between the hub and v1beta1. The hub is v1alpha1's shape:
// the controller and the daemon read and write the two annotations, and requests are stored at
// v1alpha1. As OpenKruise converts (apis/apps/v1alpha1/containerrecreaterequest_conversion.go on
// master):
//   - the annotation crr.apps.kruise.io/sync-container-statuses (JSON) is v1beta1's
//     status.containerStatusSnapshot;
//   - the annotation crr.apps.kruise.io/unready-acquired (an RFC 3339 time) is the condition
//     PreRecreateGrace, status True, lastTransitionTime that time, with OpenKruise's reason and
//     message.
//
// OpenKruise keeps the annotations beside the fields at v1beta1; inplace moves them, so that a
// v1beta1 client that changes a field is not contradicted by a stale annotation. An annotation
// that is not what this server writes (not canonical JSON, not an RFC 3339 UTC time) is left as an
// annotation, unchanged. What the unready-acquired annotation cannot hold (other conditions, a
// PreRecreateGrace with another status, reason, message or observedGeneration) rides in the hub,
// and so at v1alpha1 and in etcd, in v1alpha1.StatefulSetV1beta1FieldsAnnotation
// (inplace.dev/v1beta1-fields); where the unready-acquired annotation was set or removed beside
// it, the annotation wins for the PreRecreateGrace condition.

const (
	// crrPreRecreateGraceReason and crrPreRecreateGraceMessage are OpenKruise's.
	crrPreRecreateGraceReason  = "PreRecreateGrace"
	crrPreRecreateGraceMessage = "Pod has been forced to not-ready for unreadyGracePeriodSeconds drain"
)

// crrV1beta1Fields is what v1alpha1.StatefulSetV1beta1FieldsAnnotation carries for a
// ContainerRecreateRequest: the v1beta1 conditions, in full, when the unready-acquired annotation
// alone does not give them back.
type crrV1beta1Fields struct {
	Conditions []metav1.Condition `json:"conditions"`
}

// Convert_apps_ContainerRecreateRequest_To_v1beta1_ContainerRecreateRequest converts the hub to
// v1beta1: the two annotations into status.containerStatusSnapshot and status.conditions.
func Convert_apps_ContainerRecreateRequest_To_v1beta1_ContainerRecreateRequest(in *apps.ContainerRecreateRequest, out *ContainerRecreateRequest, s conversion.Scope) error {
	if err := autoConvert_apps_ContainerRecreateRequest_To_v1beta1_ContainerRecreateRequest(in, out, s); err != nil {
		return err
	}
	if snapshot, ok := crrSnapshotFromAnnotation(in.Annotations[v1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]); ok {
		out.Status.ContainerStatusSnapshot = snapshot
		out.Annotations = withoutKey(out.Annotations, v1alpha1.ContainerRecreateRequestSyncContainerStatusesKey)
	}
	var grace *metav1.Condition
	acquired, hasAcquired := in.Annotations[v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]
	if hasAcquired {
		if grace = crrGraceFromAnnotation(acquired); grace != nil {
			out.Annotations = withoutKey(out.Annotations, v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey)
		}
	}
	var conditions []metav1.Condition
	if data, ok := in.Annotations[v1alpha1.StatefulSetV1beta1FieldsAnnotation]; ok {
		var extra crrV1beta1Fields
		if err := json.Unmarshal([]byte(data), &extra); err != nil {
			return fmt.Errorf("metadata.annotations[%s]: not the v1beta1 fields this server wrote: %w", v1alpha1.StatefulSetV1beta1FieldsAnnotation, err)
		}
		out.Annotations = withoutKey(out.Annotations, v1alpha1.StatefulSetV1beta1FieldsAnnotation)
		conditions = extra.Conditions
	}
	// The carried PreRecreateGrace holds only while the annotation still says what it says: a
	// v1alpha1 client (or the controller) that set or removed the annotation since means the
	// annotation; the other carried conditions stay.
	carried := crrGraceCondition(conditions)
	if !(grace == nil && carried == nil ||
		grace != nil && carried != nil && carried.LastTransitionTime.UTC().Format(time.RFC3339) == acquired) {
		conditions = slices.DeleteFunc(slices.Clone(conditions), isCRRGrace)
		if grace != nil {
			conditions = append(conditions, *grace)
		}
	}
	out.Status.Conditions = conditions
	return nil
}

// Convert_v1beta1_ContainerRecreateRequest_To_apps_ContainerRecreateRequest converts v1beta1 to
// the hub: status.containerStatusSnapshot and status.conditions into the two annotations (and the
// conditions the unready-acquired annotation cannot hold into the v1beta1-fields annotation).
func Convert_v1beta1_ContainerRecreateRequest_To_apps_ContainerRecreateRequest(in *ContainerRecreateRequest, out *apps.ContainerRecreateRequest, s conversion.Scope) error {
	if err := autoConvert_v1beta1_ContainerRecreateRequest_To_apps_ContainerRecreateRequest(in, out, s); err != nil {
		return err
	}
	set := map[string]string{}
	if in.Status.ContainerStatusSnapshot != nil {
		hub := make([]apps.ContainerRecreateRequestSyncContainerStatus, len(in.Status.ContainerStatusSnapshot))
		for i, c := range in.Status.ContainerStatusSnapshot {
			hub[i] = apps.ContainerRecreateRequestSyncContainerStatus(c)
		}
		data, err := json.Marshal(hub)
		if err != nil {
			return fmt.Errorf("encoding status.containerStatusSnapshot of ContainerRecreateRequest %s/%s: %w", in.Namespace, in.Name, err)
		}
		set[v1alpha1.ContainerRecreateRequestSyncContainerStatusesKey] = string(data)
	}
	if len(in.Status.Conditions) > 0 {
		grace := crrGraceCondition(in.Status.Conditions)
		if grace != nil {
			set[v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey] = grace.LastTransitionTime.UTC().Format(time.RFC3339)
		}
		if grace == nil || !apiequality.Semantic.DeepEqual(in.Status.Conditions, []metav1.Condition{*crrGraceFromAnnotation(set[v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey])}) {
			data, err := json.Marshal(crrV1beta1Fields{Conditions: in.Status.Conditions})
			if err != nil {
				return fmt.Errorf("encoding status.conditions of ContainerRecreateRequest %s/%s: %w", in.Namespace, in.Name, err)
			}
			set[v1alpha1.StatefulSetV1beta1FieldsAnnotation] = string(data)
		}
	}
	if len(set) == 0 {
		return nil
	}
	// The generated conversion shares the annotation map with in: write into a copy.
	out.Annotations = maps.Clone(out.Annotations)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	maps.Copy(out.Annotations, set)
	return nil
}

// crrSnapshotFromAnnotation reads the sync-container-statuses annotation, when it is the JSON this
// server (or OpenKruise) writes for a list: anything else stays an annotation.
func crrSnapshotFromAnnotation(data string) ([]ContainerRecreateRequestSyncContainerStatus, bool) {
	var hub []apps.ContainerRecreateRequestSyncContainerStatus
	if err := json.Unmarshal([]byte(data), &hub); err != nil || hub == nil {
		return nil, false
	}
	if again, err := json.Marshal(hub); err != nil || string(again) != data {
		return nil, false
	}
	snapshot := make([]ContainerRecreateRequestSyncContainerStatus, len(hub))
	for i, c := range hub {
		snapshot[i] = ContainerRecreateRequestSyncContainerStatus(c)
	}
	return snapshot, true
}

// crrGraceFromAnnotation is the PreRecreateGrace condition of an unready-acquired annotation, nil
// when it is not an RFC 3339 time in UTC (what the controller writes).
func crrGraceFromAnnotation(value string) *metav1.Condition {
	t, err := time.Parse(time.RFC3339, value)
	if err != nil || t.UTC().Format(time.RFC3339) != value {
		return nil
	}
	return &metav1.Condition{
		Type:               ContainerRecreateRequestPreRecreateGraceType,
		Status:             metav1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(t),
		Reason:             crrPreRecreateGraceReason,
		Message:            crrPreRecreateGraceMessage,
	}
}

// crrGraceCondition is the first PreRecreateGrace condition with status True, the one the
// annotation stands for (as OpenKruise reads it).
func crrGraceCondition(conditions []metav1.Condition) *metav1.Condition {
	if i := slices.IndexFunc(conditions, isCRRGrace); i >= 0 {
		return &conditions[i]
	}
	return nil
}

func isCRRGrace(c metav1.Condition) bool {
	return c.Type == ContainerRecreateRequestPreRecreateGraceType && c.Status == metav1.ConditionTrue
}

// Convert_v1beta1_ContainerRecreateRequestStatus_To_apps_ContainerRecreateRequestStatus converts
// the fields the hub has in its status; the snapshot and the conditions are handled by
// Convert_v1beta1_ContainerRecreateRequest_To_apps_ContainerRecreateRequest.
func Convert_v1beta1_ContainerRecreateRequestStatus_To_apps_ContainerRecreateRequestStatus(in *ContainerRecreateRequestStatus, out *apps.ContainerRecreateRequestStatus, s conversion.Scope) error {
	return autoConvert_v1beta1_ContainerRecreateRequestStatus_To_apps_ContainerRecreateRequestStatus(in, out, s)
}

// Convert_v1beta1_CRRProbeHandler_To_apps_ProbeHandler converts v1beta1's preStop handler (named
// CRRProbeHandler by OpenKruise) to the hub's.
func Convert_v1beta1_CRRProbeHandler_To_apps_ProbeHandler(in *CRRProbeHandler, out *apps.ProbeHandler, _ conversion.Scope) error {
	*out = apps.ProbeHandler{Exec: in.Exec, HTTPGet: in.HTTPGet, TCPSocket: in.TCPSocket}
	return nil
}

// Convert_apps_ProbeHandler_To_v1beta1_CRRProbeHandler converts the hub's preStop handler to v1beta1's.
func Convert_apps_ProbeHandler_To_v1beta1_CRRProbeHandler(in *apps.ProbeHandler, out *CRRProbeHandler, _ conversion.Scope) error {
	*out = CRRProbeHandler{Exec: in.Exec, HTTPGet: in.HTTPGet, TCPSocket: in.TCPSocket}
	return nil
}
