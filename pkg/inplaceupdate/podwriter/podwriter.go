// Package podwriter writes the engine's steps (package inplaceupdate) to a Pod through the core
// API: conditions through pods/status, the Pod itself with optimistic concurrency, and resources
// through pods/resize. The pods/inplaceupdate subresource and the controller both use it.
package podwriter

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"

	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

// ComputeFunc returns the step to take for the Pod as it is now. It is called again on a fresh
// Pod after each conflict and after conditions were written, so it must be a pure function of it.
type ComputeFunc func(pod *corev1.Pod) (*inplaceupdate.Step, error)

// Apply reads the Pod, computes its step and writes it: first the step's conditions (through
// pods/status, so InPlaceUpdateReady is False before any container changes), then the Pod, then
// the resize. A write conflict starts over from a fresh read. It returns the Pod as last written
// and the step that was written.
func Apply(ctx context.Context, pods corev1client.PodInterface, name string, compute ComputeFunc) (*corev1.Pod, *inplaceupdate.Step, error) {
	var pod *corev1.Pod
	var step *inplaceupdate.Step
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		pod, err = pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod, step, err = write(ctx, pods, pod, compute)
		return err
	})
	return pod, step, err
}

// ApplyTo is Apply starting from a Pod already read (from an informer cache, say); a conflict
// means the cache was stale and is left to the caller's requeue.
func ApplyTo(ctx context.Context, pods corev1client.PodInterface, pod *corev1.Pod, compute ComputeFunc) (*corev1.Pod, *inplaceupdate.Step, error) {
	return write(ctx, pods, pod, compute)
}

func write(ctx context.Context, pods corev1client.PodInterface, pod *corev1.Pod, compute ComputeFunc) (*corev1.Pod, *inplaceupdate.Step, error) {
	step, err := compute(pod)
	if err != nil {
		return pod, nil, err
	}
	if len(step.Conditions) > 0 {
		patch, err := step.StatusPatch()
		if err != nil {
			return pod, step, fmt.Errorf("encoding the conditions of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		// The resourceVersion precondition keeps the condition from landing on a Pod that moved on.
		patch, err = withResourceVersion(patch, pod.ResourceVersion)
		if err != nil {
			return pod, step, err
		}
		pod, err = pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if err != nil {
			return pod, step, fmt.Errorf("setting conditions of pod %s: %w", pod.Name, err)
		}
		// The conditions are written; the rest of the step is computed again from the fresh Pod.
		if step, err = compute(pod); err != nil {
			return pod, nil, err
		}
	}
	if step.Pod != nil {
		updated, err := pods.Update(ctx, step.Pod, metav1.UpdateOptions{})
		if err != nil {
			if apierrors.IsConflict(err) {
				return pod, step, err
			}
			return pod, step, fmt.Errorf("updating pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		pod = updated
	}
	if len(step.Resize) > 0 {
		patch, err := step.ResizePatch()
		if err != nil {
			return pod, step, fmt.Errorf("encoding the resize of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		resized, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize")
		if err != nil {
			// The state records the resources; Progress sends the resize again if this one is lost.
			return pod, step, fmt.Errorf("resizing pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		pod = resized
	}
	return pod, step, nil
}

func withResourceVersion(patch []byte, rv string) ([]byte, error) {
	// A strategic merge patch is a JSON object: add metadata.resourceVersion to it.
	if len(patch) < 2 || patch[0] != '{' {
		return nil, fmt.Errorf("unexpected status patch %q", patch)
	}
	prefix := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},`, rv)
	return append([]byte(prefix), patch[1:]...), nil
}
