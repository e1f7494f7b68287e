package cloneset

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
)

// rollout is a CloneSet whose template moved from an old revision (image nginx:1) to a new one
// (changed by change), with both ControllerRevisions and n ready Pods at the old one.
type rollout struct {
	cs       *v1alpha1.CloneSet
	old, new *appsv1.ControllerRevision
	pods     []*corev1.Pod
}

func newRollout(t *testing.T, n int, strategy v1alpha1.CloneSetUpdateStrategyType, change func(*corev1.PodTemplateSpec)) *rollout {
	t.Helper()
	oldCS := newCloneSet(int32(n))
	old, err := newRevision(oldCS, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	cs := oldCS.DeepCopy()
	change(&cs.Spec.Template)
	cs.Spec.UpdateStrategy.Type = strategy
	cs.Status.CurrentRevision = old.Name
	cs.Status.CollisionCount = ptr.To[int32](0)
	updated, err := newRevision(cs, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	old.UID, updated.UID = "old-uid", "new-uid"
	r := &rollout{cs: cs, old: old, new: updated}
	for i := range n {
		p := ownedPod(cs, fmt.Sprintf("web-%d", i), old.Name, ready(testNow.Add(-time.Hour)),
			withLabel(podTemplateHashLabel, old.Name), created(testNow.Add(-time.Duration(i+1)*time.Hour)))
		p.Spec.Containers = slices.Clone(oldCS.Spec.Template.Spec.Containers)
		r.pods = append(r.pods, p)
	}
	return r
}

func newImage(tmpl *corev1.PodTemplateSpec) { tmpl.Spec.Containers[0].Image = "nginx:2" }

func newEnv(tmpl *corev1.PodTemplateSpec) {
	tmpl.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
}

// fixture builds the controller with the rollout's objects; pods replaces the rollout's Pods when
// given. pods/inplaceupdate answers with the request.
func (r *rollout) fixture(t *testing.T, pods ...*corev1.Pod) *fixture {
	t.Helper()
	if pods == nil {
		pods = r.pods
	}
	objs := []runtime.Object{r.old}
	if r.new.Name != r.old.Name {
		objs = append(objs, r.new)
	}
	for _, p := range pods {
		objs = append(objs, p)
	}
	f := newFixture(t, r.cs, objs...)
	f.Inplace.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "inplaceupdate" {
			return false, nil, nil
		}
		return true, a.(k8stesting.CreateAction).GetObject(), nil
	})
	return f
}

// inPlaceUpdates are the pods/inplaceupdate requests sent, by Pod name.
func inPlaceUpdates(f *fixture) map[string]*v1alpha1.InPlaceUpdate {
	out := map[string]*v1alpha1.InPlaceUpdate{}
	for _, a := range f.Inplace.Actions() {
		if a.GetVerb() == "create" && a.GetSubresource() == "inplaceupdate" {
			ca := a.(k8stesting.CreateActionImpl)
			out[ca.Name] = ca.GetObject().(*v1alpha1.InPlaceUpdate)
		}
	}
	return out
}

// events drains the Events recorded so far, one a line.
func events(f *fixture) string {
	return controllertest.Events(f.c.Recorder.(*record.FakeRecorder))
}

func condition(st v1alpha1.CloneSetStatus, t v1alpha1.CloneSetConditionType) *v1alpha1.CloneSetCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestUpdatePartition(t *testing.T) {
	for _, tc := range []struct {
		partition intstr.IntOrString
		replicas  int
		want      int
	}{
		{intstr.FromInt32(2), 4, 2},
		{intstr.FromInt32(0), 4, 4},
		{intstr.FromInt32(5), 4, 0},
		{intstr.FromString("50%"), 4, 2},
		{intstr.FromString("50%"), 3, 1}, // 1.5 rounds up: 2 stay old
		{intstr.FromString("100%"), 3, 0},
		// Below 100% keeps one Pod updated, as in OpenKruise, though it rounds up to all.
		{intstr.FromString("99%"), 4, 1},
		{intstr.FromString("99%"), 1, 0},
	} {
		t.Run(fmt.Sprintf("%s of %d", tc.partition.String(), tc.replicas), func(t *testing.T) {
			r := newRollout(t, tc.replicas, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, newImage)
			r.cs.Spec.UpdateStrategy.Partition = &tc.partition
			r.cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
			f := r.fixture(t)
			f.sync(t)
			if got := len(inPlaceUpdates(f)); got != tc.want {
				t.Errorf("updated %d pods, want %d", got, tc.want)
			}
			if d := deletedPods(f); len(d) != 0 {
				t.Errorf("deleted %v", d)
			}
		})
	}
}

