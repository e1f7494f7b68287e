package daemonset

import (
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/workload/rolloutmetrics"
)

// newRollouts is the gauge of --rollout-metrics for Advanced DaemonSets: its status's counts of
// nodes (one Pod each), named as kube-state-metrics names a DaemonSet's. A rollout's progress is
// updated / desired; it is done when available == desired too.
func newRollouts() *rolloutmetrics.Collector[*v1alpha1.DaemonSet] {
	return rolloutmetrics.New("inplace_controller_daemonset_pods",
		"Pods of each Advanced DaemonSet by state (its status: desired, scheduled and misscheduled nodes, updated, ready, available Pods), with --rollout-metrics.",
		"daemonset", rolloutCounts)
}

var rollouts = newRollouts()

// ExposeRollouts registers the gauge (once per process) over the DaemonSets of sets; a later call
// (a controller built again after a lost leadership) points it at the new cache.
func ExposeRollouts(sets listers.DaemonSetLister) { rollouts.Expose(sets.List) }

func rolloutCounts(ds *v1alpha1.DaemonSet) []rolloutmetrics.Count {
	st := ds.Status
	return []rolloutmetrics.Count{
		{State: "desired", Pods: st.DesiredNumberScheduled}, {State: "scheduled", Pods: st.CurrentNumberScheduled},
		{State: "misscheduled", Pods: st.NumberMisscheduled}, {State: "updated", Pods: st.UpdatedNumberScheduled},
		{State: "ready", Pods: st.NumberReady}, {State: "available", Pods: st.NumberAvailable},
	}
}
