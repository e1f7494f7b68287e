package scaffold

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	inplacefake "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/fake"
	inplaceinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/util/informertest"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
	"github.com/inplace-dev/inplace/pkg/workload/predownload"
)

// parts stands ReplicaSets in for a workload kind, read from a cache holding sets.
func parts(t *testing.T, kube *fake.Clientset, sets ...*appsv1.ReplicaSet) (*Parts[*appsv1.ReplicaSet], *record.FakeRecorder) {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, s := range sets {
		if err := idx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	recorder := record.NewFakeRecorder(10)
	p := &Parts[*appsv1.ReplicaSet]{Kube: kube, Recorder: recorder, Exp: expectations.New(clock.RealClock{})}
	p.Router = ownership.NewRouter(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		func(namespace string) ownership.NamespaceLister[*appsv1.ReplicaSet] {
			return appslisters.NewReplicaSetLister(idx).ReplicaSets(namespace)
		},
		func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }, nil)
	return p, recorder
}

// withPreDownload gives p an image pre-download writer whose expectations the test holds.
func withPreDownload(t *testing.T, p *Parts[*appsv1.ReplicaSet]) *expectations.Expectations {
	t.Helper()
	inplace := inplacefake.NewClientset()
	jobs := inplaceinformers.NewSharedInformerFactory(inplace, 0).Apps().V1alpha1().ImagePullJobs()
	exp := expectations.New(clock.RealClock{})
	w, err := predownload.NewWriter(inplace, fake.NewClientset().AppsV1(), jobs, p.Recorder, exp)
	if err != nil {
		t.Fatal(err)
	}
	p.Predl = w
	return exp
}

// nothingCached is a cache that shows no object: an expectation is satisfied only once forgotten.
func nothingCached(string) expectations.Cached { return expectations.Cached{} }

func replicaSet(name string, selector *metav1.LabelSelector) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: appsv1.ReplicaSetSpec{Selector: selector}}
}

// TestLoad: a workload in the cache comes with its Pod selector; one gone has its expectations
// forgotten; one whose selector is invalid is not synced, with a Warning Event.
func TestLoad(t *testing.T) {
	p, recorder := parts(t, nil,
		replicaSet("web", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		replicaSet("bad", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}))

	w, selector, ok, err := p.Load(cache.ObjectName{Namespace: "ns", Name: "web"})
	if err != nil || !ok || w.Name != "web" || selector.String() != "app=web" {
		t.Errorf("web: %v %v %v %v, want it with selector app=web", w, selector, ok, err)
	}

	predl := withPreDownload(t, p)
	p.Exp.ExpectCreations("ns/gone", "gone-1")
	predl.ExpectCreations("ns/gone", "gone-rev-main")
	if _, _, ok, err := p.Load(cache.ObjectName{Namespace: "ns", Name: "gone"}); ok || err != nil {
		t.Errorf("gone: ok %v, err %v; want nothing to sync", ok, err)
	}
	if satisfied, _ := p.Exp.Satisfied("ns/gone", nothingCached); !satisfied {
		t.Error("the expectations of a workload gone are still there")
	}
	if satisfied, _ := predl.Satisfied("ns/gone", nothingCached); !satisfied {
		t.Error("the image pre-download expectations of a workload gone are still there")
	}

	if _, _, ok, err := p.Load(cache.ObjectName{Namespace: "ns", Name: "bad"}); ok || err != nil {
		t.Errorf("bad selector: ok %v, err %v; want nothing to sync", ok, err)
	}
	select {
	case e := <-recorder.Events:
		t.Logf("event: %s", e)
	default:
		t.Error("no Event for the invalid selector")
	}
}

