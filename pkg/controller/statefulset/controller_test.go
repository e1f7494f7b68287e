package statefulset

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
)

type fixture struct {
	controllertest.Fakes
	c    *Controller
	pods cache.Indexer
}

// newFixture builds the controller on fake clients; the objects go to both the clients and the
// informer caches (the informers are never started).
func newFixture(t *testing.T, set *v1beta1.StatefulSet, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{Fakes: controllertest.NewFakes(objs, set)}
	setInf := f.InplaceInformers.Apps().V1beta1().StatefulSets()
	core := f.KubeInformers.Core().V1()
	podInf, claimInf, revInf := core.Pods(), core.PersistentVolumeClaims(), f.KubeInformers.Apps().V1().ControllerRevisions()
	c, err := New(f.Kube, f.Inplace, setInf, podInf, claimInf, revInf, f.Recorder)
	if err != nil {
		t.Fatal(err)
	}
	c.Clock = clocktesting.NewFakePassiveClock(now)
	f.c = c
	f.pods = podInf.Informer().GetIndexer()
	add := func(inf cache.SharedIndexInformer, obj any) { controllertest.Add(t, inf.GetIndexer(), obj) }
	add(setInf.Informer(), set)
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			add(podInf.Informer(), p)
		}
	}
	return f
}

func (f *fixture) sync(t *testing.T, set *v1beta1.StatefulSet) {
	t.Helper()
	controllertest.Sync(t, f.c.sync, cache.MetaObjectToName(set))
}

// podActions are the names of the Pods acted on with verb.
func (f *fixture) podActions(verb string) map[string]string {
	return controllertest.Acted(f.Kube.Actions(), verb, "pods")
}

func orphan(p *corev1.Pod) *corev1.Pod {
	p.OwnerReferences = nil
	return p
}

func TestClaimPods(t *testing.T) {
	set := testSet(3, "Parallel")
	stray := readyPod(set, 2, "r", true)
	stray.Labels["app"] = "other"
	notMember := orphan(readyPod(set, 0, "r", true))
	notMember.Name = "db-x"
	f := newFixture(t, set, orphan(readyPod(set, 1, "r", true)), readyPod(set, 0, "r", true), stray, notMember)
	f.sync(t, set)
	patched := f.podActions("patch")
	if len(patched) != 2 || !strings.Contains(patched["db-1"], `"controller":true`) || !strings.Contains(patched["db-2"], `"$patch":"delete"`) {
		t.Errorf("patches %v: want db-1 adopted and db-2 released (db-x is not the set's name)", patched)
	}
	// db-1 is the set's now, so only db-2 (released) is missing.
	created := f.podActions("create")
	if _, ok := created["db-1"]; ok || len(created) != 1 {
		t.Errorf("created %v, want db-2 only", created)
	}
}

func TestClaimPodsAdoptsOutOfRangeToCondemn(t *testing.T) {
	// Like kube's StatefulSet: an orphan of an ordinal beyond replicas is adopted, then scaled
	// down with the rest.
	set := testSet(1, "Parallel")
	f := newFixture(t, set, readyPod(set, 0, "r", true), orphan(readyPod(set, 5, "r", true)))
	f.sync(t, set)
	if p := f.podActions("patch"); !strings.Contains(p["db-5"], `"controller":true`) {
		t.Errorf("patches %v, want db-5 adopted", p)
	}
	if d := f.podActions("delete"); !slices.Equal(slices.Sorted(maps.Keys(d)), []string{"db-5"}) {
		t.Errorf("deleted %v, want db-5", d)
	}
}

func TestClaimPodsBySetBeingDeleted(t *testing.T) {
	set := testSet(2, "Parallel")
	set.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	f := newFixture(t, set, orphan(readyPod(set, 1, "r", true)))
	f.sync(t, set)
	if p := f.podActions("patch"); len(p) != 0 {
		t.Errorf("patches %v, want none from a set being deleted", p)
	}
}

func TestSpecifiedDeleteIsRecreatedWithItsOrdinal(t *testing.T) {
	set := testSet(2, "Parallel")
	labelled := readyPod(set, 1, "r", true)
	labelled.Labels[v1alpha1.SpecifiedDeleteKey] = "true"
	f := newFixture(t, set, readyPod(set, 0, "r", true), labelled)
	f.sync(t, set)
	if d := f.podActions("delete"); len(d) != 1 {
		t.Fatalf("deleted %v, want db-1", d)
	}
	if _, ok := f.podActions("delete")["db-1"]; !ok {
		t.Fatalf("deleted %v, want db-1", f.podActions("delete"))
	}
	// Once the cache no longer has it, db-1 is created again, without the label.
	if err := f.pods.Delete(labelled); err != nil {
		t.Fatal(err)
	}
	f.Kube.ClearActions()
	f.sync(t, set)
	created := f.podActions("create")
	if _, ok := created["db-1"]; !ok || len(created) != 1 {
		t.Fatalf("created %v, want db-1", created)
	}
	pod, err := f.Kube.CoreV1().Pods("ns").Get(context.Background(), "db-1", metav1.GetOptions{})
	if err != nil || specifiedDelete(pod) {
		t.Errorf("db-1 again: %v, labels %v", err, pod.Labels)
	}
}

