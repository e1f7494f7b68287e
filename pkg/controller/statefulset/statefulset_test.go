package statefulset

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/pkg/podreadiness"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
	"github.com/inplace-dev/inplace/pkg/workload/lifecycle"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func testSet(replicas int32, policy appsv1.PodManagementPolicyType) *v1beta1.StatefulSet {
	labels := map[string]string{"app": "db"}
	set := &v1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "set-uid"},
		Spec: v1beta1.StatefulSetSpec{
			Replicas:            &replicas,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			ServiceName:         "db",
			PodManagementPolicy: policy,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:v1"}}},
			},
			UpdateStrategy: v1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &v1beta1.RollingUpdateStatefulSetStrategy{
					Partition: ptr.To[int32](0), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
					PodUpdatePolicy: v1beta1.InPlaceIfPossiblePodUpdateStrategyType, MinReadySeconds: ptr.To[int32](0)}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
		},
	}
	return set
}

// readyPod is the Pod of an ordinal at a revision, running and Ready (or not), in lifecycle state
// Normal.
func readyPod(set *v1beta1.StatefulSet, ordinal int, revision string, ready bool) *corev1.Pod {
	p := newPod(set, &set.Spec.Template, revision, ordinal)
	p.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateNormal)
	p.Status = controllertest.RunningStatus(ready, now.Add(-time.Hour))
	return p
}

func TestWantedOrdinals(t *testing.T) {
	set := testSet(4, appsv1.ParallelPodManagement)
	if got := wantedOrdinals(set); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("plain: %v", got)
	}
	set.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("3-4")}
	set.Spec.Ordinals = &v1beta1.StatefulSetOrdinals{Start: 1}
	// As OpenKruise: ordinals.start needs StatefulSetStartOrdinal (off by default).
	if got := wantedOrdinals(set); !slices.Equal(got, []int{0, 2, 5, 6}) {
		t.Errorf("start 1 (gate off), reserving 1 and 3-4: %v, want [0 2 5 6]", got)
	}
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.StatefulSetStartOrdinal, true)
	if got := wantedOrdinals(set); !slices.Equal(got, []int{2, 5, 6, 7}) {
		t.Errorf("start 1, reserving 1 and 3-4: %v, want [2 5 6 7]", got)
	}
	for name, want := range map[string]int{"db-0": 0, "db-12": 12, "db-01": -1, "db-x": -1, "other-1": -1, "db--1": -1} {
		if got := ordinalOf(set, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}); got != want {
			t.Errorf("ordinalOf(%s) = %d, want %d", name, got, want)
		}
	}
}

func TestNewPod(t *testing.T) {
	set := testSet(1, appsv1.OrderedReadyPodManagement)
	p := newPod(set, &set.Spec.Template, "db-rev", 3)
	if p.Name != "db-3" || p.Spec.Hostname != "db-3" || p.Spec.Subdomain != "db" ||
		p.Labels[appsv1.ControllerRevisionHashLabelKey] != "db-rev" || p.Labels[appsv1.PodIndexLabel] != "3" ||
		p.Labels[appsv1.StatefulSetPodNameLabel] != "db-3" {
		t.Errorf("pod: %+v", p.ObjectMeta)
	}
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-db-3" {
		t.Errorf("volumes: %+v", p.Spec.Volumes)
	}
	if !slices.ContainsFunc(p.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool { return g.ConditionType == pub.InPlaceUpdateReady }) {
		t.Errorf("no InPlaceUpdateReady readiness gate: %+v", p.Spec.ReadinessGates)
	}
	if c := newClaim(set, &set.Spec.VolumeClaimTemplates[0], 3); c.Name != "data-db-3" || c.Labels["app"] != "db" || len(c.OwnerReferences) != 0 {
		t.Errorf("claim with the default retention: %+v", c.ObjectMeta)
	}
	set.Spec.PersistentVolumeClaimRetentionPolicy = &v1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: v1beta1.DeletePersistentVolumeClaimRetentionPolicyType}
	if c := newClaim(set, &set.Spec.VolumeClaimTemplates[0], 3); len(c.OwnerReferences) != 1 || c.OwnerReferences[0].UID != set.UID {
		t.Errorf("claim with whenDeleted Delete is not owned by the set: %+v", c.OwnerReferences)
	}
}

