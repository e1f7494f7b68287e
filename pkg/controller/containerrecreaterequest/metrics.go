package containerrecreaterequest

import (
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// duration is how long ContainerRecreateRequests took from creation to phase Completed, by the
// reason they completed with (Completed, Failed, PodGone, DeadlineExceeded, DaemonNotResponding,
// PodNotReady): the time a user's `pods/recreate` or CRR waits, daemon and kubelet included.
var duration = metrics.NewHistogramVec(&metrics.HistogramOpts{
	Namespace:      "inplace_controller",
	Subsystem:      Name,
	Name:           "duration_seconds",
	Help:           "Time from a ContainerRecreateRequest's creation to phase Completed, by the reason it completed with.",
	Buckets:        []float64{0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300, 600},
	StabilityLevel: metrics.ALPHA,
}, []string{"reason"})

func init() {
	legacyregistry.MustRegister(duration)
}

// observeCompleted records a request completed at now.
func observeCompleted(crr *v1alpha1.ContainerRecreateRequest, reason string, now time.Time) {
	duration.WithLabelValues(reason).Observe(now.Sub(crr.CreationTimestamp.Time).Seconds())
}
