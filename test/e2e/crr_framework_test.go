package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// crrTimeout bounds a ContainerRecreateRequest from creation to Completed on the local node
// (stop, kubelet restart, ready: a few seconds; more with grace periods and hooks).
const crrTimeout = 60 * time.Second

// daemonHook (re)starts inplace-daemon on the local cluster.
const daemonHook = "hack/local-up.d/30-inplace-daemon.sh"

// shContainer runs script with busybox sh from the local image.
func shContainer(name, script string) corev1.Container {
	c := container(name, appImageV1)
	c.Command = []string{"/bin/sh", "-c", script}
	return c
}

// stubbornContainer ignores SIGTERM: stopping it takes the whole grace period, then SIGKILL.
func stubbornContainer(name string) corev1.Container {
	return shContainer(name, "trap '' TERM; echo started; while true; do sleep 1; done")
}

// crrPod is a Pod of the given containers that stops within a second; with kruiseGate it has the
// KruisePodReady readiness gate.
func crrPod(namespace, name string, kruiseGate bool, containers ...corev1.Container) *corev1.Pod {
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

// createCRRPod creates the Pod and waits until every container runs and is ready; a Pod with the
// KruisePodReady gate gets the condition True first (what a workload controller does), or it
// would never become Ready.
func createCRRPod(t *testing.T, ctx context.Context, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	if len(pod.Spec.ReadinessGates) > 0 {
		// A strategic merge patch: the kubelet writes the status at the same time.
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","lastTransitionTime":%q}]}}`,
			pub.KruisePodReadyConditionType, time.Now().UTC().Format(time.RFC3339))
		if _, err := kube.CoreV1().Pods(pod.Namespace).Patch(ctx, created.Name, types.StrategicMergePatchType, []byte(patch),
			metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("setting KruisePodReady of %s: %v", pod.Name, err)
		}
	}
	var got *corev1.Pod
	poll(t, ctx, podTimeout, "Pod "+pod.Name+" running with every container ready", func(ctx context.Context) (bool, error) {
		got, err = kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return conditionStatus(got, corev1.PodReady) == corev1.ConditionTrue, fmt.Errorf("conditions %+v statuses %+v", got.Status.Conditions, got.Status.ContainerStatuses)
	})
	return got
}

// newCRR is a request for containers of Pod pod.
func newCRR(name, pod string, containers ...string) *v1alpha1.ContainerRecreateRequest {
	crr := &v1alpha1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ContainerRecreateRequestSpec{PodName: pod, Strategy: &v1alpha1.ContainerRecreateRequestStrategy{}}}
	for _, c := range containers {
		crr.Spec.Containers = append(crr.Spec.Containers, v1alpha1.ContainerRecreateRequestContainer{Name: c})
	}
	return crr
}

func createCRR(t *testing.T, ctx context.Context, namespace string, crr *v1alpha1.ContainerRecreateRequest) *v1alpha1.ContainerRecreateRequest {
	t.Helper()
	created, err := inplace.AppsV1alpha1().ContainerRecreateRequests(namespace).Create(ctx, crr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ContainerRecreateRequest %s: %v", crr.Name, err)
	}
	return created
}

// waitCRRCompleted waits until the request is Completed and returns it.
func waitCRRCompleted(t *testing.T, ctx context.Context, namespace, name string, timeout time.Duration) *v1alpha1.ContainerRecreateRequest {
	t.Helper()
	var crr *v1alpha1.ContainerRecreateRequest
	poll(t, ctx, timeout, "ContainerRecreateRequest "+name+" Completed", func(ctx context.Context) (bool, error) {
		var err error
		if crr, err = inplace.AppsV1alpha1().ContainerRecreateRequests(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		return crr.Status.Phase == v1alpha1.ContainerRecreateRequestCompleted, fmt.Errorf("status %+v", crr.Status)
	})
	return crr
}

// expectStates checks the per-container states of a completed request.
func expectStates(t *testing.T, crr *v1alpha1.ContainerRecreateRequest, want ...v1alpha1.ContainerRecreateRequestContainerRecreateState) {
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

func succeeded(name string) v1alpha1.ContainerRecreateRequestContainerRecreateState {
	return v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: name, Phase: v1alpha1.ContainerRecreateRequestSucceeded, IsKilled: true}
}

func recreatingKilled(name string) v1alpha1.ContainerRecreateRequestContainerRecreateState {
	return v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: name, Phase: v1alpha1.ContainerRecreateRequestRecreating, IsKilled: true}
}

func pending(name string) v1alpha1.ContainerRecreateRequestContainerRecreateState {
	return v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: name, Phase: v1alpha1.ContainerRecreateRequestPending}
}