func TestPlanScale(t *testing.T) {
	cases := []struct {
		name       string
		replicas   int32
		policy     appsv1.PodManagementPolicyType
		pods       func(set *v1beta1.StatefulSet) []*corev1.Pod
		wantCreate []int
		wantDelete []string
	}{
		{"ordered creates the lowest missing ordinal only", 3, appsv1.OrderedReadyPodManagement,
			func(s *v1beta1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{readyPod(s, 0, "r", true)} }, []int{1}, nil},
		{"ordered waits for a Pod not ready", 3, appsv1.OrderedReadyPodManagement,
			func(s *v1beta1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{readyPod(s, 0, "r", false)} }, nil, nil},
		{"parallel creates every missing ordinal", 3, appsv1.ParallelPodManagement,
			func(s *v1beta1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{readyPod(s, 1, "r", false)} }, []int{0, 2}, nil},
		{"ordered scales down the highest ordinal first, one at a time", 1, appsv1.OrderedReadyPodManagement,
			func(s *v1beta1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{readyPod(s, 0, "r", true), readyPod(s, 1, "r", true), readyPod(s, 2, "r", true)}
			}, nil, []string{"db-2"}},
		{"parallel scales down all at once", 1, appsv1.ParallelPodManagement,
			func(s *v1beta1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{readyPod(s, 0, "r", true), readyPod(s, 1, "r", true), readyPod(s, 2, "r", false)}
			}, nil, []string{"db-2", "db-1"}},
		{"ordered scale-down waits for an unready Pod below the highest", 1, appsv1.OrderedReadyPodManagement,
			func(s *v1beta1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{readyPod(s, 0, "r", true), readyPod(s, 1, "r", false), readyPod(s, 2, "r", false)}
			}, nil, nil},
		{"ordered scale-down deletes the lowest unready Pod when it is the highest", 1, appsv1.OrderedReadyPodManagement,
			func(s *v1beta1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{readyPod(s, 0, "r", true), readyPod(s, 1, "r", true), readyPod(s, 2, "r", false)}
			}, nil, []string{"db-2"}},
		{"a failed Pod is deleted to be created again", 2, appsv1.OrderedReadyPodManagement,
			func(s *v1beta1.StatefulSet) []*corev1.Pod {
				failed := readyPod(s, 0, "r", false)
				failed.Status.Phase = corev1.PodFailed
				return []*corev1.Pod{failed, readyPod(s, 1, "r", true)}
			}, nil, []string{"db-0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := testSet(tc.replicas, tc.policy)
			plan := planScale(set, tc.pods(set), now)
			deleted := controllertest.Names(slices.Concat(plan.recreate, plan.condemned))
			if !slices.Equal(plan.create, tc.wantCreate) || !slices.Equal(deleted, tc.wantDelete) {
				t.Errorf("create %v delete %v; want create %v delete %v", plan.create, deleted, tc.wantCreate, tc.wantDelete)
			}
		})
	}
}

// candidatesOf is planUpdate's candidates and budget.
func candidatesOf(set *v1beta1.StatefulSet, pods []*corev1.Pod, updateRevision string, now time.Time) ([]*corev1.Pod, int) {
	plan := planUpdate(set, pods, updateRevision, now)
	return plan.candidates, plan.budget
}