func TestUpdatePartitionCountsUpdatedPods(t *testing.T) {
	r := newRollout(t, 4, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, newImage)
	r.cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2))
	r.cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(4))
	// Two Pods already at the new revision: partition 2 is reached.
	r.pods[0].Labels[appsv1.ControllerRevisionHashLabelKey] = r.new.Name
	r.pods[1].Labels[appsv1.ControllerRevisionHashLabelKey] = r.new.Name
	f := r.fixture(t)
	f.sync(t)
	if got := inPlaceUpdates(f); len(got) != 0 {
		t.Errorf("updated %v, want none: partition reached", got)
	}
}

func TestUpdateMaxUnavailable(t *testing.T) {
	inProgress := func(rev string) podOpt {
		return func(p *corev1.Pod) {
			p.Annotations = map[string]string{pub.InPlaceUpdateStateKey: fmt.Sprintf(`{"revision":%q,"updateTimestamp":"2026-01-02T03:00:00Z"}`, rev)}
		}
	}
	for _, tc := range []struct {
		name string
		max  *intstr.IntOrString
		// prepare changes the 5 Pods.
		prepare func(r *rollout)
		want    int
	}{
		{"default 20% of 5", nil, func(*rollout) {}, 1},
		{"2", ptr.To(intstr.FromInt32(2)), func(*rollout) {}, 2},
		{"30% of 5 rounds up", ptr.To(intstr.FromString("30%")), func(*rollout) {}, 2},
		{"a not-ready pod goes first and uses the budget", ptr.To(intstr.FromInt32(2)), func(r *rollout) {
			r.pods[4].Status.Conditions[0].Status = corev1.ConditionFalse
		}, 2},
		{"a not-ready updated pod uses the budget", ptr.To(intstr.FromInt32(2)), func(r *rollout) {
			r.pods[4].Labels[appsv1.ControllerRevisionHashLabelKey] = r.new.Name
			r.pods[4].Status.Conditions[0].Status = corev1.ConditionFalse
		}, 1},
		{"a pod being updated uses the budget", ptr.To(intstr.FromInt32(2)), func(r *rollout) {
			r.pods[4].Labels[appsv1.ControllerRevisionHashLabelKey] = r.new.Name
			inProgress(r.new.Name)(r.pods[4])
		}, 1},
		{"a pod being updated to an older revision waits and uses the budget", ptr.To(intstr.FromInt32(2)), func(r *rollout) {
			inProgress(r.old.Name)(r.pods[4])
		}, 1},
		{"no budget left", ptr.To(intstr.FromInt32(1)), func(r *rollout) {
			r.pods[4].Status.Conditions[0].Status = corev1.ConditionFalse
			r.pods[4].Labels[appsv1.ControllerRevisionHashLabelKey] = r.new.Name
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRollout(t, 5, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, newImage)
			r.cs.Spec.UpdateStrategy.MaxUnavailable = tc.max
			tc.prepare(r)
			f := r.fixture(t)
			f.sync(t)
			got := inPlaceUpdates(f)
			if len(got) != tc.want {
				t.Fatalf("updated %d pods (%v), want %d", len(got), got, tc.want)
			}
			if strings.Contains(tc.name, "not-ready pod goes first") {
				if _, ok := got["web-4"]; !ok {
					t.Errorf("the not-ready pod web-4 was not updated first: %v", got)
				}
			}
			// The cache does not show the updates yet: a second sync must not start more.
			f.Inplace.ClearActions()
			f.sync(t)
			if again := inPlaceUpdates(f); len(again) != 0 {
				t.Errorf("second sync before the cache shows the updates sent %d more", len(again))
			}
		})
	}
}