// TestFinish: the status is written first and a failed write stops there; then the revisions no
// Pod uses beyond the limit go; the steps' error wins over the requeue, the sooner of the two
// waits otherwise.
func TestFinish(t *testing.T) {
	rev := func(name string) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	revisions := []*appsv1.ControllerRevision{rev("r1"), rev("r2"), rev("r3")}
	revs := history.Revisions{Current: revisions[2], Update: revisions[2]}
	ok := func() error { return nil }
	stepErr, writeErr := errors.New("step"), errors.New("write")

	for name, tc := range map[string]struct {
		actErr, writeErr error
		wantErr          []error
		wantDeleted      int
		wantRequeue      time.Duration
	}{
		"clean":        {wantDeleted: 1, wantRequeue: 6 * time.Second},
		"step failed":  {actErr: stepErr, wantErr: []error{stepErr}, wantDeleted: 1},
		"write failed": {actErr: stepErr, writeErr: writeErr, wantErr: []error{stepErr, writeErr}},
		// A Pod a PodUnavailableBudget holds back is a wait, not an error: looked at again soon.
		"budget wait": {actErr: &inplacerequest.BudgetWait{Pod: "a", Message: "no unit left"}, wantDeleted: 1,
			wantRequeue: inplacerequest.BudgetRetry},
		"budget wait and a failure": {actErr: errors.Join(&inplacerequest.BudgetWait{Pod: "a"}, stepErr),
			wantErr: []error{stepErr}, wantDeleted: 1},
	} {
		kube := fake.NewClientset(revisions[0], revisions[1], revisions[2])
		p, _ := parts(t, kube)
		write := ok
		if tc.writeErr != nil {
			write = func() error { return tc.writeErr }
		}
		requeue, err := p.Finish(context.Background(), tc.actErr, write, revisions, revs, nil, 1, 7*time.Second, 6*time.Second)
		for _, want := range tc.wantErr {
			if !errors.Is(err, want) {
				t.Errorf("%s: error %v, want it to hold %v", name, err, want)
			}
		}
		if tc.wantErr == nil && err != nil {
			t.Errorf("%s: error %v", name, err)
		}
		deleted := 0
		for _, a := range kube.Actions() {
			if a.GetVerb() == "delete" {
				deleted++
			}
		}
		if deleted != tc.wantDeleted || requeue != tc.wantRequeue {
			t.Errorf("%s: %d revisions deleted, requeue %v; want %d, %v", name, deleted, requeue, tc.wantDeleted, tc.wantRequeue)
		}
	}
}

// TestDeletedForgets: a workload deleted (the informer's event, with no Deleted of the
// controller's own) has its expectations forgotten, those of its Pods and those of its image
// pre-download jobs, so a workload created again under its name does not wait for them to time
// out.
func TestDeletedForgets(t *testing.T) {
	rs := replicaSet("web", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}})
	kube := fake.NewClientset(rs)
	watches := informertest.Track(kube)
	factory := kubeinformers.NewSharedInformerFactory(kube, 0)
	apps, core := factory.Apps().V1(), factory.Core().V1()
	p := &Parts[*appsv1.ReplicaSet]{}
	err := p.Init(Config[*appsv1.ReplicaSet]{
		Name: "test", Kind: appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), Resource: "replicasets",
		Namespaced: func(namespace string) ownership.NamespaceLister[*appsv1.ReplicaSet] {
			return apps.ReplicaSets().Lister().ReplicaSets(namespace)
		},
		Selector: func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector },
		Kube:     kube, Recorder: record.NewFakeRecorder(10),
		Workloads: apps.ReplicaSets().Informer(), Pods: core.Pods().Informer(), Revisions: apps.ControllerRevisions().Informer(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Queue.ShutDown()
	predl := withPreDownload(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	factory.WaitForCacheSync(ctx.Done())
	watches.WaitFor(t, "replicasets", 1)

	p.Exp.ExpectCreations("ns/web", "web-1")
	predl.ExpectCreations("ns/web", "web-rev-main")
	if err := kube.AppsV1().ReplicaSets("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		pods, _ := p.Exp.Satisfied("ns/web", nothingCached)
		jobs, _ := predl.Satisfied("ns/web", nothingCached)
		return pods && jobs, nil
	})
	if err != nil {
		pods, _ := p.Exp.Satisfied("ns/web", nothingCached)
		jobs, _ := predl.Satisfied("ns/web", nothingCached)
		t.Errorf("after the delete event: Pod expectations forgotten %v, pre-download expectations forgotten %v; want both", pods, jobs)
	}
}

// TestUpdateInPlace: the update is expected before the request and the expectation dropped when
// the request fails; a PodUnavailableBudget's 429 is a BudgetWait, any other failure an error and
// a Warning Event, an accepted request a Normal Event.
func TestUpdateInPlace(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1"}}
	rs := replicaSet("web", nil)
	for name, tc := range map[string]struct {
		reply     error
		wantWait  bool
		wantErr   bool
		wantEvent string
		wantKept  bool
	}{
		"accepted": {wantEvent: "Normal " + ownership.ReasonSuccessfulUpdatePodInPlace, wantKept: true},
		"budget":   {reply: apierrors.NewTooManyRequests("no unit left", 1), wantWait: true, wantEvent: "Normal " + inplacerequest.ReasonBlockedByBudget},
		"refused":  {reply: apierrors.NewBadRequest("no"), wantErr: true, wantEvent: "Warning " + ownership.ReasonFailedUpdatePodInPlace},
	} {
		t.Run(name, func(t *testing.T) {
			p, recorder := parts(t, nil)
			inplace := inplacefake.NewClientset()
			inplace.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, &v1alpha1.InPlaceUpdate{}, tc.reply
			})
			p.Inplace = inplace
			err := p.UpdateInPlace(context.Background(), rs, pod, &inplaceupdate.UpdateSpec{}, &v1alpha1.InPlaceUpdate{}, "web-r2")
			var wait *inplacerequest.BudgetWait
			if errors.As(err, &wait) != tc.wantWait || (err != nil && !tc.wantWait) != tc.wantErr {
				t.Errorf("error %v: want a budget wait %v, an error %v", err, tc.wantWait, tc.wantErr)
			}
			if e := firstEvent(recorder); !strings.HasPrefix(e, tc.wantEvent) {
				t.Errorf("event %q, want %s", e, tc.wantEvent)
			}
			// The Pod's cache shows it at the old revision: only a kept expectation waits.
			satisfied, _ := p.Exp.Satisfied("ns/web", func(string) expectations.Cached { return expectations.Cached{Exists: true} })
			if satisfied == tc.wantKept {
				t.Errorf("expectation satisfied %v, want the update expected %v", satisfied, tc.wantKept)
			}
		})
	}
}

