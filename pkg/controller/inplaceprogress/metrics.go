package inplaceprogress

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

// Step results, the label of steps.
const (
	resultProgressed = "progressed"
	resultCompleted  = "completed"
	resultCondition  = "condition"
	resultError      = "error"
)

var (
	// duration is how long in-place updates took, from the request (the state's updateTimestamp,
	// when pods/inplaceupdate accepted it) to the step that completed it (every container of
	// every batch runs its new spec): what a user waits for. Grace periods are included.
	duration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "inplace_controller",
		Subsystem:      Name,
		Name:           "duration_seconds",
		Help:           "Time from an in-place update's request to its completion, by what it changed (images, resources, env, metadata, joined by +).",
		Buckets:        []float64{0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300, 600},
		StabilityLevel: metrics.ALPHA,
	}, []string{"change"})
	// steps counts the steps this controller took on Pods' in-place updates.
	steps = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "inplace_controller",
		Subsystem:      Name,
		Name:           "steps_total",
		Help:           "Steps of in-place updates (grace period over, next batch, completion) taken, by result: progressed, completed, condition (InPlaceUpdateReady set only), error.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
)

func init() {
	legacyregistry.MustRegister(duration, steps)
}

// observeStep counts a step this controller wrote. A completing step writes the Pod (its state
// marked completed); a done step without a Pod only sets InPlaceUpdateReady (a new Pod, or an
// update completed earlier).
func observeStep(step *inplaceupdate.Step) {
	switch {
	case !step.Done:
		steps.WithLabelValues(resultProgressed).Inc()
	case step.State != nil && step.Pod != nil:
		steps.WithLabelValues(resultCompleted).Inc()
	default:
		steps.WithLabelValues(resultCondition).Inc()
	}
}

// observeCompletion records the duration of an update that old had in progress and pod shows
// completed, seen at now: the completion may be this controller's or inplace-daemon's (which
// completes image and env updates with its runtime-containers-meta report).
func observeCompletion(old, pod *corev1.Pod, now time.Time) {
	if !inplaceupdate.IsInProgress(old) || !inplaceupdate.IsCompleted(pod) {
		return
	}
	if st, ok, err := inplaceupdate.GetState(pod); ok && err == nil {
		duration.WithLabelValues(changeOf(st)).Observe(now.Sub(st.UpdateTimestamp.Time).Seconds())
	}
}

// changeOf names what an update changed: images, resources, env (containers restarted for
// env-from-metadata), joined by "+", or metadata when none.
func changeOf(st *pub.InPlaceUpdateState) string {
	var parts []string
	if st.UpdateImages {
		parts = append(parts, "images")
	}
	if st.UpdateResources {
		parts = append(parts, "resources")
	}
	if st.UpdateEnvFromMetadata {
		parts = append(parts, "env")
	}
	if len(parts) == 0 {
		return "metadata"
	}
	return strings.Join(parts, "+")
}
