package validation

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
)

func tooMany(p string) want { return want{field.ErrorTypeTooMany, p} }

// validImagePullJob is an ImagePullJob as it is after defaulting.
func validImagePullJob() *apps.ImagePullJob {
	return &apps.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: "default", ResourceVersion: "1"},
		Spec: apps.ImagePullJobSpec{
			Image: "registry.example.com/team/app:v2",
			ImagePullJobTemplate: apps.ImagePullJobTemplate{
				PullSecrets: []string{"regcred"},
				Selector:    &apps.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "web"}}},
				Parallelism: intOrStr(intstr.FromInt32(2)),
				PullPolicy:  &apps.PullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3)},
				CompletionPolicy: apps.CompletionPolicy{Type: apps.Always,
					ActiveDeadlineSeconds: ptr.To[int64](1200), TTLSecondsAfterFinished: ptr.To[int32](0)},
				SandboxConfig:   &apps.SandboxConfig{Labels: map[string]string{"a": "b"}},
				ImagePullPolicy: apps.PullIfNotPresent,
			},
		},
	}
}

func TestValidateImagePullJob(t *testing.T) {
	expectErrors(t, ValidateImagePullJob(validImagePullJob()))

	cases := []struct {
		name   string
		mutate func(j *apps.ImagePullJob)
		wants  []want
	}{
		{"no image", func(j *apps.ImagePullJob) { j.Spec.Image = "" }, []want{required("spec.image")}},
		{"image with uppercase repository", func(j *apps.ImagePullJob) { j.Spec.Image = "Nginx:1" }, []want{invalid("spec.image")}},
		{"image with a space", func(j *apps.ImagePullJob) { j.Spec.Image = "nginx :1" }, []want{invalid("spec.image")}},
		{"image with a bad digest", func(j *apps.ImagePullJob) { j.Spec.Image = "nginx@sha256:abc" }, []want{invalid("spec.image")}},
		{"digest image", func(j *apps.ImagePullJob) {
			j.Spec.Image = "nginx@sha256:" + strings.Repeat("a", 64)
		}, nil},
		{"bad pull secret name", func(j *apps.ImagePullJob) { j.Spec.PullSecrets = []string{"ok", "Not_OK"} },
			[]want{invalid("spec.pullSecrets[1]")}},
		{"names and label selector", func(j *apps.ImagePullJob) { j.Spec.Selector.Names = []string{"node-1"} },
			[]want{forbidden("spec.selector.names")}},
		{"duplicate node name", func(j *apps.ImagePullJob) {
			j.Spec.Selector = &apps.ImagePullJobNodeSelector{Names: []string{"node-1", "node-2", "node-1"}}
		}, []want{duplicate("spec.selector.names[2]")}},
		{"bad node selector", func(j *apps.ImagePullJob) {
			j.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "pool", Operator: "Near"}}
		}, []want{invalid("spec.selector.matchExpressions[0].operator")}},
		{"selector and podSelector", func(j *apps.ImagePullJob) {
			j.Spec.PodSelector = &apps.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
		}, []want{forbidden("spec.podSelector")}},
		{"bad podSelector", func(j *apps.ImagePullJob) {
			j.Spec.Selector = nil
			j.Spec.PodSelector = &apps.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}}
		}, []want{invalid("spec.podSelector.matchLabels")}},
		{"negative parallelism", func(j *apps.ImagePullJob) { j.Spec.Parallelism = intOrStr(intstr.FromInt32(-1)) },
			[]want{invalid("spec.parallelism")}},
		{"parallelism as a string of digits", func(j *apps.ImagePullJob) { j.Spec.Parallelism = intOrStr(intstr.FromString("3")) }, nil},
		{"parallelism zero pauses", func(j *apps.ImagePullJob) { j.Spec.Parallelism = intOrStr(intstr.FromInt32(0)) }, nil},
		{"parallelism as a percentage", func(j *apps.ImagePullJob) { j.Spec.Parallelism = intOrStr(intstr.FromString("50%")) },
			[]want{invalid("spec.parallelism")}},
		{"parallelism as a word", func(j *apps.ImagePullJob) { j.Spec.Parallelism = intOrStr(intstr.FromString("two")) },
			[]want{invalid("spec.parallelism")}},
		{"negative parallelism string", func(j *apps.ImagePullJob) { j.Spec.Parallelism = intOrStr(intstr.FromString("-2")) },
			[]want{invalid("spec.parallelism")}},
		{"negative timeout and backoff", func(j *apps.ImagePullJob) {
			j.Spec.PullPolicy = &apps.PullPolicy{TimeoutSeconds: ptr.To[int32](-1), BackoffLimit: ptr.To[int32](-1)}
		}, []want{invalid("spec.pullPolicy.timeoutSeconds"), invalid("spec.pullPolicy.backoffLimit")}},
		{"unknown completion type", func(j *apps.ImagePullJob) { j.Spec.CompletionPolicy.Type = "Sometimes" },
			[]want{notSupported("spec.completionPolicy.type")}},
		{"deadline and ttl with Never", func(j *apps.ImagePullJob) { j.Spec.CompletionPolicy.Type = apps.Never },
			[]want{forbidden("spec.completionPolicy.activeDeadlineSeconds"), forbidden("spec.completionPolicy.ttlSecondsAfterFinished")}},
		{"Never alone", func(j *apps.ImagePullJob) { j.Spec.CompletionPolicy = apps.CompletionPolicy{Type: apps.Never} }, nil},
		{"zero deadline", func(j *apps.ImagePullJob) { j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](0) },
			[]want{invalid("spec.completionPolicy.activeDeadlineSeconds")}},
		{"deadline shorter than the pull timeout", func(j *apps.ImagePullJob) {
			j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](599)
		}, []want{invalid("spec.completionPolicy.activeDeadlineSeconds")}},
		{"deadline shorter than a short pull timeout is fine", func(j *apps.ImagePullJob) {
			j.Spec.PullPolicy.TimeoutSeconds = ptr.To[int32](60)
			j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](60)
		}, nil},
		{"negative ttl", func(j *apps.ImagePullJob) { j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](-1) },
			[]want{invalid("spec.completionPolicy.ttlSecondsAfterFinished")}},
		{"bad imagePullPolicy", func(j *apps.ImagePullJob) { j.Spec.ImagePullPolicy = "Never" },
			[]want{notSupported("spec.imagePullPolicy")}},
		{"bad name", func(j *apps.ImagePullJob) { j.Name = "Bad_Name" }, []want{invalid("metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := validImagePullJob()
			tc.mutate(j)
			expectErrors(t, ValidateImagePullJob(j), tc.wants...)
		})
	}
}