func TestUpdatePaused(t *testing.T) {
	for _, strategy := range []v1alpha1.CloneSetUpdateStrategyType{v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, v1alpha1.RecreateCloneSetUpdateStrategyType} {
		t.Run(string(strategy), func(t *testing.T) {
			r := newRollout(t, 3, strategy, newEnv)
			r.cs.Spec.UpdateStrategy.Paused = true
			r.cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
			// No surge Pods for a paused update either (OpenKruise's maxSurge is 0 then).
			r.cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(2))
			f := r.fixture(t)
			f.sync(t)
			if got := inPlaceUpdates(f); len(got) != 0 {
				t.Errorf("in-place updates %v while paused", got)
			}
			if d := deletedPods(f); len(d) != 0 {
				t.Errorf("deleted %v while paused", d)
			}
			for _, a := range f.Kube.Actions() {
				if a.GetResource().Resource == "pods" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
					t.Errorf("pod action %s %s while paused", a.GetVerb(), a.GetSubresource())
				}
			}
		})
	}
}

func TestUpdateInPlaceImage(t *testing.T) {
	r := newRollout(t, 1, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, func(tmpl *corev1.PodTemplateSpec) {
		newImage(tmpl)
		tmpl.Labels["tier"] = "front"
	})
	r.cs.Spec.UpdateStrategy.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 7}
	f := r.fixture(t)
	f.sync(t)
	if d := deletedPods(f); len(d) != 0 {
		t.Fatalf("deleted %v, want an in-place update", d)
	}
	got := inPlaceUpdates(f)["web-0"]
	if got == nil {
		t.Fatalf("no inplaceupdate request for web-0")
	}
	want := v1alpha1.InPlaceUpdateSpec{
		Revision:   r.new.Name,
		Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: "nginx:2"}},
		Metadata: &v1alpha1.InPlaceUpdateMetadata{Labels: map[string]string{
			"tier": "front", podTemplateHashLabel: r.new.Name, pub.LifecycleStateKey: "Updating"},
			Annotations: map[string]string{pub.LifecycleTimestampKey: testNow.UTC().Format(time.RFC3339)}},
		GracePeriodSeconds: 7,
		// No inPlaceUpdate hook: the update's completion moves the Pod to Normal.
		CompletionLabels: map[string]string{pub.LifecycleStateKey: "Normal"},
	}
	if !apiequality.Semantic.DeepEqual(got.Spec, want) {
		t.Errorf("request\n got %+v\nwant %+v", got.Spec, want)
	}
	ev := events(f)
	if !strings.Contains(ev, "SuccessfulUpdatePodInPlace") {
		t.Errorf("events %q: want SuccessfulUpdatePodInPlace", ev)
	}
}

// The CloneSet's stay-in-service annotation, listing the only container the update changes, makes
// the request stay in service, without the grace period.
func TestUpdateInPlaceStaysInService(t *testing.T) {
	r := newRollout(t, 1, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, newImage)
	r.cs.Spec.UpdateStrategy.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 7}
	r.cs.Annotations = map[string]string{pub.StayInServiceContainersKey: "main"}
	f := r.fixture(t)
	f.sync(t)
	got := inPlaceUpdates(f)["web-0"]
	if got == nil {
		t.Fatalf("no inplaceupdate request for web-0")
	}
	if !got.Spec.StayInService || got.Spec.GracePeriodSeconds != 0 {
		t.Errorf("request stayInService %v, gracePeriodSeconds %d; want true, 0", got.Spec.StayInService, got.Spec.GracePeriodSeconds)
	}
}

func TestUpdateInPlaceIfPossibleRecreates(t *testing.T) {
	r := newRollout(t, 1, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, newEnv)
	f := r.fixture(t)
	f.sync(t)
	if got := inPlaceUpdates(f); len(got) != 0 {
		t.Errorf("in-place updates %v for an env change", got)
	}
	if d := deletedPods(f); !slices.Equal(d, []string{"web-0"}) {
		t.Errorf("deleted %v, want [web-0]", d)
	}
	ev := events(f)
	if !strings.Contains(ev, "recreating: spec.containers[0].env") {
		t.Errorf("events %q: want the recreate reason", ev)
	}
}

