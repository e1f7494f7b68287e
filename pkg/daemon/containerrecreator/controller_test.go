package containerrecreator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/containerrecreate"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime/fakecri"
	"github.com/inplace-dev/inplace/pkg/daemon/internal/daemontest"
	"github.com/inplace-dev/inplace/pkg/daemon/skewclock"
	inplacefake "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/fake"
	inplaceinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
	"github.com/inplace-dev/inplace/pkg/util/informertest"
)

const (
	ns     = "default"
	podKey = "default/web-0"
)

var crrResource = v1alpha1.SchemeGroupVersion.WithResource("containerrecreaterequests")

// ---- fixtures ----

type options struct {
	clock      clock.PassiveClock
	maxStop    time.Duration
	policy     corev1.RestartPolicy
	httpPortOn int
}

type harness struct {
	t        *testing.T
	ctx      context.Context
	cri      *fakecri.Server
	rt       criruntime.Runtime
	kube     *kubefake.Clientset
	inplace  *inplacefake.Clientset
	recorder *record.FakeRecorder
	opts     options

	// the current controller and its informers (a restart builds new ones)
	c           *Controller
	kubeFactory kubeinformers.SharedInformerFactory
	crrFactory  inplaceinformers.SharedInformerFactory
	stop        context.CancelFunc

	kubeletMu sync.Mutex // one kubelet change of the Pod status at a time
	rv        atomic.Int64

	// the informers' watches, waited for after each start: the fake drops what is written before
	kubeWatches, crrWatches *informertest.Watches
}

// newHarness: Pod web-0 (UID uid-web) on node-1 with containers app (port http) and sidecar,
// running as app-0 and sidecar-0, both ready; the request API behaves as the API server does for
// resourceVersions (conflicts on a stale update; status updates keep the rest).
func newHarness(t *testing.T, opts options) *harness {
	t.Helper()
	cri, rt := fakecri.Start(t)
	if opts.policy == "" {
		opts.policy = corev1.RestartPolicyAlways
	}
	if opts.maxStop == 0 {
		opts.maxStop = 30 * time.Second
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0", UID: "uid-web"},
		Spec: corev1.PodSpec{NodeName: "node-1", RestartPolicy: opts.policy, Containers: []corev1.Container{
			{Name: "app", Image: "app:v1", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(opts.httpPortOn)}}},
			{Name: "sidecar", Image: "sidecar:v1"},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1"},
	}
	for _, name := range []string{"app", "sidecar"} {
		id := name + "-0"
		cri.Add(fakecri.Container{ID: id, PodUID: "uid-web", Name: name, State: criruntime.StateRunning})
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: name, ContainerID: "containerd://" + id, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	h := &harness{t: t, ctx: context.Background(), cri: cri, rt: rt, kube: kubefake.NewClientset(pod), inplace: inplacefake.NewClientset(),
		recorder: record.NewFakeRecorder(1000), opts: opts}
	h.kubeWatches, h.crrWatches = informertest.Track(h.kube), informertest.Track(h.inplace)
	h.serveLikeAPIServer()
	return h
}

// serveLikeAPIServer: resourceVersions on requests, 409 on an update from a stale one, and
// status updates that change the status only (plain updates everything else).
func (h *harness) serveLikeAPIServer() {
	tracker := h.inplace.Tracker()
	h.inplace.PrependReactor("create", "containerrecreaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject().(*v1alpha1.ContainerRecreateRequest).DeepCopy()
		obj.ResourceVersion = strconv.FormatInt(h.rv.Add(1), 10)
		if err := tracker.Create(crrResource, obj, obj.Namespace); err != nil {
			return true, nil, err
		}
		return true, obj, nil
	})
	h.inplace.PrependReactor("update", "containerrecreaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ua := a.(k8stesting.UpdateAction)
		obj := ua.GetObject().(*v1alpha1.ContainerRecreateRequest).DeepCopy()
		cur, err := tracker.Get(crrResource, obj.Namespace, obj.Name)
		if err != nil {
			return true, nil, err
		}
		stored := cur.(*v1alpha1.ContainerRecreateRequest)
		if obj.ResourceVersion != stored.ResourceVersion {
			return true, nil, apierrors.NewConflict(crrResource.GroupResource(), obj.Name, errors.New("the object has been modified"))
		}
		if ua.GetSubresource() == "status" {
			updated := stored.DeepCopy()
			updated.Status = obj.Status
			obj = updated
		} else {
			obj.Status = stored.Status
		}
		obj.ResourceVersion = strconv.FormatInt(h.rv.Add(1), 10)
		if err := tracker.Update(crrResource, obj, obj.Namespace); err != nil {
			return true, nil, err
		}
		return true, obj, nil
	})
}

