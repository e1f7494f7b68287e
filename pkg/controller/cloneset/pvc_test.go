package cloneset

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
)

// withClaimTemplate gives the CloneSet a volumeClaimTemplate "data", and the template a volume
// of that name that the PVC must replace.
func withClaimTemplate(cs *v1alpha1.CloneSet) *v1alpha1.CloneSet {
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "storage"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
		},
	}}
	cs.Spec.Template.Spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	return cs
}

// ownedClaim is the PVC "data" of an instance id, controlled by the CloneSet.
func ownedClaim(cs *v1alpha1.CloneSet, id string, opts ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	pvc := newClaims(cs, id)[0]
	pvc.UID = types.UID(pvc.Name + "-uid")
	for _, o := range opts {
		o(pvc)
	}
	return pvc
}

func terminatingClaim(pvc *corev1.PersistentVolumeClaim) {
	now := metav1.NewTime(testNow)
	pvc.DeletionTimestamp = &now
}

func withID(id string) podOpt { return withLabel(v1alpha1.CloneSetInstanceID, id) }

func TestNewClaimsAndVolumes(t *testing.T) {
	cs := withClaimTemplate(newCloneSet(1))
	claims := newClaims(cs, "abcde")
	if len(claims) != 1 {
		t.Fatalf("%d claims, want 1", len(claims))
	}
	pvc := claims[0]
	if pvc.Name != "data-web-abcde" || pvc.Namespace != "ns" {
		t.Errorf("pvc %s/%s, want ns/data-web-abcde", pvc.Namespace, pvc.Name)
	}
	want := map[string]string{"tier": "storage", "app": "web", v1alpha1.CloneSetInstanceID: "abcde"}
	if !maps.Equal(pvc.Labels, want) {
		t.Errorf("labels %v, want %v", pvc.Labels, want)
	}
	if ref := metav1.GetControllerOf(pvc); ref == nil || ref.UID != cs.UID || ref.Kind != "CloneSet" {
		t.Errorf("controller %+v, want the CloneSet", ref)
	}
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "1Mi" {
		t.Errorf("request %s, want the template's 1Mi", got.String())
	}

	pod := newPod(cs, &cs.Spec.Template, "rev", "abcde")
	var names []string
	for _, v := range pod.Spec.Volumes {
		names = append(names, v.Name)
	}
	if !slices.Equal(names, []string{"data", "scratch"}) {
		t.Fatalf("volumes %v, want [data scratch]", names)
	}
	if src := pod.Spec.Volumes[0].PersistentVolumeClaim; src == nil || src.ClaimName != "data-web-abcde" || pod.Spec.Volumes[0].EmptyDir != nil {
		t.Errorf("volume data %+v, want only a claim of data-web-abcde", pod.Spec.Volumes[0])
	}
	if len(cs.Spec.Template.Spec.Volumes) != 2 || cs.Spec.Template.Spec.Volumes[0].EmptyDir == nil {
		t.Error("the CloneSet's template was changed")
	}
}

