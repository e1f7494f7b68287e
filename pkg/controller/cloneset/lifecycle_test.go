package cloneset

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/podreadiness"
	"github.com/inplace-dev/inplace/pkg/workload/lifecycle"
)

const hookLabel = "example.io/hold"

func holdHook(markNotReady bool) *pub.LifecycleHook {
	return &pub.LifecycleHook{LabelsHandler: map[string]string{hookLabel: "true"}, MarkPodNotReady: markNotReady}
}

// podPatches are the pod patches sent (subresource "" or "status"), by pod name, decoded.
func podPatches(t *testing.T, f *fixture, subresource string) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for _, a := range f.Kube.Actions() {
		if a.GetVerb() != "patch" || a.GetResource().Resource != "pods" || a.GetSubresource() != subresource {
			continue
		}
		pa := a.(k8stesting.PatchAction)
		var m map[string]any
		if err := json.Unmarshal(pa.GetPatch(), &m); err != nil {
			t.Fatal(err)
		}
		out[pa.GetName()] = append(out[pa.GetName()], m)
	}
	return out
}

func patchedState(patches []map[string]any) string {
	for _, p := range slices.Backward(patches) {
		md, _ := p["metadata"].(map[string]any)
		lbls, _ := md["labels"].(map[string]any)
		if s, ok := lbls[pub.LifecycleStateKey].(string); ok {
			return s
		}
	}
	return ""
}

func patchedKruisePodReady(patches []map[string]any) string {
	for _, p := range slices.Backward(patches) {
		st, _ := p["status"].(map[string]any)
		conds, _ := st["conditions"].([]any)
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == string(pub.KruisePodReadyConditionType) {
				return m["status"].(string)
			}
		}
	}
	return ""
}

func TestNewPodLifecycle(t *testing.T) {
	cs := newCloneSet(1)
	pod := newPod(cs, &cs.Spec.Template, "rev", "abcde")
	// PreparingNormal with or without a preNormal hook, as in OpenKruise: Normal once scheduled.
	if got := lifecycle.State(pod); got != pub.LifecycleStatePreparingNormal {
		t.Errorf("state %q, want PreparingNormal", got)
	}
	if podreadiness.HasGate(pod) {
		t.Error("KruisePodReady gate without a markPodNotReady hook")
	}
	cs.Spec.Lifecycle = &pub.Lifecycle{PreNormal: holdHook(false), InPlaceUpdate: holdHook(true)}
	pod = newPod(cs, &cs.Spec.Template, "rev", "abcde")
	if got := lifecycle.State(pod); got != pub.LifecycleStatePreparingNormal {
		t.Errorf("state %q, want PreparingNormal", got)
	}
	if !podreadiness.HasGate(pod) || !inplaceupdate.HasReadinessGate(pod) {
		t.Errorf("readiness gates %v, want InPlaceUpdateReady and KruisePodReady", pod.Spec.ReadinessGates)
	}
}

// Without lifecycle hooks a scheduled Pod moves from PreparingNormal to Normal with one patch and
// no Event (one per Pod would double the requests of creating it).
func TestLifecycleWithoutHooksSendsNoEvent(t *testing.T) {
	r := newRollout(t, 2, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, newImage)
	r.cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2)) // no update, only the states
	for _, p := range r.pods {
		p.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingNormal)
		p.Spec.NodeName = "node-1"
	}
	f := r.fixture(t)
	f.sync(t)
	patches := podPatches(t, f, "")
	if len(patches) != 2 {
		t.Fatalf("patched pods %v, want both moved to Normal", patches)
	}
	for name, p := range patches {
		if got := patchedState(p); got != string(pub.LifecycleStateNormal) {
			t.Errorf("pod %s state %q, want Normal", name, got)
		}
	}
	if ev := events(f); strings.Contains(ev, "PodLifecycle") {
		t.Errorf("events %q: want no PodLifecycle event without hooks", ev)
	}
}