// start builds a controller (as a daemon starting) on new informers and syncs their caches;
// with workers > 0 it also runs it. The previous controller, if any, is stopped.
func (h *harness) start(workers int) {
	h.t.Helper()
	if h.stop != nil {
		h.stop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	h.t.Cleanup(cancel)
	h.kubeFactory = kubeinformers.NewSharedInformerFactory(h.kube, 0)
	h.crrFactory = inplaceinformers.NewSharedInformerFactory(h.inplace, 0)
	cfg := DefaultConfig()
	cfg.Clock = h.opts.clock
	cfg.MaxStopGracePeriod = h.opts.maxStop
	c, err := New(h.crrFactory.Apps().V1alpha1().ContainerRecreateRequests(), h.kubeFactory.Core().V1().Pods(),
		h.kube, h.inplace, h.rt, h.recorder, cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.c = c
	podWatches, crrWatches := h.kubeWatches.Count("pods"), h.crrWatches.Count("containerrecreaterequests")
	h.kubeFactory.Start(ctx.Done())
	h.crrFactory.Start(ctx.Done())
	h.kubeFactory.WaitForCacheSync(ctx.Done())
	h.crrFactory.WaitForCacheSync(ctx.Done())
	h.kubeWatches.WaitFor(h.t, "pods", podWatches+1)
	h.crrWatches.WaitFor(h.t, "containerrecreaterequests", crrWatches+1)
	if workers > 0 {
		done := make(chan struct{})
		go func() { defer close(done); c.Run(ctx, workers) }()
		h.t.Cleanup(func() { cancel(); <-done })
	}
}

// create makes a request as admission would: labels, and each container's statusContext from the
// Pod as it is now. created orders the requests of the Pod.
func (h *harness) create(name string, created int, mutate func(*v1alpha1.ContainerRecreateRequest), containers ...string) {
	h.t.Helper()
	pod := h.pod()
	r := &v1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: k8stypes.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(created) * time.Second)),
			Labels: map[string]string{
				v1alpha1.ContainerRecreateRequestPodUIDKey:   string(pod.UID),
				v1alpha1.ContainerRecreateRequestNodeNameKey: "node-1",
				v1alpha1.ContainerRecreateRequestActiveKey:   "true",
			}},
		Spec: v1alpha1.ContainerRecreateRequestSpec{PodName: "web-0", Strategy: &v1alpha1.ContainerRecreateRequestStrategy{
			FailurePolicy: v1alpha1.ContainerRecreateRequestFailurePolicyFail, TerminationGracePeriodSeconds: ptr.To[int64](30)}},
	}
	for _, c := range containers {
		cs := findStatus(pod, c)
		r.Spec.Containers = append(r.Spec.Containers, v1alpha1.ContainerRecreateRequestContainer{Name: c,
			StatusContext: &v1alpha1.ContainerRecreateRequestContainerContext{ContainerID: cs.ContainerID, RestartCount: cs.RestartCount}})
	}
	if mutate != nil {
		mutate(r)
	}
	if _, err := h.inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Create(h.ctx, r, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	if h.c != nil {
		h.eventually("request "+name+" in the cache", func() bool {
			_, ok, _ := h.crrFactory.Apps().V1alpha1().ContainerRecreateRequests().Informer().GetIndexer().GetByKey(ns + "/" + name)
			return ok
		})
	}
}

