package framework

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Context ends with the test.
func Context(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Poll calls cond every 100 ms until it reports done, and fails the test at the deadline with
// the last error cond gave (cond may explain a "not yet" with an error; done wins over it).
func Poll(t *testing.T, ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		done, err := cond(ctx)
		if done {
			return true, nil
		}
		// The deadline's own errors say nothing about the condition: keep the one before them.
		// client-go's rate limiter refuses a request that would outlast the deadline with an
		// error of its own (not context.DeadlineExceeded), before the context itself ends.
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) &&
			!strings.Contains(err.Error(), "would exceed context deadline") {
			last = err
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

// Consistently checks, every interval for window, that something still holds (check returns
// nil), and fails the test with check's error the first time it does not: an observation window,
// how long a test watches that something does not happen, not a synchronisation.
func Consistently(t *testing.T, ctx context.Context, window, interval time.Duration, check func(context.Context) error) {
	t.Helper()
	for deadline := time.Now().Add(window); time.Now().Before(deadline); {
		if err := check(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(interval):
		}
	}
}
