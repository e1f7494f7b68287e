package launchbarrier

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/launchpriority"
)

// newServer is a server of node "n1" whose runtime is never reached in these tests (nil).
func newServer(t *testing.T, cfg Config, pods ...*corev1.Pod) *Server {
	t.Helper()
	kube := fake.NewClientset()
	for _, p := range pods {
		if _, err := kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg.NodeName = "n1"
	s, err := New(informers.NewSharedInformerFactory(kube, 0).Core().V1().Pods(), kube, criruntime.Runtime(nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func get(s *Server, path string) (int, time.Duration) {
	start := time.Now()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, time.Since(start)
}

// TestAnswersAtOnce: whatever the hook has nothing to hold back for is answered 200 at once, so
// the kubelet never kills a container for it (the informer is not started: the Pods come from
// the API).
func TestAnswersAtOnce(t *testing.T) {
	elsewhere := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "elsewhere",
		Annotations: map[string]string{launchpriority.BarrierAnnotation: "PostStart", "apps.kruise.io/container-launch-priority": "Ordered"}},
		Spec: corev1.PodSpec{NodeName: "n2", Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
	here := elsewhere.DeepCopy()
	here.Name, here.Spec.NodeName, here.Annotations = "here", "n1", nil // no postStart barrier
	s := newServer(t, DefaultConfig(), elsewhere, here)
	for _, path := range []string{
		"/not/a/hook",
		launchpriority.HookPath("ns", "missing", "a"),
		launchpriority.HookPath("ns", "elsewhere", "a"),
		launchpriority.HookPath("ns", "here", "a"),
	} {
		if code, took := get(s, path); code != http.StatusOK || took > time.Second {
			t.Errorf("GET %s: %d after %v, want 200 at once", path, code, took)
		}
	}
}

// TestMaxInFlight: beyond MaxInFlight hooks at once, the next is answered at once rather than
// queued.
func TestMaxInFlight(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxInFlight = 1
	s := newServer(t, cfg)
	if !s.take() {
		t.Fatal("the first slot is not free")
	}
	if s.take() {
		t.Error("a second slot of one")
	}
	if code, _ := get(s, launchpriority.HookPath("ns", "p", "a")); code != http.StatusOK {
		t.Errorf("over the limit: %d, want 200", code)
	}
	s.give()
	if !s.take() {
		t.Error("the slot given back is not free")
	}
}

func TestNewRefusesNonLoopback(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Address = "0.0.0.0:10393"
	kube := fake.NewClientset()
	if _, err := New(informers.NewSharedInformerFactory(kube, 0).Core().V1().Pods(), kube, nil, cfg); err == nil {
		t.Error("0.0.0.0 accepted")
	}
}

func TestAnyCreated(t *testing.T) {
	cs := []criruntime.Container{{Name: "a", State: criruntime.StateExited}, {Name: "b", State: criruntime.StateRunning}}
	if got := anyCreated(cs, []string{"c", "a"}); got != "a" {
		t.Errorf("anyCreated = %q, want a (exited counts: it started once)", got)
	}
	if got := anyCreated(cs, []string{"c"}); got != "" {
		t.Errorf("anyCreated = %q, want none", got)
	}
}

// TestDeleted: the kubelet sends the hook without a deadline, so a Pod being deleted, gone, or
// replaced by another of the same name ends the wait.
func TestDeleted(t *testing.T) {
	now := metav1.Now()
	live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "live", UID: "u1"}}
	dying := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "dying", UID: "u2", DeletionTimestamp: &now, Finalizers: []string{"x"}}}
	s := newServer(t, DefaultConfig(), live, dying)
	ctx := context.Background()
	if s.deleted(ctx, live) {
		t.Error("a live Pod counts as deleted")
	}
	if !s.deleted(ctx, dying) {
		t.Error("a Pod being deleted does not count")
	}
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone", UID: "u3"}}
	if !s.deleted(ctx, gone) {
		t.Error("a Pod gone does not count")
	}
	older := live.DeepCopy()
	older.UID = "u0"
	if !s.deleted(ctx, older) {
		t.Error("a Pod replaced by another of its name does not count")
	}
}
