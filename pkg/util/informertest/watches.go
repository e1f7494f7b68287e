// Package informertest holds what unit tests of informer-driven code need from client-go's fake
// clientsets beyond what they offer.
//
// A fake clientset's tracker has no resource versions: an informer lists, then watches from
// "now", and an object created, changed or deleted between the two is never seen by the
// informer. WaitForCacheSync returns after the list, so a test that writes through the fake
// client right after it races the informer's watch. Watches closes that window: a test waits
// until the watch is registered before it writes.
package informertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
)

// FakeClientset is what every generated fake clientset offers (client-go's and inplace's).
type FakeClientset interface {
	PrependWatchReactor(resource string, reaction k8stesting.WatchReactionFunc)
	Tracker() k8stesting.ObjectTracker
}

// Watches counts the watches registered with a fake clientset's tracker, by resource.
type Watches struct {
	mu      sync.Mutex
	started map[string]int
}

// Track registers the watches of c with its tracker itself (as the fake's default reactor does)
// and counts them. Call it before an informer of c starts.
func Track(c FakeClientset) *Watches {
	w := &Watches{started: map[string]int{}}
	tracker := c.Tracker()
	c.PrependWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if a, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = a.ListOptions
		}
		watcher, err := tracker.Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		w.mu.Lock()
		w.started[action.GetResource().Resource]++
		w.mu.Unlock()
		return true, watcher, nil
	})
	return w
}

// Count is the number of watches of resource (plural, "pods") registered so far.
func (w *Watches) Count(resource string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started[resource]
}

// WaitFor fails the test unless at least n watches of resource are registered within 10 s.
func (w *Watches) WaitFor(t testing.TB, resource string, n int) {
	t.Helper()
	w.waitUntil(t, func() bool { return w.Count(resource) >= n },
		func() string {
			return fmt.Sprintf("%d watches of %s registered, want %d", w.Count(resource), resource, n)
		})
}

// WaitForTotal fails the test unless at least n watches are registered within 10 s, of any
// resource: one per informer a factory started.
func (w *Watches) WaitForTotal(t testing.TB, n int) {
	t.Helper()
	w.waitUntil(t, func() bool { return w.total() >= n },
		func() string { return fmt.Sprintf("%d watches registered, want %d", w.total(), n) })
}

func (w *Watches) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.started {
		n += c
	}
	return n
}

func (w *Watches) waitUntil(t testing.TB, done func() bool, state func() string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return done(), nil
	})
	if err != nil {
		t.Fatalf("%s: an informer did not start its watch", state())
	}
}