func findStatus(pod *corev1.Pod, name string) corev1.ContainerStatus {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

func (h *harness) pod() *corev1.Pod {
	h.t.Helper()
	pod, err := h.kube.CoreV1().Pods(ns).Get(h.ctx, "web-0", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return pod
}

func (h *harness) crr(name string) *v1alpha1.ContainerRecreateRequest {
	h.t.Helper()
	r, err := h.inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// editPod changes the Pod status as the kubelet does, and waits for the controller's cache to
// show it.
func (h *harness) editPod(edit func(*corev1.Pod)) {
	h.t.Helper()
	h.kubeletMu.Lock()
	defer h.kubeletMu.Unlock()
	pod := h.pod()
	edit(pod)
	pod.ResourceVersion = strconv.FormatInt(h.rv.Add(1), 10)
	if _, err := h.kube.CoreV1().Pods(ns).UpdateStatus(h.ctx, pod, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	if h.kubeFactory != nil {
		h.eventually("Pod update in the cache", func() bool {
			got, err := h.kubeFactory.Core().V1().Pods().Lister().Pods(ns).Get("web-0")
			return err == nil && got.ResourceVersion == pod.ResourceVersion
		})
	}
}

// restart is the kubelet starting the next instance of a stopped container: it runs in the
// runtime and the Pod status reports it (ready or not). It returns the new instance's id.
func (h *harness) restart(name string, ready bool) string {
	h.t.Helper()
	containers, err := h.rt.ListPodContainers(h.ctx, "uid-web")
	if err != nil {
		h.t.Fatal(err)
	}
	attempt := uint32(0)
	for _, c := range containers {
		if c.Name == name {
			attempt = max(attempt, c.Attempt+1)
		}
	}
	id := fmt.Sprintf("%s-%d", name, attempt)
	h.cri.Add(fakecri.Container{ID: id, PodUID: "uid-web", Name: name, Attempt: attempt, State: criruntime.StateRunning})
	h.editPod(func(pod *corev1.Pod) {
		for i := range pod.Status.ContainerStatuses {
			if cs := &pod.Status.ContainerStatuses[i]; cs.Name == name {
				*cs = corev1.ContainerStatus{Name: name, ContainerID: "containerd://" + id, Ready: ready, RestartCount: int32(attempt),
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
			}
		}
	})
	return id
}

func (h *harness) setReady(name string) {
	h.t.Helper()
	h.editPod(func(pod *corev1.Pod) {
		for i := range pod.Status.ContainerStatuses {
			if pod.Status.ContainerStatuses[i].Name == name {
				pod.Status.ContainerStatuses[i].Ready = true
			}
		}
	})
}

// kubelet restarts every stopped container, in the background, until the test ends; readyAfter
// delays the new instance's readiness.
func (h *harness) kubelet(readyAfter time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h.t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		handled := 0
		for ctx.Err() == nil {
			ids, _ := h.cri.Stopped()
			for _, id := range ids[handled:] {
				name := id[:strings.LastIndex(id, "-")]
				h.restart(name, readyAfter == 0)
				if readyAfter > 0 {
					time.Sleep(readyAfter) // the container's readiness probe, simulated
					h.setReady(name)
				}
			}
			handled = len(ids)
			time.Sleep(5 * time.Millisecond)
		}
	}()
}

func (h *harness) sync() time.Duration {
	h.t.Helper()
	name, err := cache.ParseObjectName(podKey)
	if err != nil {
		h.t.Fatal(err)
	}
	return daemontest.Sync(h.t, h.ctx, h.c.sync, name)
}

// wantStopped fails the test unless the containers stopped so far are exactly want, in order.
func (h *harness) wantStopped(want ...string) {
	h.t.Helper()
	if got := h.stopped(); !slices.Equal(got, want) {
		h.t.Errorf("stopped %v, want %v", got, want)
	}
}

func (h *harness) stopped() []string {
	ids, _ := h.cri.Stopped()
	return ids
}

func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) waitDone(name string) *v1alpha1.ContainerRecreateRequest {
	h.t.Helper()
	var r *v1alpha1.ContainerRecreateRequest
	h.eventually("request "+name+" done", func() bool {
		r = h.crr(name)
		done, _ := containerrecreate.Done(r)
		return done
	})
	return r
}

func (h *harness) events() []string {
	return daemontest.Events(h.recorder)
}

func states(r *v1alpha1.ContainerRecreateRequest) []v1alpha1.ContainerRecreateRequestContainerRecreateState {
	return r.Status.ContainerRecreateStates
}

func wantStates(t *testing.T, r *v1alpha1.ContainerRecreateRequest, want ...v1alpha1.ContainerRecreateRequestContainerRecreateState) {
	t.Helper()
	if !reflect.DeepEqual(states(r), want) {
		t.Errorf("request %s: states\n%+v\nwant\n%+v", r.Name, states(r), want)
	}
}

// ---- tests ----

// TestUnorderedOneAfterAnother: the containers of an unordered request are stopped one after the
// other in the spec's order, each after its own preStop hook, as OpenKruise's daemon does: sidecar's
// stop starts only once app's preStop hook ran and app's stop returned.
func TestUnorderedOneAfterAnother(t *testing.T) {
	h := newHarness(t, options{})
	var mu sync.Mutex
	var trace []string
	log := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		trace = append(trace, e)
	}
	h.cri.SetExecFunc(func(id string, cmd []string) ([]byte, []byte, int32, error) {
		log("preStop " + id + " begins")
		time.Sleep(50 * time.Millisecond) // a draining app
		log("preStop " + id + " ends")
		return nil, nil, 0, nil
	})
	h.cri.SetStopHook(func(id string) error {
		log("stop " + id + " begins")
		time.Sleep(20 * time.Millisecond)
		log("stop " + id + " ends")
		return nil
	})
	h.start(2)
	h.kubelet(0)
	h.create("r", 0, func(r *v1alpha1.ContainerRecreateRequest) {
		r.Spec.Containers[0].PreStop = &v1alpha1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "8"}}}
	}, "app", "sidecar")

	r := h.waitDone("r")
	wantStates(t, r, st("app", succeeded, true), st("sidecar", succeeded, true))
	if r.Status.Phase != recreating {
		t.Errorf("phase %q, want Recreating (Completed is inplace-controller's)", r.Status.Phase)
	}
	mu.Lock()
	want := []string{"preStop app-0 begins", "preStop app-0 ends", "stop app-0 begins", "stop app-0 ends", "stop sidecar-0 begins", "stop sidecar-0 ends"}
	if !reflect.DeepEqual(trace, want) {
		t.Errorf("trace\n%q\nwant\n%q", trace, want)
	}
	mu.Unlock()
	events := h.events()
	for _, want := range []string{"Normal Killing Stopping container app by ContainerRecreateRequest r",
		"Normal Killing Stopping container sidecar by ContainerRecreateRequest r"} {
		if !slices.Contains(events, want) {
			t.Errorf("events %q lack %q", events, want)
		}
	}
}

