package cloneset

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/pkg/workload/lifecycle"
)

// podsAt builds n ready Pods at a revision named prefix-0 ... prefix-(n-1), the later the newer.
func podsAt(cs *v1alpha1.CloneSet, prefix, revision string, n int, opts ...podOpt) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		o := append([]podOpt{ready(testNow.Add(-time.Hour)), created(testNow.Add(-time.Duration(100-i) * time.Minute))}, opts...)
		out = append(out, ownedPod(cs, fmt.Sprintf("%s-%d", prefix, i), revision, o...))
	}
	return out
}

func podNames(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func TestPlanScale(t *testing.T) {
	cs := newCloneSet(4)
	notReady := func(p *corev1.Pod) { p.Status.Conditions = nil }
	for _, tc := range []struct {
		name          string
		change        func(cs *v1alpha1.CloneSet)
		pods          func(cs *v1alpha1.CloneSet) []*corev1.Pod
		createCurrent int
		createUpdate  int
		scaleDown     []string
		limited       bool
	}{
		{
			name: "maxSurge creates surge pods at the update revision",
			change: func(cs *v1alpha1.CloneSet) {
				cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(2))
			},
			pods:         func(cs *v1alpha1.CloneSet) []*corev1.Pod { return podsAt(cs, "old", "r1", 4) },
			createUpdate: 2,
		},
		{
			name: "maxSurge is no more than the pods still waiting",
			change: func(cs *v1alpha1.CloneSet) {
				cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(3))
			},
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return append(podsAt(cs, "old", "r1", 1), podsAt(cs, "new", "r2", 3)...)
			},
			createUpdate: 1,
		},
		{
			name: "surge no longer needed: the old pod goes first",
			change: func(cs *v1alpha1.CloneSet) {
				cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
			},
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return append(podsAt(cs, "old", "r1", 1), podsAt(cs, "new", "r2", 4)...)
			},
			scaleDown: []string{"old-0"},
		},
		{
			name: "surge deletion keeps replicas-maxUnavailable available",
			change: func(cs *v1alpha1.CloneSet) {
				cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
				cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			},
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				// 5 pods, 2 of them not ready: deleting a ready one would leave 2 < 4 available.
				return append(append(podsAt(cs, "old", "r1", 1), podsAt(cs, "new", "r2", 2)...),
					podsAt(cs, "fresh", "r2", 2, notReady)...)
			},
			scaleDown: nil,
		},
		{
			name: "scale-up keeps the partition at the current revision",
			change: func(cs *v1alpha1.CloneSet) {
				cs.Spec.Replicas = ptr.To[int32](6)
				cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(3))
			},
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return append(podsAt(cs, "old", "r1", 1), podsAt(cs, "new", "r2", 1)...)
			},
			createCurrent: 2,
			createUpdate:  2,
		},
		{
			name: "scale-down removes old pods beyond the partition first",
			change: func(cs *v1alpha1.CloneSet) {
				cs.Spec.Replicas = ptr.To[int32](3)
				cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(1))
			},
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return append(podsAt(cs, "old", "r1", 3), podsAt(cs, "new", "r2", 2)...)
			},
			scaleDown: []string{"old-1", "old-2"},
		},
		{
			name: "a pod in PreparingDelete still counts: no replacement until it is gone",
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return append(podsAt(cs, "new", "r2", 4)[:3], podsAt(cs, "leaving", "r2", 1, withLabel(v1alpha1.SpecifiedDeleteKey, "true"),
					withLabel(pub.LifecycleStateKey, string(pub.LifecycleStatePreparingDelete)))...)
			},
		},
		{
			name: "with the exclude label a pod in PreparingDelete is replaced at once",
			change: func(cs *v1alpha1.CloneSet) {
				cs.Labels = map[string]string{scalingExcludePreparingDeleteLabel: "true"}
			},
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return append(podsAt(cs, "new", "r2", 4)[:3], podsAt(cs, "leaving", "r2", 1, withLabel(v1alpha1.SpecifiedDeleteKey, "true"),
					withLabel(pub.LifecycleStateKey, string(pub.LifecycleStatePreparingDelete)))...)
			},
			createUpdate: 1,
		},
		{
			name: "scaleStrategy.maxUnavailable counts pods not yet available for minReadySeconds",
			change: func(cs *v1alpha1.CloneSet) {
				cs.Spec.Replicas = ptr.To[int32](5)
				cs.Spec.MinReadySeconds = 10
				cs.Spec.ScaleStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
			},
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				// Two pods ready for 5 s only: not available yet, so nothing more is created.
				return podsAt(cs, "young", "r2", 2, notReady, ready(testNow.Add(-5*time.Second)))
			},
			limited: true,
		},
		{
			name: "scaleStrategy.maxUnavailable: available pods leave room",
			change: func(cs *v1alpha1.CloneSet) {
				cs.Spec.Replicas = ptr.To[int32](5)
				cs.Spec.MinReadySeconds = 10
				cs.Spec.ScaleStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
			},
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return append(podsAt(cs, "old", "r2", 2), podsAt(cs, "young", "r2", 1, notReady, ready(testNow.Add(-5*time.Second)))...)
			},
			createUpdate: 1,
			limited:      true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := cs.DeepCopy()
			if tc.change != nil {
				tc.change(cs)
			}
			plan, err := planScale(cs, tc.pods(cs), "r2", "r1", testNow)
			if err != nil {
				t.Fatal(err)
			}
			if plan.createCurrent != tc.createCurrent || plan.createUpdate != tc.createUpdate {
				t.Errorf("creates %d at current, %d at update; want %d, %d", plan.createCurrent, plan.createUpdate, tc.createCurrent, tc.createUpdate)
			}
			if got := podNames(plan.scaleDown); !slices.Equal(got, tc.scaleDown) {
				t.Errorf("scale down %v, want %v", got, tc.scaleDown)
			}
			if plan.scaleUpLimited != tc.limited {
				t.Errorf("scale-up limited %v, want %v", plan.scaleUpLimited, tc.limited)
			}
		})
	}
}