// The inPlaceUpdate hook holds a Pod in PreparingUpdate (KruisePodReady False with
// markPodNotReady) until its label is removed; then the Pod is updated in place and labelled
// Updating in the same request.
func TestInPlaceUpdateHook(t *testing.T) {
	r := newRollout(t, 2, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, newImage)
	r.cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: holdHook(true)}
	r.cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	for _, p := range r.pods {
		p.Labels[hookLabel] = "true"
		p.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateNormal)
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue})
	}
	f := r.fixture(t)
	f.sync(t)
	if u := inPlaceUpdates(f); len(u) != 0 {
		t.Fatalf("in-place requests %v while the hook holds", u)
	}
	patches := podPatches(t, f, "")
	if len(patches) != 1 {
		t.Fatalf("patched pods %v, want exactly one (maxUnavailable 1)", patches)
	}
	var held string
	for name, p := range patches {
		held = name
		if got := patchedState(p); got != string(pub.LifecycleStatePreparingUpdate) {
			t.Errorf("pod %s state %q, want PreparingUpdate", name, got)
		}
	}
	if got := patchedKruisePodReady(podPatches(t, f, "status")[held]); got != "False" {
		t.Errorf("KruisePodReady of %s set to %q, want False", held, got)
	}
	if ev := events(f); !strings.Contains(ev, "PodLifecyclePreparingUpdate") {
		t.Errorf("events %q: want PodLifecyclePreparingUpdate", ev)
	}

	// Still held: the Pod waits and no other Pod starts (it holds the one unavailable place).
	var heldPod *corev1.Pod
	for _, p := range r.pods {
		if p.Name == held {
			heldPod = p
			p.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingUpdate)
			// As the first sync wrote it: False, held by the lifecycle.
			cond, _ := podreadiness.Desired(p, podreadiness.Hold(podreadiness.Holder{
				UserAgent: podreadiness.UserAgentLifecycle, Key: string(pub.LifecycleStatePreparingUpdate)}), testNow)
			p.Status.Conditions[len(p.Status.Conditions)-1] = cond
		}
	}
	f = r.fixture(t)
	f.sync(t)
	if u := inPlaceUpdates(f); len(u) != 0 {
		t.Fatalf("in-place requests %v while the hook still holds", u)
	}
	if p := podPatches(t, f, ""); len(p) != 0 {
		t.Fatalf("patched pods %v while one waits in PreparingUpdate", p)
	}

	// Released: updated in place, Updating set by the request itself.
	delete(heldPod.Labels, hookLabel)
	f = r.fixture(t)
	f.sync(t)
	u := inPlaceUpdates(f)
	if len(u) != 1 || u[held] == nil {
		t.Fatalf("in-place requests %v, want one for %s", u, held)
	}
	if got := u[held].Spec.Metadata.Labels[pub.LifecycleStateKey]; got != string(pub.LifecycleStateUpdating) {
		t.Errorf("request sets state %q, want Updating", got)
	}
}

// The preDelete hook keeps a Pod asked to be deleted in PreparingDelete; as in OpenKruise it still
// counts towards spec.replicas there (no replacement yet); once released it is deleted, and then
// replaced.
func TestPreDeleteHook(t *testing.T) {
	cs := newCloneSet(2)
	rev := updateRevisionName(t, cs)
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: holdHook(false)}
	cs.Spec.ScaleStrategy.PodsToDelete = []string{"web-a"}
	a := ownedPod(cs, "web-a", rev, ready(testNow), withLabel(hookLabel, "true"), withLabel(pub.LifecycleStateKey, "Normal"))
	b := ownedPod(cs, "web-b", rev, ready(testNow), withLabel(pub.LifecycleStateKey, "Normal"))
	f := newFixture(t, cs, a, b)
	f.sync(t)
	if d := deletedPods(f); len(d) != 0 {
		t.Fatalf("deleted %v while the preDelete hook holds", d)
	}
	if got := patchedState(podPatches(t, f, "")["web-a"]); got != string(pub.LifecycleStatePreparingDelete) {
		t.Errorf("web-a state %q, want PreparingDelete", got)
	}
	if n := len(createdPods(f)); n != 0 {
		t.Errorf("created %d pods, want none while web-a waits", n)
	}

	// Still held in PreparingDelete: nothing changes.
	a.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingDelete)
	f = newFixture(t, cs, a, b)
	f.sync(t)
	if d, n := deletedPods(f), len(createdPods(f)); len(d) != 0 || n != 0 {
		t.Errorf("deleted %v and created %d pods while the hook holds web-a, want nothing", d, n)
	}

	// Released (the hook label is gone): deleted, not yet replaced.
	delete(a.Labels, hookLabel)
	f = newFixture(t, cs, a, b)
	f.sync(t)
	if d := deletedPods(f); !slices.Equal(d, []string{"web-a"}) {
		t.Errorf("deleted %v, want [web-a]", d)
	}
	if n := len(createdPods(f)); n != 0 {
		t.Errorf("created %d pods in the sync that deleted web-a, want none", n)
	}

	// Gone: replaced.
	f = newFixture(t, cs, b)
	f.sync(t)
	if n := len(createdPods(f)); n != 1 {
		t.Errorf("created %d pods after web-a went, want 1", n)
	}
}

