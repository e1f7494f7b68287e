package inplaceready

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime/fakecri"
	"github.com/inplace-dev/inplace/pkg/daemon/internal/daemontest"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// Image ids as containerd reports them (ListContainers imageRef) and Pod status image ids as the
// kubelet writes them (a repo digest): the controller compares only what the runtime resolves.
const (
	idV1 = "sha256:1111"
	idV2 = "sha256:2222"
)

// runningPod is a ready Pod of node-1 with containers app (app:v1) and sidecar, the
// InPlaceUpdateReady gate True, as the kubelet reports it.
func runningPod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0", UID: "uid-web", ResourceVersion: "1",
			Labels: map[string]string{"controller-revision-hash": "rev-1"}},
		Spec: corev1.PodSpec{
			NodeName:       "node-1",
			Containers:     []corev1.Container{{Name: "app", Image: "app:v1"}, {Name: "sidecar", Image: "side:v1"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue},
			},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", Image: "app:v1", ImageID: "app@sha256:aaaa", ContainerID: "containerd://app-0", Ready: true},
				{Name: "sidecar", Image: "side:v1", ImageID: "side@sha256:ssss", ContainerID: "containerd://side-0", Ready: true},
			},
		},
	}
	return pod
}

// begin is pod once pods/inplaceupdate began updating app to image.
func begin(t *testing.T, pod *corev1.Pod, image string) *corev1.Pod {
	t.Helper()
	step, err := inplaceupdate.Begin(pod, &inplaceupdate.UpdateSpec{Revision: "rev-2",
		ContainerImages: map[string]string{"app": image}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	out := step.Pod.DeepCopy()
	out.Status = *pod.Status.DeepCopy()
	inplaceupdate.SetConditions(&out.Status, step.Conditions...)
	return out
}

type harness struct {
	t       *testing.T
	cri     *fakecri.Server
	client  *fake.Clientset
	factory kubeinformers.SharedInformerFactory
	c       *Controller
}

func newHarness(t *testing.T, cfg Config, pod *corev1.Pod) *harness {
	t.Helper()
	cri, rt := fakecri.Start(t)
	cri.AddImage("app:v1", idV1)
	cri.AddImage("app@sha256:aaaa", idV1)
	cri.AddImage("app:v2", idV2)
	cri.AddImage("app:v1-again", idV1) // another tag of v1
	cri.Add(fakecri.Container{ID: "app-0", PodUID: "uid-web", Name: "app", State: criruntime.StateRunning, ImageRef: idV1, Created: t0})
	cri.Add(fakecri.Container{ID: "side-0", PodUID: "uid-web", Name: "sidecar", State: criruntime.StateRunning, ImageRef: "sha256:5555", Created: t0})

	client := fake.NewClientset(pod)
	factory := kubeinformers.NewSharedInformerFactory(client, 0)
	c, err := New(factory.Core().V1().Pods(), client, rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, cri: cri, client: client, factory: factory, c: c}
}

func (h *harness) sync() time.Duration {
	h.t.Helper()
	return daemontest.Sync(h.t, context.Background(), h.c.sync, cache.ObjectName{Namespace: "default", Name: "web-0"})
}

func (h *harness) statusPatches() []k8stesting.PatchAction {
	return daemontest.Patches(h.client.Actions(), "status")
}

func (h *harness) condition() *corev1.PodCondition {
	h.t.Helper()
	pod, err := h.client.CoreV1().Pods("default").Get(context.Background(), "web-0", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == pub.InPlaceUpdateReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// A kubelet that reports no observedGeneration killed app-0 and started app-1 on the new image:
// the condition turns True at once, with a patch that carries the Pod's resourceVersion.
func TestSetsConditionWhenNewImageRuns(t *testing.T) {
	cfg := Config{PollInterval: 50 * time.Millisecond, PollFor: time.Minute}
	h := newHarness(t, cfg, begin(t, runningPod(), "app:v2"))

	if got := h.sync(); got != cfg.PollInterval {
		t.Fatalf("old container runs: requeue %v, want the poll interval", got)
	}
	h.cri.SetState("app-0", criruntime.StateExited)
	h.cri.Add(fakecri.Container{ID: "app-1", PodUID: "uid-web", Name: "app", Attempt: 1, State: criruntime.StateCreated, ImageRef: idV2, Created: t0.Add(time.Second)})
	if got := h.sync(); got != cfg.PollInterval || len(h.statusPatches()) != 0 {
		t.Fatalf("new container created, not running: requeue %v, patches %v", got, h.statusPatches())
	}
	h.cri.SetState("app-1", criruntime.StateRunning)
	if got := h.sync(); got != 0 {
		t.Fatalf("requeue %v after the condition was set", got)
	}
	patches := h.statusPatches()
	if len(patches) != 1 {
		t.Fatalf("%d status patches, want 1", len(patches))
	}
	if want := `"resourceVersion":"1"`; !strings.Contains(string(patches[0].GetPatch()), want) {
		t.Errorf("patch %s lacks %s", patches[0].GetPatch(), want)
	}
	if c := h.condition(); c == nil || c.Status != corev1.ConditionTrue || c.Reason != inplaceupdate.ReasonNewImagesRunning {
		t.Fatalf("condition %+v", c)
	}
}

// A kubelet that reports observedGeneration: the condition is set as soon as it observed the
// generation with the new image (it is killing the old container then), without asking the
// runtime; before that, nothing is polled (its status write is the event).
func TestSetsConditionWhenKubeletObservedSpec(t *testing.T) {
	cfg := Config{PollInterval: 50 * time.Millisecond, PollFor: time.Minute}
	pod := begin(t, runningPod(), "app:v2")
	pod.Generation, pod.Status.ObservedGeneration = 2, 1
	h := newHarness(t, cfg, pod)
	lists := h.cri.ListCalls()
	if got := h.sync(); got != 0 || len(h.statusPatches()) != 0 {
		t.Fatalf("kubelet on generation 1 of 2: requeue %v, patches %v", got, h.statusPatches())
	}

	pod = pod.DeepCopy()
	pod.Status.ObservedGeneration = 2
	if err := h.factory.Core().V1().Pods().Informer().GetIndexer().Update(pod); err != nil {
		t.Fatal(err)
	}
	if got := h.sync(); got != 0 {
		t.Fatalf("requeue %v", got)
	}
	if n := h.cri.ListCalls() - lists; n != 0 {
		t.Errorf("%d runtime list calls; the kubelet's observedGeneration needs none", n)
	}
	if c := h.condition(); c == nil || c.Status != corev1.ConditionTrue || c.Reason != inplaceupdate.ReasonNewSpecObserved {
		t.Fatalf("condition %+v", c)
	}
}

// Cases the runtime cannot settle are left to inplace-controller: polled, never patched.
func TestLeavesUnprovableUpdatesAlone(t *testing.T) {
	cfg := Config{PollInterval: 50 * time.Millisecond, PollFor: time.Minute}
	t.Run("same image id under a new tag", func(t *testing.T) {
		h := newHarness(t, cfg, begin(t, runningPod(), "app:v1-again"))
		h.cri.SetState("app-0", criruntime.StateExited)
		h.cri.Add(fakecri.Container{ID: "app-1", PodUID: "uid-web", Name: "app", Attempt: 1, State: criruntime.StateRunning, ImageRef: idV1})
		h.sync()
		if p := h.statusPatches(); len(p) != 0 {
			t.Fatalf("patched: %v", p)
		}
	})
	t.Run("image not on the node", func(t *testing.T) {
		h := newHarness(t, cfg, begin(t, runningPod(), "app:v3"))
		if got := h.sync(); got != cfg.PollInterval || len(h.statusPatches()) != 0 {
			t.Fatalf("requeue %v patches %v", got, h.statusPatches())
		}
	})
	t.Run("no update", func(t *testing.T) {
		h := newHarness(t, cfg, runningPod())
		if got := h.sync(); got != 0 || len(h.statusPatches()) != 0 {
			t.Fatalf("requeue %v patches %v", got, h.statusPatches())
		}
	})
	t.Run("polling stops after PollFor", func(t *testing.T) {
		h := newHarness(t, cfg, begin(t, runningPod(), "app:v2"))
		clk := testingclock.NewFakePassiveClock(t0)
		h.c.cfg.Clock = clk
		if got := h.sync(); got != cfg.PollInterval {
			t.Fatalf("requeue %v", got)
		}
		clk.SetTime(t0.Add(cfg.PollFor + time.Second))
		if got := h.sync(); got != 0 {
			t.Fatalf("still polling after PollFor: %v", got)
		}
	})
}

// Through the informer and the workqueue: the controller polls the runtime on its own and sets
// the condition once the new container runs, with no Pod event in between.
func TestRunPollsTheRuntime(t *testing.T) {
	pod := runningPod()
	h := newHarness(t, Config{PollInterval: 20 * time.Millisecond, PollFor: time.Minute}, pod)
	ctx := daemontest.RunWithInformers(t, h.factory, h.client, func(ctx context.Context) { h.c.Run(ctx, 2) })

	if _, err := h.client.CoreV1().Pods("default").Update(ctx, begin(t, pod, "app:v2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Polled while the old container runs.
	lists := h.cri.ListCalls()
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return h.cri.ListCalls() >= lists+3, nil
	}); err != nil {
		t.Fatalf("the runtime is not polled: %d list calls", h.cri.ListCalls()-lists)
	}
	if c := h.condition(); c.Status != corev1.ConditionFalse {
		t.Fatalf("condition turned %s while the old container runs", c.Status)
	}
	h.cri.SetState("app-0", criruntime.StateExited)
	h.cri.Add(fakecri.Container{ID: "app-1", PodUID: "uid-web", Name: "app", Attempt: 1, State: criruntime.StateRunning, ImageRef: idV2})
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		c := h.condition()
		return c != nil && c.Status == corev1.ConditionTrue, nil
	}); err != nil {
		t.Fatalf("condition not set: %+v", h.condition())
	}
}
