package containerrecreaterequest

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	"github.com/inplace-dev/inplace/pkg/podreadiness"
)

var testNow = controllertest.Now

type fixture struct {
	controllertest.Fakes
	pods cache.Indexer
	c    *Controller
}

// newFixture builds the controller on fake clients; objects go to both the clients and the
// informer caches (the informers are never started).
func newFixture(t *testing.T, crr *v1alpha1.ContainerRecreateRequest, pods ...*corev1.Pod) *fixture {
	t.Helper()
	f := &fixture{Fakes: controllertest.NewFakes(controllertest.RuntimeObjects(pods), crr)}
	kinf, iinf := f.KubeInformers, f.InplaceInformers
	c, err := New(f.Kube, f.Inplace, iinf.Apps().V1alpha1().ContainerRecreateRequests(), kinf.Core().V1().Pods(), f.Recorder, f.Clock, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.pods = kinf.Core().V1().Pods().Informer().GetIndexer()
	for _, p := range pods {
		controllertest.Add(t, f.pods, p)
	}
	controllertest.Add(t, iinf.Apps().V1alpha1().ContainerRecreateRequests().Informer().GetIndexer(), crr)
	return f
}

// sync runs one sync of the request and then reloads the caches from the clients, as the
// informers would.
func (f *fixture) sync(t *testing.T, crr *v1alpha1.ContainerRecreateRequest) time.Duration {
	t.Helper()
	requeue := controllertest.Sync(t, f.c.sync, cache.MetaObjectToName(crr))
	idx := f.c.crrIndex
	if got, err := f.Inplace.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Get(context.Background(), crr.Name, metav1.GetOptions{}); err == nil {
		_ = idx.Update(got)
	} else {
		_ = idx.Delete(crr)
	}
	return requeue
}

func (f *fixture) get(t *testing.T, crr *v1alpha1.ContainerRecreateRequest) *v1alpha1.ContainerRecreateRequest {
	t.Helper()
	got, err := f.Inplace.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Get(context.Background(), crr.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func pod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "pod-uid", ResourceVersion: "7"},
		Spec: corev1.PodSpec{NodeName: "node-a"}}
}

func request(mutate ...func(*v1alpha1.ContainerRecreateRequest)) *v1alpha1.ContainerRecreateRequest {
	crr := &v1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "restart", Namespace: "ns", UID: "crr-uid", ResourceVersion: "3", Labels: map[string]string{
			v1alpha1.ContainerRecreateRequestPodUIDKey:   "pod-uid",
			v1alpha1.ContainerRecreateRequestNodeNameKey: "node-a",
			v1alpha1.ContainerRecreateRequestActiveKey:   "true",
		}},
		Spec: v1alpha1.ContainerRecreateRequestSpec{PodName: "web",
			Containers: []v1alpha1.ContainerRecreateRequestContainer{{Name: "app"}, {Name: "sidecar"}},
			Strategy:   &v1alpha1.ContainerRecreateRequestStrategy{FailurePolicy: v1alpha1.ContainerRecreateRequestFailurePolicyFail}},
	}
	for _, m := range mutate {
		m(crr)
	}
	return crr
}

func states(phases ...v1alpha1.ContainerRecreateRequestPhase) func(*v1alpha1.ContainerRecreateRequest) {
	return func(crr *v1alpha1.ContainerRecreateRequest) {
		crr.Status.Phase = v1alpha1.ContainerRecreateRequestRecreating
		for i, p := range phases {
			crr.Status.ContainerRecreateStates = append(crr.Status.ContainerRecreateStates,
				v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: crr.Spec.Containers[i].Name, Phase: p, Message: "m" + string(p)})
		}
	}
}

func expectCompleted(t *testing.T, got *v1alpha1.ContainerRecreateRequest, message string) {
	t.Helper()
	if got.Status.Phase != v1alpha1.ContainerRecreateRequestCompleted || got.Status.CompletionTime == nil || !got.Status.CompletionTime.Time.Equal(testNow.Truncate(time.Second)) && !got.Status.CompletionTime.Time.Equal(testNow) {
		t.Fatalf("status %+v, want Completed at %v", got.Status, testNow)
	}
	if !strings.Contains(got.Status.Message, message) || (message == "" && got.Status.Message != "") {
		t.Errorf("message %q, want %q", got.Status.Message, message)
	}
	if _, ok := got.Labels[v1alpha1.ContainerRecreateRequestActiveKey]; ok {
		t.Errorf("labels %v: the active label stays on a completed request", got.Labels)
	}
}

