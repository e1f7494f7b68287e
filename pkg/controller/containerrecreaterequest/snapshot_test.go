package containerrecreaterequest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// A Recreating request records, in sync-container-statuses, the Pod's status of the containers
// that run a new instance, and only those: app was replaced, sidecar still runs the instance the
// request names. Once nothing of it runs, the last snapshot stays.
func TestRecordsTheSnapshotOfNewInstances(t *testing.T) {
	crr := request(states(v1alpha1.ContainerRecreateRequestSucceeded, v1alpha1.ContainerRecreateRequestRecreating), func(c *v1alpha1.ContainerRecreateRequest) {
		c.Spec.Containers[0].StatusContext = &v1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://old-app", RestartCount: 1}
		c.Spec.Containers[1].StatusContext = &v1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://old-side"}
	})
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	p := pod()
	p.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "app", ContainerID: "containerd://new-app", RestartCount: 2, Ready: true, State: running},
		{Name: "sidecar", ContainerID: "containerd://old-side", State: running},
	}
	f := newFixture(t, crr, p)
	f.sync(t, crr)
	want := `[{"name":"app","ready":true,"restartCount":2,"containerID":"containerd://new-app"}]`
	if got := f.get(t, crr).Annotations[v1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]; got != want {
		t.Fatalf("sync-container-statuses %q, want %q", got, want)
	}

	// The new instance exits: nothing new runs, the snapshot stays.
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}
	if err := f.pods.Update(p); err != nil {
		t.Fatal(err)
	}
	f.sync(t, crr)
	if got := f.get(t, crr).Annotations[v1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]; got != want {
		t.Fatalf("after the new instance exited: sync-container-statuses %q, want %q kept", got, want)
	}
}

// A request nobody picked up yet (no phase) records nothing: its containers are the old ones.
func TestNoSnapshotBeforeRecreating(t *testing.T) {
	crr := request()
	p := pod()
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://x", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	f := newFixture(t, crr, p)
	f.sync(t, crr)
	if got, ok := f.get(t, crr).Annotations[v1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]; ok {
		t.Fatalf("sync-container-statuses %q on a request no daemon took", got)
	}
}
