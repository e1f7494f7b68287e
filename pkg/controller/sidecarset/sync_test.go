package sidecarset

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
)

const revisionNS = "inplace-system"

// fixture is the controller on fake clients whose informers are never started: objects go to the
// caches by hand, so each sync sees exactly what the test put there.
type fixture struct {
	controllertest.Fakes
	c        *Controller
	recorder *eventLog
	// upgrades are the bodies POSTed to pods/inplaceupdate, by Pod name.
	upgrades map[string][]*v1alpha1.InPlaceUpdate
	// answer, when set, is what pods/inplaceupdate answers.
	answer error
}

func logSet(image string, mutate func(*v1alpha1.SidecarSet)) *v1alpha1.SidecarSet {
	s := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "logs", UID: "set-uid", Generation: 2},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: image}}},
		},
	}
	if mutate != nil {
		mutate(s)
	}
	v1alpha1.SetDefaults_SidecarSet(s)
	return s
}

// injectedPods are n running, ready Pods injected with logSet("agent:v1").
func injectedPods(t *testing.T, n int) []*corev1.Pod {
	t.Helper()
	return podsInjectedWith(t, n, logSet("agent:v1", nil))
}

// podsInjectedWith are n running Pods injected with set: every container ready, every init
// container a native sidecar running and ready or a plain one completed.
func podsInjectedWith(t *testing.T, n int, set *v1alpha1.SidecarSet) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for i := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("web-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i)),
				Labels: map[string]string{"app": "web"}, ResourceVersion: "10"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:v1"}}},
		}
		res, err := sidecarcontrol.Inject(pod, []*v1alpha1.SidecarSet{set}, metav1.Now())
		if err != nil {
			t.Fatal(err)
		}
		p := res.Pod
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true})
		}
		for i, c := range p.Spec.InitContainers {
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, Ready: inplaceupdate.IsNativeSidecar(&p.Spec.InitContainers[i])})
		}
		pods = append(pods, p)
	}
	return pods
}

func newFixture(t *testing.T, set *v1alpha1.SidecarSet, pods ...*corev1.Pod) *fixture {
	t.Helper()
	var kubeObjs []runtime.Object
	for _, p := range pods {
		kubeObjs = append(kubeObjs, p)
	}
	f := &fixture{Fakes: controllertest.NewFakes(kubeObjs, set), recorder: &eventLog{}, upgrades: map[string][]*v1alpha1.InPlaceUpdate{}}
	f.Inplace.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca := a.(k8stesting.CreateAction)
		if a.GetSubresource() != "inplaceupdate" {
			return false, nil, nil
		}
		if f.answer != nil {
			return true, nil, f.answer
		}
		body := ca.GetObject().(*v1alpha1.InPlaceUpdate)
		name := ca.(k8stesting.CreateActionImpl).Name
		f.upgrades[name] = append(f.upgrades[name], body.DeepCopy())
		return true, &v1alpha1.InPlaceUpdate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.GetNamespace(), ResourceVersion: "100"}}, nil
	})
	c, err := New(f.Kube, f.Inplace, f.InplaceInformers.Apps().V1alpha1().SidecarSets(), f.KubeInformers.Core().V1().Pods(),
		f.KubeInformers.Core().V1().Namespaces(), f.KubeInformers.Apps().V1().ControllerRevisions(), revisionNS, f.recorder)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.Cache(set)
	for _, p := range pods {
		f.Cache(p)
	}
	return f
}

