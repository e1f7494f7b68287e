package daemonset

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func testDaemonSet(mutate ...func(*v1alpha1.DaemonSet)) *v1alpha1.DaemonSet {
	labels := map[string]string{"app": "agent"}
	ds := &v1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "ds-uid"},
		Spec: v1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "agent:v1"}}},
			},
			UpdateStrategy: v1alpha1.DaemonSetUpdateStrategy{Type: v1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &v1alpha1.RollingUpdateDaemonSet{Type: v1alpha1.StandardRollingUpdateType,
					MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0))}},
		},
	}
	for _, m := range mutate {
		m(ds)
	}
	return ds
}

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func daemonPod(ds *v1alpha1.DaemonSet, nodeName, revision string, ready bool) *corev1.Pod {
	p := newPod(ds, &ds.Spec.Template, revision, nodeName)
	p.Name = ds.Name + "-" + nodeName + "-" + revision
	p.Spec.NodeName = nodeName
	p.Status = controllertest.RunningStatus(ready, now.Add(-time.Hour))
	return p
}

func TestShouldRun(t *testing.T) {
	ds := testDaemonSet(func(d *v1alpha1.DaemonSet) { d.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge"} })
	cases := []struct {
		node *corev1.Node
		want bool
	}{
		{node("a", map[string]string{"role": "edge"}), true},
		{node("b", map[string]string{"role": "core"}), false},
		{node("c", map[string]string{"role": "edge"}, corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}), false},
		{node("d", map[string]string{"role": "edge"}, corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectPreferNoSchedule}), true},
		// Cordoned and not-ready nodes keep their node agents, as with kube's DaemonSet.
		{node("e", map[string]string{"role": "edge"}, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}), true},
	}
	for _, tc := range cases {
		if got := placementOf(ds).shouldRun(tc.node); got != tc.want {
			t.Errorf("node %s (labels %v, taints %v): shouldRun %v, want %v", tc.node.Name, tc.node.Labels, tc.node.Spec.Taints, got, tc.want)
		}
	}
	ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	if !placementOf(ds).shouldRun(cases[2].node) {
		t.Errorf("a tolerated taint still keeps the Pod off node c")
	}
}

func TestNewPodAndNodeOf(t *testing.T) {
	ds := testDaemonSet()
	p := newPod(ds, &ds.Spec.Template, "agent-rev", "node-1")
	if got := nodeOf(p); got != "node-1" {
		t.Errorf("nodeOf an unscheduled daemon Pod: %q", got)
	}
	if p.Labels[appsv1.ControllerRevisionHashLabelKey] != "agent-rev" || p.GenerateName != "agent-" || metav1.GetControllerOf(p).UID != ds.UID {
		t.Errorf("pod: %+v", p.ObjectMeta)
	}
	if !slices.ContainsFunc(p.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool { return g.ConditionType == pub.InPlaceUpdateReady }) {
		t.Errorf("no InPlaceUpdateReady gate")
	}
}

func names(states []*nodeState) []string {
	var out []string
	for _, s := range states {
		out = append(out, s.name)
	}
	return out
}

func TestPlanUpdate(t *testing.T) {
	nodes := []*corev1.Node{node("n1", map[string]string{"canary": "true"}), node("n2", nil), node("n3", map[string]string{"canary": "true"}), node("n4", nil)}
	states := func(ds *v1alpha1.DaemonSet, ready ...bool) []*nodeState {
		var pods []*corev1.Pod
		for i, n := range nodes {
			pods = append(pods, daemonPod(ds, n.Name, "old", ready[i]))
		}
		return nodeStates(ds, nodes, pods)
	}
	t.Run("maxUnavailable 1: one node at a time", func(t *testing.T) {
		ds := testDaemonSet()
		if got := planUpdate(ds, states(ds, true, true, true, true), "new", now); !slices.Equal(names(got.replace), []string{"n1"}) {
			t.Errorf("replace %v, want n1", names(got.replace))
		}
	})
	t.Run("an unavailable old Pod goes without budget", func(t *testing.T) {
		ds := testDaemonSet()
		if got := planUpdate(ds, states(ds, true, true, false, true), "new", now); !slices.Equal(names(got.replace), []string{"n3"}) {
			t.Errorf("replace %v, want n3 only (budget taken by it)", names(got.replace))
		}
	})
	t.Run("rollingUpdate.selector limits the nodes", func(t *testing.T) {
		ds := testDaemonSet(func(d *v1alpha1.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
			d.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("100%"))
		})
		if got := planUpdate(ds, states(ds, true, true, true, true), "new", now); !slices.Equal(names(got.replace), []string{"n1", "n3"}) {
			t.Errorf("replace %v, want n1 n3", names(got.replace))
		}
	})
	t.Run("partition keeps Pods old", func(t *testing.T) {
		ds := testDaemonSet(func(d *v1alpha1.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(4))
			d.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(3))
		})
		if got := planUpdate(ds, states(ds, true, true, true, true), "new", now); len(got.replace) != 1 {
			t.Errorf("replace %v, want 1 node (4 - partition 3)", names(got.replace))
		}
	})
	t.Run("surge: a new Pod beside the old one", func(t *testing.T) {
		ds := testDaemonSet(func(d *v1alpha1.DaemonSet) {
			d.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			d.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(2))
		})
		got := planUpdate(ds, states(ds, true, true, true, true), "new", now)
		if len(got.replace) != 0 || !slices.Equal(names(got.surge), []string{"n1", "n2"}) {
			t.Errorf("surge %v replace %v, want surge n1 n2", names(got.surge), names(got.replace))
		}
	})
	t.Run("paused moves nothing", func(t *testing.T) {
		ds := testDaemonSet(func(d *v1alpha1.DaemonSet) { d.Spec.UpdateStrategy.RollingUpdate.Paused = ptr.To(true) })
		if got := planUpdate(ds, states(ds, true, true, true, true), "new", now); len(got.replace)+len(got.surge) != 0 {
			t.Errorf("paused: %+v", got)
		}
	})
}

