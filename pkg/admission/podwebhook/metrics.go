package podwebhook

import (
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Results of admitting a Pod, the label of duration.
const (
	resultPatched   = "patched"   // mutated: sidecars, readiness gate or launch order added
	resultUnchanged = "unchanged" // nothing of inplace's to add
	resultFailed    = "failed"    // admitted as it came, with a warning (the webhook fails open)
	resultIgnored   = "ignored"   // not a Pod CREATE
	resultRefused   = "refused"   // denied: the Pod itself cannot be injected (sidecarset.PodError), or its budget has no unit left

	resultBudgetAllowed = "budget-allowed" // a Pod DELETE, eviction or update let through (charged, or nothing to charge)
	resultBudgetFailed  = "budget-failed"  // a Pod DELETE, eviction or update denied: its budget could not be checked
)

// duration is the time the Pod webhook takes to answer kube-apiserver, which waits for it on every
// Pod creation: the webhook's own cost to Pod creation latency (kube-apiserver's
// apiserver_admission_webhook_admission_duration_seconds adds the network).
var duration = metrics.NewHistogramVec(&metrics.HistogramOpts{
	Namespace:      "inplace_apiserver",
	Subsystem:      "pod_webhook",
	Name:           "duration_seconds",
	Help:           "Time the Pod admission webhook took to admit a request, by result: patched, unchanged, failed (admitted as it came), ignored, refused; budget-allowed, budget-failed (the budget check of DELETE, eviction and updates).",
	Buckets:        []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
	StabilityLevel: metrics.ALPHA,
}, []string{"result"})

func init() {
	legacyregistry.MustRegister(duration)
}

func observe(result string, start time.Time) {
	duration.WithLabelValues(result).Observe(time.Since(start).Seconds())
}
