package informertest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// A Pod created once WaitFor returned reaches the informer, every time, and the watches are
// counted per informer started.
func TestWriteAfterWaitForReachesTheInformer(t *testing.T) {
	for i := range 50 {
		kube := fake.NewClientset()
		watches := Track(kube)
		factory := informers.NewSharedInformerFactory(kube, 0)
		pods := factory.Core().V1().Pods().Informer()
		factory.Core().V1().ConfigMaps().Informer()
		ctx, cancel := context.WithCancel(context.Background())
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
		watches.WaitFor(t, "pods", 1)
		watches.WaitForTotal(t, 2)

		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0"}}
		if _, err := kube.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			_, found, _ := pods.GetIndexer().GetByKey("ns/web-0")
			return found, nil
		})
		if err != nil {
			t.Fatalf("round %d: the Pod created after WaitFor did not reach the informer", i)
		}
		if got := watches.Count("pods"); got != 1 {
			t.Errorf("round %d: %d watches of pods counted, want 1", i, got)
		}
		cancel()
		factory.Shutdown()
	}
}
