package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// A failed sync is retried, a sync asking for a later look is called again, and Run returns
// once ctx ends with its workers stopped.
func TestRun(t *testing.T) {
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	var mu sync.Mutex
	calls := map[string]int{}
	done := make(chan struct{})
	syncKey := func(_ context.Context, key string) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[key]++
		switch {
		case key == "fails-once" && calls[key] == 1:
			return 0, errors.New("transient")
		case key == "later" && calls[key] == 1:
			return 5 * time.Millisecond, nil
		}
		if calls["fails-once"] == 2 && calls["later"] == 2 {
			select {
			case <-done:
			default:
				close(done)
			}
		}
		return 0, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		Run(ctx, "test", 2, queue, syncKey, func() bool { return true })
		close(stopped)
	}()
	queue.Add("fails-once")
	queue.Add("later")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("keys not synced twice: %v", calls)
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
	if !queue.ShuttingDown() {
		t.Error("queue not shut down")
	}
}

// TestObjectOf: an object, a tombstone of one, and neither.
func TestObjectOf(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if got, ok := ObjectOf[*corev1.Pod](pod); !ok || got != pod {
		t.Errorf("ObjectOf(pod) = %v, %v", got, ok)
	}
	if got, ok := ObjectOf[*corev1.Pod](cache.DeletedFinalStateUnknown{Key: "p", Obj: pod}); !ok || got != pod {
		t.Errorf("ObjectOf(tombstone of pod) = %v, %v", got, ok)
	}
	if got, ok := ObjectOf[*corev1.Node](pod); ok || got != nil {
		t.Errorf("ObjectOf[*Node](pod) = %v, %v", got, ok)
	}
	if _, ok := ObjectOf[*corev1.Pod](cache.DeletedFinalStateUnknown{Key: "p"}); ok {
		t.Error("ObjectOf(empty tombstone) ok")
	}
}

func TestSoonest(t *testing.T) {
	for _, tc := range []struct {
		delays []time.Duration
		want   time.Duration
	}{
		{nil, 0},
		{[]time.Duration{0, -time.Second}, 0},
		{[]time.Duration{0, 3 * time.Second, time.Second}, time.Second},
		{[]time.Duration{2 * time.Second, -time.Second, 0}, 2 * time.Second},
	} {
		if got := Soonest(tc.delays...); got != tc.want {
			t.Errorf("Soonest(%v) = %v, want %v", tc.delays, got, tc.want)
		}
	}
}

// Found: an object not found is nothing to do (false, no error); another error is passed on.
func TestFound(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if got, ok, err := Found(pod, nil); got != pod || !ok || err != nil {
		t.Errorf("found: %v %v %v, want the pod, true, nil", got, ok, err)
	}
	gone := apierrors.NewNotFound(corev1.Resource("pods"), "p")
	if _, ok, err := Found[*corev1.Pod](nil, gone); ok || err != nil {
		t.Errorf("not found: %v %v, want false, nil", ok, err)
	}
	broken := errors.New("broken")
	if _, ok, err := Found[*corev1.Pod](nil, broken); ok || !errors.Is(err, broken) {
		t.Errorf("error: %v %v, want false and the error", ok, err)
	}
}
