package cloneset

import (
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/workload/rolloutmetrics"
)

// newRollouts is the gauge of --rollout-metrics: for each CloneSet, how many Pods it wants and how
// many are updated, updated and ready, ready, available, as its status says. A rollout's progress
// on a dashboard is updated_ready / desired.
func newRollouts() *rolloutmetrics.Collector[*v1alpha1.CloneSet] {
	return rolloutmetrics.New("inplace_controller_cloneset_pods",
		"Pods of each CloneSet by state (desired: spec.replicas; the others from its status), with --rollout-metrics.",
		"cloneset", rolloutCounts)
}

var rollouts = newRollouts()

// ExposeRollouts registers the gauge (once per process) over the CloneSets of sets; a later call
// (a controller built again after a lost leadership) points it at the new cache.
func ExposeRollouts(sets listers.CloneSetLister) { rollouts.Expose(sets.List) }

func rolloutCounts(cs *v1alpha1.CloneSet) []rolloutmetrics.Count {
	st := cs.Status
	return rolloutmetrics.Replicas{Desired: cs.Spec.Replicas, Updated: st.UpdatedReplicas, UpdatedReady: st.UpdatedReadyReplicas,
		Ready: st.ReadyReplicas, Available: st.AvailableReplicas}.Counts()
}
