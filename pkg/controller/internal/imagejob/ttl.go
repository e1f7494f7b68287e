// Package imagejob is what the ImagePullJob and ImageListPullJob controllers do alike with a
// client: deleting a completed job once its ttlSecondsAfterFinished passed.
package imagejob

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/imagepull"
)

// ReasonTTLExpired is the reason of the Event of a job deleted for its ttlSecondsAfterFinished.
const ReasonTTLExpired = "TTLExpired"

// Job is an ImagePullJob or an ImageListPullJob.
type Job interface {
	metav1.Object
	runtime.Object
}

// Deleter deletes a job of the job's namespace by name (the typed client's Delete).
type Deleter func(ctx context.Context, name string, opts metav1.DeleteOptions) error

// Expire deletes job, of kind (ImagePullJob or ImageListPullJob), whose spec has cp and whose
// status has completion, ttlSecondsAfterFinished after its completion (imagepull.TTLLeft), with
// its UID as precondition; before then it says when to look again, at least minRequeue from now.
// A job already gone is no error.
func Expire(ctx context.Context, job Job, kind string, cp *v1alpha1.CompletionPolicy, completion *metav1.Time,
	now metav1.Time, minRequeue time.Duration, del Deleter, recorder record.EventRecorder) (time.Duration, error) {
	left, ok := imagepull.TTLLeft(cp, completion, now)
	if !ok {
		return 0, nil
	}
	if left > 0 {
		return max(left, minRequeue), nil
	}
	uid := job.GetUID()
	err := del(ctx, job.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("deleting %s %s after its ttlSecondsAfterFinished: %w", strings.ToLower(kind), klog.KObj(job), err)
	}
	klog.FromContext(ctx).Info("Deleted " + kind + ": ttlSecondsAfterFinished passed")
	recorder.Eventf(job, corev1.EventTypeNormal, ReasonTTLExpired, "Deleted: %ds after completion", *cp.TTLSecondsAfterFinished)
	return 0, nil
}