func TestScaleDownHeldByPreDelete(t *testing.T) {
	set := withHooks(testSet(1, "Parallel"))
	held := readyPod(set, 1, "r", true)
	held.Labels[holdLabel] = "true"
	f := newFixture(t, set, readyPod(set, 0, "r", true), held)
	f.sync(t, set)
	if d := f.podActions("delete"); len(d) != 0 {
		t.Errorf("deleted %v, want db-1 held by the preDelete hook", d)
	}
	if p := f.podActions("patch"); !strings.Contains(p["db-1"], `"lifecycle.apps.kruise.io/state":"PreparingDelete"`) {
		t.Errorf("patches %v, want db-1 moved to PreparingDelete", p)
	}
}

func TestRefreshMovesPreparingNormal(t *testing.T) {
	set := withHooks(testSet(2, "Parallel"))
	ready := inState(readyPod(set, 0, "r", true), pub.LifecycleStatePreparingNormal, true)
	f := newFixture(t, set, ready)
	f.sync(t, set)
	if p := f.podActions("patch"); !strings.Contains(p["db-0"], `"lifecycle.apps.kruise.io/state":"Normal"`) {
		t.Errorf("patches %v, want db-0 Normal (the preNormal hook's labels are all there)", p)
	}
	if c := f.podActions("create"); len(c) != 0 {
		t.Errorf("created %v in the sync that moved a Pod, want none", c)
	}
}

func TestHoldForInPlaceUpdate(t *testing.T) {
	set := withHooks(testSet(1, "Parallel"))
	cases := []struct {
		name      string
		pod       *corev1.Pod
		wantWait  bool
		wantPatch string
	}{
		{"held: moves to PreparingUpdate", inState(readyPod(set, 0, "r", true), pub.LifecycleStateNormal, true), true, `"PreparingUpdate"`},
		{"waiting while held", inState(readyPod(set, 0, "r", true), pub.LifecycleStatePreparingUpdate, true), true, ""},
		{"released: goes", inState(readyPod(set, 0, "r", true), pub.LifecycleStatePreparingUpdate, false), false, ""},
		{"not hooked: goes", inState(readyPod(set, 0, "r", true), pub.LifecycleStateNormal, false), false, ""},
		{"still Updated: the hook armed again first", inState(readyPod(set, 0, "r", true), pub.LifecycleStateUpdated, false), true, `"example.io/hold":"true"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, set, tc.pod)
			wait, err := f.c.holdForInPlaceUpdate(context.Background(), set, tc.pod)
			patch := f.podActions("patch")["db-0"]
			if err != nil || wait != tc.wantWait || (tc.wantPatch == "") != (patch == "") || !strings.Contains(patch, tc.wantPatch) {
				t.Errorf("wait %v (%v), patch %q; want wait %v, patch with %s", wait, err, patch, tc.wantWait, tc.wantPatch)
			}
		})
	}
}

// TestRestoreClaimsOfPendingPods: a Pending Pod whose claim is gone gets it created again; a
// running Pod's missing claim is left alone (it is mounted already, or the Pod is going).
func TestRestoreClaimsOfPendingPods(t *testing.T) {
	set := testSet(2, "Parallel")
	pending := readyPod(set, 0, "r", false)
	pending.Status.Phase = corev1.PodPending
	f := newFixture(t, set, pending, readyPod(set, 1, "r", true))
	if err := f.c.restoreClaims(context.Background(), set, []*corev1.Pod{pending, readyPod(set, 1, "r", true)}); err != nil {
		t.Fatal(err)
	}
	created := controllertest.Names(controllertest.Created[*corev1.PersistentVolumeClaim](f.Kube.Actions(), "persistentvolumeclaims"))
	if !slices.Equal(created, []string{"data-db-0"}) {
		t.Errorf("claims created %v, want data-db-0 (its Pod is Pending) only", created)
	}
}

// TestOrderedUpdateWaitsOnItsHookedPod: with OrderedReady the Pod the update is moving, waiting in
// PreparingUpdate for the inPlaceUpdate hook, does not hold the update that would let it go; a
// Pod Updated but not yet Normal again (the hook not armed back) holds the next one.
func TestOrderedUpdateWaitsOnItsHookedPod(t *testing.T) {
	set := withHooks(testSet(2, "OrderedReady"))
	waiting := inState(readyPod(set, 1, "old", true), pub.LifecycleStatePreparingUpdate, false)
	if got, _ := candidatesOf(set, []*corev1.Pod{readyPod(set, 0, "old", true), waiting}, "new", now); !slices.Equal(controllertest.Names(got), []string{"db-1"}) {
		t.Errorf("candidates %v, want db-1 (in PreparingUpdate, its own step)", controllertest.Names(got))
	}
	updated := inState(readyPod(set, 1, "new", true), pub.LifecycleStateUpdated, false)
	if got, _ := candidatesOf(set, []*corev1.Pod{readyPod(set, 0, "old", true), updated}, "new", now); len(got) != 0 {
		t.Errorf("candidates %v, want none while db-1 is Updated, not Normal", controllertest.Names(got))
	}
}