func TestUpdateInPlaceOnlyRefuses(t *testing.T) {
	r := newRollout(t, 2, v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType, newEnv)
	r.cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	f := r.fixture(t)
	f.sync(t)
	if d := deletedPods(f); len(d) != 0 {
		t.Errorf("deleted %v under InPlaceOnly", d)
	}
	if got := inPlaceUpdates(f); len(got) != 0 {
		t.Errorf("in-place updates %v for an env change", got)
	}
	st := lastStatus(t, f)
	c := condition(st, v1alpha1.CloneSetConditionFailedUpdate)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != reasonCannotUpdateInPlace || !strings.Contains(c.Message, "spec.containers[0].env") {
		t.Fatalf("FailedUpdate %+v: want True with the env reason", c)
	}
	ev := events(f)
	if !strings.Contains(ev, "FailedUpdatePodInPlaceOnly") {
		t.Errorf("events %q: want FailedUpdatePodInPlaceOnly", ev)
	}

	// Once no Pod needs a refused change (here: the template went back), the condition clears.
	back := newRollout(t, 2, v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType, func(*corev1.PodTemplateSpec) {})
	back.cs.Status = st
	back.cs.Status.CurrentRevision = back.old.Name
	f = back.fixture(t)
	f.sync(t)
	if c := condition(lastStatus(t, f), v1alpha1.CloneSetConditionFailedUpdate); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("FailedUpdate %+v: want False", c)
	}
}

func TestUpdateRecreateStrategy(t *testing.T) {
	r := newRollout(t, 2, v1alpha1.RecreateCloneSetUpdateStrategyType, newImage)
	r.cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	f := r.fixture(t)
	f.sync(t)
	if got := inPlaceUpdates(f); len(got) != 0 {
		t.Errorf("in-place updates %v under ReCreate", got)
	}
	d := deletedPods(f)
	if len(d) != 1 {
		t.Fatalf("deleted %v, want 1 pod (maxUnavailable 1)", d)
	}
	// The newest Pod goes first (web-0 is the newest).
	if d[0] != "web-0" {
		t.Errorf("deleted %v, want web-0 (newest first)", d)
	}
}

// TestUpdateOnDelete: under OnDelete a template change updates no Pod, in place or by
// deletion, whatever maxUnavailable allows; the status still moves to the new revision.
func TestUpdateOnDelete(t *testing.T) {
	r := newRollout(t, 3, v1alpha1.OnDeleteCloneSetUpdateStrategyType, newImage)
	r.cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(3))
	f := r.fixture(t)
	f.sync(t)
	if got := inPlaceUpdates(f); len(got) != 0 {
		t.Errorf("in-place updates %v under OnDelete", got)
	}
	if d := deletedPods(f); len(d) != 0 {
		t.Errorf("deleted %v under OnDelete", d)
	}
	if st := lastStatus(t, f); st.UpdateRevision != r.new.Name || st.UpdatedReplicas != 0 || st.Replicas != 3 {
		t.Errorf("status %+v, want updateRevision %s, 0 of 3 updated", st, r.new.Name)
	}
}

// TestScaleOnDeleteCreatesAtUpdateRevision: under OnDelete the Pod that replaces a deleted one
// comes at the update revision.
func TestScaleOnDeleteCreatesAtUpdateRevision(t *testing.T) {
	r := newRollout(t, 3, v1alpha1.OnDeleteCloneSetUpdateStrategyType, newImage)
	f := r.fixture(t, r.pods[1:]...)
	f.sync(t)
	created := createdPods(f)
	if len(created) != 1 {
		t.Fatalf("created %d Pods, want 1", len(created))
	}
	if rev := created[0].Labels[appsv1.ControllerRevisionHashLabelKey]; rev != r.new.Name || created[0].Spec.Containers[0].Image != "nginx:2" {
		t.Errorf("created Pod at revision %q image %q, want %s nginx:2", rev, created[0].Spec.Containers[0].Image, r.new.Name)
	}
	if d := deletedPods(f); len(d) != 0 {
		t.Errorf("deleted %v under OnDelete", d)
	}
}

