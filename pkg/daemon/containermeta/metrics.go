package containermeta

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	annotationWrites = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "inplace_daemon",
		Subsystem:      Name,
		Name:           "annotation_writes_total",
		Help:           "Writes of the apps.kruise.io/runtime-containers-meta Pod annotation.",
		StabilityLevel: metrics.ALPHA,
	})
	completions = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "inplace_daemon",
		Subsystem:      Name,
		Name:           "inplace_update_completions_total",
		Help:           "In-place updates this daemon completed in the write of its runtime-containers-meta report.",
		StabilityLevel: metrics.ALPHA,
	})
	containerStops = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "inplace_daemon",
		Subsystem:      Name,
		Name:           "env_restart_stops_total",
		Help:           "Containers stopped through the CRI so that they restart with new env from metadata, by result.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
)

func init() {
	legacyregistry.MustRegister(annotationWrites, completions, containerStops)
}
