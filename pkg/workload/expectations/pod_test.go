package expectations

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// PodLookup shows a cached Pod's state, revision and lifecycle labels, and a missing Pod as not
// existing.
func TestPodLookup(t *testing.T) {
	now := metav1.Now()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: &now, Labels: map[string]string{
		appsv1.ControllerRevisionHashLabelKey: "rev-2", pub.LifecycleStateKey: string(pub.LifecycleStatePreparingDelete)}}}
	lookup := PodLookup(func(name string) (*corev1.Pod, error) {
		if name == pod.Name {
			return pod, nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
	})
	want := Cached{Exists: true, Terminating: true, Revision: "rev-2", Lifecycle: string(pub.LifecycleStatePreparingDelete)}
	if got := lookup("p"); got != want {
		t.Errorf("lookup(p) = %+v, want %+v", got, want)
	}
	if got := lookup("gone"); got != (Cached{}) {
		t.Errorf("lookup(gone) = %+v, want not existing", got)
	}
}
