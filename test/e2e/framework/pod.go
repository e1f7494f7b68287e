package framework

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
)

func PodReady(p *corev1.Pod) bool {
	return ConditionStatus(p, corev1.PodReady) == corev1.ConditionTrue
}

// AppPod is a Pod running the local test image (no registry: pull policy Never).
func AppPod(namespace, name, image string) *corev1.Pod {
	grace := int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "main", Image: image, ImagePullPolicy: corev1.PullNever,
			}},
		},
	}
}

// WaitPodRunning waits until the Pod runs and returns it.
func WaitPodRunning(t *testing.T, ctx context.Context, namespace, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	Poll(t, ctx, PodTimeout, "Pod "+namespace+"/"+name+" Running", func(ctx context.Context) (bool, error) {
		var err error
		pod, err = Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("pod ended: phase %s, %s", pod.Status.Phase, pod.Status.Message)
		}
		return pod.Status.Phase == corev1.PodRunning, fmt.Errorf("phase %s, statuses %+v", pod.Status.Phase, pod.Status.ContainerStatuses)
	})
	return pod
}

// RunPod creates a Pod on the local image and waits until it runs.
func RunPod(t *testing.T, ctx context.Context, namespace, name string) *corev1.Pod {
	t.Helper()
	if _, err := Kube.CoreV1().Pods(namespace).Create(ctx, AppPod(namespace, name, AppImageV1), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Pod %s/%s: %v", namespace, name, err)
	}
	return WaitPodRunning(t, ctx, namespace, name)
}

// Container is a container of the test image.
func Container(name, image string) corev1.Container {
	return corev1.Container{Name: name, Image: image, ImagePullPolicy: corev1.PullNever}
}

func PodCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// ConditionStatus is the status of condition t, "" when the Pod lacks it.
func ConditionStatus(pod *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	if c := PodCondition(pod, t); c != nil {
		return c.Status
	}
	return ""
}

func ContainerStatus(t *testing.T, pod *corev1.Pod, name string) corev1.ContainerStatus {
	t.Helper()
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("pod %s has no status of container %s: %+v", pod.Name, name, pod.Status.ContainerStatuses)
	return corev1.ContainerStatus{}
}

func SpecImage(pod *corev1.Pod, name string) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}

// FindStatus is the status of container name, or nil.
func FindStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// WatchPods watches the Pods of a namespace (matching fieldSelector, when set) from
// resourceVersion rv until the test ends, re-establishing the watch when it breaks; handle sees
// every event, in order, on one goroutine.
func WatchPods(t *testing.T, ctx context.Context, namespace, fieldSelector, rv string, handle func(watch.Event)) {
	t.Helper()
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
		options.FieldSelector = fieldSelector
		return Kube.CoreV1().Pods(namespace).Watch(ctx, options)
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
	if err != nil {
		t.Fatalf("watching the Pods of %s: %v", namespace, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			handle(ev)
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
}

// MustParseRV reads a resourceVersion as the etcd revision it is, so two can be ordered (tests
// only: clients in general must treat resourceVersions as opaque).
func MustParseRV(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

// PodLog is `kubectl logs -n NS POD -c CONTAINER [extra...]`.
func PodLog(t *testing.T, ctx context.Context, namespace, pod, containerName string, extra ...string) string {
	t.Helper()
	return MustKubectl(t, ctx, "", append([]string{"logs", "-n", namespace, pod, "-c", containerName}, extra...)...)
}

// WaitLog waits until `kubectl logs` of the container shows want.
func WaitLog(t *testing.T, ctx context.Context, namespace, pod, containerName, want string, extra ...string) {
	t.Helper()
	Poll(t, ctx, 30*time.Second, fmt.Sprintf("kubectl logs %s -c %s %v to show %q", pod, containerName, extra, want), func(ctx context.Context) (bool, error) {
		out, _, err := Kubectl(ctx, "", append([]string{"logs", "-n", namespace, pod, "-c", containerName}, extra...)...)
		if err != nil {
			return false, err
		}
		return strings.Contains(out, want), fmt.Errorf("log: %q", out)
	})
}

// GetPodJSON reads the Pod as kube-apiserver serves it (bytes of GET, unchanged).
func GetPodJSON(t *testing.T, ctx context.Context, namespace, name string) []byte {
	t.Helper()
	raw, err := Kube.CoreV1().RESTClient().Get().Namespace(namespace).Resource("pods").Name(name).DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET pod %s/%s: %v", namespace, name, err)
	}
	return raw
}

// PodTemplate is the Pod template of the workloads of the tests: the labels, a 1 s termination
// grace period (Pods end quickly), the containers.
func PodTemplate(labels map[string]string, containers ...corev1.Container) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    containers,
		},
	}
}