func TestUpdateCandidates(t *testing.T) {
	pods := func(set *v1beta1.StatefulSet, ready ...bool) []*corev1.Pod {
		var out []*corev1.Pod
		for i, r := range ready {
			out = append(out, readyPod(set, i, "old", r))
		}
		return out
	}
	t.Run("reverse ordinal above the partition, maxUnavailable at a time", func(t *testing.T) {
		set := testSet(4, appsv1.ParallelPodManagement)
		set.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
		set.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](1)
		got, budget := candidatesOf(set, pods(set, true, true, true, true), "new", now)
		if !slices.Equal(controllertest.Names(got), []string{"db-3", "db-2", "db-1"}) || budget != 2 {
			t.Errorf("candidates %v budget %d; want db-3 db-2 db-1, 2", controllertest.Names(got), budget)
		}
	})
	t.Run("an unavailable Pod takes the budget", func(t *testing.T) {
		set := testSet(4, appsv1.ParallelPodManagement)
		set.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("50%"))
		ps := pods(set, true, true, true, true)
		ps[3].Labels[appsv1.ControllerRevisionHashLabelKey] = "new"
		ps[3].Status.Conditions[1].Status = corev1.ConditionFalse // being updated in place
		got, budget := candidatesOf(set, ps, "new", now)
		if !slices.Equal(controllertest.Names(got), []string{"db-2", "db-1", "db-0"}) || budget != 1 {
			t.Errorf("candidates %v budget %d; want db-2 db-1 db-0, 1", controllertest.Names(got), budget)
		}
	})
	t.Run("partition counts positions from ordinals.start", func(t *testing.T) {
		featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.StatefulSetStartOrdinal, true)
		set := testSet(3, appsv1.ParallelPodManagement)
		set.Spec.Ordinals = &v1beta1.StatefulSetOrdinals{Start: 5}
		set.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](2)
		set.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(3))
		var ps []*corev1.Pod
		for o := 5; o < 8; o++ {
			ps = append(ps, readyPod(set, o, "old", true))
		}
		if got, _ := candidatesOf(set, ps, "new", now); !slices.Equal(controllertest.Names(got), []string{"db-7"}) {
			t.Errorf("candidates %v, want db-7 only (positions 0 and 1 kept)", controllertest.Names(got))
		}
	})
	t.Run("maxUnavailable percentage rounds down, at least 1", func(t *testing.T) {
		set := testSet(3, appsv1.ParallelPodManagement)
		set.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("50%"))
		if _, budget := candidatesOf(set, pods(set, true, true, true), "new", now); budget != 1 {
			t.Errorf("budget %d, want 1 (50%% of 3 rounded down)", budget)
		}
	})
	t.Run("ordered: nothing while a Pod is unavailable, else the highest", func(t *testing.T) {
		set := testSet(3, appsv1.OrderedReadyPodManagement)
		if got, _ := candidatesOf(set, pods(set, true, false, true), "new", now); len(got) != 0 {
			t.Errorf("candidates %v with db-1 not ready", controllertest.Names(got))
		}
		if got, budget := candidatesOf(set, pods(set, true, true, true), "new", now); !slices.Equal(controllertest.Names(got), []string{"db-2"}) || budget != 1 {
			t.Errorf("candidates %v budget %d; want db-2, 1", controllertest.Names(got), budget)
		}
	})
	t.Run("paused and OnDelete move nothing", func(t *testing.T) {
		set := testSet(2, appsv1.ParallelPodManagement)
		set.Spec.UpdateStrategy.RollingUpdate.Paused = true
		if got, _ := candidatesOf(set, pods(set, true, true), "new", now); len(got) != 0 {
			t.Errorf("paused: %v", controllertest.Names(got))
		}
		set.Spec.UpdateStrategy = v1beta1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
		if got, _ := candidatesOf(set, pods(set, true, true), "new", now); len(got) != 0 {
			t.Errorf("OnDelete: %v", controllertest.Names(got))
		}
	})
}

func TestPlanStep(t *testing.T) {
	set := testSet(1, appsv1.ParallelPodManagement)
	revision := func(name string, image string, env ...corev1.EnvVar) *appsv1.ControllerRevision {
		tmpl := set.Spec.Template.DeepCopy()
		tmpl.Spec.Containers[0].Image = image
		tmpl.Spec.Containers[0].Env = env
		data, err := history.TemplateData(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: runtime.RawExtension{Raw: data}}
	}
	old := revision("old", "app:v1")
	templates := map[string]*appsv1.ControllerRevision{"old": old}
	pod := readyPod(set, 0, "old", true)

	step, err := planStep(set, pod, templates, revision("new", "app:v2"))
	if err != nil || step.spec == nil || step.spec.ContainerImages["main"] != "app:v2" {
		t.Errorf("image change: %+v %v, want in place to app:v2", step, err)
	}
	step, err = planStep(set, pod, templates, revision("env", "app:v1", corev1.EnvVar{Name: "A", Value: "1"}))
	if err != nil || step.spec != nil || step.refused || step.reason == "" {
		t.Errorf("env change under InPlaceIfPossible: %+v %v, want a recreate with a reason", step, err)
	}
	set.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = v1beta1.InPlaceOnlyPodUpdateStrategyType
	if step, _ = planStep(set, pod, templates, revision("env", "app:v1", corev1.EnvVar{Name: "A", Value: "1"})); !step.refused {
		t.Errorf("env change under InPlaceOnly: %+v, want refused", step)
	}
	set.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = v1beta1.RecreatePodUpdateStrategyType
	if step, _ = planStep(set, pod, templates, revision("new", "app:v2")); step.spec != nil || step.refused {
		t.Errorf("ReCreate: %+v, want a recreate", step)
	}
}

