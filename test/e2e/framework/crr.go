package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// CRRTimeout bounds a ContainerRecreateRequest from creation to Completed on the local node
// (stop, kubelet restart, ready: a few seconds; more with grace periods and hooks).
const CRRTimeout = 60 * time.Second

// ShContainer runs script with busybox sh from the local image.
func ShContainer(name, script string) corev1.Container {
	c := Container(name, AppImageV1)
	c.Command = []string{"/bin/sh", "-c", script}
	return c
}

// StubbornContainer ignores SIGTERM: stopping it takes the whole grace period, then SIGKILL.
func StubbornContainer(name string) corev1.Container {
	return ShContainer(name, "trap '' TERM; echo started; while true; do sleep 1; done")
}

// CRRPod is a Pod of the given containers that stops within a second; with kruiseGate it has the
// KruisePodReady readiness gate.
func CRRPod(namespace, name string, kruiseGate bool, containers ...corev1.Container) *corev1.Pod {
	grace := int64(1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: containers},
	}
	if kruiseGate {
		pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}
	}
	return pod
}

// CreateCRRPod creates the Pod and waits until every container runs and is ready; a Pod with the
// KruisePodReady gate gets the condition True first (what a workload controller does), or it
// would never become Ready.
func CreateCRRPod(t *testing.T, ctx context.Context, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	if len(pod.Spec.ReadinessGates) > 0 {
		// A strategic merge patch: the kubelet writes the status at the same time.
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","lastTransitionTime":%q}]}}`,
			pub.KruisePodReadyConditionType, time.Now().UTC().Format(time.RFC3339))
		if _, err := Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, created.Name, types.StrategicMergePatchType, []byte(patch),
			metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("setting KruisePodReady of %s: %v", pod.Name, err)
		}
	}
	var got *corev1.Pod
	Poll(t, ctx, PodTimeout, "Pod "+pod.Name+" running with every container ready", func(ctx context.Context) (bool, error) {
		got, err = Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return ConditionStatus(got, corev1.PodReady) == corev1.ConditionTrue, fmt.Errorf("conditions %+v statuses %+v", got.Status.Conditions, got.Status.ContainerStatuses)
	})
	return got
}

// NewCRR is a request for containers of Pod pod.
func NewCRR(name, pod string, containers ...string) *v1alpha1.ContainerRecreateRequest {
	crr := &v1alpha1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ContainerRecreateRequestSpec{PodName: pod, Strategy: &v1alpha1.ContainerRecreateRequestStrategy{}}}
	for _, c := range containers {
		crr.Spec.Containers = append(crr.Spec.Containers, v1alpha1.ContainerRecreateRequestContainer{Name: c})
	}
	return crr
}

func CreateCRR(t *testing.T, ctx context.Context, namespace string, crr *v1alpha1.ContainerRecreateRequest) *v1alpha1.ContainerRecreateRequest {
	t.Helper()
	created, err := Inplace.AppsV1alpha1().ContainerRecreateRequests(namespace).Create(ctx, crr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ContainerRecreateRequest %s: %v", crr.Name, err)
	}
	return created
}

// WaitCRRCompleted waits until the request is Completed and returns it.
func WaitCRRCompleted(t *testing.T, ctx context.Context, namespace, name string, timeout time.Duration) *v1alpha1.ContainerRecreateRequest {
	t.Helper()
	var crr *v1alpha1.ContainerRecreateRequest
	Poll(t, ctx, timeout, "ContainerRecreateRequest "+name+" Completed", func(ctx context.Context) (bool, error) {
		var err error
		if crr, err = Inplace.AppsV1alpha1().ContainerRecreateRequests(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		return crr.Status.Phase == v1alpha1.ContainerRecreateRequestCompleted, fmt.Errorf("status %+v", crr.Status)
	})
	return crr
}

// ExpectStates checks the per-container states of a completed request.
func ExpectStates(t *testing.T, crr *v1alpha1.ContainerRecreateRequest, want ...v1alpha1.ContainerRecreateRequestContainerRecreateState) {
	t.Helper()
	got := crr.Status.ContainerRecreateStates
	if len(got) != len(want) {
		t.Fatalf("states %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || got[i].Phase != want[i].Phase || got[i].IsKilled != want[i].IsKilled {
			t.Errorf("state %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func CRRSucceeded(name string) v1alpha1.ContainerRecreateRequestContainerRecreateState {
	return v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: name, Phase: v1alpha1.ContainerRecreateRequestSucceeded, IsKilled: true}
}

func CRRRecreatingKilled(name string) v1alpha1.ContainerRecreateRequestContainerRecreateState {
	return v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: name, Phase: v1alpha1.ContainerRecreateRequestRecreating, IsKilled: true}
}

func CRRPending(name string) v1alpha1.ContainerRecreateRequestContainerRecreateState {
	return v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: name, Phase: v1alpha1.ContainerRecreateRequestPending}
}

// ExpectRecreated checks that each container of after is a new instance of the one in before
// (another containerID, restartCount one higher, running and ready), and that the Pod is the same.
func ExpectRecreated(t *testing.T, before, after *corev1.Pod, names ...string) {
	t.Helper()
	if after.UID != before.UID || after.Status.PodIP != before.Status.PodIP {
		t.Errorf("pod UID %s IP %s, was %s %s: the Pod must be kept", after.UID, after.Status.PodIP, before.UID, before.Status.PodIP)
	}
	for _, n := range names {
		b, a := ContainerStatus(t, before, n), ContainerStatus(t, after, n)
		if a.ContainerID == b.ContainerID || a.RestartCount != b.RestartCount+1 || a.State.Running == nil || !a.Ready {
			t.Errorf("container %s: id %s restartCount %d running %v ready %v; before: id %s restartCount %d",
				n, a.ContainerID, a.RestartCount, a.State.Running != nil, a.Ready, b.ContainerID, b.RestartCount)
		}
	}
}

// WaitContainersRecreated waits until each container runs again, ready, as a new instance.
func WaitContainersRecreated(t *testing.T, ctx context.Context, before *corev1.Pod, names ...string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	Poll(t, ctx, CRRTimeout, fmt.Sprintf("containers %v of %s recreated and ready", names, before.Name), func(ctx context.Context) (bool, error) {
		var err error
		if pod, err = Kube.CoreV1().Pods(before.Namespace).Get(ctx, before.Name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, n := range names {
			a, b := FindStatus(pod, n), FindStatus(before, n)
			if a == nil || a.ContainerID == b.ContainerID || a.State.Running == nil || !a.Ready {
				return false, fmt.Errorf("container %s: %+v", n, a)
			}
		}
		return true, nil
	})
	return pod
}

// ReadinessAfter is a readiness probe that fails for the first seconds of a container.
func ReadinessAfter(seconds int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		InitialDelaySeconds: seconds, PeriodSeconds: 1}
}