// TestEndedDuringPreStop: inplace-controller completes the request (activeDeadlineSeconds) while
// app's preStop hook runs: app's stop goes on, sidecar (next in line) is never stopped, and the
// states stay app Recreating (killed), sidecar Pending, as OpenKruise leaves them.
func TestEndedDuringPreStop(t *testing.T) {
	for _, viaCache := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache shows the completion %v", viaCache), func(t *testing.T) {
			h := newHarness(t, options{})
			h.create("r", 0, func(r *v1alpha1.ContainerRecreateRequest) {
				r.Spec.Containers[0].PreStop = &v1alpha1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "8"}}}
			}, "app", "sidecar")
			h.start(0)
			var completeErr error
			h.cri.SetExecFunc(func(id string, cmd []string) ([]byte, []byte, int32, error) {
				completeErr = h.completeAsController("r", viaCache)
				return nil, nil, 0, nil
			})
			h.sync()
			if completeErr != nil {
				t.Fatal(completeErr)
			}
			h.sync() // a later sync does not go on either
			// app-0 only: the request ended before sidecar's turn.
			h.wantStopped("app-0")
			wantStates(t, h.crr("r"), st("app", recreating, true), st("sidecar", pending, false))
		})
	}
}

// completeAsController completes a request as inplace-controller does (phase Completed, then the
// active label removed); with waitCache it waits until the daemon's cache shows it.
func (h *harness) completeAsController(name string, waitCache bool) error {
	r, err := h.inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	r.Status.Phase = v1alpha1.ContainerRecreateRequestCompleted
	r.Status.Message = "recreating has exceeded the activeDeadlineSeconds"
	if r, err = h.inplace.AppsV1alpha1().ContainerRecreateRequests(ns).UpdateStatus(h.ctx, r, metav1.UpdateOptions{}); err != nil {
		return err
	}
	delete(r.Labels, v1alpha1.ContainerRecreateRequestActiveKey)
	if r, err = h.inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Update(h.ctx, r, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if !waitCache {
		return nil
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		obj, _, _ := h.crrFactory.Apps().V1alpha1().ContainerRecreateRequests().Informer().GetIndexer().GetByKey(ns + "/" + name)
		if got, ok := obj.(*v1alpha1.ContainerRecreateRequest); ok && got.ResourceVersion == r.ResourceVersion {
			return nil
		}
	}
	return errors.New("the completion never reached the cache")
}

// TestOrderedOneAfterTheOther: the second container is stopped only once the first one runs
// again and is ready.
func TestOrderedOneAfterTheOther(t *testing.T) {
	h := newHarness(t, options{})
	var hookErr atomic.Value
	h.cri.SetStopHook(func(id string) error {
		if id == "sidecar-0" {
			app := findStatus(h.pod(), "app")
			if app.ContainerID != "containerd://app-1" || !app.Ready {
				hookErr.Store(fmt.Sprintf("sidecar stopped while app is %s ready=%v", app.ContainerID, app.Ready))
			}
		}
		return nil
	})
	h.start(2)
	h.kubelet(50 * time.Millisecond)
	h.create("r", 0, func(r *v1alpha1.ContainerRecreateRequest) { r.Spec.Strategy.OrderedRecreate = true }, "app", "sidecar")

	r := h.waitDone("r")
	wantStates(t, r, st("app", succeeded, true), st("sidecar", succeeded, true))
	h.wantStopped("app-0", "sidecar-0")
	if msg := hookErr.Load(); msg != nil {
		t.Error(msg)
	}
}

// TestRequestsBackToBack: three requests created back to back for one Pod all end, one after
// the other in creation order, none left Pending (OpenKruise #1626, #2474). The third names the
// instance the first replaced: it succeeds without a stop.
func TestRequestsBackToBack(t *testing.T) {
	h := newHarness(t, options{})
	var hookErr atomic.Value
	h.cri.SetStopHook(func(id string) error {
		if id == "sidecar-0" {
			if done, _ := containerrecreate.Done(h.crr("a")); !done {
				hookErr.Store("request b stopped sidecar before request a was done")
			}
		}
		return nil
	})
	h.create("a", 0, nil, "app")
	h.create("b", 1, nil, "sidecar")
	h.create("c", 2, nil, "app")
	h.start(2)
	h.kubelet(0)

	wantStates(t, h.waitDone("a"), st("app", succeeded, true))
	wantStates(t, h.waitDone("b"), st("sidecar", succeeded, true))
	wantStates(t, h.waitDone("c"), st("app", succeeded, false))
	h.wantStopped("app-0", "sidecar-0")
	if msg := hookErr.Load(); msg != nil {
		t.Error(msg)
	}
	// The order the requests were done in, from the status writes.
	var order []string
	for _, a := range h.inplace.Actions() {
		if ua, ok := a.(k8stesting.UpdateAction); ok && ua.GetSubresource() == "status" {
			r := ua.GetObject().(*v1alpha1.ContainerRecreateRequest)
			if done, _ := containerrecreate.Done(r); done && !slices.Contains(order, r.Name) {
				order = append(order, r.Name)
			}
		}
	}
	if !reflect.DeepEqual(order, []string{"a", "b", "c"}) {
		t.Errorf("done in order %v, want [a b c]", order)
	}
}

// TestOthersMarkedPending: while one request of a Pod runs, the others are marked Pending and
// left alone.
func TestOthersMarkedPending(t *testing.T) {
	h := newHarness(t, options{})
	h.create("a", 0, nil, "app")
	h.create("b", 1, nil, "sidecar")
	h.start(0)
	h.sync()
	if a, b := h.crr("a"), h.crr("b"); a.Status.Phase != recreating || b.Status.Phase != pending || len(states(b)) != 0 {
		t.Errorf("a %q, b %q %v; want a Recreating, b Pending without states", a.Status.Phase, b.Status.Phase, states(b))
	}
	h.wantStopped("app-0")
	// The cache may not show the write yet: the next sync does not stop again.
	h.sync()
	h.wantStopped("app-0")
	h.restart("app", true)
	h.sync()
	wantStates(t, h.crr("a"), st("app", succeeded, true))
	// b goes on in the same sync.
	h.wantStopped("app-0", "sidecar-0")
}

// TestCoalescing: a request naming an instance that was replaced already succeeds without a
// stop; forceRecreate stops the running instance once anyway.
func TestCoalescing(t *testing.T) {
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			h := newHarness(t, options{})
			h.create("r", 0, func(r *v1alpha1.ContainerRecreateRequest) { r.Spec.Strategy.ForceRecreate = force }, "app")
			h.start(0)
			h.cri.SetState("app-0", criruntime.StateExited) // crashed; the kubelet started app-1
			h.restart("app", true)
			h.sync()
			if !force {
				wantStates(t, h.crr("r"), st("app", succeeded, false))
				h.wantStopped()
				return
			}
			wantStates(t, h.crr("r"), st("app", recreating, true))
			h.sync()
			if got := h.stopped(); !reflect.DeepEqual(got, []string{"app-1"}) {
				t.Fatalf("stopped %v, want [app-1] once", got)
			}
			h.restart("app", true)
			h.sync()
			wantStates(t, h.crr("r"), st("app", succeeded, true))
			h.wantStopped("app-1") // not stopped again
		})
	}
}

