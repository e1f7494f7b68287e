package imagepull

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// t0 is the time tests start from; at(s) is s seconds later.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }

func atp(s int) *metav1.Time { t := at(s); return &t }

func newJob(name string, uid types.UID, image string) *v1alpha1.ImagePullJob {
	return &v1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid},
		Spec: v1alpha1.ImagePullJobSpec{Image: image, ImagePullJobTemplate: v1alpha1.ImagePullJobTemplate{
			CompletionPolicy: v1alpha1.CompletionPolicy{Type: v1alpha1.Always},
			ImagePullPolicy:  v1alpha1.PullIfNotPresent,
		}},
	}
}

func jobRef(name string, uid types.UID) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ImagePullJob", Namespace: "ns", Name: name, UID: uid}
}

func tagSpec(tag string, version int64, owners ...corev1.ObjectReference) v1alpha1.ImageTagSpec {
	return v1alpha1.ImageTagSpec{Tag: tag, Version: version, OwnerReferences: owners, CreatedAt: atp(0)}
}

func tagStat(tag string, version int64, phase v1alpha1.ImagePullPhase, completed *metav1.Time) v1alpha1.ImageTagStatus {
	return v1alpha1.ImageTagStatus{Tag: tag, Version: version, Phase: phase, CompletionTime: completed}
}

func specOf(image string, tags ...v1alpha1.ImageTagSpec) v1alpha1.NodeImageSpec {
	return v1alpha1.NodeImageSpec{Images: map[string]v1alpha1.ImageSpec{image: {Tags: tags}}}
}

func statusOf(image string, tags ...v1alpha1.ImageTagStatus) *v1alpha1.NodeImageStatus {
	return &v1alpha1.NodeImageStatus{ImageStatuses: map[string]v1alpha1.ImageStatus{image: {Tags: tags}}}
}

// checkEqual fails t when got is not semantically equal to want (nil and empty are equal).
func checkEqual(t *testing.T, what string, want, got any) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(want, got) {
		t.Errorf("%s (-want +got):\n%s", what, diff.Diff(want, got))
	}
}

func intstrFromInt(i int32) intstr.IntOrString { return intstr.FromInt32(i) }