func TestChooseInstanceIDs(t *testing.T) {
	cs := withClaimTemplate(newCloneSet(3))
	seq := func(ids ...string) func() string {
		return func() string { id := ids[0]; ids = ids[1:]; return id }
	}
	for _, tc := range []struct {
		name    string
		disable bool
		claims  []*corev1.PersistentVolumeClaim
		active  []string          // instance ids of active Pods
		cached  map[string]string // Pod name -> "terminating" | "finished" (in the cache, not active)
		n       int
		rand    []string
		reused  []string
		fresh   []string
		waiting []string
	}{
		{name: "no claims: new ids", n: 2, rand: []string{"r1", "r2"}, fresh: []string{"r1", "r2"}},
		{name: "free claims first, in id order", n: 3, rand: []string{"r1"},
			claims: []*corev1.PersistentVolumeClaim{ownedClaim(cs, "b"), ownedClaim(cs, "a"), ownedClaim(cs, "c")},
			active: []string{"c"}, reused: []string{"a", "b"}, fresh: []string{"r1"}},
		{name: "no more reused than asked", n: 1,
			claims: []*corev1.PersistentVolumeClaim{ownedClaim(cs, "b"), ownedClaim(cs, "a")}, reused: []string{"a"}},
		{name: "a claim being deleted is not reused, nor its id given again", n: 1, rand: []string{"a", "r1"},
			claims: []*corev1.PersistentVolumeClaim{ownedClaim(cs, "a", terminatingClaim)}, fresh: []string{"r1"}},
		{name: "new ids avoid active pods and existing pod names", n: 1, rand: []string{"c", "x", "r1"},
			active: []string{"c"}, cached: map[string]string{"web-x": "finished"}, fresh: []string{"r1"}},
		{name: "a free claim whose pod still terminates waits for it", n: 2, rand: []string{"r1"},
			claims: []*corev1.PersistentVolumeClaim{ownedClaim(cs, "a"), ownedClaim(cs, "b")},
			cached: map[string]string{"web-a": "terminating"}, reused: []string{"b"}, waiting: []string{"a"}},
		{name: "waiting claims beyond n are not counted", n: 1,
			claims: []*corev1.PersistentVolumeClaim{ownedClaim(cs, "a"), ownedClaim(cs, "b")},
			cached: map[string]string{"web-a": "terminating", "web-b": "terminating"}, waiting: []string{"a"}},
		{name: "a finished pod keeps its name: its claim is not reused", n: 1, rand: []string{"r1"},
			claims: []*corev1.PersistentVolumeClaim{ownedClaim(cs, "a")},
			cached: map[string]string{"web-a": "finished"}, fresh: []string{"r1"}},
		{name: "disablePVCReuse: only new ids", disable: true, n: 2, rand: []string{"a", "r1", "r2"},
			claims: []*corev1.PersistentVolumeClaim{ownedClaim(cs, "a")},
			cached: map[string]string{"web-a": "terminating"}, fresh: []string{"r1", "r2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := cs.DeepCopy()
			cs.Spec.ScaleStrategy.DisablePVCReuse = tc.disable
			var active []*corev1.Pod
			for _, id := range tc.active {
				active = append(active, ownedPod(cs, "web-"+id, "rev", withID(id)))
			}
			state := func(name string) expectations.Cached {
				if slices.ContainsFunc(active, func(p *corev1.Pod) bool { return p.Name == name }) {
					return expectations.Cached{Exists: true}
				}
				switch tc.cached[name] {
				case "terminating":
					return expectations.Cached{Exists: true, Terminating: true}
				case "finished":
					return expectations.Cached{Exists: true}
				}
				return expectations.Cached{}
			}
			ch := chooseInstanceIDs(cs, tc.claims, active, state, tc.n, seq(append(tc.rand, "exhausted")...))
			if !slices.Equal(ch.reused, tc.reused) || !slices.Equal(ch.fresh, tc.fresh) || !slices.Equal(ch.waiting, tc.waiting) {
				t.Errorf("reused %v fresh %v waiting %v; want %v %v %v", ch.reused, ch.fresh, ch.waiting, tc.reused, tc.fresh, tc.waiting)
			}
		})
	}
}