// cacheRevisions copies the revisions the controller wrote into the cache (and drops deleted ones).
func (f *fixture) cacheRevisions(t *testing.T) []appsv1.ControllerRevision {
	t.Helper()
	list, err := f.Kube.AppsV1().ControllerRevisions(revisionNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	idx := f.KubeInformers.Apps().V1().ControllerRevisions().Informer().GetIndexer()
	for _, o := range idx.List() {
		_ = idx.Delete(o)
	}
	for i := range list.Items {
		f.Cache(&list.Items[i])
	}
	return list.Items
}

func (f *fixture) sync(t *testing.T) time.Duration {
	t.Helper()
	return controllertest.Sync(t, f.c.sync, cache.ObjectName{Name: "logs"})
}

// setSpec replaces the SidecarSet in the client and the cache with set.
func (f *fixture) setSpec(t *testing.T, set *v1alpha1.SidecarSet) {
	t.Helper()
	cur, err := f.Inplace.AppsV1alpha1().SidecarSets().Get(context.Background(), set.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	set.Status = cur.Status
	if _, err := f.Inplace.AppsV1alpha1().SidecarSets().Update(context.Background(), set, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Cache(set)
}

// cacheSet copies the SidecarSet as the client has it (its status written) into the cache.
func (f *fixture) cacheSet(t *testing.T) {
	t.Helper()
	s, err := f.Inplace.AppsV1alpha1().SidecarSets().Get(context.Background(), "logs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.Cache(s)
}

func (f *fixture) status(t *testing.T) v1alpha1.SidecarSetStatus {
	t.Helper()
	s, err := f.Inplace.AppsV1alpha1().SidecarSets().Get(context.Background(), "logs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Status
}

// statusPatches are the Pods whose status the controller patched (the SidecarSetUpgradable condition).
func (f *fixture) statusPatches() []string {
	var out []string
	for _, a := range f.Kube.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "pods" && a.GetSubresource() == "status" {
			out = append(out, a.(k8stesting.PatchAction).GetName()+" "+string(a.(k8stesting.PatchAction).GetPatch()))
		}
	}
	return out
}

func TestSyncRevisionsAndStatus(t *testing.T) {
	pods := injectedPods(t, 3)
	other := injectedPods(t, 1)[0]
	other.Name, other.UID = "other", "uid-other"
	other.Annotations[v1alpha1.SidecarSetListAnnotation] = "another"
	f := newFixture(t, logSet("agent:v1", nil), append(pods, other)...)
	f.sync(t)
	revs := f.cacheRevisions(t)
	if len(revs) != 1 {
		t.Fatalf("%d revisions, want 1", len(revs))
	}
	r := revs[0]
	if !strings.HasPrefix(r.Name, "logs-") || r.Revision != 1 || r.Labels[sidecarcontrol.RevisionSetLabel] != "logs" ||
		len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != "set-uid" {
		t.Errorf("revision %s: number %d, labels %v, owners %v", r.Name, r.Revision, r.Labels, r.OwnerReferences)
	}
	want := v1alpha1.SidecarSetStatus{ObservedGeneration: 2, MatchedPods: 3, UpdatedPods: 3, ReadyPods: 3, UpdatedReadyPods: 3,
		LatestRevision: r.Name, CollisionCount: ptr.To[int32](0)}
	if st := f.status(t); !statusEqual(&st, &want) {
		t.Errorf("status %+v, want %+v", st, want)
	}
	f.sync(t)
	if revs := f.cacheRevisions(t); len(revs) != 1 {
		t.Errorf("an unchanged spec made %d revisions", len(revs))
	}
	// The Pods record the revision they were injected at (as the Pod webhook writes it).
	for _, p := range pods {
		recordRevision(t, p, r.Name)
		f.Cache(p)
	}

	f.setSpec(t, logSet("agent:v2", func(s *v1alpha1.SidecarSet) { s.Spec.RevisionHistoryLimit = ptr.To[int32](5) }))
	f.sync(t)
	revs = f.cacheRevisions(t)
	if len(revs) != 2 {
		t.Fatalf("%d revisions after an image change, want 2", len(revs))
	}
	f.setSpec(t, logSet("agent:v1", nil))
	f.sync(t)
	revs = f.cacheRevisions(t)
	if len(revs) != 2 {
		t.Fatalf("going back to the first spec: %d revisions, want 2 (the first renumbered)", len(revs))
	}
	for _, rv := range revs {
		if rv.Name == r.Name && rv.Revision != 3 {
			t.Errorf("the first revision is number %d, want 3", rv.Revision)
		}
	}
	f.setSpec(t, logSet("agent:v3", func(s *v1alpha1.SidecarSet) { s.Spec.RevisionHistoryLimit = ptr.To[int32](1) }))
	f.sync(t)
	revs = f.cacheRevisions(t)
	// The Pods record the first revision (injection), so it stays beside the latest.
	var names []string
	for _, rv := range revs {
		names = append(names, rv.Name)
	}
	if len(revs) != 2 || !slices.Contains(names, r.Name) {
		t.Errorf("revisionHistoryLimit 1: revisions %v, want the latest and %s, which the Pods record", names, r.Name)
	}
}

func TestSyncUpgrades(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.SidecarSet)
		want   int
	}{
		{"maxUnavailable 1 by default", nil, 1},
		{"maxUnavailable 3", func(s *v1alpha1.SidecarSet) { s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(3)) }, 3},
		{"paused", func(s *v1alpha1.SidecarSet) { s.Spec.UpdateStrategy.Paused = true }, 0},
		{"NotUpdate", func(s *v1alpha1.SidecarSet) { s.Spec.UpdateStrategy.Type = v1alpha1.NotUpdateSidecarSetStrategyType }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := injectedPods(t, 3)
			set := logSet("agent:v2", tc.mutate)
			f := newFixture(t, set, pods...)
			f.sync(t)
			if len(f.upgrades) != tc.want {
				t.Fatalf("%d Pods upgraded, want %d", len(f.upgrades), tc.want)
			}
			hash, err := sidecarcontrol.CurrentHash(set)
			if err != nil {
				t.Fatal(err)
			}
			for name, bodies := range f.upgrades {
				b := bodies[0]
				if len(bodies) != 1 || b.Spec.SidecarSet == nil || b.Spec.SidecarSet.Name != "logs" || b.Spec.Revision != hash ||
					len(b.Spec.Containers) != 1 || b.Spec.Containers[0].Name != "agent" || b.Spec.Containers[0].Image != "agent:v2" {
					t.Errorf("pod %s: requests %+v", name, bodies)
				}
			}
			if got := len(f.statusPatches()); got != tc.want {
				t.Errorf("%d SidecarSetUpgradable patches, want %d", got, tc.want)
			}
		})
	}
}

