package updatesort

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

func pod(name string, labels map[string]string, ready bool, created int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
		CreationTimestamp: metav1.NewTime(time.Unix(int64(created), 0))},
		Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(time.Unix(100, 0))}}
	return p
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func isReady(p *corev1.Pod) bool {
	c := podReadyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

func TestScatter(t *testing.T) {
	var pods []*corev1.Pod
	// Zone a first in the incoming order: a-0 a-1 a-2 b-0 ... b-5.
	for i := range 3 {
		pods = append(pods, pod(fmt.Sprintf("a-%d", i), map[string]string{"zone": "a"}, true, i))
	}
	for i := range 6 {
		pods = append(pods, pod(fmt.Sprintf("b-%d", i), map[string]string{"zone": "b"}, true, i))
	}
	Scatter(pods, pub.UpdateScatterStrategy{{Key: "zone", Value: "a"}})
	want := []string{"b-0", "a-0", "b-1", "b-2", "a-1", "b-3", "b-4", "a-2", "b-5"}
	if got := names(pods); !slices.Equal(got, want) {
		t.Errorf("scattered %v, want %v", got, want)
	}
	// One matching Pod, or all: unchanged.
	one := []*corev1.Pod{pod("x-0", nil, true, 0), pod("x-1", nil, true, 1), pod("x-2", map[string]string{"zone": "a"}, true, 2)}
	Scatter(one, pub.UpdateScatterStrategy{{Key: "zone", Value: "a"}})
	if one[2].Name != "x-2" {
		t.Errorf("a single matching pod moved: %v", names(one))
	}
}

func TestSort(t *testing.T) {
	pods := []*corev1.Pod{
		pod("old", map[string]string{"tier": "a"}, true, 1),
		pod("new", map[string]string{"tier": "b"}, true, 2),
		pod("broken", nil, false, 0),
	}
	// Not ready first, then newest first.
	Sort(pods, nil, nil, isReady)
	if got, want := names(pods), []string{"broken", "new", "old"}; !slices.Equal(got, want) {
		t.Errorf("default order %v, want %v", got, want)
	}
	// Weight priority beats age, not readiness.
	weight := &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{
		{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "a"}}}}}
	Sort(pods, weight, nil, isReady)
	if got, want := names(pods), []string{"broken", "old", "new"}; !slices.Equal(got, want) {
		t.Errorf("weighted order %v, want %v", got, want)
	}
}

func TestPartitionRounding(t *testing.T) {
	i := func(v int32) *intstr.IntOrString { p := intstr.FromInt32(v); return &p }
	s := func(v string) *intstr.IntOrString { p := intstr.FromString(v); return &p }
	for _, tc := range []struct {
		p        *intstr.IntOrString
		replicas int
		want     int
	}{
		{nil, 4, 0}, {i(2), 4, 2}, {i(9), 4, 4}, {i(-1), 4, 0},
		{s("50%"), 4, 2}, {s("30%"), 4, 2}, {s("99%"), 4, 3}, {s("100%"), 4, 4}, {s("30%"), 1, 1}, {s("bad"), 4, 0},
	} {
		if got := Partition(tc.p, tc.replicas); got != tc.want {
			t.Errorf("Partition(%v, %d) = %d, want %d", tc.p, tc.replicas, got, tc.want)
		}
	}
}