func TestUpdateOrder(t *testing.T) {
	mk := func(name string, readyPod bool, lbls map[string]string, age time.Duration) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls, CreationTimestamp: metav1.NewTime(testNow.Add(-age))}}
		p.Spec.NodeName = "node"
		p.Status.Phase = corev1.PodRunning
		st := corev1.ConditionFalse
		if readyPod {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.NewTime(testNow.Add(-time.Hour))}}
		return p
	}
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	pods := []*corev1.Pod{
		mk("old", true, map[string]string{"zone": "a", "idx": "web-3"}, 3*time.Hour),
		mk("young", true, map[string]string{"zone": "b", "idx": "web-10"}, time.Hour),
		mk("mid", true, map[string]string{"zone": "a"}, 2*time.Hour),
		mk("unready", false, map[string]string{"zone": "b", "idx": "web-1"}, 4*time.Hour),
	}
	sortForUpdate(pods, &v1alpha1.CloneSetUpdateStrategy{})
	if got, want := names(pods), []string{"unready", "young", "mid", "old"}; !slices.Equal(got, want) {
		t.Errorf("default order %v, want %v", got, want)
	}
	weight := &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{
		{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}}}}
	sortForUpdate(pods, &v1alpha1.CloneSetUpdateStrategy{PriorityStrategy: weight})
	if got, want := names(pods), []string{"unready", "mid", "old", "young"}; !slices.Equal(got, want) {
		t.Errorf("weight order %v, want %v", got, want)
	}
	order := &pub.UpdatePriorityStrategy{OrderPriority: []pub.UpdatePriorityOrderTerm{{OrderedKey: "idx"}}}
	sortForUpdate(pods, &v1alpha1.CloneSetUpdateStrategy{PriorityStrategy: order})
	if got, want := names(pods), []string{"unready", "young", "old", "mid"}; !slices.Equal(got, want) {
		t.Errorf("orderedKey order %v, want %v", got, want)
	}
}

