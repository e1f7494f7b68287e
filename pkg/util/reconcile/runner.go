package reconcile

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"k8s.io/klog/v2"
)

// Runner is a controller as inplace-controller and inplace-daemon run it: it reconciles with the
// given number of workers until ctx ends. Run (this package's worker loop) is what its Run calls.
type Runner interface {
	Run(ctx context.Context, workers int)
}

// Init builds one controller of a program from what the program hands every controller (C:
// inplace-controller's *manager.Context, inplace-daemon's *daemon.Context); Name is used in logs.
// New returns a nil Runner (and no error) for a controller its feature gates switch off.
type Init[C any] struct {
	Name string
	New  func(C) (Runner, error)
}

// InformerFactory is a shared informer factory (client-go's or the generated one).
type InformerFactory interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
	Shutdown()
}

// RunAll builds every controller from cc, in order; then it starts the factories (after the
// controllers registered their informers), waits for their caches, calls synced, and runs every
// controller until ctx ends; then it waits for them and shuts the factories down. A controller
// that cannot be built stops the others from starting, with an error naming it. Stopped before
// the caches synced, it returns nil.
func RunAll[C any](ctx context.Context, cc C, workers int, inits []Init[C], factories []InformerFactory, synced func()) error {
	logger := klog.FromContext(ctx)
	var built []Runner
	for _, init := range inits {
		c, err := init.New(cc)
		if err != nil {
			return fmt.Errorf("creating controller %s: %w", init.Name, err)
		}
		if c == nil {
			logger.Info("Controller switched off by its feature gates", "controller", init.Name)
			continue
		}
		built = append(built, c)
		logger.Info("Created controller", "controller", init.Name)
	}
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
	synced()
	var wg sync.WaitGroup
	for _, c := range built {
		wg.Go(func() { c.Run(ctx, workers) })
	}
	wg.Wait()
	return nil
}
