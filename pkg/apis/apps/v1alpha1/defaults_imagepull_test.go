package v1alpha1_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// The expected values are OpenKruise's (apis/apps/defaults/v1alpha1.go in openkruise/kruise
// v1.8.0 and v1.9.0: SetDefaultsImagePullJob, SetDefaultsImageListPullJob, SetDefaultsNodeImage).

func TestDefaultsImagePullJob(t *testing.T) {
	cases := []struct {
		name string
		in   v1alpha1.ImagePullJobSpec
		want func(t *testing.T, s *v1alpha1.ImagePullJobSpec)
	}{
		{"empty", v1alpha1.ImagePullJobSpec{Image: "nginx"}, func(t *testing.T, s *v1alpha1.ImagePullJobSpec) {
			check(t, "completionPolicy.type", s.CompletionPolicy.Type, v1alpha1.Always)
			check(t, "pullPolicy.timeoutSeconds", *s.PullPolicy.TimeoutSeconds, int32(600))
			check(t, "pullPolicy.backoffLimit", *s.PullPolicy.BackoffLimit, int32(3))
			check(t, "imagePullPolicy", s.ImagePullPolicy, v1alpha1.PullIfNotPresent)
			// Unset means 1 to the controller; OpenKruise does not write it.
			check(t, "parallelism set", s.Parallelism != nil, false)
			check(t, "deadline set", s.CompletionPolicy.ActiveDeadlineSeconds != nil, false)
		}},
		{"set values kept", v1alpha1.ImagePullJobSpec{Image: "nginx", ImagePullJobTemplate: v1alpha1.ImagePullJobTemplate{
			PullPolicy:       &v1alpha1.PullPolicy{TimeoutSeconds: ptr.To[int32](60)},
			CompletionPolicy: v1alpha1.CompletionPolicy{Type: v1alpha1.Never},
			ImagePullPolicy:  v1alpha1.PullAlways,
		}}, func(t *testing.T, s *v1alpha1.ImagePullJobSpec) {
			check(t, "completionPolicy.type", s.CompletionPolicy.Type, v1alpha1.Never)
			check(t, "pullPolicy.timeoutSeconds", *s.PullPolicy.TimeoutSeconds, int32(60))
			check(t, "pullPolicy.backoffLimit", *s.PullPolicy.BackoffLimit, int32(3))
			check(t, "imagePullPolicy", s.ImagePullPolicy, v1alpha1.PullAlways)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := &v1alpha1.ImagePullJob{Spec: tc.in}
			applyDefaults(t, j)
			tc.want(t, &j.Spec)
			check(t, "finalizers", len(j.Finalizers), 0)
		})
	}
}

func TestDefaultsImageListPullJob(t *testing.T) {
	j := &v1alpha1.ImageListPullJob{Spec: v1alpha1.ImageListPullJobSpec{Images: []string{"nginx"}}}
	applyDefaults(t, j)
	s := &j.Spec
	check(t, "completionPolicy.type", s.CompletionPolicy.Type, v1alpha1.Always)
	check(t, "pullPolicy.timeoutSeconds", *s.PullPolicy.TimeoutSeconds, int32(600))
	check(t, "pullPolicy.backoffLimit", *s.PullPolicy.BackoffLimit, int32(3))
	// OpenKruise leaves it to each ImagePullJob made of the list.
	check(t, "imagePullPolicy", s.ImagePullPolicy, v1alpha1.ImagePullPolicy(""))
}

func TestDefaultsNodeImage(t *testing.T) {
	created := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	n := &v1alpha1.NodeImage{
		Spec: v1alpha1.NodeImageSpec{Images: map[string]v1alpha1.ImageSpec{"nginx": {Tags: []v1alpha1.ImageTagSpec{
			{Tag: "1.28"},
			{Tag: "1.27", CreatedAt: &created, PullPolicy: &v1alpha1.ImageTagPullPolicy{BackoffLimit: ptr.To[int32](1),
				TTLSecondsAfterFinished: ptr.To[int32](30)}},
		}}}},
		Status: v1alpha1.NodeImageStatus{ImageStatuses: map[string]v1alpha1.ImageStatus{"nginx": {Tags: []v1alpha1.ImageTagStatus{
			{Tag: "b"}, {Tag: "a"},
		}}}},
	}
	before := time.Now().Add(-time.Second)
	applyDefaults(t, n)
	tags := n.Spec.Images["nginx"].Tags
	check(t, "first tag after sorting", tags[0].Tag, "1.27")
	check(t, "second tag after sorting", tags[1].Tag, "1.28")
	check(t, "createdAt kept", tags[0].CreatedAt.Equal(&created), true)
	check(t, "backoffLimit kept", *tags[0].PullPolicy.BackoffLimit, int32(1))
	check(t, "timeoutSeconds filled", *tags[0].PullPolicy.TimeoutSeconds, int32(600))
	check(t, "ttl kept", *tags[0].PullPolicy.TTLSecondsAfterFinished, int32(30))
	if tags[1].CreatedAt == nil || tags[1].CreatedAt.Time.Before(before) {
		t.Errorf("createdAt of a new tag = %v, want now", tags[1].CreatedAt)
	}
	check(t, "new tag timeoutSeconds", *tags[1].PullPolicy.TimeoutSeconds, int32(600))
	check(t, "new tag backoffLimit", *tags[1].PullPolicy.BackoffLimit, int32(3))
	check(t, "new tag ttl set", tags[1].PullPolicy.TTLSecondsAfterFinished != nil, false)
	status := n.Status.ImageStatuses["nginx"].Tags
	check(t, "status tags sorted", status[0].Tag+status[1].Tag, "ab")
}
