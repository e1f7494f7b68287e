package podreadiness

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// Update applies change to the holders of the Pod's KruisePodReady condition and writes the
// result when it differs. The patch carries the Pod's UID and resourceVersion: a Pod recreated
// under the same name is never touched, and a concurrent change of the holders by another party
// is a 409 Conflict, retried by the caller from a fresh Pod, so no holder is lost. It returns the
// updated Pod (the given one when nothing was written) and nil for a Pod that is gone.
func Update(ctx context.Context, pods corev1client.PodsGetter, pod *corev1.Pod, change func([]Holder) []Holder, now time.Time) (*corev1.Pod, error) {
	cond, changed := Desired(pod, change, now)
	if !changed {
		return pod, nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID, "resourceVersion": pod.ResourceVersion},
		"status":   map[string]any{"conditions": []corev1.PodCondition{cond}},
	})
	if err != nil {
		return nil, err
	}
	updated, err := pods.Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("setting condition %s of pod %s to %s: %w", pub.KruisePodReadyConditionType, pod.Name, cond.Status, err)
	}
	return updated, nil
}
