package inplaceprogress

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

// TestObserveStep: the completing step observes the update's duration once, labelled with what it
// changed; other steps only count.
func TestObserveStep(t *testing.T) {
	duration.Reset()
	steps.Reset()
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	st := &pub.InPlaceUpdateState{UpdateTimestamp: metav1.NewTime(start), UpdateImages: true, UpdateEnvFromMetadata: true}
	observeStep(&inplaceupdate.Step{State: st}, start.Add(time.Second))                                       // next batch
	observeStep(&inplaceupdate.Step{State: st, Pod: &corev1.Pod{}, Done: true}, start.Add(3*time.Second))     // completed
	observeStep(&inplaceupdate.Step{Done: true, Conditions: []corev1.PodCondition{{}}}, start.Add(time.Hour)) // a new Pod's gate

	want := `
# HELP inplace_controller_inplaceupdate_duration_seconds [ALPHA] Time from an in-place update's request to its completion, by what it changed (images, resources, env, metadata, joined by +).
# TYPE inplace_controller_inplaceupdate_duration_seconds histogram
inplace_controller_inplaceupdate_duration_seconds_bucket{change="images+env",le="0.25"} 0
inplace_controller_inplaceupdate_duration_seconds_bucket{change="images+env",le="0.5"} 0
inplace_controller_inplaceupdate_duration_seconds_bucket{change="images+env",le="1"} 0
inplace_controller_inplaceupdate_duration_seconds_bucket{change="images+env",le="2"} 0
inplace_controller_inplaceupdate_duration_seconds_bucket{change="images+env",le="4"} 1
inplace_controller_inplaceupdate_duration_seconds_bucket{change="images+env",le="8"} 1
inplace_controller_inplaceupdate_duration_seconds_bucket{change="images+env",le="15"} 1
inplace_controller_inplaceupdate_duration_seconds_bucket{change="images+env",le="30"} 1
inplace_controller_inplaceupdate_duration_seconds_bucket{change="images+env",le="60"} 1
inplace_controller_inplaceupdate_duration_seconds_bucket{change="images+env",le="120"} 1
inplace_controller_inplaceupdate_duration_seconds_bucket{change="images+env",le="300"} 1
inplace_controller_inplaceupdate_duration_seconds_bucket{change="images+env",le="600"} 1
inplace_controller_inplaceupdate_duration_seconds_bucket{change="images+env",le="+Inf"} 1
inplace_controller_inplaceupdate_duration_seconds_sum{change="images+env"} 3
inplace_controller_inplaceupdate_duration_seconds_count{change="images+env"} 1
# HELP inplace_controller_inplaceupdate_steps_total [ALPHA] Steps of in-place updates (grace period over, next batch, completion) taken, by result: progressed, completed, condition (InPlaceUpdateReady set only), error.
# TYPE inplace_controller_inplaceupdate_steps_total counter
inplace_controller_inplaceupdate_steps_total{result="completed"} 1
inplace_controller_inplaceupdate_steps_total{result="condition"} 1
inplace_controller_inplaceupdate_steps_total{result="progressed"} 1
`
	if err := testutil.CollectAndCompare(duration, strings.NewReader(want), "inplace_controller_inplaceupdate_duration_seconds"); err != nil {
		t.Error(err)
	}
	if err := testutil.CollectAndCompare(steps, strings.NewReader(want), "inplace_controller_inplaceupdate_steps_total"); err != nil {
		t.Error(err)
	}
}
