package ownership

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

var deleted = metav1.Now()

// workload stands for any owner: a ConfigMap has the metadata Claim looks at.
func workload(deleting bool) *corev1.ConfigMap {
	w := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "owner-uid"}}
	if deleting {
		w.DeletionTimestamp = &deleted
	}
	return w
}

func owner(w *corev1.ConfigMap, fresh metav1.Object) Owner {
	return Owner{
		Object: w,
		Ref:    metav1.NewControllerRef(w, corev1.SchemeGroupVersion.WithKind("ConfigMap")),
		Wants:  Selects(labels.SelectorFromSet(labels.Set{"app": "web"})),
		Fresh:  func(context.Context) (metav1.Object, error) { return fresh, nil },
	}
}

func pod(name, app string, ownerUID types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Labels: map[string]string{"app": app}}}
	if ownerUID != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: ownerUID, Controller: ptr.To(true)}}
	}
	return p
}

func TestDecide(t *testing.T) {
	gone := pod("orphan-terminating", "web", "")
	gone.DeletionTimestamp = &deleted
	elsewhere := pod("other-namespace", "web", "")
	elsewhere.Namespace = "other"
	cases := []struct {
		pod      *corev1.Pod
		deleting bool
		want     action
	}{
		{pod("owned", "web", "owner-uid"), false, keep},
		{pod("owned-unwanted", "db", "owner-uid"), false, release},
		{pod("owned-unwanted", "db", "owner-uid"), true, keep},
		{pod("orphan", "web", ""), false, adopt},
		{pod("orphan", "web", ""), true, ignore},
		{pod("orphan-unwanted", "db", ""), false, ignore},
		{pod("someone-elses", "web", "other-uid"), false, ignore},
		{gone, false, ignore},
		{elsewhere, false, ignore},
	}
	for _, tc := range cases {
		if got := decide(owner(workload(tc.deleting), nil), tc.pod); got != tc.want {
			t.Errorf("%s (owner deleting %v): %v, want %v", tc.pod.Name, tc.deleting, got, tc.want)
		}
	}
}

func patches(client *fake.Clientset) map[string]string {
	out := map[string]string{}
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			out[p.GetName()] = string(p.GetPatch())
		}
	}
	return out
}