func TestCompletesWhenTheDaemonIsDone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		crr     *v1alpha1.ContainerRecreateRequest
		message string
		event   string
	}{
		{"all succeeded", request(states(v1alpha1.ContainerRecreateRequestSucceeded, v1alpha1.ContainerRecreateRequestSucceeded)), "", "Normal Completed recreated containers app, sidecar"},
		{"failurePolicy Fail", request(states(v1alpha1.ContainerRecreateRequestFailed, v1alpha1.ContainerRecreateRequestPending)),
			"failurePolicy Fail: container app failed: mFailed", "Warning Failed"},
		{"failurePolicy Ignore", request(states(v1alpha1.ContainerRecreateRequestFailed, v1alpha1.ContainerRecreateRequestSucceeded), func(c *v1alpha1.ContainerRecreateRequest) {
			c.Spec.Strategy.FailurePolicy = v1alpha1.ContainerRecreateRequestFailurePolicyIgnore
		}), "failurePolicy Ignore: container app failed", "Warning Failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			duration.Reset()
			f := newFixture(t, tc.crr, pod())
			f.sync(t, tc.crr)
			got := f.get(t, tc.crr)
			expectCompleted(t, got, tc.message)
			reason := strings.Fields(tc.event)[1]
			if n, err := testutil.GetHistogramMetricCount(duration.WithLabelValues(reason)); err != nil || n != 1 {
				t.Errorf("duration observed %d times with reason %s (%v), want once", n, reason, err)
			}
			if len(got.Status.ContainerRecreateStates) != 2 {
				t.Errorf("states %v: the daemon's states must stay", got.Status.ContainerRecreateStates)
			}
			if ev := f.Events(); !strings.Contains(ev, tc.event) {
				t.Errorf("events %q, want %q", ev, tc.event)
			}
		})
	}
}

// A request done while an older one of the same Pod is still open waits for it, so that a Pod's
// requests complete in the order they were made (the daemon handles them so).
func TestCompletesAfterOlderRequests(t *testing.T) {
	older := request(states(v1alpha1.ContainerRecreateRequestRecreating, v1alpha1.ContainerRecreateRequestPending), func(c *v1alpha1.ContainerRecreateRequest) {
		c.Name, c.UID, c.CreationTimestamp = "first", "first-uid", metav1.NewTime(testNow.Add(-time.Second))
	})
	newer := request(states(v1alpha1.ContainerRecreateRequestSucceeded, v1alpha1.ContainerRecreateRequestSucceeded), func(c *v1alpha1.ContainerRecreateRequest) {
		c.CreationTimestamp = metav1.NewTime(testNow)
	})
	f := newFixture(t, newer, pod())
	if err := f.c.crrIndex.Add(older); err != nil {
		t.Fatal(err)
	}
	if requeue := f.sync(t, newer); requeue <= 0 {
		t.Errorf("requeue %v, want a retry while the older request is open", requeue)
	}
	if got := f.get(t, newer); got.Status.Phase == v1alpha1.ContainerRecreateRequestCompleted {
		t.Fatal("completed before the older request of its Pod")
	}
	older.Status.Phase = v1alpha1.ContainerRecreateRequestCompleted
	if err := f.c.crrIndex.Update(older); err != nil {
		t.Fatal(err)
	}
	f.sync(t, newer)
	expectCompleted(t, f.get(t, newer), "")
}

// Under Ignore, one failure does not end the request while another container is under way.
func TestIgnoreWaitsForTheOthers(t *testing.T) {
	crr := request(states(v1alpha1.ContainerRecreateRequestFailed, v1alpha1.ContainerRecreateRequestRecreating), func(c *v1alpha1.ContainerRecreateRequest) {
		c.Spec.Strategy.FailurePolicy = v1alpha1.ContainerRecreateRequestFailurePolicyIgnore
	})
	f := newFixture(t, crr, pod())
	f.sync(t, crr)
	if got := f.get(t, crr); got.Status.Phase != v1alpha1.ContainerRecreateRequestRecreating {
		t.Errorf("phase %s, want Recreating until the sidecar is done", got.Status.Phase)
	}
}

func TestPodGone(t *testing.T) {
	for name, pods := range map[string][]*corev1.Pod{
		"deleted":     nil,
		"recreated":   {func() *corev1.Pod { p := pod(); p.UID = "another"; return p }()},
		"terminating": {func() *corev1.Pod { p := pod(); p.DeletionTimestamp = &metav1.Time{Time: testNow}; return p }()},
	} {
		t.Run(name, func(t *testing.T) {
			crr := request(states(v1alpha1.ContainerRecreateRequestRecreating, v1alpha1.ContainerRecreateRequestPending))
			f := newFixture(t, crr, pods...)
			f.sync(t, crr)
			expectCompleted(t, f.get(t, crr), "pod has gone")
		})
	}
}

