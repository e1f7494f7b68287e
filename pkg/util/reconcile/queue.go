package reconcile

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Queue is a controller's workqueue: every controller keys it by the object's name (Namespace
// empty for a cluster-scoped kind).
type Queue = workqueue.TypedRateLimitingInterface[cache.ObjectName]

// NewQueue is a controller's rate-limited workqueue (client-go's default controller backoff),
// named for the workqueue metrics.
func NewQueue(name string) Queue {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: name})
}

// Handlers is what a controller does on an informer's events, with the objects as T; a nil func
// is not called. Delete is also called with the last state known of an object whose deletion the
// watch missed (the tombstone of a relist).
type Handlers[T any] struct {
	Add    func(obj T)
	Update func(old, obj T)
	Delete func(obj T)
}

// OnChange calls f with the object of every add, update (the new object) and delete.
func OnChange[T any](f func(obj T)) Handlers[T] {
	return Handlers[T]{Add: f, Update: func(_, obj T) { f(obj) }, Delete: f}
}

// OnEither calls f with the object of every add and delete, and with both the old and the new
// object of an update: for a controller whose key is read from a field an update may change (an
// owner, the SidecarSets a Pod names), so that the key it had and the key it has both hear of it.
func OnEither[T any](f func(obj T)) Handlers[T] {
	return Handlers[T]{Add: f, Update: func(old, obj T) { f(old); f(obj) }, Delete: f}
}

// EnqueueIf enqueues, on every add and update, the objects wants selects: the handlers of a
// controller that acts on some objects of a kind (the Pods with an update under way...).
func EnqueueIf[T metav1.Object](queue Queue, wants func(obj T) bool) Handlers[T] {
	return Handlers[T]{
		Add: func(obj T) {
			if wants(obj) {
				queue.Add(cache.MetaObjectToName(obj))
			}
		},
		Update: func(_, obj T) {
			if wants(obj) {
				queue.Add(cache.MetaObjectToName(obj))
			}
		},
	}
}

// Watch adds h to informer; objects that are not a T are passed over. what names the objects in
// the error.
func Watch[T any](informer cache.SharedInformer, what string, h Handlers[T]) error {
	var funcs cache.ResourceEventHandlerFuncs
	if h.Add != nil {
		funcs.AddFunc = func(obj any) {
			if t, ok := obj.(T); ok {
				h.Add(t)
			}
		}
	}
	if h.Update != nil {
		funcs.UpdateFunc = func(oldObj, obj any) {
			old, ok1 := oldObj.(T)
			t, ok2 := obj.(T)
			if ok1 && ok2 {
				h.Update(old, t)
			}
		}
	}
	if h.Delete != nil {
		funcs.DeleteFunc = func(obj any) {
			if t, ok := ObjectOf[T](obj); ok {
				h.Delete(t)
			}
		}
	}
	if _, err := informer.AddEventHandler(funcs); err != nil {
		return fmt.Errorf("watching %s: %w", what, err)
	}
	return nil
}