func TestCalculateStatus(t *testing.T) {
	set := testSet(3, appsv1.ParallelPodManagement)
	set.Generation = 4
	revs := history.Revisions{Current: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "old"}},
		Update: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "new"}}}
	updating := readyPod(set, 2, "new", true)
	updating.Status.Conditions[1].Status = corev1.ConditionFalse // InPlaceUpdateReady False: in place, not ready
	pods := []*corev1.Pod{readyPod(set, 0, "old", true), readyPod(set, 1, "new", true), updating}
	st, _ := calculateStatus(set, pods, revs, now)
	if st.ObservedGeneration != 4 || st.Replicas != 3 || st.ReadyReplicas != 2 || st.CurrentReplicas != 1 || st.UpdatedReplicas != 2 ||
		st.UpdatedReadyReplicas != 1 || st.CurrentRevision != "old" || st.UpdateRevision != "new" || st.LabelSelector != "app=db" {
		t.Errorf("mid-update status %+v", st)
	}
	pods[0] = readyPod(set, 0, "new", true)
	pods[2] = readyPod(set, 2, "new", true)
	if st, _ = calculateStatus(set, pods, revs, now); st.CurrentRevision != "new" || st.CurrentReplicas != 3 || st.UpdatedAvailableReplicas != 3 {
		t.Errorf("rolled-out status %+v: the update revision becomes current", st)
	}
}

func TestPlanScaleMaxUnavailable(t *testing.T) {
	cases := []struct {
		name           string
		maxUnavailable intstr.IntOrString
		pods           func(set *v1beta1.StatefulSet) []*corev1.Pod
		wantCreate     []int
		wantDelete     []string
	}{
		{"creates maxUnavailable Pods at a time, lowest first", intstr.FromInt32(2),
			func(*v1beta1.StatefulSet) []*corev1.Pod { return nil }, []int{0, 1}, nil},
		{"a percentage of replicas rounds down", intstr.FromString("50%"),
			func(*v1beta1.StatefulSet) []*corev1.Pod { return nil }, []int{0, 1}, nil},
		{"an unready Pod below takes the budget", intstr.FromInt32(2),
			func(s *v1beta1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{readyPod(s, 0, "r", true), readyPod(s, 1, "r", false)}
			}, []int{2}, nil},
		{"nothing created while maxUnavailable Pods are unavailable", intstr.FromInt32(2),
			func(s *v1beta1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{readyPod(s, 0, "r", false), readyPod(s, 1, "r", false)}
			}, nil, nil},
		{"a terminating Pod is unavailable", intstr.FromInt32(1),
			func(s *v1beta1.StatefulSet) []*corev1.Pod {
				p := readyPod(s, 0, "r", true)
				p.DeletionTimestamp = ptr.To(metav1.NewTime(now))
				return []*corev1.Pod{p}
			}, nil, nil},
		{"a Pod ready for less than minReadySeconds is unavailable", intstr.FromInt32(1),
			func(s *v1beta1.StatefulSet) []*corev1.Pod {
				s.Spec.UpdateStrategy.RollingUpdate.MinReadySeconds = ptr.To[int32](7200)
				return []*corev1.Pod{readyPod(s, 0, "r", true)}
			}, nil, nil},
		{"a failed Pod is deleted even with the budget spent", intstr.FromInt32(1),
			func(s *v1beta1.StatefulSet) []*corev1.Pod {
				failed := readyPod(s, 1, "r", false)
				failed.Status.Phase = corev1.PodFailed
				return []*corev1.Pod{readyPod(s, 0, "r", false), failed}
			}, nil, []string{"db-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := testSet(5, appsv1.ParallelPodManagement)
			set.Spec.ScaleStrategy = &v1beta1.StatefulSetScaleStrategy{MaxUnavailable: &tc.maxUnavailable}
			plan := planScale(set, tc.pods(set), now)
			deleted := controllertest.Names(slices.Concat(plan.recreate, plan.condemned))
			if !slices.Equal(plan.create, tc.wantCreate) || !slices.Equal(deleted, tc.wantDelete) {
				t.Errorf("create %v delete %v; want create %v delete %v", plan.create, deleted, tc.wantCreate, tc.wantDelete)
			}
		})
	}
	t.Run("OrderedReady ignores it", func(t *testing.T) {
		set := testSet(5, appsv1.OrderedReadyPodManagement)
		set.Spec.ScaleStrategy = &v1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(3))}
		if plan := planScale(set, nil, now); !slices.Equal(plan.create, []int{0}) {
			t.Errorf("create %v, want [0]", plan.create)
		}
	})
}