func TestUnusedAndPodClaims(t *testing.T) {
	cs := withClaimTemplate(newCloneSet(2))
	claims := []*corev1.PersistentVolumeClaim{ownedClaim(cs, "a"), ownedClaim(cs, "b"), ownedClaim(cs, "c", terminatingClaim)}
	active := []*corev1.Pod{ownedPod(cs, "web-a", "rev", withID("a"))}
	if got := podNamesOfClaims(unusedClaims(claims, active)); !slices.Equal(got, []string{"data-web-b"}) {
		t.Errorf("unused %v, want [data-web-b] (a in use, c already being deleted)", got)
	}
	if got := podNamesOfClaims(claimsOf(claims, active[0])); !slices.Equal(got, []string{"data-web-a"}) {
		t.Errorf("claims of web-a %v, want [data-web-a]", got)
	}
	if got := claimsOf(claims, ownedPod(cs, "web-c", "rev", withID("c"))); len(got) != 0 {
		t.Errorf("claims of web-c %v, want none (being deleted)", got)
	}
	if got := claimsOf(claims, ownedPod(cs, "legacy", "rev")); len(got) != 0 {
		t.Errorf("a pod without instance id has claims %v", got)
	}
}

func podNamesOfClaims(claims []*corev1.PersistentVolumeClaim) []string {
	var out []string
	for _, c := range claims {
		out = append(out, c.Name)
	}
	return out
}

func createdClaims(f *fixture) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, a := range actionsOf[k8stesting.CreateAction](f, "create", "persistentvolumeclaims") {
		out = append(out, a.GetObject().(*corev1.PersistentVolumeClaim))
	}
	return out
}

func deletedClaims(f *fixture) []string {
	var names []string
	for _, a := range actionsOf[k8stesting.DeleteAction](f, "delete", "persistentvolumeclaims") {
		names = append(names, a.GetName())
	}
	slices.Sort(names)
	return names
}

// Scaling up creates each Pod's PVC first, and the Pod claims it.
func TestScaleUpCreatesClaimsBeforePods(t *testing.T) {
	cs := withClaimTemplate(newCloneSet(2))
	f := newFixture(t, cs)
	f.sync(t)
	pods := createdPods(f)
	if len(pods) != 2 || len(createdClaims(f)) != 2 {
		t.Fatalf("created %d pods and %d pvcs, want 2 and 2", len(pods), len(createdClaims(f)))
	}
	for _, p := range pods {
		id := p.Labels[v1alpha1.CloneSetInstanceID]
		want := "data-web-" + id
		if p.Spec.Volumes[0].PersistentVolumeClaim == nil || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != want {
			t.Errorf("pod %s volume %+v, want claim %s", p.Name, p.Spec.Volumes[0], want)
		}
		claimAt, podAt := -1, -1
		for i, a := range f.Kube.Actions() {
			if c, ok := a.(k8stesting.CreateAction); ok {
				switch o := c.GetObject().(type) {
				case *corev1.PersistentVolumeClaim:
					if o.Name == want {
						claimAt = i
					}
				case *corev1.Pod:
					if o.Name == p.Name {
						podAt = i
					}
				}
			}
		}
		if claimAt < 0 || claimAt > podAt {
			t.Errorf("pvc %s created at action %d, pod %s at %d: want the pvc first", want, claimAt, p.Name, podAt)
		}
	}
	evs := events(f)
	if !strings.Contains(evs, "SuccessfulCreate created pvc data-web-") {
		t.Errorf("no pvc creation event in\n%s", evs)
	}
}

// A Pod deleted outside the CloneSet leaves its PVC; the replacement gets its instance id back
// and the PVC is reused as it is.
func TestReplacementReusesFreeClaim(t *testing.T) {
	cs := withClaimTemplate(newCloneSet(2))
	rev := updateRevisionName(t, cs)
	keep := ownedPod(cs, "web-keep", rev, ready(testNow), withID("keep"))
	f := newFixture(t, cs, keep, ownedClaim(cs, "keep"), ownedClaim(cs, "gone1"))
	f.sync(t)
	pods := createdPods(f)
	if len(pods) != 1 || pods[0].Name != "web-gone1" || pods[0].Labels[v1alpha1.CloneSetInstanceID] != "gone1" {
		t.Fatalf("created %v, want web-gone1 with instance id gone1", podNames(pods))
	}
	if got := pods[0].Spec.Volumes[0].PersistentVolumeClaim; got == nil || got.ClaimName != "data-web-gone1" {
		t.Errorf("volume %+v, want the existing pvc data-web-gone1", pods[0].Spec.Volumes[0])
	}
	if n := len(deletedClaims(f)); n != 0 {
		t.Errorf("deleted %d pvcs, want none", n)
	}
	if evs := events(f); !strings.Contains(evs, "reuses the PVCs of instance id gone1") {
		t.Errorf("no reuse in the events:\n%s", evs)
	}
}

