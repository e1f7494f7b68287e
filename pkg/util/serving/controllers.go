package serving

import (
	"context"
	"fmt"
	"reflect"
	"sync"
)

// InformerFactory is a shared informer factory (client-go's or the generated one).
type InformerFactory interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
	Shutdown()
}

// Runner is a controller: it reconciles with the given number of workers until ctx ends.
type Runner interface {
	Run(ctx context.Context, workers int)
}

// RunControllers starts the factories (after the controllers registered their informers), waits
// for their caches, clears syncing, and runs every controller until ctx ends; then it waits for
// them and shuts the factories down. Stopped before the caches synced, it returns nil.
func RunControllers(ctx context.Context, workers int, syncing *Syncing, factories []InformerFactory, controllers []Runner) error {
	for _, f := range factories {
		f.Start(ctx.Done())
		defer f.Shutdown()
	}
	for _, f := range factories {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if ok {
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("informer cache of %v did not sync", typ)
		}
	}
	syncing.Set(false)
	var wg sync.WaitGroup
	for _, c := range controllers {
		wg.Go(func() { c.Run(ctx, workers) })
	}
	wg.Wait()
	return nil
}