// TestFailurePolicy: a container the runtime refuses to stop is Failed; under Fail no further
// container is stopped, under Ignore the others go on.
func TestFailurePolicy(t *testing.T) {
	for _, policy := range []v1alpha1.ContainerRecreateRequestFailurePolicyType{
		v1alpha1.ContainerRecreateRequestFailurePolicyFail, v1alpha1.ContainerRecreateRequestFailurePolicyIgnore} {
		t.Run(string(policy), func(t *testing.T) {
			h := newHarness(t, options{})
			h.cri.SetStopHook(func(id string) error {
				if id == "app-0" {
					return errors.New("boom")
				}
				return nil
			})
			h.create("r", 0, func(r *v1alpha1.ContainerRecreateRequest) {
				r.Spec.Strategy.OrderedRecreate = true
				r.Spec.Strategy.FailurePolicy = policy
			}, "app", "sidecar")
			h.start(0)
			h.sync()
			failedApp := st("app", failed, false, "stopping container: rpc error: code = Unknown desc = boom")
			if policy == v1alpha1.ContainerRecreateRequestFailurePolicyFail {
				r := h.crr("r")
				wantStates(t, r, failedApp, st("sidecar", pending, false))
				if done, msg := containerrecreate.Done(r); !done || !strings.Contains(msg, "boom") {
					t.Errorf("Done = %v %q", done, msg)
				}
				h.wantStopped()
				return
			}
			if got := h.stopped(); !reflect.DeepEqual(got, []string{"sidecar-0"}) {
				t.Fatalf("stopped %v, want [sidecar-0]", got)
			}
			h.restart("sidecar", true)
			h.sync()
			wantStates(t, h.crr("r"), failedApp, st("sidecar", succeeded, true))
			if !slices.ContainsFunc(h.events(), func(e string) bool { return strings.HasPrefix(e, "Warning "+ReasonFailedStop) }) {
				t.Errorf("no %s event", ReasonFailedStop)
			}
		})
	}
}