// The controller decides nothing from a cached Pod older than its own write: the same pass again,
// before the cache caught up, upgrades no other Pod.
func TestSyncWaitsForItsWrites(t *testing.T) {
	pods := injectedPods(t, 3)
	f := newFixture(t, logSet("agent:v2", nil), pods...)
	f.sync(t)
	if len(f.upgrades) != 1 {
		t.Fatalf("%d Pods upgraded, want 1", len(f.upgrades))
	}
	if d := f.sync(t); d <= 0 || len(f.upgrades) != 1 {
		t.Errorf("before the cache caught up: requeue %v, %d Pods upgraded (want a requeue and still 1)", d, len(f.upgrades))
	}
}

func TestSyncWaitsOnBusyContainer(t *testing.T) {
	f := newFixture(t, logSet("agent:v2", nil), injectedPods(t, 2)...)
	f.answer = apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-0", fmt.Errorf("container agent is being updated"))
	if d := f.sync(t); d <= 0 {
		t.Errorf("a 409 from pods/inplaceupdate: requeue %v, want > 0", d)
	}
}

// A PodUnavailableBudget that refuses the upgrade (429) makes the SidecarSet wait, with no error:
// it looks again after inplacerequest.BudgetRetry.
func TestSyncWaitsForBudget(t *testing.T) {
	f := newFixture(t, logSet("agent:v2", nil), injectedPods(t, 2)...)
	f.answer = apierrors.NewTooManyRequests("Cannot update pod web-0 now: PodUnavailableBudget pub allows no more unavailable Pods", 1)
	if d := f.sync(t); d <= 0 || d > inplacerequest.BudgetRetry {
		t.Errorf("a 429 from pods/inplaceupdate: requeue %v, want at most %v", d, inplacerequest.BudgetRetry)
	}
	found := false
	for _, e := range f.recorder.events {
		found = found || e.kind == "SidecarSet" && e.reason == inplacerequest.ReasonBlockedByBudget && strings.Contains(e.message, "PodUnavailableBudget pub")
		if e.reason == ReasonUpgradeFailed {
			t.Errorf("event %+v: a budget's wait is no failure", e)
		}
	}
	if !found {
		t.Errorf("events %+v: want a %s Event on the SidecarSet naming the budget", f.recorder.events, inplacerequest.ReasonBlockedByBudget)
	}
}

