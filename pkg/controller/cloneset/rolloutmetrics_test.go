package cloneset

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
)

// TestRolloutMetrics: with --rollout-metrics each CloneSet in the cache has its Pods by state.
func TestRolloutMetrics(t *testing.T) {
	idx := controllertest.Indexer(t, &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec:       v1alpha1.CloneSetSpec{Replicas: ptr.To[int32](5)},
		Status:     v1alpha1.CloneSetStatus{UpdatedReplicas: 3, UpdatedReadyReplicas: 2, ReadyReplicas: 4, AvailableReplicas: 4},
	})
	c := newRollouts() // not the registered one: the test's registry takes its own
	c.Read(listers.NewCloneSetLister(idx).List)
	want := `
# HELP inplace_controller_cloneset_pods [ALPHA] Pods of each CloneSet by state (desired: spec.replicas; the others from its status), with --rollout-metrics.
# TYPE inplace_controller_cloneset_pods gauge
inplace_controller_cloneset_pods{cloneset="web",namespace="shop",state="available"} 4
inplace_controller_cloneset_pods{cloneset="web",namespace="shop",state="desired"} 5
inplace_controller_cloneset_pods{cloneset="web",namespace="shop",state="ready"} 4
inplace_controller_cloneset_pods{cloneset="web",namespace="shop",state="updated"} 3
inplace_controller_cloneset_pods{cloneset="web",namespace="shop",state="updated_ready"} 2
`
	controllertest.CompareMetrics(t, c, want, "inplace_controller_cloneset_pods")
}