func TestOrderedReadyWaitsForAvailable(t *testing.T) {
	set := testSet(3, appsv1.OrderedReadyPodManagement)
	set.Spec.UpdateStrategy.RollingUpdate.MinReadySeconds = ptr.To[int32](60)
	recent := readyPod(set, 0, "r", true)
	recent.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Second))
	if plan := planScale(set, []*corev1.Pod{recent}, now); len(plan.create) != 0 {
		t.Errorf("created %v while db-0 has been ready for 10s of 60", plan.create)
	}
	revs := history.Revisions{Current: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "r"}},
		Update: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "r"}}}
	if _, wait := calculateStatus(set, []*corev1.Pod{recent}, revs, now); wait != 50*time.Second {
		t.Errorf("next look in %v, want 50s (when db-0 becomes available)", wait)
	}
	if plan := planScale(set, []*corev1.Pod{readyPod(set, 0, "r", true)}, now); !slices.Equal(plan.create, []int{1}) {
		t.Errorf("created %v once db-0 is available, want [1]", plan.create)
	}

	t.Run("scale-down waits for the Pods below to be available", func(t *testing.T) {
		set := testSet(1, appsv1.OrderedReadyPodManagement)
		set.Spec.UpdateStrategy.RollingUpdate.MinReadySeconds = ptr.To[int32](60)
		recent := readyPod(set, 2, "r", true)
		recent.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Second))
		plan := planScale(set, []*corev1.Pod{readyPod(set, 0, "r", true), readyPod(set, 1, "r", true), recent}, now)
		if len(plan.condemned) != 0 {
			t.Errorf("deleted %v while db-2 is ready but not yet available", controllertest.Names(plan.condemned))
		}
	})
}

func TestStatusCountsTerminatingPods(t *testing.T) {
	set := testSet(2, appsv1.ParallelPodManagement)
	revs := history.Revisions{Current: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "old"}},
		Update: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "new"}}}
	leaving := readyPod(set, 1, "new", true)
	leaving.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	st, _ := calculateStatus(set, []*corev1.Pod{readyPod(set, 0, "new", true), leaving}, revs, now)
	// As OpenKruise's and kube's StatefulSet: in replicas and ready (it still serves), not in updated.
	if st.Replicas != 2 || st.ReadyReplicas != 2 || st.AvailableReplicas != 2 || st.UpdatedReplicas != 1 || st.UpdatedReadyReplicas != 2 {
		t.Errorf("status %+v", st)
	}
	if st.CurrentRevision != "old" {
		t.Errorf("current revision %s while a Pod terminates, want old", st.CurrentRevision)
	}
}