// With maxSurge the rolling update leaves the surge's share of old Pods to scaling (deleted rather
// than updated), and maxUnavailable rounds down.
func TestUpdateBudgetWithSurge(t *testing.T) {
	cs := newCloneSet(4)
	cs.Spec.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("30%")) // 1.2: 1 with surge, 2 without
	pods := append(podsAt(cs, "old", "r1", 4), podsAt(cs, "new", "r2", 1)...)
	toUpdate, maxUnavailable, err := updateBudget(cs, pods, "r2")
	if err != nil {
		t.Fatal(err)
	}
	if toUpdate != 3 || maxUnavailable != 2 {
		t.Errorf("toUpdate %d, maxUnavailable %d; want 3 and 1+1 surplus", toUpdate, maxUnavailable)
	}
	cs.Spec.UpdateStrategy.MaxSurge = nil
	if _, maxUnavailable, _ = updateBudget(cs, pods[:4], "r2"); maxUnavailable != 2 {
		t.Errorf("maxUnavailable %d without surge, want 2 (rounded up)", maxUnavailable)
	}
}

// OpenKruise's order for deletions: a Pod left in PreparingDelete by a scale-in comes back when
// spec.replicas needs it; ready Pods asked for go within maxUnavailable (a PreparingDelete Pod
// uses it up); while any deletion is pending, surplus Pods stay.
func TestPlanScaleDeletions(t *testing.T) {
	preDelete := withLabel(pub.LifecycleStateKey, string(pub.LifecycleStatePreparingDelete))
	specified := withLabel(v1alpha1.SpecifiedDeleteKey, "true")
	for _, tc := range []struct {
		name                         string
		replicas                     int32
		pods                         func(cs *v1alpha1.CloneSet) []*corev1.Pod
		cancel, specified, scaleDown []string
	}{
		{
			name:     "scale-in cancelled",
			replicas: 3,
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return append(podsAt(cs, "a", "r2", 2), podsAt(cs, "leaving", "r2", 1, preDelete)...)
			},
			cancel: []string{"leaving-0"},
		},
		{
			name:     "a pod asked for is never taken back",
			replicas: 3,
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return append(podsAt(cs, "a", "r2", 2), podsAt(cs, "leaving", "r2", 1, preDelete, specified)...)
			},
		},
		{
			name:     "a ready pod asked for waits while a PreparingDelete pod uses maxUnavailable",
			replicas: 3,
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				// maxUnavailable 20% of 3 rounds up to 1: the held pod uses it.
				return slices.Concat(podsAt(cs, "held", "r2", 1, preDelete, specified), podsAt(cs, "b", "r2", 1, specified), podsAt(cs, "c", "r2", 1))
			},
		},
		{
			name:     "a pod asked for that is not ready goes at once",
			replicas: 3,
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return slices.Concat(podsAt(cs, "held", "r2", 1, preDelete, specified),
					podsAt(cs, "b", "r2", 1, specified, func(p *corev1.Pod) { p.Status.Conditions = nil }), podsAt(cs, "c", "r2", 1))
			},
			specified: []string{"b-0"},
		},
		{
			name:     "surplus waits for a pending deletion",
			replicas: 1,
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return slices.Concat(podsAt(cs, "held", "r2", 1, preDelete, specified), podsAt(cs, "b", "r2", 2))
			},
		},
		{
			name:      "surplus goes when nothing is pending",
			replicas:  1,
			pods:      func(cs *v1alpha1.CloneSet) []*corev1.Pod { return podsAt(cs, "b", "r2", 3) },
			scaleDown: []string{"b-1", "b-2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newCloneSet(tc.replicas)
			cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
			pods := tc.pods(cs)
			for _, p := range pods {
				if lifecycle.State(p) == pub.LifecycleStatePreparingDelete {
					p.Labels["hold"] = "true"
				}
			}
			plan, err := planScale(cs, pods, "r2", "r2", testNow)
			if err != nil {
				t.Fatal(err)
			}
			if plan.scaleUp {
				t.Errorf("scale up %d", plan.createUpdate)
			}
			for what, got := range map[string][2][]string{
				"cancelled":  {podNames(plan.cancelDelete), tc.cancel},
				"specified":  {podNames(plan.specified), tc.specified},
				"scale down": {podNames(plan.scaleDown), tc.scaleDown},
			} {
				if !slices.Equal(got[0], got[1]) {
					t.Errorf("%s %v, want %v", what, got[0], got[1])
				}
			}
		})
	}
}

