package deletionwebhook

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// refusals counts the deletions the webhook refused, by resource (OpenKruise counts them per
// object and user; those are in the log line of each refusal instead, to keep the series few).
var refusals = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace:      "inplace_apiserver",
	Subsystem:      "deletion_protection",
	Name:           "refusals_total",
	Help:           "Deletions refused by the policy.kruise.io/delete-protection label, by resource (group.resource).",
	StabilityLevel: metrics.ALPHA,
}, []string{"resource"})

func init() {
	legacyregistry.MustRegister(refusals)
}
