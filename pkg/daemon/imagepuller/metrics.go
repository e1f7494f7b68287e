package imagepuller

import (
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// What an operator asks of a node's pre-pulls: how many ended how, how long they took, how many
// run now. A NodeImage's status says the same per tag, but only for the tags it still holds.
var (
	pulls = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "inplace_daemon",
		Subsystem:      Name,
		Name:           "pulls_total",
		Help:           "Pulls of NodeImage tag versions by how they ended: succeeded (pulled), present (the runtime had the image), failed, cancelled (the tag left the spec or got a new version).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	pullDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "inplace_daemon",
		Subsystem:      Name,
		Name:           "pull_duration_seconds",
		Help:           "Time from a pull's start (a worker slot taken) to its end, retries and backoff included, of the pulls that succeeded or failed.",
		Buckets:        metrics.ExponentialBuckets(0.1, 2, 14), // 0.1 s to ~14 min
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	pullsInProgress = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace:      "inplace_daemon",
		Subsystem:      Name,
		Name:           "pulls_in_progress",
		Help:           "Pulls holding a worker slot (--max-workers-for-pull-image bounds them).",
		StabilityLevel: metrics.ALPHA,
	})
)

func init() {
	legacyregistry.MustRegister(pulls, pullDuration, pullsInProgress)
}

// Results of a pull, the label of pulls_total and pull_duration_seconds.
const (
	resultSucceeded = "succeeded"
	resultPresent   = "present"
	resultFailed    = "failed"
	resultCancelled = "cancelled"
)

// observePull records how a pull that had a worker slot ended.
func observePull(result string, took time.Duration) {
	pulls.WithLabelValues(result).Inc()
	if result == resultSucceeded || result == resultFailed {
		pullDuration.WithLabelValues(result).Observe(took.Seconds())
	}
}