func TestSyncNotUpgradable(t *testing.T) {
	f := newFixture(t, logSet("agent:v1", func(s *v1alpha1.SidecarSet) {
		s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "x"}}
	}), injectedPods(t, 2)...)
	f.sync(t)
	if len(f.upgrades) != 0 {
		t.Errorf("an env change upgraded %d Pods", len(f.upgrades))
	}
	patches := f.statusPatches()
	if len(patches) != 2 {
		t.Fatalf("status patches %v, want the 2 Pods marked", patches)
	}
	for _, p := range patches {
		if !strings.Contains(p, string(pub.SidecarSetUpgradable)) || !strings.Contains(p, `"status":"False"`) {
			t.Errorf("patch %s, want SidecarSetUpgradable False", p)
		}
	}
	if warned := f.recorder.on("Pod", ReasonNotUpgradable); len(warned) != 2 {
		t.Errorf("%d %s events on Pods, want 2", len(warned), ReasonNotUpgradable)
	}
	if onSet := f.recorder.on("SidecarSet", ReasonNotUpgradable); len(onSet) != 1 || !strings.Contains(onSet[0], "ns/web-0, ns/web-1") {
		t.Errorf("%s events on the SidecarSet %q, want one naming both Pods", ReasonNotUpgradable, onSet)
	}
	// The Pods are marked already: the next pass says nothing again.
	for _, p := range injectedPods(t, 2) {
		cur, err := f.Kube.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f.Cache(cur)
	}
	f.sync(t)
	if n := len(f.recorder.on("SidecarSet", ReasonNotUpgradable)); n != 1 {
		t.Errorf("%d %s events on the SidecarSet after a pass that marked no new Pod, want still 1", n, ReasonNotUpgradable)
	}
}

// TestSyncEventsOnSidecarSet: `kubectl describe sidecarset` shows an upgrade: the Pods each pass
// started (SidecarUpgrading), and its end once every matched Pod is updated and ready
// (SidecarUpgraded), on the SidecarSet itself.
func TestSyncEventsOnSidecarSet(t *testing.T) {
	pods := injectedPods(t, 2)
	set := logSet("agent:v2", func(s *v1alpha1.SidecarSet) { s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2)) })
	f := newFixture(t, set, pods...)
	f.sync(t)
	if got := f.recorder.on("SidecarSet", ReasonUpgrading); len(got) != 1 || !strings.Contains(got[0], "2 Pod(s) in place: ns/web-0, ns/web-1") {
		t.Errorf("%s events on the SidecarSet %q, want one naming both Pods", ReasonUpgrading, got)
	}
	if got := f.recorder.on("SidecarSet", ReasonUpgraded); len(got) != 0 {
		t.Errorf("%s before the Pods run the new sidecar: %q", ReasonUpgraded, got)
	}
	// The cache sees the status written (2 matched, none updated), and the Pods now run agent:v2
	// with the set's hash (as pods/inplaceupdate and the kubelet leave them).
	f.cacheSet(t)
	for _, p := range pods {
		res, err := sidecarcontrol.Inject(&corev1.Pod{ObjectMeta: *p.ObjectMeta.DeepCopy(), Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "app:v1"}}}}, []*v1alpha1.SidecarSet{set}, metav1.Now())
		if err != nil {
			t.Fatal(err)
		}
		u := res.Pod
		u.ResourceVersion = "100"
		u.Status = *p.Status.DeepCopy()
		for i := range u.Status.ContainerStatuses {
			u.Status.ContainerStatuses[i].Image = u.Spec.Containers[i].Image
		}
		f.Cache(u)
	}
	f.sync(t)
	if st := f.status(t); st.UpdatedReadyPods != 2 {
		t.Fatalf("status %+v, want the 2 Pods updated and ready", st)
	}
	f.cacheSet(t)
	got := f.recorder.on("SidecarSet", ReasonUpgraded)
	if len(got) != 1 || !strings.Contains(got[0], "All 2 matched Pod(s)") {
		t.Errorf("%s events on the SidecarSet %q, want one", ReasonUpgraded, got)
	}
	f.sync(t)
	if n := len(f.recorder.on("SidecarSet", ReasonUpgraded)); n != 1 {
		t.Errorf("%d %s events after a pass with nothing to do, want still 1", n, ReasonUpgraded)
	}
}