func TestValidateImagePullJobUpdate(t *testing.T) {
	old := validImagePullJob()
	j := validImagePullJob()
	j.Spec.Parallelism = intOrStr(intstr.FromInt32(10))
	j.Spec.Image = "registry.example.com/team/app:v3"
	expectErrors(t, ValidateImagePullJobUpdate(j, old))
	j.Spec.PullSecrets = append(j.Spec.PullSecrets, "other")
	expectErrors(t, ValidateImagePullJobUpdate(j, old), forbidden("spec.pullSecrets"))
	j = validImagePullJob()
	j.Spec.CompletionPolicy.Type = "x"
	expectErrors(t, ValidateImagePullJobUpdate(j, old), notSupported("spec.completionPolicy.type"))

	j = validImagePullJob()
	j.Status = apps.ImagePullJobStatus{Desired: 3, Active: 1, Succeeded: 1, Failed: 1, FailedNodes: []string{"node-3"}}
	expectErrors(t, ValidateImagePullJobStatusUpdate(j, old))
	j.Status.Active, j.Status.Desired = -1, -2
	expectErrors(t, ValidateImagePullJobStatusUpdate(j, old), invalid("status.active"), invalid("status.desired"))
}

func validImageListPullJob() *apps.ImageListPullJob {
	j := validImagePullJob()
	return &apps.ImageListPullJob{
		ObjectMeta: j.ObjectMeta,
		Spec: apps.ImageListPullJobSpec{
			Images:               []string{"nginx:1.27", "busybox", "registry.example.com/team/app@sha256:" + strings.Repeat("b", 64)},
			ImagePullJobTemplate: j.Spec.ImagePullJobTemplate,
		},
	}
}

