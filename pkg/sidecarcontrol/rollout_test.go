package sidecarcontrol

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// logSet is SidecarSet "logs" with the cold-upgrade sidecar agent on image, changed by mutate.
func logSet(image string, mutate func(*appsv1alpha1.SidecarSet)) *appsv1alpha1.SidecarSet {
	return sidecarSet("logs", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers = []appsv1alpha1.SidecarContainer{sidecar("agent", func(c *appsv1alpha1.SidecarContainer) { c.Image = image })}
		if mutate != nil {
			mutate(s)
		}
	})
}

// logPods are n running, ready Pods pod-0 ... injected by logSet("agent:v1").
func logPods(t *testing.T, n int) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for i := range n {
		in := samplePod()
		in.Name = fmt.Sprintf("pod-%d", i)
		in.UID = types.UID("uid-" + in.Name)
		res, err := Inject(in, []*appsv1alpha1.SidecarSet{logSet("agent:v1", nil)}, metav1.Now())
		if err != nil {
			t.Fatal(err)
		}
		setRunning(res.Pod)
		pods = append(pods, res.Pod)
	}
	return pods
}

func podNames(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// markUpgraded records the SidecarSet's current hash in the Pod, as the engine does when it begins.
func markUpgraded(t *testing.T, pod *corev1.Pod, set *appsv1alpha1.SidecarSet) {
	t.Helper()
	hash, err := CurrentHash(set)
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]pub.SidecarSetUpgradeSpec{}
	if err := json.Unmarshal([]byte(pod.Annotations[pub.SidecarSetHashKey]), &hashes); err != nil {
		t.Fatal(err)
	}
	e := hashes[set.Name]
	e.Hash = hash
	hashes[set.Name] = e
	b, _ := json.Marshal(hashes)
	pod.Annotations[pub.SidecarSetHashKey] = string(b)
}

// startUpgrade records an unfinished upgrade of the Pod's agent to image, as the engine begins it
// (spec image, state with the previous imageID); the kubelet has not restarted the agent yet when
// ready, or cannot start it (an image that is not pulled) when not.
func startUpgrade(pod *corev1.Pod, image string, ready bool) {
	podContainer(pod, "agent").Image = image
	pod.Annotations[pub.SidecarSetInPlaceUpdateStateKey] = `{"logs":{"revision":"old","updateTimestamp":"2026-01-01T00:00:00Z",` +
		`"lastContainerStatuses":{"agent":{"imageID":"agent:v1@id"}},"containerBatchesRecord":[{"timestamp":"2026-01-01T00:00:00Z","containers":["agent"]}]}}`
	if ready {
		return
	}
	st := agentStatus(pod)
	st.Ready, st.State = false, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}
	notReady(pod)
}

func agentStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if s := &pod.Status.ContainerStatuses[i]; s.Name == "agent" {
			return s
		}
	}
	return nil
}

func notReady(pod *corev1.Pod) {
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
}

func TestMatchedAndStatus(t *testing.T) {
	set := logSet("agent:v1", nil)
	set.Generation = 3
	pods := logPods(t, 4)
	for _, p := range pods {
		if !IsMatched(p, nil, set) || !IsUpdated(p, set) || !IsUpgradable(p, set) {
			t.Fatalf("pod %s: matched %v updated %v upgradable %v", p.Name, IsMatched(p, nil, set), IsUpdated(p, set), IsUpgradable(p, set))
		}
	}
	other := pods[3].DeepCopy()
	other.Annotations[appsv1alpha1.SidecarSetListAnnotation] = "another"
	gone := pods[3].DeepCopy()
	gone.Spec.Containers = gone.Spec.Containers[1:] // the sidecar was removed by hand
	done := pods[3].DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	relabelled := pods[3].DeepCopy()
	relabelled.Labels = map[string]string{"app": "other"}
	for name, p := range map[string]*corev1.Pod{"not injected": other, "container gone": gone, "inactive": done, "not selected": relabelled} {
		if IsMatched(p, nil, set) {
			t.Errorf("%s: matched", name)
		}
	}
	paused := set.DeepCopy()
	paused.Spec.InjectionStrategy.Paused = true
	if !IsMatched(pods[0], nil, paused) {
		t.Error("a paused injection still counts the Pods it injected")
	}

	// An image change: nobody updated; one Pod upgraded and not ready yet, one not ready at all.
	v2 := logSet("agent:v2", nil)
	v2.Generation = 4
	if IsUpdated(pods[0], v2) || !IsUpgradable(pods[0], v2) {
		t.Error("after an image change a Pod is not updated but upgradable")
	}
	markUpgraded(t, pods[0], v2)
	notReady(pods[0])
	notReady(pods[1])
	st := ComputeStatus(v2, pods)
	want := appsv1alpha1.SidecarSetStatus{ObservedGeneration: 4, MatchedPods: 4, UpdatedPods: 1, ReadyPods: 2, UpdatedReadyPods: 0}
	if st != want {
		t.Errorf("status %+v, want %+v", st, want)
	}
	// An env change: neither updated nor upgradable.
	env := logSet("agent:v1", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "x"}}
	})
	if IsUpdated(pods[2], env) || IsUpgradable(pods[2], env) {
		t.Error("after an env change a Pod is neither updated nor upgradable")
	}
}