// TestSyncNoUpgradedEventWithoutUpgrade: Pods created with the current sidecars that become ready
// end no upgrade: no SidecarUpgraded.
func TestSyncNoUpgradedEventWithoutUpgrade(t *testing.T) {
	pods := injectedPods(t, 2)
	for _, p := range pods {
		p.Status.Conditions[0].Status = corev1.ConditionFalse
	}
	f := newFixture(t, logSet("agent:v1", nil), pods...)
	f.sync(t)
	f.cacheSet(t)
	for _, p := range injectedPods(t, 2) {
		p.ResourceVersion = "11"
		f.Cache(p)
	}
	f.sync(t)
	if st := f.status(t); st.UpdatedReadyPods != 2 {
		t.Fatalf("status %+v, want the 2 Pods updated and ready", st)
	}
	if got := f.recorder.on("SidecarSet", ReasonUpgraded); len(got) != 0 {
		t.Errorf("%s events %q when Pods only became ready", ReasonUpgraded, got)
	}
}

// eventLog is an EventRecorder that keeps the Events with the kind of the object each is about.
var _ record.EventRecorder = &eventLog{}

type eventLog struct {
	mu     sync.Mutex
	events []loggedEvent
}

type loggedEvent struct{ kind, reason, message string }

func (l *eventLog) Event(obj runtime.Object, _, reason, message string) {
	kind := "unknown"
	switch obj.(type) {
	case *v1alpha1.SidecarSet:
		kind = "SidecarSet"
	case *corev1.Pod:
		kind = "Pod"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, loggedEvent{kind, reason, message})
}

func (l *eventLog) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	l.Event(obj, eventtype, reason, fmt.Sprintf(format, args...))
}

func (l *eventLog) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, format string, args ...any) {
	l.Eventf(obj, eventtype, reason, format, args...)
}

// on are the messages of the Events with reason on objects of kind.
func (l *eventLog) on(kind, reason string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if e.kind == kind && e.reason == reason {
			out = append(out, e.message)
		}
	}
	return out
}

// recordRevision sets the controllerRevision of the Pod's kruise.io/sidecarset-hash entry of logs.
func recordRevision(t *testing.T, pod *corev1.Pod, revision string) {
	t.Helper()
	hashes := map[string]pub.SidecarSetUpgradeSpec{}
	if err := json.Unmarshal([]byte(pod.Annotations[pub.SidecarSetHashKey]), &hashes); err != nil {
		t.Fatal(err)
	}
	e := hashes["logs"]
	e.ControllerRevision = revision
	hashes["logs"] = e
	b, _ := json.Marshal(hashes)
	pod.Annotations[pub.SidecarSetHashKey] = string(b)
}

// spec.patchPodMetadata follows an upgrade (OpenKruise "sidecarSet patch pod metadata"): a change
// of the metadata alone upgrades no Pod; the next image change writes the patched annotation
// with the new image, in the same request.
func TestSyncPatchesPodMetadata(t *testing.T) {
	withPatch := func(image, value string) *v1alpha1.SidecarSet {
		return logSet(image, func(s *v1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
			s.Spec.PatchPodMetadata = []v1alpha1.SidecarSetPatchPodMetadata{{
				PatchPolicy: v1alpha1.SidecarSetMergePatchJsonPatchPolicy, Annotations: map[string]string{"key": value}}}
		})
	}
	pods := injectedPods(t, 2)
	for _, p := range pods {
		p.Annotations["key"] = `{"agent":1,"other":"kept"}`
	}
	f := newFixture(t, withPatch("agent:v1", `{"agent":2}`), pods...)
	f.sync(t)
	if len(f.upgrades) != 0 {
		t.Fatalf("a change of patchPodMetadata alone upgraded %d Pods: %v", len(f.upgrades), f.upgrades)
	}
	if st := f.status(t); st.MatchedPods != 2 || st.UpdatedPods != 2 || st.UpdatedReadyPods != 2 {
		t.Errorf("status %+v, want 2 matched, updated and ready", st)
	}

	f.setSpec(t, withPatch("agent:v2", `{"agent":2}`))
	f.sync(t)
	if len(f.upgrades) != 2 {
		t.Fatalf("%d Pods upgraded, want 2", len(f.upgrades))
	}
	for name, bodies := range f.upgrades {
		b := bodies[0]
		if len(b.Spec.Containers) != 1 || b.Spec.Containers[0].Image != "agent:v2" || b.Spec.Metadata == nil ||
			!maps.Equal(b.Spec.Metadata.Annotations, map[string]string{"key": `{"agent":2,"other":"kept"}`}) {
			t.Errorf("pod %s: request %+v (metadata %+v), want agent:v2 and key merged to agent 2", name, b.Spec, b.Spec.Metadata)
		}
	}
}