// TestRestartPolicyOnFailure: a stopped container that exits 0 is not started again under
// restartPolicy OnFailure: Failed.
func TestRestartPolicyOnFailure(t *testing.T) {
	h := newHarness(t, options{policy: corev1.RestartPolicyOnFailure})
	h.create("r", 0, nil, "app")
	h.start(0)
	h.sync()
	h.editPod(func(pod *corev1.Pod) {
		pod.Status.ContainerStatuses[0].Ready = false
		pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, ContainerID: "containerd://app-0"}}
	})
	h.sync()
	wantStates(t, h.crr("r"), st("app", failed, true, "container exited with code 0 and the Pod's restartPolicy OnFailure does not start it again"))
}

// TestRestartedDaemon: a daemon started again (no memory) never stops an instance a previous one
// stopped and the kubelet replaced; one that died between writing its intent and the stop stops
// the instance the request names, once.
func TestRestartedDaemon(t *testing.T) {
	t.Run("replaced", func(t *testing.T) {
		h := newHarness(t, options{})
		h.create("r", 0, nil, "app", "sidecar")
		h.start(0)
		h.sync()
		h.restart("app", true)
		h.restart("sidecar", false)
		h.start(0) // a new daemon
		h.sync()
		wantStates(t, h.crr("r"), st("app", succeeded, true), st("sidecar", recreating, true))
		h.setReady("sidecar")
		h.sync()
		wantStates(t, h.crr("r"), st("app", succeeded, true), st("sidecar", succeeded, true))
		if got := h.stopped(); !reflect.DeepEqual(got, []string{"app-0", "sidecar-0"}) && !reflect.DeepEqual(got, []string{"sidecar-0", "app-0"}) {
			t.Errorf("stopped %v, want app-0 and sidecar-0 once each", got)
		}
	})
	t.Run("intent written, not stopped", func(t *testing.T) {
		h := newHarness(t, options{})
		h.create("r", 0, nil, "app")
		r := h.crr("r")
		r.Status = v1alpha1.ContainerRecreateRequestStatus{Phase: recreating,
			ContainerRecreateStates: []v1alpha1.ContainerRecreateRequestContainerRecreateState{st("app", recreating, true)}}
		if _, err := h.inplace.AppsV1alpha1().ContainerRecreateRequests(ns).UpdateStatus(h.ctx, r, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		h.start(0)
		h.sync()
		h.sync()
		h.wantStopped("app-0") // once, over two syncs
	})
}

// TestPodChecks: nothing is done for a request of another Pod with the same name (pod-uid), nor
// for a Pod that is gone.
func TestPodChecks(t *testing.T) {
	h := newHarness(t, options{})
	h.create("r", 0, func(r *v1alpha1.ContainerRecreateRequest) {
		r.Labels[v1alpha1.ContainerRecreateRequestPodUIDKey] = "uid-former"
	}, "app")
	h.start(0)
	h.sync()
	if r := h.crr("r"); r.Status.Phase != "" || len(h.stopped()) != 0 {
		t.Errorf("request of another Pod: phase %q, stopped %v", r.Status.Phase, h.stopped())
	}
	h.create("s", 1, nil, "app")
	if err := h.kube.CoreV1().Pods(ns).Delete(h.ctx, "web-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("Pod gone from the cache", func() bool {
		_, err := h.kubeFactory.Core().V1().Pods().Lister().Pods(ns).Get("web-0")
		return apierrors.IsNotFound(err)
	})
	h.sync()
	if r := h.crr("s"); r.Status.Phase != "" || len(h.stopped()) != 0 {
		t.Errorf("request of a deleted Pod: phase %q, stopped %v", r.Status.Phase, h.stopped())
	}
}

