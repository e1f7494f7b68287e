package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

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
