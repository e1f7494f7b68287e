package containerrecreaterequest

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// snapshot is the status of the request's containers that run a new instance (not the one
// statusContext names), as the Pod reports them: OpenKruise's sync-container-statuses, which
// v1beta1 serves as status.containerStatusSnapshot. The instance, not a start time compared with
// the request's creationTimestamp as OpenKruise does, tells new from old: no clock of another
// machine is involved.
func snapshot(crr *v1alpha1.ContainerRecreateRequest, pod *corev1.Pod) []v1alpha1.ContainerRecreateRequestSyncContainerStatus {
	statuses := make(map[string]*corev1.ContainerStatus, len(pod.Status.ContainerStatuses))
	for i := range pod.Status.ContainerStatuses {
		statuses[pod.Status.ContainerStatuses[i].Name] = &pod.Status.ContainerStatuses[i]
	}
	var out []v1alpha1.ContainerRecreateRequestSyncContainerStatus
	for _, c := range crr.Spec.Containers {
		st, ok := statuses[c.Name]
		if !ok || st.State.Running == nil {
			continue
		}
		if ctx := c.StatusContext; ctx != nil && st.ContainerID == ctx.ContainerID && st.RestartCount <= ctx.RestartCount {
			continue // still the instance the request replaces
		}
		out = append(out, v1alpha1.ContainerRecreateRequestSyncContainerStatus{
			Name: st.Name, Ready: st.Ready, RestartCount: st.RestartCount, ContainerID: st.ContainerID,
		})
	}
	return out
}

// syncSnapshot records snapshot in the sync-container-statuses annotation when it changed, and
// returns the request as written. Between the old instance's exit and the new one's start nothing
// runs: the last snapshot stays, as OpenKruise keeps it.
func (c *Controller) syncSnapshot(ctx context.Context, crr *v1alpha1.ContainerRecreateRequest, pod *corev1.Pod) (*v1alpha1.ContainerRecreateRequest, error) {
	current := snapshot(crr, pod)
	if len(current) == 0 {
		return crr, nil
	}
	data, err := json.Marshal(current)
	if err != nil {
		return nil, fmt.Errorf("encoding the container status snapshot: %w", err)
	}
	if crr.Annotations[v1alpha1.ContainerRecreateRequestSyncContainerStatusesKey] == string(data) {
		return crr, nil
	}
	return c.patch(ctx, crr, map[string]any{"annotations": map[string]string{
		v1alpha1.ContainerRecreateRequestSyncContainerStatusesKey: string(data)}})
}
