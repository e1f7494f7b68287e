// Package daemontest holds what the unit tests of the daemon's controllers share: running a
// controller off its informers for one test, one sync of a key, the patches a fake client saw and
// the Events a fake recorder caught.
package daemontest

import (
	"context"
	"reflect"
	"testing"
	"time"

	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/inplace-dev/inplace/pkg/util/informertest"
)

// Informers is a client-go informer factory: what RunWithInformers starts and shuts down.
type Informers interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
	Shutdown()
}

// RunWithInformers starts the informers (of client, a fake clientset) and run (a controller's Run)
// as the daemon does, and stops both when the test ends, waiting for run to return first. Its
// context is the one they run under. It returns once every informer has synced and watches: a
// write through client after it reaches the informers.
func RunWithInformers(t testing.TB, informers Informers, client informertest.FakeClientset, run func(context.Context)) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	watches := informertest.Track(client)
	informers.Start(ctx.Done())
	watches.WaitForTotal(t, len(informers.WaitForCacheSync(ctx.Done())))
	go func() {
		defer close(done)
		run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		informers.Shutdown()
	})
	return ctx
}

// Events drains what the recorder caught so far.
func Events(recorder *record.FakeRecorder) []string {
	var events []string
	for {
		select {
		case e := <-recorder.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}

// Sync runs a controller's sync of key once, as a worker would, failing t on an error; it returns
// when the sync asks to look again.
func Sync(t testing.TB, ctx context.Context, sync func(context.Context, cache.ObjectName) (time.Duration, error),
	key cache.ObjectName) time.Duration {
	t.Helper()
	requeue, err := sync(ctx, key)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return requeue
}

// Patches are the patches among a fake client's actions, in order; with subresource set, only
// those of that subresource.
func Patches(actions []k8stesting.Action, subresource string) []k8stesting.PatchAction {
	var out []k8stesting.PatchAction
	for _, a := range actions {
		if p, ok := a.(k8stesting.PatchAction); ok && (subresource == "" || p.GetSubresource() == subresource) {
			out = append(out, p)
		}
	}
	return out
}
