// Package rolloutmetrics is the opt-in gauge (inplace-controller --rollout-metrics) of each
// workload's Pods by state, one gauge per workload kind (CloneSet, Advanced StatefulSet, Advanced
// DaemonSet; kinds.go): <program>_<controller>_pods{namespace, <kind>, state}. It is read from the controller's informer cache at scrape time, as kube-state-metrics
// reads its objects: a deleted workload's series go with it, and nothing is written on the sync
// path.
package rolloutmetrics

import (
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Count is how many of a workload's Pods are in a state.
type Count struct {
	State string
	Pods  int32
}

// ListFunc lists the workloads from the cache: a generated lister's List.
type ListFunc[T metav1.Object] func(labels.Selector) ([]T, error)

// Collector is the gauge of one workload kind.
type Collector[T metav1.Object] struct {
	metrics.BaseStableCollector
	desc     *metrics.Desc
	counts   func(T) []Count
	list     atomic.Pointer[ListFunc[T]]
	register sync.Once
}

// New is the gauge name (ALPHA), with the labels namespace, kindLabel (the workload's name) and
// state; counts says how many of a workload's Pods are in each state.
func New[T metav1.Object](name, help, kindLabel string, counts func(T) []Count) *Collector[T] {
	return &Collector[T]{
		desc:   metrics.NewDesc(name, help, []string{"namespace", kindLabel, "state"}, nil, metrics.ALPHA, ""),
		counts: counts,
	}
}

// Read makes the collector read the workloads list returns at each scrape.
func (c *Collector[T]) Read(list ListFunc[T]) {
	c.list.Store(&list)
}

// Expose reads list and registers the collector in the process's registry (once); a later call
// (a controller built again after a lost leadership) points it at the new cache.
func (c *Collector[T]) Expose(list ListFunc[T]) {
	c.Read(list)
	c.register.Do(func() { legacyregistry.CustomMustRegister(c) })
}

// DescribeWithStability describes the gauge.
func (c *Collector[T]) DescribeWithStability(ch chan<- *metrics.Desc) { ch <- c.desc }

// CollectWithStability sends a series per workload and state; nothing before Read, or when the
// cache cannot be listed.
func (c *Collector[T]) CollectWithStability(ch chan<- metrics.Metric) {
	list := c.list.Load()
	if list == nil {
		return
	}
	all, err := (*list)(labels.Everything())
	if err != nil {
		return
	}
	for _, w := range all {
		for _, n := range c.counts(w) {
			ch <- metrics.NewLazyConstMetric(c.desc, metrics.GaugeValue, float64(n.Pods), w.GetNamespace(), w.GetName(), n.State)
		}
	}
}

// Replicas are the counts of a workload sized in replicas (CloneSet, Advanced StatefulSet).
type Replicas struct {
	// Desired is spec.replicas: nil is its default, 1.
	Desired                                 *int32
	Updated, UpdatedReady, Ready, Available int32
}

// Counts are the states of a workload sized in replicas, as both such kinds expose them: a
// rollout's progress is updated_ready / desired.
func (r Replicas) Counts() []Count {
	desired := int32(1)
	if r.Desired != nil {
		desired = *r.Desired
	}
	return []Count{
		{State: "desired", Pods: desired}, {State: "updated", Pods: r.Updated},
		{State: "updated_ready", Pods: r.UpdatedReady}, {State: "ready", Pods: r.Ready},
		{State: "available", Pods: r.Available},
	}
}
