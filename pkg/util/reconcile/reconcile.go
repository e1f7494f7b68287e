// Package reconcile runs a controller's workers: the loop every inplace controller shares of
// taking a key off its rate-limited workqueue, syncing it, and putting it back when the sync
// failed (with backoff) or asked to be called again later.
package reconcile

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// SyncFunc reconciles one key. A non-zero duration asks for the key again after it (time, not
// an event, is what the object waits for); an error retries the key with backoff.
type SyncFunc[K comparable] func(ctx context.Context, key K) (time.Duration, error)

// Run waits for the informer caches, then runs workers syncing keys from queue until ctx ends;
// it shuts the queue down and returns once every worker has stopped. name labels the logs.
func Run[K comparable](ctx context.Context, name string, workers int, queue workqueue.TypedRateLimitingInterface[K],
	syncKey SyncFunc[K], synced ...cache.InformerSynced) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("controller", name)
	ctx = klog.NewContext(ctx, logger)

	var wg sync.WaitGroup
	defer wg.Wait()
	defer queue.ShutDown() // runs first: the workers' Get returns quit

	if !cache.WaitForNamedCacheSyncWithContext(ctx, synced...) {
		return
	}
	logger.Info("Starting workers", "workers", workers)
	for range workers {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for next(ctx, queue, syncKey) {
				}
			}, time.Second)
		})
	}
	<-ctx.Done()
	logger.Info("Stopping workers")
}

func next[K comparable](ctx context.Context, queue workqueue.TypedRateLimitingInterface[K], syncKey SyncFunc[K]) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	requeueAfter, err := syncKey(ctx, key)
	switch {
	case err != nil:
		utilruntime.HandleErrorWithContext(ctx, err, "Sync failed, retrying", "key", key)
		queue.AddRateLimited(key)
	case requeueAfter > 0:
		queue.Forget(key)
		queue.AddAfter(key, requeueAfter)
	default:
		queue.Forget(key)
	}
	return true
}

// ObjectOf is an informer event's object as a T: the object itself, or the last state known of a
// deleted one (the cache.DeletedFinalStateUnknown tombstone a relist hands a delete handler when
// the watch missed the deletion); false when it is not a T.
func ObjectOf[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	t, ok := obj.(T)
	return t, ok
}

// Found is what a lister's Get returned, for a sync: false, with no error, when the object is
// not found (it is gone, so there is nothing to do); the lister's error otherwise.
//
//	pod, ok, err := reconcile.Found(c.pods.Pods(key.Namespace).Get(key.Name))
//	if !ok || err != nil {
//		return 0, err
//	}
func Found[T any](obj T, err error) (T, bool, error) {
	if apierrors.IsNotFound(err) {
		return obj, false, nil
	}
	return obj, err == nil, err
}

// Soonest is the shortest of the positive delays (when to look at an object again, for the
// first of the things it waits for), or 0 when none is: a sync's requeue, where 0 asks for none.
func Soonest(delays ...time.Duration) time.Duration {
	var soonest time.Duration
	for _, d := range delays {
		if d > 0 && (soonest == 0 || d < soonest) {
			soonest = d
		}
	}
	return soonest
}
