// Package daemontest holds what the unit tests of the daemon's controllers share: running a
// controller off its informers for one test, and the Events a fake recorder caught.
package daemontest

import (
	"context"
	"testing"

	"k8s.io/client-go/tools/record"
)

// Informers is an informer factory: what RunWithInformers starts and shuts down.
type Informers interface {
	Start(stopCh <-chan struct{})
	Shutdown()
}

// RunWithInformers starts the informers and run (a controller's Run) as the daemon does, and stops
// both when the test ends, waiting for run to return first. Its context is the one they run
// under.
func RunWithInformers(t testing.TB, informers Informers, run func(context.Context)) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	informers.Start(ctx.Done())
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
