package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/launchpriority"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// launchTimeout bounds an ordered launch of three containers: with the ConfigMap barrier, the
// kubelet tries a container whose barrier key is missing again at its next sync of the Pod,
// about 10 s later.
const launchTimeout = 120 * time.Second

// waitLaunchCompleted waits until the Pod is marked launch-priority-completed and every container
// is ready, and returns it.
func waitLaunchCompleted(t *testing.T, ctx context.Context, namespace, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	framework.Poll(t, ctx, launchTimeout, "pod "+name+" launched in order", func(ctx context.Context) (bool, error) {
		var err error
		if pod, err = framework.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		if pod.Annotations[pub.ContainerLaunchPriorityCompletedKey] != "true" {
			return false, fmt.Errorf("not completed; statuses %s", describeStatuses(pod))
		}
		for _, s := range pod.Status.ContainerStatuses {
			if !s.Ready {
				return false, fmt.Errorf("completed, container %s not ready yet", s.Name)
			}
		}
		return len(pod.Status.ContainerStatuses) == len(pod.Spec.Containers), nil
	})
	return pod
}

func describeStatuses(pod *corev1.Pod) string {
	var parts []string
	for _, s := range pod.Status.ContainerStatuses {
		state := "running"
		if s.State.Waiting != nil {
			state = "waiting " + s.State.Waiting.Reason
		}
		parts = append(parts, fmt.Sprintf("%s %s ready=%v", s.Name, state, s.Ready))
	}
	return strings.Join(parts, ", ")
}

// expectBarriers checks each container's injected KRUISE_CONTAINER_BARRIER (key and ConfigMap),
// and that the barrier ConfigMap, owned by the Pod, holds every key.
func expectBarriers(t *testing.T, ctx context.Context, pod *corev1.Pod, want map[string]string) {
	t.Helper()
	for _, c := range pod.Spec.Containers {
		var got string
		for _, e := range c.Env {
			if e.Name == pub.ContainerLaunchBarrierEnvName && e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				if e.ValueFrom.ConfigMapKeyRef.Name != pod.Name+"-barrier" {
					t.Errorf("container %s reads ConfigMap %s, want %s-barrier", c.Name, e.ValueFrom.ConfigMapKeyRef.Name, pod.Name)
				}
				got = e.ValueFrom.ConfigMapKeyRef.Key
			}
		}
		if got != want[c.Name] {
			t.Errorf("container %s: barrier key %q, want %q", c.Name, got, want[c.Name])
		}
	}
	cm, err := framework.Kube.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, pod.Name+"-barrier", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the barrier ConfigMap: %v", err)
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != pod.UID {
		t.Errorf("barrier owners %v, want the Pod", cm.OwnerReferences)
	}
	for _, key := range want {
		if cm.Data[key] != "true" {
			t.Errorf("barrier data %v: want %s=true", cm.Data, key)
		}
	}
}

// startOrder returns the Pod's containers sorted by when the runtime started them, and those times.
func startOrder(t *testing.T, ctx context.Context, pod *corev1.Pod) ([]string, map[string]time.Time) {
	t.Helper()
	var names, ids []string
	for _, s := range pod.Status.ContainerStatuses {
		names, ids = append(names, s.Name), append(ids, s.ContainerID)
	}
	started := map[string]time.Time{}
	for i, at := range framework.CRIStartedAt(t, ctx, ids...) {
		started[names[i]] = at
	}
	slices.SortFunc(names, func(a, b string) int { return started[a].Compare(started[b]) })
	return names, started
}

// waitAllReady waits until every container of the Pod is ready (the postStart barrier marks
// nothing on the Pod), and returns it.
func waitAllReady(t *testing.T, ctx context.Context, namespace, name string) *corev1.Pod {
	t.Helper()
	return framework.WaitPod(t, ctx, launchTimeout, "pod "+name+" launched", namespace, name, func(pod *corev1.Pod) error {
		if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
			return fmt.Errorf("statuses %s", describeStatuses(pod))
		}
		for _, s := range pod.Status.ContainerStatuses {
			if !s.Ready {
				return fmt.Errorf("container %s not ready yet: %s", s.Name, describeStatuses(pod))
			}
		}
		return nil
	})
}