// While the former Pod of a free PVC still terminates (same name), its replacement waits.
func TestReplacementWaitsForTerminatingPod(t *testing.T) {
	cs := withClaimTemplate(newCloneSet(1))
	rev := updateRevisionName(t, cs)
	now := metav1.NewTime(testNow)
	old := ownedPod(cs, "web-a", rev, withID("a"), func(p *corev1.Pod) { p.DeletionTimestamp = &now })
	f := newFixture(t, cs, old, ownedClaim(cs, "a"))
	f.sync(t)
	if n := len(createdPods(f)); n != 0 {
		t.Errorf("created %d pods while web-a terminates, want 0", n)
	}
}

// Scaling in deletes the Pod and its PVC; the other Pods' PVCs stay.
func TestScaleDownDeletesClaims(t *testing.T) {
	cs := withClaimTemplate(newCloneSet(1))
	rev := updateRevisionName(t, cs)
	older := ownedPod(cs, "web-a", rev, ready(testNow), withID("a"), created(testNow.Add(-2*time.Hour)))
	newer := ownedPod(cs, "web-b", rev, ready(testNow), withID("b"))
	f := newFixture(t, cs, older, newer, ownedClaim(cs, "a"), ownedClaim(cs, "b"))
	f.sync(t)
	if got := deletedPods(f); !slices.Equal(got, []string{"web-b"}) {
		t.Fatalf("deleted pods %v, want [web-b]", got)
	}
	if got := deletedClaims(f); !slices.Equal(got, []string{"data-web-b"}) {
		t.Errorf("deleted pvcs %v, want [data-web-b]", got)
	}
	if evs := events(f); !strings.Contains(evs, "SuccessfulDelete deleted pvc data-web-b") {
		t.Errorf("no pvc deletion event in\n%s", evs)
	}
	// Until the cache shows the PVC deleted too, the next sync does nothing.
	if err := f.KubeInformers.Core().V1().Pods().Informer().GetIndexer().Delete(newer); err != nil {
		t.Fatal(err)
	}
	if ok, _ := f.c.Exp.Satisfied("ns/web", f.c.podState("ns")); ok {
		t.Error("expectations satisfied while the cache still shows the deleted pvc")
	}
	pvcs := f.KubeInformers.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	obj, _, _ := pvcs.GetByKey("ns/data-web-b")
	if err := pvcs.Delete(obj); err != nil {
		t.Fatal(err)
	}
	if ok, _ := f.c.Exp.Satisfied("ns/web", f.c.podState("ns")); !ok {
		t.Error("expectations not satisfied once the cache shows the pod and the pvc gone")
	}
}

// Scaling to 0 deletes every Pod and every PVC, as OpenKruise does.
func TestScaleToZeroDeletesAllClaims(t *testing.T) {
	cs := withClaimTemplate(newCloneSet(0))
	rev := updateRevisionName(t, cs)
	a := ownedPod(cs, "web-a", rev, ready(testNow), withID("a"))
	b := ownedPod(cs, "web-b", rev, ready(testNow), withID("b"))
	f := newFixture(t, cs, a, b, ownedClaim(cs, "a"), ownedClaim(cs, "b"), ownedClaim(cs, "free"))
	f.sync(t)
	if got := deletedClaims(f); !slices.Equal(got, []string{"data-web-a", "data-web-b"}) {
		t.Errorf("deleted pvcs %v, want those of web-a and web-b (a free pvc stays for reuse)", got)
	}
}