// PreparingUpdateAsUpdate (OpenKruise "regard preparing-update pod as update when scaling"): a
// Pod the inPlaceUpdate hook holds in PreparingUpdate counts as updated for scaling, so the Pods
// scaling creates keep the partition at the current revision; by default they take the update
// revision.
func TestPlanScalePreparingUpdateAsUpdate(t *testing.T) {
	preparing := withLabel(pub.LifecycleStateKey, string(pub.LifecycleStatePreparingUpdate))
	for _, tc := range []struct {
		name            string
		replicas        int32
		pods            func(cs *v1alpha1.CloneSet) []*corev1.Pod
		gateOff, gateOn [2]int // createCurrent, createUpdate
	}{
		{
			name:     "a deleted pod's replacement",
			replicas: 2,
			pods:     func(cs *v1alpha1.CloneSet) []*corev1.Pod { return podsAt(cs, "held", "r1", 1, preparing) },
			gateOff:  [2]int{0, 1}, gateOn: [2]int{1, 0},
		},
		{
			name:     "scaling up",
			replicas: 3,
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return append(podsAt(cs, "held", "r1", 1, preparing), podsAt(cs, "old", "r1", 1)...)
			},
			gateOff: [2]int{0, 1}, gateOn: [2]int{1, 0},
		},
	} {
		for _, on := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, gate %t", tc.name, on), func(t *testing.T) {
				featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.PreparingUpdateAsUpdate, on)
				cs := newCloneSet(tc.replicas)
				cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("99%"))
				plan, err := planScale(cs, tc.pods(cs), "r2", "r1", testNow)
				if err != nil {
					t.Fatal(err)
				}
				want := tc.gateOff
				if on {
					want = tc.gateOn
				}
				if plan.createCurrent != want[0] || plan.createUpdate != want[1] {
					t.Errorf("creates %d at current, %d at update; want %d, %d", plan.createCurrent, plan.createUpdate, want[0], want[1])
				}
			})
		}
	}
}
