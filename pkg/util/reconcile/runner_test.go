package reconcile

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

type runnerFunc func(ctx context.Context, workers int)

func (f runnerFunc) Run(ctx context.Context, workers int) { f(ctx, workers) }

// RunAll runs the controllers once the caches synced (synced called by then), with the workers
// asked for, until ctx ends.
func TestRunAll(t *testing.T) {
	factory := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	var syncedCalled atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ran := make(chan int, 1)
	inits := []Init[kubeinformers.SharedInformerFactory]{{Name: "off", New: func(kubeinformers.SharedInformerFactory) (Runner, error) {
		return nil, nil // switched off: RunAll passes it over
	}}, {Name: "pods", New: func(f kubeinformers.SharedInformerFactory) (Runner, error) {
		f.Core().V1().Pods().Informer() // registered before the start, as controllers do
		return runnerFunc(func(ctx context.Context, workers int) {
			if !syncedCalled.Load() {
				t.Error("controller started before synced was called")
			}
			ran <- workers
			cancel()
			<-ctx.Done()
		}), nil
	}}}
	err := RunAll(ctx, factory, 3, inits, []InformerFactory{factory}, func() { syncedCalled.Store(true) })
	if err != nil {
		t.Fatal(err)
	}
	if got := <-ran; got != 3 {
		t.Errorf("ran with %d workers, want 3", got)
	}
}

// A controller that cannot be built stops the others from being built or run; the error names it.
func TestRunAllInitError(t *testing.T) {
	later := false
	inits := []Init[struct{}]{
		{Name: "broken", New: func(struct{}) (Runner, error) { return nil, errors.New("no lister") }},
		{Name: "later", New: func(struct{}) (Runner, error) { later = true; return runnerFunc(func(context.Context, int) {}), nil }},
	}
	err := RunAll(t.Context(), struct{}{}, 1, inits, nil, func() { t.Error("synced called") })
	if err == nil || !strings.Contains(err.Error(), "creating controller broken: no lister") {
		t.Fatalf("err %v, want it to name the controller and its error", err)
	}
	if later {
		t.Error("the controller after the broken one was built")
	}
}