// A Pod with the KruisePodReady gate and no condition gets it True (else it never becomes Ready).
func TestKruisePodReadyInitialised(t *testing.T) {
	cs := newCloneSet(1)
	rev := updateRevisionName(t, cs)
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: holdHook(true)}
	p := ownedPod(cs, "web-a", rev, running(), withLabel(pub.LifecycleStateKey, "Normal"))
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}
	f := newFixture(t, cs, p)
	f.sync(t)
	if got := patchedKruisePodReady(podPatches(t, f, "status")["web-a"]); got != "True" {
		t.Errorf("KruisePodReady set to %q, want True", got)
	}
}

func TestTrimPodsToDelete(t *testing.T) {
	cs := newCloneSet(1)
	rev := updateRevisionName(t, cs)
	cs.ResourceVersion = "42"
	cs.Spec.ScaleStrategy.PodsToDelete = []string{"gone", "web-a"}
	a := ownedPod(cs, "web-a", rev, ready(testNow))
	a.DeletionTimestamp = ptr.To(a.CreationTimestamp)
	b := ownedPod(cs, "web-b", rev, ready(testNow))
	f := newFixture(t, cs, a, b)
	f.sync(t)
	var patch string
	for _, act := range f.Inplace.Actions() {
		if act.GetVerb() == "patch" && act.GetResource().Resource == "clonesets" {
			patch = string(act.(k8stesting.PatchAction).GetPatch())
		}
	}
	want := `{"metadata":{"resourceVersion":"42"},"spec":{"scaleStrategy":{"podsToDelete":["web-a"]}}}`
	if patch != want {
		t.Errorf("patch %s, want %s", patch, want)
	}
}

// A Pod recreated for an update that the preDelete hook holds waits in PreparingDelete, labelled
// specified-delete (as OpenKruise marks the Pods it recreates), so that scaling never takes it
// back to PreparingNormal as a cancelled scale-in (and updates it again, and so on).
func TestRecreateHeldByPreDeleteHookStaysLeaving(t *testing.T) {
	r := newRollout(t, 1, v1alpha1.RecreateCloneSetUpdateStrategyType, newImage)
	r.cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: holdHook(false)}
	pod := r.pods[0]
	pod.Labels[hookLabel] = "true"
	pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateNormal)
	f := r.fixture(t)
	f.sync(t)
	patches := podPatches(t, f, "")[pod.Name]
	if got := patchedState(patches); got != string(pub.LifecycleStatePreparingDelete) {
		t.Fatalf("state %q, want PreparingDelete", got)
	}
	labelled := false
	for _, p := range patches {
		md, _ := p["metadata"].(map[string]any)
		lbls, _ := md["labels"].(map[string]any)
		labelled = labelled || lbls[v1alpha1.SpecifiedDeleteKey] == "true"
	}
	if !labelled {
		t.Errorf("patches %v: want the label %s", patches, v1alpha1.SpecifiedDeleteKey)
	}
	if d := deletedPods(f); len(d) != 0 {
		t.Errorf("deleted %v while the hook holds", d)
	}

	// Next sync, the Pod waiting: it stays PreparingDelete, nothing is created.
	pod.Labels[v1alpha1.SpecifiedDeleteKey] = "true"
	pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingDelete)
	f = r.fixture(t)
	f.sync(t)
	if got := patchedState(podPatches(t, f, "")[pod.Name]); got != "" {
		t.Errorf("state patched to %q while the Pod waits in PreparingDelete", got)
	}
	if n := len(createdPods(f)); n != 0 {
		t.Errorf("created %d pods while the Pod waits, want 0", n)
	}
}