func TestPlanUpdateSpecifiedDelete(t *testing.T) {
	label := func(p *corev1.Pod) *corev1.Pod {
		p.Labels[v1alpha1.SpecifiedDeleteKey] = "true"
		return p
	}
	set := testSet(5, appsv1.ParallelPodManagement)
	set.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	fresh := func() []*corev1.Pod {
		var ps []*corev1.Pod
		for o := range 5 {
			ps = append(ps, readyPod(set, o, "new", true))
		}
		return ps
	}
	ps := fresh()
	label(ps[0])
	label(ps[3])
	label(ps[4])
	if plan := planUpdate(set, ps, "new", now); !slices.Equal(controllertest.Names(plan.specified), []string{"db-4", "db-3"}) || plan.budget != 0 {
		t.Errorf("specified %v budget %d; want db-4 db-3 (highest first, maxUnavailable 2), 0", controllertest.Names(plan.specified), plan.budget)
	}

	t.Run("an unavailable Pod goes whatever the budget", func(t *testing.T) {
		ps := fresh()
		ps[1].Status.Conditions[0].Status = corev1.ConditionFalse
		ps[2].Status.Conditions[0].Status = corev1.ConditionFalse
		label(ps[2])
		label(ps[4])
		if plan := planUpdate(set, ps, "new", now); !slices.Equal(controllertest.Names(plan.specified), []string{"db-2"}) {
			t.Errorf("specified %v, want db-2 only (db-4 is available and 2 Pods are not)", controllertest.Names(plan.specified))
		}
	})
	t.Run("the partition does not hold it", func(t *testing.T) {
		set := set.DeepCopy()
		set.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](5)
		ps := fresh()
		label(ps[1])
		if plan := planUpdate(set, ps, "new", now); !slices.Equal(controllertest.Names(plan.specified), []string{"db-1"}) {
			t.Errorf("specified %v, want db-1", controllertest.Names(plan.specified))
		}
	})
	t.Run("it takes the update's budget and is no candidate", func(t *testing.T) {
		ps := fresh()
		for _, p := range ps {
			p.Labels[appsv1.ControllerRevisionHashLabelKey] = "old"
		}
		label(ps[4])
		plan := planUpdate(set, ps, "new", now)
		if !slices.Equal(controllertest.Names(plan.specified), []string{"db-4"}) || !slices.Equal(controllertest.Names(plan.candidates), []string{"db-3", "db-2", "db-1", "db-0"}) || plan.budget != 1 {
			t.Errorf("specified %v candidates %v budget %d; want db-4, db-3..db-0, 1", controllertest.Names(plan.specified), controllertest.Names(plan.candidates), plan.budget)
		}
	})
	t.Run("paused and OnDelete delete nothing", func(t *testing.T) {
		ps := fresh()
		label(ps[4])
		paused := set.DeepCopy()
		paused.Spec.UpdateStrategy.RollingUpdate.Paused = true
		onDelete := set.DeepCopy()
		onDelete.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
		for _, s := range []*v1beta1.StatefulSet{paused, onDelete} {
			if plan := planUpdate(s, ps, "new", now); len(plan.specified) != 0 {
				t.Errorf("specified %v", controllertest.Names(plan.specified))
			}
		}
	})
}

const holdLabel = "example.io/hold"

func withHooks(set *v1beta1.StatefulSet) *v1beta1.StatefulSet {
	hook := func() *pub.LifecycleHook {
		return &pub.LifecycleHook{LabelsHandler: map[string]string{holdLabel: "true"}}
	}
	set.Spec.Lifecycle = &pub.Lifecycle{PreDelete: hook(), InPlaceUpdate: hook(), PreNormal: hook()}
	return set
}

// inState is the Pod in a lifecycle state, held by the hooks' label or not.
func inState(p *corev1.Pod, state pub.LifecycleStateType, held bool) *corev1.Pod {
	p.Labels[pub.LifecycleStateKey] = string(state)
	if held {
		p.Labels[holdLabel] = "true"
	}
	return p
}

func TestNewPodLifecycle(t *testing.T) {
	set := testSet(1, appsv1.ParallelPodManagement)
	if p := newPod(set, &set.Spec.Template, "r", 0); lifecycle.State(p) != pub.LifecycleStateNormal || podreadiness.HasGate(p) {
		t.Errorf("without hooks: state %q, KruisePodReady gate %v; want Normal, no gate", lifecycle.State(p), podreadiness.HasGate(p))
	}
	withHooks(set)
	set.Spec.Lifecycle.PreDelete.MarkPodNotReady = true
	if p := newPod(set, &set.Spec.Template, "r", 0); lifecycle.State(p) != pub.LifecycleStatePreparingNormal || !podreadiness.HasGate(p) {
		t.Errorf("preNormal hook not on the template: state %q, gate %v; want PreparingNormal and the gate", lifecycle.State(p), podreadiness.HasGate(p))
	}
	set.Spec.Template.Labels[holdLabel] = "true"
	if p := newPod(set, &set.Spec.Template, "r", 0); lifecycle.State(p) != pub.LifecycleStateNormal {
		t.Errorf("preNormal hook on the template: state %q, want Normal", lifecycle.State(p))
	}
}