// TestPreStopAndGrace: exec and httpGet preStop hooks run before the stop, within the grace
// period; a failed hook is reported and the container stopped anyway; the stop gets what is
// left of the grace period, capped.
func TestPreStopAndGrace(t *testing.T) {
	var gets atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Store(r.URL.Path + " " + r.Header.Get("X-Why") + " " + r.Host)
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)

	h := newHarness(t, options{maxStop: 20 * time.Second, httpPortOn: port})
	h.cri.SetExecFunc(func(id string, cmd []string) ([]byte, []byte, int32, error) {
		return []byte("draining"), []byte("no luck"), 1, nil
	})
	h.create("r", 0, func(r *v1alpha1.ContainerRecreateRequest) {
		r.Spec.Strategy.TerminationGracePeriodSeconds = ptr.To[int64](25)
		r.Spec.Containers[0].PreStop = &v1alpha1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "quit", Port: intstr.FromString("http"), HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Why", Value: "crr"}, {Name: "Host", Value: "app.local"}}}}
		r.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}
		r.Spec.Containers[1].PreStop = &v1alpha1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/drain", "--now"}}}
	}, "app", "sidecar")
	h.start(0)
	h.sync()

	if got, _ := gets.Load().(string); got != "/quit crr app.local" {
		t.Errorf("httpGet preStop: got %q, want path /quit, header X-Why crr, host app.local", got)
	}
	if got := h.cri.Execs(); !reflect.DeepEqual(got, []fakecri.Exec{{ID: "sidecar-0", Cmd: []string{"/bin/drain", "--now"}, Timeout: 20}}) {
		t.Errorf("exec preStop: %+v, want /bin/drain --now in sidecar-0 with the capped grace period 20s", got)
	}
	ids, timeouts := h.cri.Stopped()
	slices.Sort(ids)
	if !reflect.DeepEqual(ids, []string{"app-0", "sidecar-0"}) || timeouts[0] != 20 || timeouts[1] != 20 {
		t.Errorf("stopped %v with %v, want app-0 and sidecar-0 with 20s (25s capped)", ids, timeouts)
	}
	events := h.events()
	want := "Warning FailedPreStopHook PreStop hook of container sidecar failed (ContainerRecreateRequest r): command \"/bin/drain --now\" exited with code 1: draining no luck"
	if !slices.Contains(events, want) {
		t.Errorf("events %q lack %q", events, want)
	}
	wantStates(t, h.crr("r"), st("app", recreating, true), st("sidecar", recreating, true))
}