func TestPlanManage(t *testing.T) {
	ds := testDaemonSet(func(d *v1alpha1.DaemonSet) { d.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge"} })
	nodes := []*corev1.Node{node("a", map[string]string{"role": "edge"}), node("b", map[string]string{"role": "core"}), node("c", map[string]string{"role": "edge"})}
	old := daemonPod(ds, "a", "old", true)
	old.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	surge := daemonPod(ds, "a", "new", false)
	surge.CreationTimestamp = metav1.NewTime(now.Add(-time.Second))
	misplaced := daemonPod(ds, "b", "old", true)

	plan := planManage(ds, nodeStates(ds, nodes, []*corev1.Pod{old, surge, misplaced}), "new", now)
	if !slices.Equal(plan.create, []string{"c"}) || !slices.Equal(controllertest.Names(plan.delete), []string{misplaced.Name}) {
		t.Errorf("surge not ready: create %v delete %v; want create c, delete only the Pod of node b", plan.create, controllertest.Names(plan.delete))
	}
	unready := old.DeepCopy()
	unready.Status.Conditions[0].Status = corev1.ConditionFalse
	plan = planManage(ds, nodeStates(ds, nodes, []*corev1.Pod{unready, surge}), "new", now)
	if !slices.Equal(controllertest.Names(plan.delete), []string{old.Name}) {
		t.Errorf("surge not ready, old Pod not ready either: delete %v, want the old Pod (as kube's DaemonSet)", controllertest.Names(plan.delete))
	}
	surge.Status.Conditions[0].Status = corev1.ConditionTrue
	plan = planManage(ds, nodeStates(ds, nodes, []*corev1.Pod{old, surge}), "new", now)
	if !slices.Equal(controllertest.Names(plan.delete), []string{old.Name}) {
		t.Errorf("surge available: delete %v, want the old Pod", controllertest.Names(plan.delete))
	}
	ds.Spec.BurstReplicas = ptr.To(intstr.FromInt32(1))
	nodes = append(nodes, node("d", map[string]string{"role": "edge"}))
	if plan = planManage(ds, nodeStates(ds, nodes, nil), "new", now); len(plan.create) != 1 {
		t.Errorf("burstReplicas 1: create %v, want one node", plan.create)
	}
}

func TestCalculateStatusCountsTheOldestPod(t *testing.T) {
	ds := testDaemonSet()
	nodes := []*corev1.Node{node("a", nil), node("b", nil)}
	old := daemonPod(ds, "a", "old", true)
	old.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	surge := daemonPod(ds, "a", "new", false)
	surge.CreationTimestamp = metav1.NewTime(now.Add(-time.Second))
	updated := daemonPod(ds, "b", "new", true)
	revs := history.Revisions{CollisionCount: 0, Update: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "new"}}}
	st, _ := calculateStatus(ds, nodeStates(ds, nodes, []*corev1.Pod{old, surge, updated}), revs, now)
	if st.DesiredNumberScheduled != 2 || st.CurrentNumberScheduled != 2 || st.NumberReady != 2 || st.NumberAvailable != 2 ||
		st.UpdatedNumberScheduled != 1 || st.NumberUnavailable != 0 || st.DaemonSetHash != "new" {
		t.Errorf("status %+v; want node a counted by its old ready Pod (not updated yet), node b updated", st)
	}
}

