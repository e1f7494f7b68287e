package rolloutmetrics

import (
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

// The gauges of the three workload kinds, in one place. Their names, labels and help texts are a
// public interface (dashboards and alerts read them): keep them as they are. Each is registered by
// Expose when inplace-controller runs with --rollout-metrics; a later Expose (a controller built
// again after a lost leadership) points it at the new cache.
var (
	// CloneSets: for each CloneSet, how many Pods it wants and how many are updated, updated and
	// ready, ready, available, as its status says. A rollout's progress on a dashboard is
	// updated_ready / desired.
	CloneSets = newCloneSets()
	// StatefulSets: Advanced StatefulSets, with the states of CloneSets'.
	StatefulSets = newStatefulSets()
	// DaemonSets: Advanced DaemonSets, by their status's counts of nodes (one Pod each), named as
	// kube-state-metrics names a DaemonSet's. A rollout's progress is updated / desired; it is done
	// when available == desired too.
	DaemonSets = newDaemonSets()
)

func newCloneSets() *Collector[*v1alpha1.CloneSet] {
	return New("inplace_controller_cloneset_pods",
		"Pods of each CloneSet by state (desired: spec.replicas; the others from its status), with --rollout-metrics.",
		"cloneset", func(cs *v1alpha1.CloneSet) []Count {
			st := cs.Status
			return Replicas{Desired: cs.Spec.Replicas, Updated: st.UpdatedReplicas, UpdatedReady: st.UpdatedReadyReplicas,
				Ready: st.ReadyReplicas, Available: st.AvailableReplicas}.Counts()
		})
}

func newStatefulSets() *Collector[*v1beta1.StatefulSet] {
	return New("inplace_controller_statefulset_pods",
		"Pods of each Advanced StatefulSet by state (desired: spec.replicas; the others from its status), with --rollout-metrics.",
		"statefulset", func(set *v1beta1.StatefulSet) []Count {
			st := set.Status
			return Replicas{Desired: set.Spec.Replicas, Updated: st.UpdatedReplicas, UpdatedReady: st.UpdatedReadyReplicas,
				Ready: st.ReadyReplicas, Available: st.AvailableReplicas}.Counts()
		})
}

func newDaemonSets() *Collector[*v1alpha1.DaemonSet] {
	return New("inplace_controller_daemonset_pods",
		"Pods of each Advanced DaemonSet by state (its status: desired, scheduled and misscheduled nodes, updated, ready, available Pods), with --rollout-metrics.",
		"daemonset", func(ds *v1alpha1.DaemonSet) []Count {
			st := ds.Status
			return []Count{
				{State: "desired", Pods: st.DesiredNumberScheduled}, {State: "scheduled", Pods: st.CurrentNumberScheduled},
				{State: "misscheduled", Pods: st.NumberMisscheduled}, {State: "updated", Pods: st.UpdatedNumberScheduled},
				{State: "ready", Pods: st.NumberReady}, {State: "available", Pods: st.NumberAvailable},
			}
		})
}
