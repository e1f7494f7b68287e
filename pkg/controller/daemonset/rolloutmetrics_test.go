package daemonset

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
)

// TestRolloutMetrics: with --rollout-metrics each Advanced DaemonSet in the cache has its Pods by
// state.
func TestRolloutMetrics(t *testing.T) {
	idx := controllertest.Indexer(t, &v1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent"},
		Status: v1alpha1.DaemonSetStatus{DesiredNumberScheduled: 5, CurrentNumberScheduled: 4, NumberMisscheduled: 1,
			UpdatedNumberScheduled: 3, NumberReady: 4, NumberAvailable: 2},
	})
	c := newRollouts() // not the registered one: the test's registry takes its own
	c.Read(listers.NewDaemonSetLister(idx).List)
	want := `
# HELP inplace_controller_daemonset_pods [ALPHA] Pods of each Advanced DaemonSet by state (its status: desired, scheduled and misscheduled nodes, updated, ready, available Pods), with --rollout-metrics.
# TYPE inplace_controller_daemonset_pods gauge
inplace_controller_daemonset_pods{daemonset="agent",namespace="kube-system",state="available"} 2
inplace_controller_daemonset_pods{daemonset="agent",namespace="kube-system",state="desired"} 5
inplace_controller_daemonset_pods{daemonset="agent",namespace="kube-system",state="misscheduled"} 1
inplace_controller_daemonset_pods{daemonset="agent",namespace="kube-system",state="ready"} 4
inplace_controller_daemonset_pods{daemonset="agent",namespace="kube-system",state="scheduled"} 4
inplace_controller_daemonset_pods{daemonset="agent",namespace="kube-system",state="updated"} 3
`
	controllertest.CompareMetrics(t, c, want, "inplace_controller_daemonset_pods")
}
