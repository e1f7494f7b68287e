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

// TestObserveStep: steps count by what they did.
func TestObserveStep(t *testing.T) {
	steps.Reset()
	st := &pub.InPlaceUpdateState{UpdateImages: true}
	observeStep(&inplaceupdate.Step{State: st})                                         // next batch
	observeStep(&inplaceupdate.Step{State: st, Pod: &corev1.Pod{}, Done: true})         // completed
	observeStep(&inplaceupdate.Step{Done: true, Conditions: []corev1.PodCondition{{}}}) // a new Pod's gate

	want := `
# HELP inplace_controller_inplaceupdate_steps_total [ALPHA] Steps of in-place updates (grace period over, next batch, completion) taken, by result: progressed, completed, condition (InPlaceUpdateReady set only), error.
# TYPE inplace_controller_inplaceupdate_steps_total counter
inplace_controller_inplaceupdate_steps_total{result="completed"} 1
inplace_controller_inplaceupdate_steps_total{result="condition"} 1
inplace_controller_inplaceupdate_steps_total{result="progressed"} 1
`
	if err := testutil.CollectAndCompare(steps, strings.NewReader(want), "inplace_controller_inplaceupdate_steps_total"); err != nil {
		t.Error(err)
	}
}

// TestObserveCompletion: the Pod event that shows an update completed, whoever wrote it, observes
// its duration once, labelled with what it changed; other events observe nothing.
func TestObserveCompletion(t *testing.T) {
	duration.Reset()
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	withState := func(completed string) *corev1.Pod {
		s := `{"revision":"r2","updateTimestamp":"2026-11-25T12:00:00Z","lastContainerStatuses":{},"updateImages":true,"updateEnvFromMetadata":true` + completed + `}`
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{pub.InPlaceUpdateStateKey: s}}}
	}
	inProgress, done := withState(""), withState(`,"completedTimestamp":"2026-11-25T12:00:03Z"`)
	observeCompletion(&corev1.Pod{}, inProgress, start.Add(time.Second)) // the update begins
	observeCompletion(inProgress, inProgress, start.Add(2*time.Second))  // a status change meanwhile
	observeCompletion(inProgress, done, start.Add(3*time.Second))        // completed
	observeCompletion(done, done, start.Add(time.Hour))                  // a later event

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
`
	if err := testutil.CollectAndCompare(duration, strings.NewReader(want), "inplace_controller_inplaceupdate_duration_seconds"); err != nil {
		t.Error(err)
	}
}