// A Pod recreated for an update (ReCreate) is deleted by the CloneSet: its PVC goes with it, and
// the new Pod gets a new instance id and PVC (OpenKruise's e2e checkPVCsDoRecreate).
func TestRecreateUpdateDeletesClaims(t *testing.T) {
	cs := withClaimTemplate(newCloneSet(1))
	oldRev := updateRevisionName(t, cs)
	cs.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	old := ownedPod(cs, "web-a", oldRev, ready(testNow), withID("a"))
	f := newFixture(t, cs, old, ownedClaim(cs, "a"))
	for range 2 {
		f.sync(t)
	}
	if got := deletedPods(f); !slices.Equal(got, []string{"web-a"}) {
		t.Fatalf("deleted pods %v, want [web-a]", got)
	}
	if got := deletedClaims(f); !slices.Equal(got, []string{"data-web-a"}) {
		t.Errorf("deleted pvcs %v, want [data-web-a]", got)
	}
}

// With disablePVCReuse, a PVC no active Pod uses is deleted, and the replacement gets a new
// instance id and PVC.
func TestDisablePVCReuseDeletesFreeClaims(t *testing.T) {
	cs := withClaimTemplate(newCloneSet(2))
	cs.Spec.ScaleStrategy.DisablePVCReuse = true
	rev := updateRevisionName(t, cs)
	keep := ownedPod(cs, "web-keep", rev, ready(testNow), withID("keep"))
	f := newFixture(t, cs, keep, ownedClaim(cs, "keep"), ownedClaim(cs, "gone1"))
	f.sync(t)
	if got := deletedClaims(f); !slices.Equal(got, []string{"data-web-gone1"}) {
		t.Errorf("deleted pvcs %v, want [data-web-gone1]", got)
	}
	pods := createdPods(f)
	if len(pods) != 1 || pods[0].Labels[v1alpha1.CloneSetInstanceID] == "gone1" || pods[0].Labels[v1alpha1.CloneSetInstanceID] == "keep" {
		t.Fatalf("created %v, want one pod with a new instance id", podNames(pods))
	}
	if claims := createdClaims(f); len(claims) != 1 || claims[0].Name != "data-web-"+pods[0].Labels[v1alpha1.CloneSetInstanceID] {
		t.Errorf("created pvcs %v, want the new pod's", podNamesOfClaims(claims))
	}
}

// A PVC of the wanted name that the CloneSet does not control is not taken: the Pod is not
// created, and the sync fails with a Warning event.
func TestForeignClaimBlocksPod(t *testing.T) {
	cs := withClaimTemplate(newCloneSet(1))
	foreign := newClaims(cs, "zzzzz")[0]
	foreign.OwnerReferences = nil
	f := newFixture(t, cs, foreign)
	pod := newPod(cs, &cs.Spec.Template, "rev", "zzzzz")
	err := f.c.ensureClaims(context.Background(), cs, pod)
	if err == nil || !strings.Contains(err.Error(), "not controlled by this CloneSet") {
		t.Errorf("ensureClaims: %v, want a refusal", err)
	}
	// An owned one being deleted is refused too.
	owned := ownedClaim(cs, "yyyyy", terminatingClaim)
	f2 := newFixture(t, cs, owned)
	err = f2.c.ensureClaims(context.Background(), cs, newPod(cs, &cs.Spec.Template, "rev", "yyyyy"))
	if err == nil || !strings.Contains(err.Error(), "being deleted") {
		t.Errorf("ensureClaims: %v, want a refusal", err)
	}
	// An owned live one is reused.
	f3 := newFixture(t, cs, ownedClaim(cs, "xxxxx"))
	if err := f3.c.ensureClaims(context.Background(), cs, newPod(cs, &cs.Spec.Template, "rev", "xxxxx")); err != nil {
		t.Errorf("ensureClaims with its own pvc: %v", err)
	}
}
