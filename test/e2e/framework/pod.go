package framework

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
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

// PodEvent is one change of a namespace's Pods, as its watch delivered it.
type PodEvent struct {
	Typ watch.EventType
	Pod *corev1.Pod
}

// PodEvents records every change of the Pods of a namespace from the moment it starts (a watch
// delivers every change, in order), so a test can check a property at every observation, not only
// at the ones its polling happened to make.
type PodEvents struct {
	Mu      sync.Mutex
	Initial []*corev1.Pod
	Events  []PodEvent
	Err     error
}

func RecordPods(t *testing.T, ctx context.Context, ns string) *PodEvents {
	t.Helper()
	list, err := Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &PodEvents{}
	for i := range list.Items {
		r.Initial = append(r.Initial, &list.Items[i])
	}
	WatchPods(t, ctx, ns, "", list.ResourceVersion, func(ev watch.Event) {
		r.Mu.Lock()
		defer r.Mu.Unlock()
		if p, ok := ev.Object.(*corev1.Pod); ok {
			r.Events = append(r.Events, PodEvent{Typ: ev.Type, Pod: p})
		} else if ev.Type == watch.Error {
			r.Err = fmt.Errorf("watch error: %v", ev.Object)
		}
	})
	return r
}

// UpTo waits until the recorder has seen the Pods at least as current as a List now, and returns
// the events so far. Pods keep changing after the List (a terminating Pod goes away, a kubelet
// writes status), so "caught up" compares resourceVersions, which etcd orders: every listed Pod
// was seen at its listed version or later, and every Pod the events still hold that the List did
// not have was created after the List (not deleted before it, with the deletion still in flight).
func (r *PodEvents) UpTo(t *testing.T, ctx context.Context, ns string) []PodEvent {
	t.Helper()
	list, err := Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listRV := MustParseRV(t, list.ResourceVersion)
	want := map[string]uint64{}
	for _, p := range list.Items {
		want[p.Name] = MustParseRV(t, p.ResourceVersion)
	}
	var events []PodEvent
	Poll(t, ctx, 30*time.Second, "the Pod watch to catch up", func(context.Context) (bool, error) {
		r.Mu.Lock()
		defer r.Mu.Unlock()
		events = slices.Clone(r.Events)
		last, present := map[string]uint64{}, map[string]bool{}
		for _, p := range r.Initial {
			last[p.Name], present[p.Name] = MustParseRV(t, p.ResourceVersion), true
		}
		for _, e := range events {
			last[e.Pod.Name], present[e.Pod.Name] = MustParseRV(t, e.Pod.ResourceVersion), e.Typ != watch.Deleted
		}
		var behind []string
		for name, rv := range want {
			if last[name] < rv {
				behind = append(behind, fmt.Sprintf("%s at %d, listed at %d", name, last[name], rv))
			}
		}
		for name := range present {
			if _, listed := want[name]; present[name] && !listed && last[name] <= listRV {
				behind = append(behind, fmt.Sprintf("%s not yet seen deleted", name))
			}
		}
		if r.Err != nil {
			return false, r.Err
		}
		return len(behind) == 0, fmt.Errorf("behind: %v", behind)
	})
	return events
}

// Replay calls at(pods) with the namespace's Pods (not terminating) after each event.
func (r *PodEvents) Replay(events []PodEvent, at func(ev PodEvent, pods map[string]*corev1.Pod)) {
	pods := map[string]*corev1.Pod{}
	for _, p := range r.Initial {
		pods[p.Name] = p
	}
	for _, e := range events {
		if e.Typ == watch.Deleted || e.Pod.DeletionTimestamp != nil {
			delete(pods, e.Pod.Name)
		} else {
			pods[e.Pod.Name] = e.Pod
		}
		at(e, pods)
	}
}

// PodsAddedOrDeleted are the Pods the events created or deleted, as "+name" and "-name".
func PodsAddedOrDeleted(r *PodEvents, events []PodEvent) []string {
	known := map[string]bool{}
	for _, p := range r.Initial {
		known[p.Name] = true
	}
	var out []string
	for _, e := range events {
		switch {
		case e.Typ == watch.Added && !known[e.Pod.Name]:
			out = append(out, "+"+e.Pod.Name)
			known[e.Pod.Name] = true
		case e.Typ == watch.Deleted || e.Pod.DeletionTimestamp != nil:
			if known[e.Pod.Name] {
				out = append(out, "-"+e.Pod.Name)
				delete(known, e.Pod.Name)
			}
		}
	}
	return out
}

// ReadyTransition describes a Pod's Ready condition with what it depends on: the
// InPlaceUpdateReady gate, the container's restart count and readiness, and the resourceVersion.
func ReadyTransition(p *corev1.Pod) string {
	cond := func(t corev1.PodConditionType) string {
		for _, c := range p.Status.Conditions {
			if c.Type == t {
				return fmt.Sprintf("%s(%s)", c.Status, c.Reason)
			}
		}
		return "-"
	}
	var containers []string
	for _, s := range p.Status.ContainerStatuses {
		containers = append(containers, fmt.Sprintf("%s restarts=%d ready=%t", s.Name, s.RestartCount, s.Ready))
	}
	return fmt.Sprintf("rv %s gen %d/%d Ready=%s gate=%s containersReady=%s %s", p.ResourceVersion, p.Status.ObservedGeneration,
		p.Generation, cond(corev1.PodReady), cond(pub.InPlaceUpdateReady), cond(corev1.ContainersReady), strings.Join(containers, ","))
}

// WaitPodEvent waits for an Event about Pod ns/name with the reason, recorded by component
// (inplace-controller, inplace-daemon, ...), and returns it.
func WaitPodEvent(t *testing.T, ctx context.Context, ns, name, reason, component string) corev1.Event {
	t.Helper()
	var got corev1.Event
	Poll(t, ctx, 30*time.Second, fmt.Sprintf("Event %s from %s about Pod %s", reason, component, name), func(ctx context.Context) (bool, error) {
		list, err := Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Pod" && e.Reason == reason && e.Source.Component == component {
				got = e
				return true, nil
			}
			seen = append(seen, e.Source.Component+" "+e.Reason+": "+e.Message)
		}
		return false, fmt.Errorf("events %q", seen)
	})
	return got
}
