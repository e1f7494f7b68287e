package inplaceupdate

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

func podWithState(raw string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: map[string]string{pub.InPlaceUpdateStateKey: raw}}}
}

func stateJSON(t testing.TB, completed bool) string {
	st := &state{InPlaceUpdateState: pub.InPlaceUpdateState{Revision: "r2", UpdateTimestamp: metav1.Now(),
		LastContainerStatuses: map[string]pub.InPlaceUpdateContainerStatus{"main": {ImageID: "sha256:1"}}}}
	if completed {
		st.CompletedTimestamp = ptrTime(time.Now())
	}
	p := &corev1.Pod{}
	writeState(p, st)
	return p.Annotations[pub.InPlaceUpdateStateKey]
}

// TestInProgressAndCompleted: the predicates follow the annotation's text, read again or not
// (the cache is keyed by the text, so a changed annotation is never answered from an old entry).
func TestInProgressAndCompleted(t *testing.T) {
	running, done := stateJSON(t, false), stateJSON(t, true)
	for _, tc := range []struct {
		name                  string
		pod                   *corev1.Pod
		inProgress, completed bool
	}{
		{"no annotation", &corev1.Pod{}, false, false},
		{"not JSON", podWithState("{not json"), false, false},
		{"in progress", podWithState(running), true, false},
		{"completed", podWithState(done), false, true},
		{"grace period", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			pub.InPlaceUpdateStateKey: done, pub.InPlaceUpdateGraceKey: "{}"}}}, true, false},
		{"legacy key", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{pub.InPlaceUpdateStateKeyOld: running}}}, true, false},
	} {
		for round := 1; round <= 2; round++ { // the second round is answered from the cache
			if got := IsInProgress(tc.pod); got != tc.inProgress {
				t.Errorf("%s (read %d): IsInProgress %v, want %v", tc.name, round, got, tc.inProgress)
			}
			if got := IsCompleted(tc.pod); got != tc.completed {
				t.Errorf("%s (read %d): IsCompleted %v, want %v", tc.name, round, got, tc.completed)
			}
		}
	}
	// The same Pod object, its update completed: the answer changes with the text.
	pod := podWithState(running)
	if !IsInProgress(pod) {
		t.Fatal("in progress before completion")
	}
	pod.Annotations[pub.InPlaceUpdateStateKey] = done
	if IsInProgress(pod) || !IsCompleted(pod) {
		t.Error("after completion: still in progress, or not completed")
	}
}

// BenchmarkIsInProgress: the predicate on a Pod event (the annotation unchanged since the last
// event, as for most events of a Pod under update) against decoding the annotation each time.
func BenchmarkIsInProgress(b *testing.B) {
	pod := podWithState(stateJSON(b, false))
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			st, ok, err := readState(pod)
			if !ok || err != nil || st.completed() {
				b.Fatal("want in progress")
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if !IsInProgress(pod) {
				b.Fatal("want in progress")
			}
		}
	})
}