// expectPostStart checks that the Pod has the postStart barrier: the hooks on the containers
// hooked (and no other), no KRUISE_CONTAINER_BARRIER, no barrier ConfigMap, and no
// launch-priority-completed mark (no write to the Pod).
func expectPostStart(t *testing.T, ctx context.Context, pod *corev1.Pod, hooked ...string) {
	t.Helper()
	if got := pod.Annotations[launchpriority.BarrierAnnotation]; got != string(launchpriority.BarrierPostStart) {
		t.Errorf("annotation %s=%q, want PostStart", launchpriority.BarrierAnnotation, got)
	}
	if _, ok := pod.Annotations[pub.ContainerLaunchPriorityCompletedKey]; ok {
		t.Errorf("annotations %v: the postStart barrier writes nothing to the Pod", pod.Annotations)
	}
	for _, c := range pod.Spec.Containers {
		var path string
		if c.Lifecycle != nil && c.Lifecycle.PostStart != nil && c.Lifecycle.PostStart.HTTPGet != nil {
			path = c.Lifecycle.PostStart.HTTPGet.Path
		}
		want := ""
		if slices.Contains(hooked, c.Name) {
			want = launchpriority.HookPath(pod.Namespace, pod.Name, c.Name)
		}
		if path != want {
			t.Errorf("container %s: hook %q, want %q", c.Name, path, want)
		}
		for _, e := range c.Env {
			if e.Name == pub.ContainerLaunchBarrierEnvName {
				t.Errorf("container %s has %s", c.Name, e.Name)
			}
		}
	}
	if _, err := framework.Kube.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, pod.Name+"-barrier", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap %s-barrier: %v, want none", pod.Name, err)
	}
}

// expectStartedAfter checks that container later started at least min after container first:
// min is the time first took to be ready (its readiness probe's initial delay) less the
// kubelet's rounding of start times to the second (see TestContainerLaunchPriority).
func expectStartedAfter(t *testing.T, started map[string]time.Time, first, later string, min time.Duration) {
	t.Helper()
	gap := started[later].Sub(started[first])
	if gap < min {
		t.Errorf("%s started %v after %s, want at least %v: it did not wait for %s to be ready", later, gap, first, min, first)
	}
	t.Logf("%s started %v after %s", later, gap, first)
}