// TestDeletePod: the Pod is deleted with a precondition on its UID, expected first; a failure
// drops the expectation, with a Warning Event; a Pod already gone is no failure; a
// PodUnavailableBudget's 429 is a BudgetWait, with a Normal Event.
func TestDeletePod(t *testing.T) {
	rs := replicaSet("web", nil)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "uid-1"}}
	kube := fake.NewClientset(pod)
	p, recorder := parts(t, kube)
	if err := p.DeletePod(context.Background(), rs, pod); err != nil {
		t.Fatal(err)
	}
	del := kube.Actions()[0].(k8stesting.DeleteActionImpl)
	if uid := del.DeleteOptions.Preconditions; uid == nil || *uid.UID != "uid-1" {
		t.Errorf("delete preconditions %v, want UID uid-1", uid)
	}
	if satisfied, _ := p.Exp.Satisfied("ns/web", func(string) expectations.Cached { return expectations.Cached{Exists: true} }); satisfied {
		t.Error("the deletion is not expected")
	}
	if err := p.DeletePod(context.Background(), rs, pod); err != nil {
		t.Errorf("deleting a Pod gone: %v, want no error", err)
	}
	kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "web-1", errors.New("no"))
	})
	p.Exp.Forget("ns/web")
	if err := p.DeletePod(context.Background(), rs, pod); err == nil {
		t.Error("a refused deletion is no error")
	}
	if e := firstEvent(recorder); !strings.HasPrefix(e, "Warning "+ownership.ReasonFailedDelete) {
		t.Errorf("event %q, want %s", e, ownership.ReasonFailedDelete)
	}
	if satisfied, _ := p.Exp.Satisfied("ns/web", func(string) expectations.Cached { return expectations.Cached{Exists: true} }); !satisfied {
		t.Error("the refused deletion is still expected")
	}
	kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewTooManyRequests("Cannot delete pod web-1 now: PodUnavailableBudget pub allows no more unavailable Pods", 0)
	})
	err := p.DeletePod(context.Background(), rs, pod)
	if wait, ok := err.(*inplacerequest.BudgetWait); !ok || wait.Pod != "web-1" || !strings.Contains(wait.Message, "PodUnavailableBudget pub") {
		t.Errorf("deletion refused by a budget: %v, want a BudgetWait of web-1 naming the budget", err)
	}
	if e := firstEvent(recorder); !strings.HasPrefix(e, "Normal "+inplacerequest.ReasonBlockedByBudget+" waiting to delete pod web-1") {
		t.Errorf("event %q, want a Normal %s", e, inplacerequest.ReasonBlockedByBudget)
	}
	if satisfied, _ := p.Exp.Satisfied("ns/web", func(string) expectations.Cached { return expectations.Cached{Exists: true} }); !satisfied {
		t.Error("the deletion a budget refused is still expected")
	}
}

// firstEvent is the first Event the recorder caught, empty when none.
func firstEvent(recorder *record.FakeRecorder) string {
	select {
	case e := <-recorder.Events:
		return e
	default:
		return ""
	}
}

// RevisionsFailed writes a collision count the status does not show, and nothing else; it
// returns the revisions' error either way.
func TestRevisionsFailed(t *testing.T) {
	failed := errors.New("creating revision")
	for _, tc := range []struct {
		name   string
		status *int32
		bumped int32
		want   *int32 // written; nil: nothing written
	}{
		{"bumped", ptr.To[int32](0), 1, ptr.To[int32](1)},
		{"never written", nil, 0, ptr.To[int32](0)},
		{"unchanged", ptr.To[int32](2), 2, nil},
	} {
		var written *int32
		requeue, err := RevisionsFailed(failed, tc.status, history.Revisions{CollisionCount: tc.bumped}, func(count *int32) error {
			written = count
			return errors.New("write failed")
		})
		if requeue != 0 || !errors.Is(err, failed) {
			t.Errorf("%s: returned %v, %v, want 0 and the revisions' error", tc.name, requeue, err)
		}
		if (written == nil) != (tc.want == nil) || (written != nil && *written != *tc.want) {
			t.Errorf("%s: wrote %v, want %v", tc.name, ptr.Deref(written, -1), ptr.Deref(tc.want, -1))
		}
	}
}
