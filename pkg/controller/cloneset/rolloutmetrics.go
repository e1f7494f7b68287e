package cloneset

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
)

// rolloutPods is the gauge of --rollout-metrics: for each CloneSet, how many Pods it wants and how
// many are updated, updated and ready, ready, available, as its status says. A rollout's progress
// on a dashboard is updated / desired. Read from the informer's cache at scrape time, so a deleted
// CloneSet's series go with it and nothing is written on the sync path.
var rolloutPods = metrics.NewDesc(
	"inplace_controller_cloneset_pods",
	"Pods of each CloneSet by state (desired: spec.replicas; the others from its status), with --rollout-metrics.",
	[]string{"namespace", "cloneset", "state"}, nil, metrics.ALPHA, "")

type rolloutCollector struct {
	metrics.BaseStableCollector
	sets atomic.Pointer[listers.CloneSetLister]
}

var (
	rollouts         = &rolloutCollector{}
	registerRollouts sync.Once
)

// exposeRollouts registers the collector (once per process) over the CloneSets of sets; a later
// call (a controller built again after a lost leadership) points it at the new cache.
func exposeRollouts(sets listers.CloneSetLister) {
	rollouts.sets.Store(&sets)
	registerRollouts.Do(func() { legacyregistry.CustomMustRegister(rollouts) })
}

func (c *rolloutCollector) DescribeWithStability(ch chan<- *metrics.Desc) { ch <- rolloutPods }

func (c *rolloutCollector) CollectWithStability(ch chan<- metrics.Metric) {
	sets := c.sets.Load()
	if sets == nil {
		return
	}
	all, err := (*sets).List(labels.Everything())
	if err != nil {
		return
	}
	for _, cs := range all {
		desired := int32(1)
		if cs.Spec.Replicas != nil {
			desired = *cs.Spec.Replicas
		}
		st := cs.Status
		for _, v := range []struct {
			state string
			n     int32
		}{
			{"desired", desired}, {"updated", st.UpdatedReplicas}, {"updated_ready", st.UpdatedReadyReplicas},
			{"ready", st.ReadyReplicas}, {"available", st.AvailableReplicas},
		} {
			ch <- metrics.NewLazyConstMetric(rolloutPods, metrics.GaugeValue, float64(v.n), cs.Namespace, cs.Name, v.state)
		}
	}
}
