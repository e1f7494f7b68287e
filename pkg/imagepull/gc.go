package imagepull

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// GC returns the NodeImage spec without what nobody needs any more, and whether it changed:
//
//   - owner references to ImagePullJobs whose UID is not in liveJobs (the UIDs of the jobs that
//     exist: a job deleted and re-created under the same name is another owner). References of
//     other kinds are kept, as OpenKruise keeps them: this package cannot judge them. A tag whose
//     owners are all gone is dropped.
//   - tags whose pull finished (the status of the tag's current version has a completion time)
//     at least ttlSecondsAfterFinished before now.
//
// Images left without tags are dropped. The NodeImage controller calls it on every sync and
// requeues after NextGC.
func GC(spec v1alpha1.NodeImageSpec, status *v1alpha1.NodeImageStatus, liveJobs sets.Set[types.UID], now time.Time) (v1alpha1.NodeImageSpec, bool) {
	spec, ownersChanged := filterOwners(spec, func(r corev1.ObjectReference) bool {
		return !isImagePullJob(r) || liveJobs.Has(r.UID)
	})
	spec, expiredChanged := filterTags(spec, func(image string, t *v1alpha1.ImageTagSpec) bool {
		left, ok := ttlLeft(status, image, t, now)
		return !ok || left > 0
	})
	return spec, ownersChanged || expiredChanged
}

// NextGC is how long until the first tag of spec reaches its TTL, false when none is counting
// down (no finished pull has a TTL).
func NextGC(spec *v1alpha1.NodeImageSpec, status *v1alpha1.NodeImageStatus, now time.Time) (time.Duration, bool) {
	var next time.Duration
	found := false
	for name, image := range spec.Images {
		for i := range image.Tags {
			if left, ok := ttlLeft(status, name, &image.Tags[i], now); ok && (!found || left < next) {
				next, found = left, true
			}
		}
	}
	return max(next, 0), found
}

// ttlLeft is how long the tag has left before its TTL since its pull finished, false when there
// is no such clock: no TTL, or no finished pull of the tag's current version (a status of an
// older version says nothing about the pull the spec asks for now).
func ttlLeft(status *v1alpha1.NodeImageStatus, image string, t *v1alpha1.ImageTagSpec, now time.Time) (time.Duration, bool) {
	if t.PullPolicy == nil || t.PullPolicy.TTLSecondsAfterFinished == nil {
		return 0, false
	}
	ts := tagStatus(status, image, t.Tag)
	if ts == nil || ts.Version != t.Version || ts.CompletionTime == nil {
		return 0, false
	}
	ttl := time.Duration(*t.PullPolicy.TTLSecondsAfterFinished) * time.Second
	return ttl - now.Sub(ts.CompletionTime.Time), true
}

// isImagePullJob says whether r refers to an ImagePullJob of OpenKruise's group, whatever the
// version (OpenKruise v1.9 writes v1beta1, this server v1alpha1).
func isImagePullJob(r corev1.ObjectReference) bool {
	gvk := r.GroupVersionKind()
	return gvk.Group == imagePullJobKind.Group && gvk.Kind == imagePullJobKind.Kind
}