func TestValidateImageListPullJob(t *testing.T) {
	expectErrors(t, ValidateImageListPullJob(validImageListPullJob()))

	many := make([]string, MaxImagesPerImageListPullJob+1)
	for i := range many {
		many[i] = fmt.Sprintf("app:%d", i)
	}
	cases := []struct {
		name   string
		mutate func(j *apps.ImageListPullJob)
		wants  []want
	}{
		{"no images", func(j *apps.ImageListPullJob) { j.Spec.Images = nil }, []want{required("spec.images")}},
		{"duplicate image", func(j *apps.ImageListPullJob) { j.Spec.Images = append(j.Spec.Images, "busybox") },
			[]want{duplicate("spec.images[3]")}},
		{"bad image", func(j *apps.ImageListPullJob) { j.Spec.Images[1] = "busy box" }, []want{invalid("spec.images[1]")}},
		{"empty image", func(j *apps.ImageListPullJob) { j.Spec.Images[0] = "" }, []want{required("spec.images[0]")}},
		{"too many images", func(j *apps.ImageListPullJob) { j.Spec.Images = many }, []want{tooMany("spec.images")}},
		{"template checked", func(j *apps.ImageListPullJob) {
			j.Spec.Parallelism = intOrStr(intstr.FromString("10%"))
			j.Spec.CompletionPolicy.Type = apps.Never
			j.Spec.CompletionPolicy.ActiveDeadlineSeconds = nil
		}, []want{invalid("spec.parallelism"), forbidden("spec.completionPolicy.ttlSecondsAfterFinished")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := validImageListPullJob()
			tc.mutate(j)
			expectErrors(t, ValidateImageListPullJob(j), tc.wants...)
		})
	}

	old := validImageListPullJob()
	j := validImageListPullJob()
	j.Spec.Images = j.Spec.Images[:1]
	expectErrors(t, ValidateImageListPullJobUpdate(j, old))
	j.Status = apps.ImageListPullJobStatus{Desired: 3, Completed: -1,
		FailedImageStatuses: []apps.FailedImageStatus{{ImagePullJob: "pull-x", Name: "busybox", Message: "failed"}}}
	expectErrors(t, ValidateImageListPullJobStatusUpdate(j, old), invalid("status.completed"))
}

func validNodeImage() *apps.NodeImage {
	created := metav1.Now()
	policy := func() *apps.ImageTagPullPolicy {
		return &apps.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3),
			TTLSecondsAfterFinished: ptr.To[int32](300), ActiveDeadlineSeconds: ptr.To[int64](1200)}
	}
	return &apps.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", ResourceVersion: "1"},
		Spec: apps.NodeImageSpec{Images: map[string]apps.ImageSpec{
			"nginx": {
				PullSecrets: []apps.ReferenceObject{{Namespace: "default", Name: "regcred"}},
				Tags: []apps.ImageTagSpec{
					{Tag: "1.27", CreatedAt: &created, PullPolicy: policy(), Version: 1, ImagePullPolicy: apps.PullIfNotPresent,
						OwnerReferences: []corev1.ObjectReference{{Kind: "ImagePullJob", Namespace: "default", Name: "pull"}}},
					{Tag: "sha256:" + strings.Repeat("c", 64), CreatedAt: &created, PullPolicy: policy()},
				},
			},
			"registry.example.com/team/app": {Tags: []apps.ImageTagSpec{{Tag: "v2", CreatedAt: &created, PullPolicy: policy()}}},
		}},
	}
}