// activeDeadlineSeconds and the daemon timeout run from when the controller first saw the request,
// on its own clock, whatever the creationTimestamp says.
func TestDeadlines(t *testing.T) {
	t.Run("activeDeadlineSeconds", func(t *testing.T) {
		crr := request(states(v1alpha1.ContainerRecreateRequestRecreating, v1alpha1.ContainerRecreateRequestPending), func(c *v1alpha1.ContainerRecreateRequest) {
			c.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
			c.CreationTimestamp = metav1.Time{Time: testNow.Add(-time.Hour)} // another clock: ignored
		})
		f := newFixture(t, crr, pod())
		if requeue := f.sync(t, crr); requeue != 5*time.Second {
			t.Fatalf("requeue %v, want the 5s deadline", requeue)
		}
		if got := f.get(t, crr); got.Status.Phase == v1alpha1.ContainerRecreateRequestCompleted {
			t.Fatal("completed before the deadline")
		}
		f.Clock.Step(5 * time.Second)
		f.sync(t, crr)
		got := f.get(t, crr)
		if got.Status.Message != msgDeadlineExceeded || got.Status.Phase != v1alpha1.ContainerRecreateRequestCompleted {
			t.Errorf("status %+v, want Completed: %s", got.Status, msgDeadlineExceeded)
		}
	})
	t.Run("daemon silent", func(t *testing.T) {
		crr := request()
		f := newFixture(t, crr, pod())
		if requeue := f.sync(t, crr); requeue != DefaultResponseTimeout {
			t.Fatalf("requeue %v, want the response timeout", requeue)
		}
		f.Clock.Step(DefaultResponseTimeout)
		f.sync(t, crr)
		got := f.get(t, crr)
		if got.Status.Phase != v1alpha1.ContainerRecreateRequestCompleted || !strings.Contains(got.Status.Message, `no inplace-daemon on node "node-a"`) {
			t.Errorf("status %+v, want Completed saying no daemon answered", got.Status)
		}
	})
}

func TestTTLAfterFinished(t *testing.T) {
	crr := request(states(v1alpha1.ContainerRecreateRequestSucceeded, v1alpha1.ContainerRecreateRequestSucceeded), func(c *v1alpha1.ContainerRecreateRequest) {
		c.Spec.TTLSecondsAfterFinished = ptr.To[int32](30)
	})
	f := newFixture(t, crr, pod())
	f.sync(t, crr) // completes
	done := f.get(t, crr)
	if requeue := f.sync(t, done); requeue != 30*time.Second {
		t.Fatalf("requeue %v, want the 30s TTL", requeue)
	}
	f.Clock.Step(30 * time.Second)
	f.sync(t, done)
	if _, err := f.Inplace.AppsV1alpha1().ContainerRecreateRequests("ns").Get(context.Background(), "restart", metav1.GetOptions{}); err == nil {
		t.Error("request still there after its TTL")
	}
}

// unreadyGracePeriodSeconds: finalizer, then the Pod's KruisePodReady held, then the annotation the
// daemon waits for; completing releases the hold and the finalizer.
func TestUnreadyGrace(t *testing.T) {
	gated := pod()
	gated.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}
	gated.Status.Conditions = []corev1.PodCondition{{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue}}
	crr := request(func(c *v1alpha1.ContainerRecreateRequest) {
		c.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](3)
	})
	f := newFixture(t, crr, gated)
	f.sync(t, crr)

	got := f.get(t, crr)
	if got.Annotations[v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey] == "" || len(got.Finalizers) != 1 || got.Finalizers[0] != unreadyFinalizer {
		t.Fatalf("annotations %v finalizers %v, want the unready-acquired annotation and finalizer", got.Annotations, got.Finalizers)
	}
	p, err := f.Kube.CoreV1().Pods("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := podreadiness.Condition(p); c == nil || c.Status != corev1.ConditionFalse ||
		c.Message != `[{"userAgent":"ContainerRecreateRequest","key":"ns/restart"}]` {
		t.Fatalf("KruisePodReady %+v, want False held by the request", c)
	}
	// The patch that held the Pod named its resourceVersion: a concurrent holder is not lost.
	for _, a := range f.Kube.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok && pa.GetSubresource() == "status" && !strings.Contains(string(pa.GetPatch()), `"resourceVersion":"7"`) {
			t.Errorf("pod status patch %s without the resourceVersion precondition", pa.GetPatch())
		}
	}

	// The daemon is done: completed, the Pod released, the finalizer gone.
	got.Status = request(states(v1alpha1.ContainerRecreateRequestSucceeded, v1alpha1.ContainerRecreateRequestSucceeded)).Status
	if _, err := f.Inplace.AppsV1alpha1().ContainerRecreateRequests("ns").UpdateStatus(context.Background(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = f.c.crrIndex.Update(f.get(t, crr))
	if err := f.pods.Update(p); err != nil {
		t.Fatal(err)
	}
	f.sync(t, crr)
	got = f.get(t, crr)
	expectCompleted(t, got, "")
	if len(got.Finalizers) != 0 {
		t.Errorf("finalizers %v after completion", got.Finalizers)
	}
	p, _ = f.Kube.CoreV1().Pods("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if c := podreadiness.Condition(p); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("KruisePodReady %+v after completion, want True", c)
	}
	if ev := f.Events(); !strings.Contains(ev, ReasonPodNotReady) || !strings.Contains(ev, ReasonPodReadyReleased) {
		t.Errorf("events %q", ev)
	}
}