func TestPlanManagePreDelete(t *testing.T) {
	const hold = "example.io/hold"
	ds := testDaemonSet(func(d *v1alpha1.DaemonSet) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge"}
		d.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{hold: "true"}, MarkPodNotReady: true}}
	})
	preparing := func(nodeName string, held bool) *corev1.Pod {
		p := daemonPod(ds, nodeName, "r", true)
		p.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingDelete)
		if held {
			p.Labels[hold] = "true"
		}
		return p
	}
	nodes := []*corev1.Node{node("a", map[string]string{"role": "core"}), node("b", map[string]string{"role": "edge"}), node("c", map[string]string{"role": "edge"})}
	heldA, releasedB, heldC := preparing("a", true), preparing("b", false), preparing("c", true)
	plan := planManage(ds, nodeStates(ds, nodes, []*corev1.Pod{heldA, releasedB, heldC}), "r", now)
	// A held Pod waits; a released one goes; a node waits for its Pod in PreparingDelete to go.
	if len(plan.create) != 0 || !slices.Equal(controllertest.Names(plan.delete), []string{releasedB.Name}) {
		t.Errorf("create %v delete %v; want only the released Pod of b deleted", plan.create, controllertest.Names(plan.delete))
	}
	if !slices.ContainsFunc(newPod(ds, &ds.Spec.Template, "r", "a").Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool {
		return g.ConditionType == pub.KruisePodReadyConditionType
	}) {
		t.Errorf("no KruisePodReady readiness gate with markPodNotReady")
	}
}

// The expectations read the Pods the sync listed, not the cache of a moment later: a deletion the
// list does not show yet is not met, a Pod gone from the list is, and a creation is met by a listed
// Pod at its node and revision.
func TestPodStateReadsTheListedPods(t *testing.T) {
	live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "r1"}},
		Spec: corev1.PodSpec{NodeName: "n1"}}
	terminating := live.DeepCopy()
	terminating.Name = "b"
	terminating.DeletionTimestamp = &metav1.Time{}
	lookup := podState([]*corev1.Pod{live, terminating})
	if got := lookup("a"); !got.Exists || got.Terminating || got.Revision != "r1" {
		t.Errorf(`lookup("a") = %+v, want the listed live Pod at r1`, got)
	}
	if got := lookup("b"); !got.Exists || !got.Terminating {
		t.Errorf(`lookup("b") = %+v, want the listed terminating Pod`, got)
	}
	if got := lookup("gone"); got.Exists {
		t.Errorf(`lookup("gone") = %+v, want a Pod not listed to count as absent`, got)
	}
	if got := lookup(creationKey(live)); !got.Exists {
		t.Errorf("lookup(%q) = %+v, want the creation met by the listed Pod", creationKey(live), got)
	}
	if got := lookup("n2@r1"); got.Exists {
		t.Errorf(`lookup("n2@r1") = %+v, want no Pod on n2`, got)
	}
}

// TestWithRevisionNames: a Pod labelled as OpenKruise labels a DaemonSet's Pods (the hash only) is
// read at the revision <daemonset>-<hash>; a Pod labelled with a revision name is left as it is;
// the listed Pods (the cache's) are not changed.
func TestWithRevisionNames(t *testing.T) {
	ds := &v1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}}
	pod := func(name, label string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: label}}}
	}
	kruise, named, none := pod("a", "8687b559d8"), pod("b", "agent-5f6d8c"), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	got := withRevisionNames(ds, []*corev1.Pod{kruise, named, none})
	want := []string{"agent-8687b559d8", "agent-5f6d8c", ""}
	for i, p := range got {
		if l := p.Labels[appsv1.ControllerRevisionHashLabelKey]; l != want[i] {
			t.Errorf("pod %s: read at %q, want %q", p.Name, l, want[i])
		}
	}
	if kruise.Labels[appsv1.ControllerRevisionHashLabelKey] != "8687b559d8" {
		t.Errorf("the listed Pod was changed: %v", kruise.Labels)
	}
	if got[1] != named {
		t.Errorf("a Pod labelled with a revision name was copied")
	}
}

// While budgets hold its in-place updates back the DaemonSet shows FailedUpdatePod, as the
// Advanced StatefulSet does; a rolling update with nothing held back drops it.
func TestSetBudgetCondition(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	held := inplacerequest.AsBudgetWait("agent-x", apierrors.NewTooManyRequests("PodUnavailableBudget pub allows no more unavailable Pods", 1))
	st := &v1alpha1.DaemonSetStatus{}
	setBudgetCondition(st, true, errors.Join(held, held), t0)
	if len(st.Conditions) != 1 || st.Conditions[0].Type != inplacerequest.ConditionFailedUpdatePod || st.Conditions[0].Status != corev1.ConditionTrue ||
		st.Conditions[0].Reason != inplacerequest.ReasonBlockedByBudget || !strings.HasSuffix(st.Conditions[0].Message, "(and 1 more pods)") {
		t.Fatalf("conditions %+v, want FailedUpdatePod True for two Pods", st.Conditions)
	}
	setBudgetCondition(st, true, nil, t0.Add(time.Minute))
	if len(st.Conditions) != 0 {
		t.Errorf("conditions %+v, want none once an update ran with nothing held back", st.Conditions)
	}
}