// TestContainerLaunchPriority: containers start strictly in priority order, each only once the
// ones before it are ready — with apps.kruise.io/container-launch-priority: Ordered on a Pod
// created with kubectl (generateName: the webhook names it, its hooks are named after it) and
// with KRUISE_CONTAINER_PRIORITY env, through the postStart barrier (inplace-daemon answers the
// hooks: no ConfigMap); through OpenKruise's ConfigMap barrier when the spec order is not the
// priority order.
func TestContainerLaunchPriority(t *testing.T) {
	ctx, ns := framework.Start(t, "launch")

	// first is ready 3 s after it starts, second 2 s after: second must wait for first, third
	// for second. The daemon runs their readiness probes: the kubelet publishes nothing while a
	// hook waits.
	out := framework.MustKubectl(t, ctx, `apiVersion: v1
kind: Pod
metadata:
  generateName: ordered-
  annotations: {apps.kruise.io/container-launch-priority: Ordered}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: first, image: `+framework.AppImageV1+`, imagePullPolicy: Never,
     readinessProbe: {exec: {command: ["true"]}, initialDelaySeconds: 3, periodSeconds: 1}}
  - {name: second, image: `+framework.AppImageV1+`, imagePullPolicy: Never,
     readinessProbe: {exec: {command: ["true"]}, initialDelaySeconds: 2, periodSeconds: 1}}
  - {name: third, image: `+framework.AppImageV1+`, imagePullPolicy: Never}
`, "create", "-n", ns, "-o", "name", "-f", "-")
	orderedName := strings.TrimPrefix(strings.TrimSpace(out), "pod/")
	if !strings.HasPrefix(orderedName, "ordered-") || orderedName == "ordered-" {
		t.Fatalf("kubectl create printed %q, want pod/ordered-<generated>", out)
	}

	env := func(name, priority string) corev1.Container {
		c := framework.Container(name, framework.AppImageV1)
		if priority != "" {
			c.Env = []corev1.EnvVar{{Name: pub.ContainerLaunchPriorityEnvName, Value: priority}}
		}
		return c
	}
	// In spec order: the postStart barrier; high2 (the last of priority 3) is ready 2 s after it
	// starts, so low waits for it.
	high2 := env("high2", "3")
	high2.ReadinessProbe = framework.ReadinessAfter(2)
	byEnv := framework.CRRPod(ns, "by-env", false, env("high", "3"), high2, env("low", "1"), env("zero", ""))
	// Not in spec order: OpenKruise's ConfigMap barrier.
	unordered := framework.CRRPod(ns, "unordered", false, env("low", "1"), env("high", "3"), env("zero", ""))
	for _, p := range []*corev1.Pod{byEnv, unordered} {
		if _, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	ordered := waitAllReady(t, ctx, ns, orderedName)
	expectPostStart(t, ctx, ordered, "first", "second")
	order, started := startOrder(t, ctx, ordered)
	if !slices.Equal(order, []string{"first", "second", "third"}) {
		t.Errorf("Ordered: start order %v, want first, second, third", order)
	}
	// The runtime's start times are exact here (the daemon counts the initial delay from the
	// runtime's start of the container, as the kubelet does, to the millisecond).
	expectStartedAfter(t, started, "first", "second", 2900*time.Millisecond)
	expectStartedAfter(t, started, "second", "third", 1900*time.Millisecond)

	pod := waitAllReady(t, ctx, ns, "by-env")
	expectPostStart(t, ctx, pod, "high2", "low")
	order, started = startOrder(t, ctx, pod)
	if !slices.Equal(order, []string{"high", "high2", "low", "zero"}) {
		t.Errorf("KRUISE_CONTAINER_PRIORITY: start order %v, want high, high2 (3), low (1), zero (0)", order)
	}
	expectStartedAfter(t, started, "high2", "low", 1900*time.Millisecond)

	pod = waitLaunchCompleted(t, ctx, ns, "unordered")
	expectBarriers(t, ctx, pod, map[string]string{"high": "p_3", "low": "p_1", "zero": "p_0"})
	if pod.Annotations[launchpriority.BarrierAnnotation] != string(launchpriority.BarrierConfigMap) {
		t.Errorf("annotations %v, want the ConfigMap barrier", pod.Annotations)
	}
	if order, _ := startOrder(t, ctx, pod); !slices.Equal(order, []string{"high", "low", "zero"}) {
		t.Errorf("KRUISE_CONTAINER_PRIORITY out of spec order: start order %v, want high (3), low (1), zero (0)", order)
	}
}

// TestContainerLaunchPriorityConfigMapFallback: a container that would get the postStart
// barrier has a postStart hook of its own, so the Pod gets OpenKruise's ConfigMap barrier, which
// orders it as before: second starts only once first is ready, after first's own hook ran.
func TestContainerLaunchPriorityConfigMapFallback(t *testing.T) {
	ctx, ns := framework.Start(t, "launch-cm")
	first := framework.Container("first", framework.AppImageV1)
	first.ReadinessProbe = framework.ReadinessAfter(3)
	first.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	p := framework.CRRPod(ns, "own-hook", false, first, framework.Container("second", framework.AppImageV1))
	p.Annotations = map[string]string{pub.ContainerLaunchPriorityKey: pub.ContainerLaunchOrdered}
	if _, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := waitLaunchCompleted(t, ctx, ns, "own-hook")
	expectBarriers(t, ctx, pod, map[string]string{"first": "p_0", "second": "p_-1"})
	if h := pod.Spec.Containers[0].Lifecycle.PostStart; h.Exec == nil || h.HTTPGet != nil {
		t.Errorf("first's own postStart hook became %+v", h)
	}
	order, started := startOrder(t, ctx, pod)
	if !slices.Equal(order, []string{"first", "second"}) {
		t.Errorf("start order %v, want first, second", order)
	}
	expectStartedAfter(t, started, "first", "second", 2*time.Second)
}

// TestCloneSetOrderedLaunchWithSidecar: a CloneSet's Pods get a SidecarSet's sidecar at creation
// (BeforeAppContainer: first), the InPlaceUpdateReady gate, and, with a template annotated Ordered,
// the sidecar starts before the app container: the injected sidecar gets the postStart barrier.
func TestCloneSetOrderedLaunchWithSidecar(t *testing.T) {
	ctx, ns := framework.Start(t, "launch-cs")
	app := "e2e-launch-" + utilrand.String(5)
	set := framework.ScopedSidecarSet(app, ns, app)
	set.Spec.Containers = []v1alpha1.SidecarContainer{framework.Sidecar(
		corev1.Container{Name: "agent", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever}, v1alpha1.BeforeAppContainerType)}
	framework.CreateSidecarSet(t, ctx, set)
	framework.WaitPodWebhook(t, ctx, "the webhook sees the SidecarSet", framework.LabeledPod(ns, "probe", app, framework.Container("main", framework.AppImageV1)),
		func(p *corev1.Pod) bool { return len(p.Spec.Containers) == 2 })

	labels := map[string]string{"app": app}
	cs, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Create(ctx, &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: app}, // framework.CloneSetPods selects app=<name>
		Spec: v1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels,
					Annotations: map[string]string{pub.ContainerLaunchPriorityKey: pub.ContainerLaunchOrdered}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers:                    []corev1.Container{{Name: "main", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever}},
				},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var name string
	for n := range framework.WaitCloneSetReady(t, ctx, cs, 1) {
		name = n
	}
	pod := waitAllReady(t, ctx, ns, name)
	if names := []string{pod.Spec.Containers[0].Name, pod.Spec.Containers[1].Name}; !slices.Equal(names, []string{"agent", "main"}) {
		t.Errorf("containers %v, want the sidecar agent before main", names)
	}
	if pod.Annotations["kruise.io/sidecarset-injected-list"] != app || framework.ConditionStatus(pod, pub.InPlaceUpdateReady) != corev1.ConditionTrue {
		t.Errorf("annotations %v, InPlaceUpdateReady %s: want %s injected and the condition True",
			pod.Annotations, framework.ConditionStatus(pod, pub.InPlaceUpdateReady), app)
	}
	expectPostStart(t, ctx, pod, "agent")
	if order, _ := startOrder(t, ctx, pod); !slices.Equal(order, []string{"agent", "main"}) {
		t.Errorf("start order %v, want the sidecar agent, then main", order)
	}
}