func TestNextUpgrades(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*appsv1alpha1.SidecarSet)
		prepare func(t *testing.T, pods []*corev1.Pod, set *appsv1alpha1.SidecarSet)
		want    []string
		waiting int
	}{
		{name: "maxUnavailable 1 by default", want: []string{"pod-0"}, waiting: 3},
		{name: "maxUnavailable 2", mutate: func(s *appsv1alpha1.SidecarSet) { s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2)) },
			want: []string{"pod-0", "pod-1"}, waiting: 2},
		{name: "maxUnavailable 50%", mutate: func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("50%"))
		},
			want: []string{"pod-0", "pod-1"}, waiting: 2},
		{name: "an updated Pod not ready yet uses the budget", prepare: func(t *testing.T, pods []*corev1.Pod, set *appsv1alpha1.SidecarSet) {
			markUpgraded(t, pods[0], set)
			notReady(pods[0])
		}, want: nil, waiting: 3},
		{name: "Pods not ready go first, outside the budget", prepare: func(t *testing.T, pods []*corev1.Pod, _ *appsv1alpha1.SidecarSet) {
			notReady(pods[2])
			notReady(pods[3])
		}, want: []string{"pod-2", "pod-3", "pod-0"}, waiting: 1},
		{name: "partition 2 keeps the last two", mutate: func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(4))
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2))
		}, want: []string{"pod-0", "pod-1"}, waiting: 2},
		{name: "partition 99% keeps one updated", mutate: func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(4))
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("99%"))
		}, want: []string{"pod-0"}, waiting: 3},
		{name: "selector", mutate: func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(4))
			s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		}, prepare: func(_ *testing.T, pods []*corev1.Pod, _ *appsv1alpha1.SidecarSet) {
			pods[2].Labels["canary"] = "true"
		}, want: []string{"pod-2"}},
		{name: "priority weight first", mutate: func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.PriorityStrategy = &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{
				{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"prio": "high"}}}}}
		}, prepare: func(_ *testing.T, pods []*corev1.Pod, _ *appsv1alpha1.SidecarSet) {
			pods[3].Labels["prio"] = "high"
		}, want: []string{"pod-3"}, waiting: 3},
		{name: "an upgrade under way waits", mutate: func(s *appsv1alpha1.SidecarSet) { s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(4)) },
			prepare: func(_ *testing.T, pods []*corev1.Pod, _ *appsv1alpha1.SidecarSet) {
				startUpgrade(pods[1], "agent:v1b", true)
			}, want: []string{"pod-0", "pod-2", "pod-3"}, waiting: 1},
		{name: "an unfinished upgrade whose sidecar is not ready is superseded", mutate: func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(4))
		}, prepare: func(_ *testing.T, pods []*corev1.Pod, _ *appsv1alpha1.SidecarSet) {
			startUpgrade(pods[1], "agent:bad", false)
		}, want: []string{"pod-1", "pod-0", "pod-2", "pod-3"}},
		{name: "an unfinished upgrade whose sidecar runs its new image does not wait", mutate: func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(4))
		}, prepare: func(_ *testing.T, pods []*corev1.Pod, _ *appsv1alpha1.SidecarSet) {
			startUpgrade(pods[1], "agent:v1b", true)
			st := agentStatus(pods[1])
			st.Image, st.ImageID = "agent:v1b", "agent:v1b@id"
		}, want: []string{"pod-0", "pod-1", "pod-2", "pod-3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := logPods(t, 4)
			set := logSet("agent:v2", tc.mutate)
			if tc.prepare != nil {
				tc.prepare(t, pods, set)
			}
			plan, err := NextUpgrades(set, pods)
			if err != nil {
				t.Fatal(err)
			}
			if got := podNames(plan.Upgrade); !slices.Equal(got, tc.want) {
				t.Errorf("upgrade %v, want %v", got, tc.want)
			}
			if plan.Waiting != tc.waiting || len(plan.NotUpgradable) != 0 {
				t.Errorf("waiting %d (want %d), not upgradable %v", plan.Waiting, tc.waiting, podNames(plan.NotUpgradable))
			}
		})
	}

	pods := logPods(t, 2)
	env := logSet("agent:v1", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "x"}}
	})
	plan, err := NextUpgrades(env, pods)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Upgrade) != 0 || !slices.Equal(podNames(plan.NotUpgradable), []string{"pod-0", "pod-1"}) {
		t.Errorf("env change: upgrade %v, not upgradable %v", podNames(plan.Upgrade), podNames(plan.NotUpgradable))
	}
	if got := UpgradeImages(pods[0], logSet("agent:v2", nil)); len(got) != 1 || got["agent"] != "agent:v2" {
		t.Errorf("UpgradeImages %v", got)
	}
}

func TestUpgradableCondition(t *testing.T) {
	pod := logPods(t, 1)[0]
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cond, changed := UpgradableCondition(pod, logSet("v", nil), true, t0)
	if !changed || cond.Status != corev1.ConditionTrue || cond.Reason != "AllSidecarsetUpgradable" || cond.Message != `{"logs":true}` || !cond.LastTransitionTime.Equal(&t0) {
		t.Fatalf("first: %+v changed %v", cond, changed)
	}
	pod.Status.Conditions = append(pod.Status.Conditions, cond)
	if _, changed := UpgradableCondition(pod, logSet("v", nil), true, t0); changed {
		t.Error("the same again changed the condition")
	}
	t1 := metav1.NewTime(t0.Add(time.Minute))
	mesh := sidecarSet("mesh", nil)
	cond, changed = UpgradableCondition(pod, mesh, false, t1)
	if !changed || cond.Status != corev1.ConditionFalse || cond.Reason != "UpdateImmutableField" || cond.Message != `{"logs":true,"mesh":false}` || !cond.LastTransitionTime.Equal(&t1) {
		t.Errorf("second SidecarSet not upgradable: %+v changed %v", cond, changed)
	}
}