func claimPods(t *testing.T, o Owner, pods ...*corev1.Pod) ([]string, *fake.Clientset, error) {
	t.Helper()
	objs := make([]runtime.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	client := fake.NewClientset(objs...)
	claimed, err := Claim(context.Background(), o, pods, PodPatch(client.CoreV1(), "ns"))
	var names []string
	for _, p := range claimed {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names, client, err
}

func TestClaimAdoptsAndReleases(t *testing.T) {
	w := workload(false)
	names, client, err := claimPods(t, owner(w, w), pod("owned", "web", w.UID), pod("orphan", "web", ""),
		pod("stray", "db", w.UID), pod("someone-elses", "web", "other-uid"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"orphan", "owned"}) {
		t.Errorf("claimed %v, want orphan and owned", names)
	}
	got := patches(client)
	if len(got) != 2 || !strings.Contains(got["orphan"], `"controller":true`) || !strings.Contains(got["orphan"], `"uid":"orphan-uid"`) ||
		!strings.Contains(got["stray"], `"$patch":"delete"`) || !strings.Contains(got["stray"], `"uid":"stray-uid"`) {
		t.Errorf("patches %v: want the orphan adopted and the stray released, each with its UID", got)
	}
	adopted, _ := client.CoreV1().Pods("ns").Get(context.Background(), "orphan", metav1.GetOptions{})
	if !metav1.IsControlledBy(adopted, w) {
		t.Errorf("orphan's owners after adoption: %+v", adopted.OwnerReferences)
	}
	released, _ := client.CoreV1().Pods("ns").Get(context.Background(), "stray", metav1.GetOptions{})
	if len(released.OwnerReferences) != 0 {
		t.Errorf("stray's owners after release: %+v", released.OwnerReferences)
	}
}

func TestClaimByOwnerBeingDeleted(t *testing.T) {
	t.Run("cached as being deleted: no patch at all", func(t *testing.T) {
		w := workload(true)
		names, client, err := claimPods(t, owner(w, w), pod("owned", "web", w.UID), pod("orphan", "web", ""), pod("stray", "db", w.UID))
		if err != nil || !slices.Equal(names, []string{"owned", "stray"}) {
			t.Errorf("claimed %v (%v), want what it owns", names, err)
		}
		if got := patches(client); len(got) != 0 {
			t.Errorf("patches %v, want none", got)
		}
	})
	t.Run("being deleted only on the server: no adoption, an error", func(t *testing.T) {
		w := workload(false)
		names, client, err := claimPods(t, owner(w, workload(true)), pod("owned", "web", w.UID), pod("orphan", "web", ""))
		if err == nil || !slices.Equal(names, []string{"owned"}) {
			t.Errorf("claimed %v (%v), want owned only and an error", names, err)
		}
		if got := patches(client); len(got) != 0 {
			t.Errorf("patches %v, want none", got)
		}
	})
	t.Run("recreated under its name: no adoption", func(t *testing.T) {
		w := workload(false)
		other := workload(false)
		other.UID = "new-uid"
		if _, _, err := claimPods(t, owner(w, other), pod("orphan", "web", "")); err == nil || !strings.Contains(err.Error(), "recreated") {
			t.Errorf("error %v, want the owner recreated", err)
		}
	})
	t.Run("the uncached read fails: no adoption", func(t *testing.T) {
		w := workload(false)
		o := owner(w, w)
		calls := 0
		o.Fresh = func(context.Context) (metav1.Object, error) { calls++; return nil, errors.New("boom") }
		if _, _, err := claimPods(t, o, pod("a", "web", ""), pod("b", "web", "")); err == nil || calls != 1 {
			t.Errorf("error %v after %d reads, want an error after 1 read", err, calls)
		}
	})
}

// TestRevisionIndex: a workload's revisions come from the ControllerRevision informer's
// controller index: owned is what it controls whatever the labels (CloneSet's history), never
// another controller's or another namespace's; ClaimRevisions also adopts the namespace's orphans
// its selector matches and releases what it controls but no longer selects.
func TestRevisionIndex(t *testing.T) {
	w := workload(false)
	revision := func(name, namespace, app string, controller types.UID) *appsv1.ControllerRevision {
		p := pod(name, app, controller)
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			UID: p.UID, Labels: p.Labels, OwnerReferences: p.OwnerReferences}}
	}
	revisions := []*appsv1.ControllerRevision{revision("owned", "ns", "web", w.UID), revision("unselected", "ns", "db", w.UID),
		revision("orphan", "ns", "web", ""), revision("someone-elses", "ns", "web", "other-uid"),
		revision("elsewhere-orphan", "other", "web", ""), revision("elsewhere-owned", "other", "web", w.UID)}
	client := fake.NewClientset(runtimeObjects(revisions)...)
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Apps().V1().ControllerRevisions().Informer()
	index, err := NewIndex[*appsv1.ControllerRevision](inf)
	if err != nil {
		t.Fatal(err)
	}
	addToCache(t, inf, revisions)
	names := sortedNames[*appsv1.ControllerRevision]
	if owned, err := index.owned(w); err != nil || !slices.Equal(names(owned), []string{"owned", "unselected"}) {
		t.Errorf("owned %v (%v), want owned and unselected", names(owned), err)
	}
	claimed, err := ClaimRevisions(context.Background(), owner(w, w), index, client.AppsV1())
	if err != nil || !slices.Equal(names(claimed), []string{"orphan", "owned"}) {
		t.Errorf("claimed %v (%v), want orphan and owned", names(claimed), err)
	}
	if got := patches(client); len(got) != 2 || got["orphan"] == "" || got["unselected"] == "" {
		t.Errorf("patches %v, want the orphan adopted and the unselected revision released", got)
	}
	for _, r := range claimed {
		if !metav1.IsControlledBy(r, w) {
			t.Errorf("claimed %s is not controlled by the workload: %v", r.Name, r.OwnerReferences)
		}
	}
}

func TestAdopters(t *testing.T) {
	sel := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	workloads := []*metav1.LabelSelector{sel("web"), sel("db"), {}, sel("web")}
	self := func(s *metav1.LabelSelector) *metav1.LabelSelector { return s }
	if got := Adopters(pod("p", "web", ""), workloads, self); len(got) != 2 || got[0] != workloads[0] || got[1] != workloads[3] {
		t.Errorf("adopters %v, want the two web selectors (an empty one selects nothing)", got)
	}
	gone := pod("p", "web", "")
	gone.DeletionTimestamp = &deleted
	if got := Adopters(gone, workloads, self); len(got) != 0 {
		t.Errorf("adopters of a Pod being deleted: %v", got)
	}
}

