package statefulset

import (
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/workload/rolloutmetrics"
)

// newRollouts is the gauge of --rollout-metrics for Advanced StatefulSets, with the states of
// CloneSets' (inplace_controller_cloneset_pods): a rollout's progress is updated_ready / desired.
func newRollouts() *rolloutmetrics.Collector[*v1beta1.StatefulSet] {
	return rolloutmetrics.New("inplace_controller_statefulset_pods",
		"Pods of each Advanced StatefulSet by state (desired: spec.replicas; the others from its status), with --rollout-metrics.",
		"statefulset", rolloutCounts)
}

var rollouts = newRollouts()

// ExposeRollouts registers the gauge (once per process) over the StatefulSets of sets; a later
// call (a controller built again after a lost leadership) points it at the new cache.
func ExposeRollouts(sets listers.StatefulSetLister) { rollouts.Expose(sets.List) }

func rolloutCounts(set *v1beta1.StatefulSet) []rolloutmetrics.Count {
	st := set.Status
	return rolloutmetrics.Replicas{Desired: set.Spec.Replicas, Updated: st.UpdatedReplicas, UpdatedReady: st.UpdatedReadyReplicas,
		Ready: st.ReadyReplicas, Available: st.AvailableReplicas}.Counts()
}
