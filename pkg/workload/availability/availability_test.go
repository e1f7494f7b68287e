package availability

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type podOpt func(*corev1.Pod)

// ready makes the Pod run and be Ready since then.
func ready(since time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady,
			Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)})
	}
}

func running() podOpt { return func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning } }

func gate(s corev1.ConditionStatus) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: s})
	}
}

func state(s pub.LifecycleStateType) podOpt {
	return func(p *corev1.Pod) { p.Labels[pub.LifecycleStateKey] = string(s) }
}

func newPod(opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", Labels: map[string]string{}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

// A ready Pod that a lifecycle hook still holds is not available, as in OpenKruise: only Normal
// (or no state) counts, so a rollout does not look done while a hook holds a Pod.
func TestAvailableNeedsNormal(t *testing.T) {
	for s, want := range map[pub.LifecycleStateType]bool{
		"": true, pub.LifecycleStateNormal: true,
		pub.LifecycleStatePreparingNormal: false, pub.LifecycleStateUpdated: false, pub.LifecycleStatePreparingDelete: false,
	} {
		pod := newPod(ready(testNow.Add(-time.Hour)))
		if s != "" {
			state(s)(pod)
		}
		if got, _ := Available(pod, 10, testNow); got != want {
			t.Errorf("state %q: available %v, want %v", s, got, want)
		}
	}
}

// A Pod is ready, for the counters and the update budget, only when it runs, is Ready and no
// in-place update holds its InPlaceUpdateReady gate False: inplace writes the gate alone and the
// kubelet turns Ready False a moment later, so the gate must count at once.
func TestReadyNeedsGateAndRunning(t *testing.T) {
	for name, tc := range map[string]struct {
		opts []podOpt
		want bool
	}{
		"ready":                          {[]podOpt{ready(testNow.Add(-time.Hour))}, true},
		"ready, gate True":               {[]podOpt{ready(testNow.Add(-time.Hour)), gate(corev1.ConditionTrue)}, true},
		"ready, gate False":              {[]podOpt{ready(testNow.Add(-time.Hour)), gate(corev1.ConditionFalse)}, false},
		"ready condition, phase Pending": {[]podOpt{ready(testNow.Add(-time.Hour)), func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }}, false},
		"running, not ready":             {[]podOpt{running()}, false},
	} {
		pod := newPod(tc.opts...)
		if got := Ready(pod); got != tc.want {
			t.Errorf("%s: ready %v, want %v", name, got, tc.want)
		}
		if got, _ := Available(pod, 0, testNow); got != tc.want {
			t.Errorf("%s: available %v, want %v", name, got, tc.want)
		}
	}
}

// minReadySeconds counts from Ready's last transition; until then Available says how long is left.
func TestAvailableMinReadySeconds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readyFor time.Duration
		min      int32
		want     bool
		wantLeft time.Duration
	}{
		{"no minimum", 0, 0, true, 0},
		{"not yet", 4 * time.Second, 10, false, 6 * time.Second},
		{"just now", 10 * time.Second, 10, true, 0},
		{"long ago", time.Hour, 10, true, 0},
	} {
		got, left := Available(newPod(ready(testNow.Add(-tc.readyFor))), tc.min, testNow)
		if got != tc.want || left != tc.wantLeft {
			t.Errorf("%s: available %v (left %v), want %v (left %v)", tc.name, got, left, tc.want, tc.wantLeft)
		}
	}
}
