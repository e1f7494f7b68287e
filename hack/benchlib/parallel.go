package benchlib

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Parallel runs op on every name with n clients and returns each call's latency and the wall
// time; it stops at the first error.
func Parallel(ctx context.Context, n int, names []string, op func(context.Context, string) error) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, len(names))
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				t := time.Now()
				if err := op(ctx, names[i]); err != nil {
					errs <- fmt.Errorf("%s: %w", names[i], err)
					return
				}
				lat[i] = time.Since(t)
			}
		}()
	}
feed:
	for i := range names {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			return nil, 0, err
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return nil, 0, err
	default:
	}
	return lat, time.Since(start), ctx.Err()
}
