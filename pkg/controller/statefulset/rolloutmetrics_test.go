package statefulset

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1beta1"
)

// TestRolloutMetrics: with --rollout-metrics each Advanced StatefulSet in the cache has its Pods
// by state.
func TestRolloutMetrics(t *testing.T) {
	idx := controllertest.Indexer(t, &v1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
		Spec:       v1beta1.StatefulSetSpec{Replicas: ptr.To[int32](3)},
		Status:     v1beta1.StatefulSetStatus{UpdatedReplicas: 2, UpdatedReadyReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 2},
	})
	c := newRollouts() // not the registered one: the test's registry takes its own
	c.Read(listers.NewStatefulSetLister(idx).List)
	want := `
# HELP inplace_controller_statefulset_pods [ALPHA] Pods of each Advanced StatefulSet by state (desired: spec.replicas; the others from its status), with --rollout-metrics.
# TYPE inplace_controller_statefulset_pods gauge
inplace_controller_statefulset_pods{namespace="shop",state="available",statefulset="db"} 2
inplace_controller_statefulset_pods{namespace="shop",state="desired",statefulset="db"} 3
inplace_controller_statefulset_pods{namespace="shop",state="ready",statefulset="db"} 3
inplace_controller_statefulset_pods{namespace="shop",state="updated",statefulset="db"} 2
inplace_controller_statefulset_pods{namespace="shop",state="updated_ready",statefulset="db"} 1
`
	controllertest.CompareMetrics(t, c, want, "inplace_controller_statefulset_pods")
}