// TestClaimPodsThroughTheControllerIndex: ClaimPods reads the owner's Pods and its namespace's
// orphans from the Pod informer's controller index, never another controller's Pods, and follows
// a Pod whose controller changes (its index key moves with it).
func TestClaimPodsThroughTheControllerIndex(t *testing.T) {
	w := workload(false)
	elsewhereOrphan := pod("elsewhere-orphan", "web", "")
	elsewhereOrphan.Namespace = "other"
	elsewhereOwned := pod("elsewhere-owned", "web", w.UID)
	elsewhereOwned.Namespace = "other"
	pods := []*corev1.Pod{pod("owned", "web", w.UID), pod("orphan", "web", ""), pod("stray", "db", w.UID),
		pod("someone-elses", "web", "other-uid"), elsewhereOrphan, elsewhereOwned}
	client := fake.NewClientset(runtimeObjects(pods)...)
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().Pods().Informer()
	index, err := NewIndex[*corev1.Pod](inf)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := NewIndex[*corev1.Pod](inf); err != nil || again.indexer != index.indexer {
		t.Fatalf("a second NewIndex on the same informer: %v", err)
	}
	addToCache(t, inf, pods)
	names := sortedNames[*corev1.Pod]
	candidates, err := index.candidates(w)
	if err != nil || !slices.Equal(names(candidates), []string{"orphan", "owned", "stray"}) {
		t.Errorf("candidates %v (%v), want owned, stray and the namespace's orphan", names(candidates), err)
	}
	claimed, err := ClaimPods(context.Background(), owner(w, w), index, client.CoreV1())
	if err != nil || !slices.Equal(names(claimed), []string{"orphan", "owned"}) {
		t.Errorf("claimed %v (%v), want orphan and owned", names(claimed), err)
	}
	if got := patches(client); len(got) != 2 || got["orphan"] == "" || got["stray"] == "" {
		t.Errorf("patches %v, want the orphan adopted and the stray released", got)
	}

	// The cache then shows the adoption and the release: the keys move.
	adopted := pod("orphan", "web", w.UID)
	released := pod("stray", "db", "")
	for _, p := range []*corev1.Pod{adopted, released} {
		if err := inf.GetIndexer().Update(p); err != nil {
			t.Fatal(err)
		}
	}
	candidates, err = index.candidates(w)
	if err != nil || !slices.Equal(names(candidates), []string{"orphan", "owned", "stray"}) {
		t.Errorf("candidates after the cache caught up %v (%v), want orphan and owned (owned), stray (now an orphan)", names(candidates), err)
	}
	other := workload(false)
	other.UID = "other-uid"
	if candidates, _ := index.candidates(other); !slices.Equal(names(candidates), []string{"someone-elses", "stray"}) {
		t.Errorf("another owner's candidates %v, want its Pod and the orphan", names(candidates))
	}
}

// BenchmarkClaimPodsCandidates: what a workload's sync reads before it claims, in a namespace of
// 1,000 workloads x 10 Pods (hack/bench-scale.sh's shape): the controller index against every Pod
// of the namespace, decided one by one (what ClaimPods did before the index).
//
//	go test -run '^$' -bench ClaimPodsCandidates ./pkg/workload/ownership
func BenchmarkClaimPodsCandidates(b *testing.B) {
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().Pods().Informer()
	index, err := NewIndex[*corev1.Pod](inf)
	if err != nil {
		b.Fatal(err)
	}
	owners := make([]*corev1.ConfigMap, 1000)
	for i := range owners {
		owners[i] = workload(false)
		owners[i].UID = types.UID(fmt.Sprintf("owner-%d", i))
		for j := 0; j < 10; j++ {
			if err := inf.GetIndexer().Add(pod(fmt.Sprintf("web-%d-%d", i, j), "web", owners[i].UID)); err != nil {
				b.Fatal(err)
			}
		}
	}
	lister := corelisters.NewPodLister(inf.GetIndexer())
	w := owners[500]
	o := owner(w, w)
	read := map[string]func() ([]*corev1.Pod, error){
		"namespace": func() ([]*corev1.Pod, error) { return lister.Pods("ns").List(labels.Everything()) },
		"index":     func() ([]*corev1.Pod, error) { return index.candidates(w) },
	}
	for _, name := range []string{"namespace", "index"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				pods, _ := read[name]()
				n := 0
				for _, p := range pods {
					if decide(o, p) == keep {
						n++
					}
				}
				if n != 10 {
					b.Fatalf("%d kept", n)
				}
			}
		})
	}
}

// runtimeObjects is objs as the fake clientset takes them.
func runtimeObjects[T runtime.Object](objs []T) []runtime.Object {
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

// addToCache puts objs in the informer's cache, as if it had listed them.
func addToCache[T any](t *testing.T, inf cache.SharedIndexInformer, objs []T) {
	t.Helper()
	for _, o := range objs {
		if err := inf.GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
}

// sortedNames is the objects' names in order, for comparing sets.
func sortedNames[T metav1.Object](objs []T) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	slices.Sort(out)
	return out
}

// TestNewPod: the Pod carries copies of the template's metadata and spec (a change to the Pod
// leaves the template alone), the revision label and the controllerRef; its maps are never nil.
func TestNewPod(t *testing.T) {
	template := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Finalizers: []string{"example.io/keep"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:v1"}}},
	}
	ref := metav1.NewControllerRef(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "owner-uid"}},
		corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	pod := NewPod(template, "ns", ref, "web-r1")
	if pod.Namespace != "ns" || pod.Labels["app"] != "web" || pod.Labels[appsv1.ControllerRevisionHashLabelKey] != "web-r1" ||
		pod.Annotations == nil || !slices.Equal(pod.Finalizers, []string{"example.io/keep"}) || !metav1.IsControlledBy(pod, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "owner-uid"}}) {
		t.Errorf("pod %+v: want the template's metadata in ns, the revision label and the controllerRef", pod.ObjectMeta)
	}
	pod.Labels["x"], pod.Finalizers[0], pod.Spec.Containers[0].Image = "y", "changed", "app:v2"
	if template.Labels["x"] != "" || template.Finalizers[0] != "example.io/keep" || template.Spec.Containers[0].Image != "app:v1" {
		t.Errorf("the template changed with its Pod: %+v", template)
	}
}