// expectRecreated checks that each container of after is a new instance of the one in before
// (another containerID, restartCount one higher, running and ready), and that the Pod is the same.
func expectRecreated(t *testing.T, before, after *corev1.Pod, names ...string) {
	t.Helper()
	if after.UID != before.UID || after.Status.PodIP != before.Status.PodIP {
		t.Errorf("pod UID %s IP %s, was %s %s: the Pod must be kept", after.UID, after.Status.PodIP, before.UID, before.Status.PodIP)
	}
	for _, n := range names {
		b, a := containerStatus(t, before, n), containerStatus(t, after, n)
		if a.ContainerID == b.ContainerID || a.RestartCount != b.RestartCount+1 || a.State.Running == nil || !a.Ready {
			t.Errorf("container %s: id %s restartCount %d running %v ready %v; before: id %s restartCount %d",
				n, a.ContainerID, a.RestartCount, a.State.Running != nil, a.Ready, b.ContainerID, b.RestartCount)
		}
	}
}

// waitContainersRecreated waits until each container runs again, ready, as a new instance.
func waitContainersRecreated(t *testing.T, ctx context.Context, before *corev1.Pod, names ...string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	poll(t, ctx, crrTimeout, fmt.Sprintf("containers %v of %s recreated and ready", names, before.Name), func(ctx context.Context) (bool, error) {
		var err error
		if pod, err = kube.CoreV1().Pods(before.Namespace).Get(ctx, before.Name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, n := range names {
			a, b := findStatus(pod, n), findStatus(before, n)
			if a == nil || a.ContainerID == b.ContainerID || a.State.Running == nil || !a.Ready {
				return false, fmt.Errorf("container %s: %+v", n, a)
			}
		}
		return true, nil
	})
	return pod
}

// criStartedAt asks the node's container runtime when each container instance started.
func criStartedAt(t *testing.T, ctx context.Context, ids ...string) []time.Time {
	t.Helper()
	return criTimes(t, ctx, "started", func(st *runtimeapi.ContainerStatus) int64 { return st.StartedAt }, ids)
}

// criTimes reads one timestamp of each container instance's CRI status; a zero one fails the test.
func criTimes(t *testing.T, ctx context.Context, what string, at func(*runtimeapi.ContainerStatus) int64, ids []string) []time.Time {
	t.Helper()
	var out []time.Time
	for _, st := range criStatuses(t, ctx, ids...) {
		if at(st) == 0 {
			t.Fatalf("CRI reports container %s (%s) not %s", st.Id, st.Metadata.GetName(), what)
		}
		out = append(out, time.Unix(0, at(st)))
	}
	return out
}

// criClient connects to the local cluster's container runtime; the caller closes the connection.
func criClient(t *testing.T) (runtimeapi.RuntimeServiceClient, *grpc.ClientConn) {
	t.Helper()
	vars, err := readEnvFile(repo + "/_output/local/env")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(vars["CONTAINER_RUNTIME_ENDPOINT"], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("connecting to the CRI runtime: %v", err)
	}
	return runtimeapi.NewRuntimeServiceClient(conn), conn
}

// criStatuses asks the node's container runtime for the status of container instances.
func criStatuses(t *testing.T, ctx context.Context, ids ...string) []*runtimeapi.ContainerStatus {
	t.Helper()
	rs, conn := criClient(t)
	defer conn.Close()
	var out []*runtimeapi.ContainerStatus
	for _, id := range ids {
		_, raw, _ := strings.Cut(id, "://")
		resp, err := rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: raw})
		if err != nil {
			t.Fatalf("CRI ContainerStatus %s: %v", id, err)
		}
		out = append(out, resp.Status)
	}
	return out
}

// watchCRIFinished follows container instances through the node's container runtime from now on,
// every 50 ms, and records when each one finished; the function it returns waits until all have
// and returns their finish times, in the order of ids. The kubelet may remove a dead instance from
// the runtime a second after it stopped (its pod container deletor), so the times cannot be asked
// for once the test has waited for something else.
func watchCRIFinished(t *testing.T, ctx context.Context, ids ...string) func() []time.Time {
	t.Helper()
	rs, conn := criClient(t)
	finished := make([]time.Time, len(ids))
	gone := map[string]bool{}
	done := make(chan error, 1)
	go func() {
		defer conn.Close()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			left := 0
			for i, id := range ids {
				if !finished[i].IsZero() || gone[id] {
					continue
				}
				_, raw, _ := strings.Cut(id, "://")
				resp, err := rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: raw})
				switch {
				case status.Code(err) == codes.NotFound:
					gone[id] = true
				case err != nil:
					done <- fmt.Errorf("CRI ContainerStatus %s: %w", id, err)
					return
				case resp.Status.FinishedAt != 0:
					finished[i] = time.Unix(0, resp.Status.FinishedAt)
				default:
					left++
				}
			}
			if left == 0 {
				if len(gone) > 0 {
					done <- fmt.Errorf("container instances %v left the runtime before they were seen finished", slices.Sorted(maps.Keys(gone)))
				} else {
					done <- nil
				}
				return
			}
			select {
			case <-ctx.Done():
				done <- ctx.Err()
				return
			case <-tick.C:
			}
		}
	}()
	return func() []time.Time {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(crrTimeout):
			t.Fatalf("container instances %v not all finished within %v", ids, crrTimeout)
		}
		return finished
	}
}

// readinessAfter is a readiness probe that fails for the first seconds of a container.
func readinessAfter(seconds int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		InitialDelaySeconds: seconds, PeriodSeconds: 1}
}
