package serving

import (
	"context"
	"testing"
	"time"

	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

type runnerFunc func(ctx context.Context, workers int)

func (f runnerFunc) Run(ctx context.Context, workers int) { f(ctx, workers) }

// RunControllers runs the controllers once the caches synced (syncing cleared by then), with the
// workers asked for, until ctx ends.
func TestRunControllers(t *testing.T) {
	factory := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	factory.Core().V1().Pods().Informer() // registered before the start, as controllers do
	syncing := &Syncing{}
	syncing.Set(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ran := make(chan int, 1)
	err := RunControllers(ctx, 3, syncing, []InformerFactory{factory}, []Runner{runnerFunc(func(ctx context.Context, workers int) {
		if syncing.Syncing() {
			t.Error("controller started while syncing")
		}
		ran <- workers
		cancel()
		<-ctx.Done()
	})})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-ran; got != 3 {
		t.Errorf("ran with %d workers, want 3", got)
	}
}