// nativeLogSet is logSet with the native sidecar "shipper" (an init container with restartPolicy
// Always) on image, beside the plain init container "setup" on setup:v1.
func nativeLogSet(image string) *v1alpha1.SidecarSet {
	return logSet("agent:v1", func(s *v1alpha1.SidecarSet) {
		s.Spec.InitContainers = []v1alpha1.SidecarContainer{
			{Container: corev1.Container{Name: "shipper", Image: image, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
			{Container: corev1.Container{Name: "setup", Image: "setup:v1"}},
		}
	})
}

// nativePods are n running, ready Pods injected with nativeLogSet(image): setup completed, the
// native sidecar running and ready.
func nativePods(t *testing.T, n int, image string) []*corev1.Pod {
	t.Helper()
	return podsInjectedWith(t, n, nativeLogSet(image))
}

// A new image of a native sidecar is rolled out in place (OpenKruise refuses it): the controller
// asks pods/inplaceupdate for the native sidecar's image only (not the plain init container's),
// maxUnavailable at a time; once the Pods run it with the hash recorded, they count updated and
// ready, and not ready while the native sidecar is not.
func TestSyncUpgradesNativeSidecar(t *testing.T) {
	set := nativeLogSet("shipper:v2")
	set.Spec.InitContainers[1].Image = "setup:v2"
	f := newFixture(t, set, nativePods(t, 2, "shipper:v1")...)
	f.sync(t)
	if len(f.upgrades) != 1 {
		t.Fatalf("%d Pods upgraded, want 1 (maxUnavailable 1)", len(f.upgrades))
	}
	for name, bodies := range f.upgrades {
		b := bodies[0]
		if len(b.Spec.Containers) != 1 || b.Spec.Containers[0].Name != "shipper" || b.Spec.Containers[0].Image != "shipper:v2" {
			t.Errorf("pod %s: request containers %+v, want shipper=shipper:v2 only", name, b.Spec.Containers)
		}
	}
	if st := f.status(t); st.MatchedPods != 2 || st.UpdatedPods != 0 || st.ReadyPods != 2 {
		t.Errorf("status %+v, want 2 matched and ready, none updated", st)
	}

	// The Pods as pods/inplaceupdate and the kubelet leave them: the native sidecar on shipper:v2
	// (in spec and status), the set's hash recorded; web-1's native sidecar is not ready yet.
	f.cacheSet(t)
	for i, p := range nativePods(t, 2, "shipper:v1") {
		u := p.DeepCopy()
		res, err := sidecarcontrol.Inject(&corev1.Pod{ObjectMeta: *p.ObjectMeta.DeepCopy(), Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "app:v1"}}}}, []*v1alpha1.SidecarSet{set}, metav1.Now())
		if err != nil {
			t.Fatal(err)
		}
		u.Annotations = res.Pod.Annotations
		u.Spec.InitContainers[1].Image = "shipper:v2" // setup (index 0) keeps setup:v1
		u.Status.InitContainerStatuses[1].Image = "shipper:v2"
		u.Status.InitContainerStatuses[1].Ready = i == 0
		u.ResourceVersion = "100"
		f.Cache(u)
	}
	f.sync(t)
	if st := f.status(t); st.MatchedPods != 2 || st.UpdatedPods != 2 || st.ReadyPods != 1 || st.UpdatedReadyPods != 1 {
		t.Errorf("status %+v, want 2 updated, 1 ready (web-1's native sidecar is not)", st)
	}
}