func TestStatusInPlaceUpdate(t *testing.T) {
	r := newRollout(t, 2, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, newImage)
	r.cs.Spec.UpdateStrategy.Paused = true
	for _, p := range r.pods {
		p.Labels[appsv1.ControllerRevisionHashLabelKey] = r.new.Name
	}
	// web-1 is still being updated (InPlaceUpdateReady False): it counts as updated, as in
	// OpenKruise (by its revision label), not as ready; every Pod carries the update revision, so
	// it is the current one.
	r.pods[1].Annotations = map[string]string{pub.InPlaceUpdateStateKey: fmt.Sprintf(`{"revision":%q,"updateTimestamp":"2026-01-02T03:00:00Z"}`, r.new.Name)}
	r.pods[1].Status.Conditions = append(r.pods[1].Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	f := r.fixture(t)
	f.sync(t)
	st := lastStatus(t, f)
	if st.UpdatedReplicas != 2 || st.UpdatedReadyReplicas != 1 || st.ReadyReplicas != 1 || st.CurrentRevision != r.new.Name || st.UpdateRevision != r.new.Name {
		t.Errorf("status %+v: want 2 updated, 1 ready, current revision %s", st, r.new.Name)
	}
	r.pods[1].Status.Conditions = r.pods[1].Status.Conditions[:len(r.pods[1].Status.Conditions)-1]
	// Completed: every Pod updated and ready, the update revision becomes the current one.
	r.pods[1].Annotations[pub.InPlaceUpdateStateKey] = fmt.Sprintf(`{"revision":%q,"updateTimestamp":"2026-01-02T03:00:00Z","completedTimestamp":"2026-01-02T03:01:00Z"}`, r.new.Name)
	f = r.fixture(t)
	f.sync(t)
	st = lastStatus(t, f)
	if st.UpdatedReplicas != 2 || st.UpdatedReadyReplicas != 2 || st.CurrentRevision != r.new.Name {
		t.Errorf("status %+v: want 2 updated and current revision %s", st, r.new.Name)
	}
}

// Labels and annotations the new template drops are removed from Pods updated in place.
func TestUpdateInPlaceRemovesDroppedMetadata(t *testing.T) {
	r := newRollout(t, 1, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, func(tmpl *corev1.PodTemplateSpec) {
		newImage(tmpl)
		delete(tmpl.Annotations, "a")
	})
	f := r.fixture(t)
	f.sync(t)
	got := inPlaceUpdates(f)["web-0"]
	if got == nil || got.Spec.Metadata == nil {
		t.Fatalf("request %+v: want metadata changes", got)
	}
	if !slices.Equal(got.Spec.Metadata.RemoveAnnotations, []string{"a"}) || len(got.Spec.Metadata.RemoveLabels) != 0 {
		t.Errorf("removeAnnotations %v, removeLabels %v; want [a] and none", got.Spec.Metadata.RemoveAnnotations, got.Spec.Metadata.RemoveLabels)
	}
}

// A Pod whose in-place update of an older revision never finished (say an infeasible resize) is
// updated to the new revision, as in OpenKruise; one waiting out its grace period is not.
func TestUpdateSupersedesStuckInPlaceUpdate(t *testing.T) {
	r := newRollout(t, 2, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, newImage)
	r.cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	stuck, grace := r.pods[0], r.pods[1]
	stuck.Annotations = map[string]string{pub.InPlaceUpdateStateKey: fmt.Sprintf(`{"revision":%q,"updateTimestamp":"2026-01-02T03:00:00Z"}`, r.old.Name)}
	stuck.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateUpdating)
	stuck.Status.Conditions = append(stuck.Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	grace.Annotations = map[string]string{pub.InPlaceUpdateGraceKey: fmt.Sprintf(`{"revision":%q,"containerImages":{"main":"nginx:1"},"graceSeconds":600}`, r.old.Name)}
	f := r.fixture(t)
	f.sync(t)
	u := inPlaceUpdates(f)
	if len(u) != 1 || u[stuck.Name] == nil {
		t.Fatalf("in-place requests %v, want one for %s (stuck), none for %s (in its grace period)", slices.Sorted(maps.Keys(u)), stuck.Name, grace.Name)
	}
	if got := u[stuck.Name].Spec.Revision; got != r.new.Name {
		t.Errorf("request for revision %q, want %q", got, r.new.Name)
	}
}

// RecreatePodWhenChangeVCTInCloneSetGate (OpenKruise "Update with VolumeClaimTemplate changes"):
// an image change that could go in place recreates the Pod when its revision had other
// volumeClaimTemplates, under InPlaceIfPossible and with the gate only; InPlaceOnly updates in
// place, and a revision without the hash (made before it was written) never forces a recreation.
func TestUpdateVolumeClaimTemplatesChanged(t *testing.T) {
	for _, tc := range []struct {
		name     string
		gate     bool
		strategy v1alpha1.CloneSetUpdateStrategyType
		oldHash  *string
		recreate bool
	}{
		{name: "gate off", strategy: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, oldHash: ptr.To("1")},
		{name: "gate on", gate: true, strategy: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, oldHash: ptr.To("1"), recreate: true},
		{name: "gate on, same templates", gate: true, strategy: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
		{name: "gate on, InPlaceOnly", gate: true, strategy: v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType, oldHash: ptr.To("1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.RecreatePodWhenChangeVCTInCloneSetGate, tc.gate)
			r := newRollout(t, 1, tc.strategy, newImage)
			if r.new.Annotations[vctHashAnnotation] != vctHash(nil) {
				t.Fatalf("revision annotations %v: want the templates' hash", r.new.Annotations)
			}
			if tc.oldHash != nil {
				r.old.Annotations[vctHashAnnotation] = *tc.oldHash
			}
			f := r.fixture(t)
			f.sync(t)
			deleted, updated := deletedPods(f), inPlaceUpdates(f)
			if tc.recreate {
				if !slices.Equal(deleted, []string{"web-0"}) || len(updated) != 0 {
					t.Errorf("deleted %v, updated in place %v: want web-0 recreated", deleted, updated)
				}
				if ev := events(f); !strings.Contains(ev, "volumeClaimTemplates changed") {
					t.Errorf("events %q: want the reason", ev)
				}
				return
			}
			if len(deleted) != 0 || updated["web-0"] == nil {
				t.Errorf("deleted %v, updated in place %v: want web-0 updated in place", deleted, updated)
			}
		})
	}
}

// A change of volumeClaimTemplates alone makes no new revision (its name is the template's hash);
// the revision carries the templates' hash, "" for none (as OpenKruise).
func TestRevisionVolumeClaimTemplatesHash(t *testing.T) {
	cs := newCloneSet(1)
	a, _ := newRevision(cs, 1, 0)
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	b, _ := newRevision(cs, 2, 0)
	if a.Name != b.Name {
		t.Errorf("revision %s, then %s after a templates change: want the same name", a.Name, b.Name)
	}
	if a.Annotations[vctHashAnnotation] != "" || b.Annotations[vctHashAnnotation] == "" {
		t.Errorf("hashes %q and %q: want none, then one", a.Annotations[vctHashAnnotation], b.Annotations[vctHashAnnotation])
	}
	cs.Spec.VolumeClaimTemplates[0].Name = "logs"
	if c, _ := newRevision(cs, 3, 0); c.Annotations[vctHashAnnotation] == b.Annotations[vctHashAnnotation] {
		t.Errorf("same hash %q for other templates", c.Annotations[vctHashAnnotation])
	}
}

// A PodUnavailableBudget that refuses a Pod's update (429) holds the rollout back: the other Pods
// of the step still go, the sync returns no error and looks again after BudgetRetry, the
// FailedUpdate condition and a Normal Event name the budget.
func TestUpdateWaitsForBudget(t *testing.T) {
	r := newRollout(t, 2, v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, newImage)
	r.cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	f := r.fixture(t)
	refused := r.pods[1].Name
	f.Inplace.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "inplaceupdate" || a.(k8stesting.CreateActionImpl).Name != refused {
			return false, nil, nil
		}
		return true, nil, apierrors.NewTooManyRequests("Cannot update pod "+refused+" now: PodUnavailableBudget pub allows no more unavailable Pods", 1)
	})
	if requeue := f.sync(t); requeue <= 0 || requeue > inplacerequest.BudgetRetry {
		t.Errorf("requeue after %v, want at most %v", requeue, inplacerequest.BudgetRetry)
	}
	if got := len(inPlaceUpdates(f)); got != 2 {
		t.Errorf("%d in-place update requests, want both Pods asked", got)
	}
	c := condition(lastStatus(t, f), v1alpha1.CloneSetConditionFailedUpdate)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != inplacerequest.ReasonBlockedByBudget || !strings.Contains(c.Message, "PodUnavailableBudget pub") {
		t.Errorf("FailedUpdate %+v: want True with reason %s naming the budget", c, inplacerequest.ReasonBlockedByBudget)
	}
	if ev := events(f); !strings.Contains(ev, "Normal "+inplacerequest.ReasonBlockedByBudget) || strings.Contains(ev, "Warning") {
		t.Errorf("events %q: want a Normal %s and no warning", ev, inplacerequest.ReasonBlockedByBudget)
	}
}