// waitScenario runs a request with unreadyGracePeriodSeconds 10 and minStartedSeconds 5 on a
// fake clock seen through a skew, and traces what the daemon did at each step.
func waitScenario(t *testing.T, skew time.Duration) []string {
	base := clocktesting.NewFakeClock(time.Now())
	h := newHarness(t, options{clock: skewclock.New(base, skew)})
	h.create("r", 0, func(r *v1alpha1.ContainerRecreateRequest) {
		r.Spec.Strategy.UnreadyGracePeriodSeconds = ptr.To[int64](10)
		r.Spec.Strategy.MinStartedSeconds = 5
	}, "app")
	h.start(0)
	var trace []string
	step := func(what string) {
		after := h.sync()
		r := h.crr("r")
		trace = append(trace, fmt.Sprintf("%s: phase=%s states=%v stopped=%v after=%v", what, r.Status.Phase, states(r), h.stopped(), after))
	}
	step("created")
	base.Step(time.Hour)
	step("an hour without the annotation")

	// inplace-controller took the Pod out of service; its timestamp (another clock) is not read.
	r := h.crr("r")
	r.Annotations = map[string]string{v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: "2000-01-01T00:00:00Z"}
	if _, err := h.inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Update(h.ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("annotation in the cache", func() bool {
		obj, _, _ := h.crrFactory.Apps().V1alpha1().ContainerRecreateRequests().Informer().GetIndexer().GetByKey(ns + "/r")
		_, ok := obj.(*v1alpha1.ContainerRecreateRequest).Annotations[v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]
		return ok
	})
	step("annotation seen")
	base.Step(9 * time.Second)
	step("9s later")
	base.Step(time.Second)
	step("10s later")
	h.restart("app", true)
	step("app-1 runs, ready")
	base.Step(4 * time.Second)
	step("4s later")
	base.Step(time.Second)
	step("5s later")
	return trace
}

// TestWaitsOnTheDaemonClock: unreadyGracePeriodSeconds counts from when the daemon saw the
// annotation, minStartedSeconds from when it saw the new instance run, on its own clock: the
// same at a clock skew of -10m, 0 and +10m.
func TestWaitsOnTheDaemonClock(t *testing.T) {
	want := []string{
		"created: phase=Pending states=[{app Pending " + msgWaitUnready + " false}] stopped=[] after=0s",
		"an hour without the annotation: phase=Pending states=[{app Pending " + msgWaitUnready + " false}] stopped=[] after=0s",
		"annotation seen: phase=Pending states=[{app Pending " + msgWaitUnreadyGrace + " false}] stopped=[] after=10s",
		"9s later: phase=Pending states=[{app Pending " + msgWaitUnreadyGrace + " false}] stopped=[] after=1s",
		"10s later: phase=Recreating states=[{app Recreating  true}] stopped=[app-0] after=1s",
		"app-1 runs, ready: phase=Recreating states=[{app Recreating  true}] stopped=[app-0] after=5s",
		"4s later: phase=Recreating states=[{app Recreating  true}] stopped=[app-0] after=1s",
		"5s later: phase=Recreating states=[{app Succeeded  true}] stopped=[app-0] after=0s",
	}
	for _, skew := range []time.Duration{-10 * time.Minute, 0, 10 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			got := waitScenario(t, skew)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("trace\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