func TestPlanScalePreDelete(t *testing.T) {
	t.Run("a wanted Pod held in PreparingDelete waits and holds the ordinals above", func(t *testing.T) {
		set := withHooks(testSet(3, appsv1.OrderedReadyPodManagement))
		plan := planScale(set, []*corev1.Pod{inState(readyPod(set, 0, "r", true), pub.LifecycleStatePreparingDelete, true)}, now)
		if len(plan.create)+len(plan.recreate)+len(plan.released) != 0 {
			t.Errorf("plan %+v, want nothing", plan)
		}
	})
	t.Run("a wanted Pod released in PreparingDelete is created again", func(t *testing.T) {
		set := withHooks(testSet(1, appsv1.ParallelPodManagement))
		plan := planScale(set, []*corev1.Pod{inState(readyPod(set, 0, "r", true), pub.LifecycleStatePreparingDelete, false)}, now)
		if !slices.Equal(controllertest.Names(plan.released), []string{"db-0"}) {
			t.Errorf("released %v, want db-0", controllertest.Names(plan.released))
		}
	})
	t.Run("scale-down passes a held Pod with Parallel, waits on it with OrderedReady", func(t *testing.T) {
		pods := func(set *v1beta1.StatefulSet) []*corev1.Pod {
			return []*corev1.Pod{readyPod(set, 0, "r", true), readyPod(set, 1, "r", true),
				inState(readyPod(set, 2, "r", true), pub.LifecycleStatePreparingDelete, true)}
		}
		set := withHooks(testSet(1, appsv1.ParallelPodManagement))
		if plan := planScale(set, pods(set), now); !slices.Equal(controllertest.Names(plan.condemned), []string{"db-1"}) {
			t.Errorf("parallel: condemned %v, want db-1", controllertest.Names(plan.condemned))
		}
		set = withHooks(testSet(1, appsv1.OrderedReadyPodManagement))
		if plan := planScale(set, pods(set), now); len(plan.condemned) != 0 {
			t.Errorf("ordered: condemned %v, want none while db-2 waits", controllertest.Names(plan.condemned))
		}
	})
	t.Run("ordered scale-down deletes a released Pod, ready but not Normal", func(t *testing.T) {
		set := withHooks(testSet(1, appsv1.OrderedReadyPodManagement))
		pods := []*corev1.Pod{readyPod(set, 0, "r", true), inState(readyPod(set, 1, "r", true), pub.LifecycleStatePreparingDelete, false)}
		if plan := planScale(set, pods, now); !slices.Equal(controllertest.Names(plan.condemned), []string{"db-1"}) {
			t.Errorf("condemned %v, want db-1", controllertest.Names(plan.condemned))
		}
	})
	t.Run("a Pod in PreparingDelete is no update candidate", func(t *testing.T) {
		set := withHooks(testSet(2, appsv1.ParallelPodManagement))
		pods := []*corev1.Pod{readyPod(set, 0, "old", true), inState(readyPod(set, 1, "old", true), pub.LifecycleStatePreparingDelete, false)}
		if got, _ := candidatesOf(set, pods, "new", now); !slices.Equal(controllertest.Names(got), []string{"db-0"}) {
			t.Errorf("candidates %v, want db-0", controllertest.Names(got))
		}
	})
}

// While budgets hold its in-place updates back the set shows FailedUpdatePod (reason
// PodUnavailableBudget, its transition time kept); a rolling update with nothing held back drops
// it; a sync whose update did not run leaves it.
func TestSetBudgetCondition(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	held := inplacerequest.AsBudgetWait("web-1", apierrors.NewTooManyRequests("PodUnavailableBudget pub allows no more unavailable Pods", 1))
	st := &v1beta1.StatefulSetStatus{Conditions: []appsv1.StatefulSetCondition{{Type: "Other", Status: corev1.ConditionTrue}}}
	cached := st.Conditions
	setBudgetCondition(st, true, held, t0)
	setBudgetCondition(st, true, held, t0.Add(time.Minute))
	i := slices.IndexFunc(st.Conditions, func(c appsv1.StatefulSetCondition) bool { return c.Type == inplacerequest.ConditionFailedUpdatePod })
	if i < 0 || st.Conditions[i].Status != corev1.ConditionTrue || st.Conditions[i].Reason != inplacerequest.ReasonBlockedByBudget ||
		!st.Conditions[i].LastTransitionTime.Time.Equal(t0) || st.Conditions[i].Message != "pod web-1: PodUnavailableBudget pub allows no more unavailable Pods" {
		t.Fatalf("conditions %+v, want FailedUpdatePod True since t0 naming the Pod and budget", st.Conditions)
	}
	if len(cached) != 1 {
		t.Errorf("the cached status's conditions were modified: %+v", cached)
	}
	setBudgetCondition(st, false, nil, t0)
	if len(st.Conditions) != 2 {
		t.Errorf("a sync whose update did not run changed the conditions: %+v", st.Conditions)
	}
	setBudgetCondition(st, true, nil, t0)
	if len(st.Conditions) != 1 || st.Conditions[0].Type != "Other" {
		t.Errorf("conditions %+v, want only Other once an update ran with nothing held back", st.Conditions)
	}
}