// A recreate update deletes its Pods, and the budget webhook refuses a deletion beyond the budget
// (429): the CloneSet waits as for a refused in-place update — the other Pod of the step still
// goes, no error, a look again after BudgetRetry, FailedUpdate and a Normal Event naming the
// budget, no FailedDelete warning.
func TestRecreateWaitsForBudget(t *testing.T) {
	r := newRollout(t, 2, v1alpha1.RecreateCloneSetUpdateStrategyType, newImage)
	r.cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	f := r.fixture(t)
	refused := r.pods[1].Name
	f.Kube.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.DeleteAction).GetName() != refused {
			return false, nil, nil
		}
		return true, nil, apierrors.NewTooManyRequests(`admission webhook "delete.podunavailablebudget.policy.kruise.io" denied the request: `+
			"Cannot delete pod "+refused+" now: PodUnavailableBudget pub allows no more unavailable Pods", 0)
	})
	if requeue := f.sync(t); requeue <= 0 || requeue > inplacerequest.BudgetRetry {
		t.Errorf("requeue after %v, want at most %v", requeue, inplacerequest.BudgetRetry)
	}
	if got := deletedPods(f); len(got) != 2 {
		t.Errorf("deletions %v, want both Pods asked", got)
	}
	c := condition(lastStatus(t, f), v1alpha1.CloneSetConditionFailedUpdate)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != inplacerequest.ReasonBlockedByBudget ||
		!strings.Contains(c.Message, "pod "+refused+": ") || !strings.Contains(c.Message, "PodUnavailableBudget pub") {
		t.Errorf("FailedUpdate %+v: want True with reason %s naming the Pod and the budget", c, inplacerequest.ReasonBlockedByBudget)
	}
	ev := events(f)
	if !strings.Contains(ev, "Normal "+inplacerequest.ReasonBlockedByBudget+" waiting to delete pod "+refused) || strings.Contains(ev, "Warning") {
		t.Errorf("events %q: want a Normal %s about deleting %s and no warning", ev, inplacerequest.ReasonBlockedByBudget, refused)
	}
}