func TestValidateNodeImage(t *testing.T) {
	expectErrors(t, ValidateNodeImage(validNodeImage()))

	tags := "spec.images[nginx].tags"
	many := map[string]apps.ImageSpec{}
	for i := range 257 {
		many[fmt.Sprintf("app%d", i)] = apps.ImageSpec{}
	}
	cases := []struct {
		name   string
		mutate func(n *apps.NodeImage)
		wants  []want
	}{
		{"duplicate tag", func(n *apps.NodeImage) {
			img := n.Spec.Images["nginx"]
			img.Tags = append(img.Tags, img.Tags[0])
			n.Spec.Images["nginx"] = img
		}, []want{duplicate(tags + "[2].tag")}},
		{"empty tag", func(n *apps.NodeImage) { n.Spec.Images["nginx"].Tags[0].Tag = "" }, []want{required(tags + "[0].tag")}},
		{"bad tag", func(n *apps.NodeImage) { n.Spec.Images["nginx"].Tags[0].Tag = "a b" }, []want{invalid(tags + "[0].tag")}},
		{"bad digest", func(n *apps.NodeImage) { n.Spec.Images["nginx"].Tags[1].Tag = "sha256:zz" }, []want{invalid(tags + "[1].tag")}},
		{"negative version", func(n *apps.NodeImage) { n.Spec.Images["nginx"].Tags[0].Version = -1 },
			[]want{invalid(tags + "[0].version")}},
		{"no createdAt", func(n *apps.NodeImage) { n.Spec.Images["nginx"].Tags[0].CreatedAt = nil },
			[]want{required(tags + "[0].createdAt")}},
		{"no pullPolicy", func(n *apps.NodeImage) { n.Spec.Images["nginx"].Tags[0].PullPolicy = nil },
			[]want{required(tags + "[0].pullPolicy")}},
		{"no ttl", func(n *apps.NodeImage) { n.Spec.Images["nginx"].Tags[0].PullPolicy.TTLSecondsAfterFinished = nil },
			[]want{required(tags + "[0].pullPolicy.ttlSecondsAfterFinished")}},
		{"negative timeout, backoff, ttl, deadline", func(n *apps.NodeImage) {
			n.Spec.Images["nginx"].Tags[0].PullPolicy = &apps.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](-1),
				BackoffLimit: ptr.To[int32](-1), TTLSecondsAfterFinished: ptr.To[int32](-1), ActiveDeadlineSeconds: ptr.To[int64](0)}
		}, []want{invalid(tags + "[0].pullPolicy.timeoutSeconds"), invalid(tags + "[0].pullPolicy.backoffLimit"),
			invalid(tags + "[0].pullPolicy.ttlSecondsAfterFinished"), invalid(tags + "[0].pullPolicy.activeDeadlineSeconds")}},
		{"bad imagePullPolicy", func(n *apps.NodeImage) { n.Spec.Images["nginx"].Tags[0].ImagePullPolicy = "Sometimes" },
			[]want{notSupported(tags + "[0].imagePullPolicy")}},
		{"image name with a tag", func(n *apps.NodeImage) { n.Spec.Images["nginx:1.27"] = n.Spec.Images["nginx"] },
			[]want{invalid("spec.images[nginx:1.27]")}},
		{"bad image name", func(n *apps.NodeImage) { n.Spec.Images["team/UPPER"] = apps.ImageSpec{} },
			[]want{invalid("spec.images[team/UPPER]")}},
		{"empty image name", func(n *apps.NodeImage) { n.Spec.Images[""] = apps.ImageSpec{} }, []want{required("spec.images[]")}},
		{"bad pull secret", func(n *apps.NodeImage) {
			n.Spec.Images["nginx"].PullSecrets[0] = apps.ReferenceObject{Namespace: "Bad_NS", Name: "x"}
		},
			[]want{invalid("spec.images[nginx].pullSecrets[0].namespace")}},
		{"too many images", func(n *apps.NodeImage) { n.Spec.Images = many }, []want{tooMany("spec.images")}},
		{"name not a node name", func(n *apps.NodeImage) { n.Name = "Node_1" }, []want{invalid("metadata.name")}},
		{"namespaced", func(n *apps.NodeImage) { n.Namespace = "default" }, []want{forbidden("metadata.namespace")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := validNodeImage()
			tc.mutate(n)
			expectErrors(t, ValidateNodeImage(n), tc.wants...)
		})
	}
	old := validNodeImage()
	n := validNodeImage()
	delete(n.Spec.Images, "nginx")
	expectErrors(t, ValidateNodeImageUpdate(n, old))
	n.Spec.Images["registry.example.com/team/app"].Tags[0].Tag = ""
	expectErrors(t, ValidateNodeImageUpdate(n, old), required("spec.images[registry.example.com/team/app].tags[0].tag"))
}

func TestValidateNodeImageStatusUpdate(t *testing.T) {
	old := validNodeImage()
	n := validNodeImage()
	n.Status = apps.NodeImageStatus{Desired: 3, Succeeded: 1, Pulling: 1, Waiting: 1,
		ImageStatuses: map[string]apps.ImageStatus{"nginx": {Tags: []apps.ImageTagStatus{
			{Tag: "1.27", Phase: apps.ImagePhaseSucceeded, Progress: 100, Version: 1, ImageID: "sha256:x"},
			{Tag: "1.28", Phase: apps.ImagePhasePulling, Progress: 40},
		}}},
		FirstSyncStatus: &apps.SyncStatus{SyncAt: metav1.Now(), Status: apps.SyncStatusSucceeded},
	}
	expectErrors(t, ValidateNodeImageStatusUpdate(n, old))

	st := "status.imageStatuses[nginx].tags"
	n.Status.Failed = -1
	n.Status.ImageStatuses["nginx"].Tags[1] = apps.ImageTagStatus{Tag: "1.27", Phase: "Stuck", Progress: 101, Version: -1}
	n.Status.ImageStatuses["nginx"] = apps.ImageStatus{Tags: append(n.Status.ImageStatuses["nginx"].Tags, apps.ImageTagStatus{})}
	n.Status.FirstSyncStatus.Status = "Maybe"
	expectErrors(t, ValidateNodeImageStatusUpdate(n, old),
		invalid("status.failed"),
		duplicate(st+"[1].tag"), notSupported(st+"[1].phase"), invalid(st+"[1].progress"), invalid(st+"[1].version"),
		required(st+"[2].tag"), required(st+"[2].phase"),
		notSupported("status.firstSyncStatus.status"))
}
