// Package podwriter writes the engine's steps (package inplaceupdate) to a Pod through the core
// API: conditions through pods/status, the Pod itself with optimistic concurrency, and resources
// through pods/resize. The pods/inplaceupdate subresource and the controller both use it.
package podwriter

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

// ComputeFunc returns the step to take for the Pod as it is now. It is called again on a fresh
// Pod after each conflict and after conditions were written, so it must be a pure function of it.
type ComputeFunc func(pod *corev1.Pod) (*inplaceupdate.Step, error)

// Apply reads the Pod, computes its step and writes it: first the step's conditions (through
// pods/status, so InPlaceUpdateReady is False before any container changes), then the resize,
// then the Pod. A write conflict starts over from a fresh read. It returns the Pod as last written
// and the step that was written.
//
// When the conditions were written but the Pod could not be (kube-apiserver refused it, or the
// conflicts did not stop), the conditions are put back as they were, so a refused request leaves
// the Pod in service and as it found it.
func Apply(ctx context.Context, pods corev1client.PodInterface, name string, compute ComputeFunc) (*corev1.Pod, *inplaceupdate.Step, error) {
	var pod *corev1.Pod
	var step *inplaceupdate.Step
	var before []corev1.PodCondition // conditions as first read, of the types a step wrote
	err := retry.RetryOnConflict(conflictBackoff, func() error {
		current, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var wrote []corev1.PodCondition
		pod, step, wrote, err = write(ctx, pods, current, compute)
		if before == nil && len(wrote) > 0 {
			before = previousConditions(current, wrote)
		}
		return err
	})
	if err != nil && len(before) > 0 {
		restoreConditions(ctx, pods, name, before)
	}
	return pod, step, err
}

// DryRun reads the Pod, computes its step and sends each write of it with dryRun=All (the
// conditions, the Pod, the resize): admission and validation run, nothing is stored. It returns
// the Pod as read and the step that would be written.
func DryRun(ctx context.Context, pods corev1client.PodInterface, name string, compute ComputeFunc) (*corev1.Pod, *inplaceupdate.Step, error) {
	pod, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	step, err := compute(pod)
	if err != nil {
		return pod, nil, err
	}
	if len(step.Conditions) > 0 {
		patch, err := step.StatusPatch()
		if err != nil {
			return pod, step, fmt.Errorf("encoding the conditions of pod %s: %w", name, err)
		}
		if _, err := pods.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "status"); err != nil {
			return pod, step, fmt.Errorf("pod %s would not accept the update: %w", name, err)
		}
	}
	if err := dryRun(ctx, pods, name, step); err != nil {
		return pod, step, fmt.Errorf("pod %s would not accept the update: %w", name, err)
	}
	return pod, step, nil
}

// conflictBackoff spreads retries over ~2.5 s: a young Pod's status changes several times a
// second (kubelet, daemon, controller), and a request should outlast that churn rather than
// answer 409 after 50 ms.
var conflictBackoff = wait.Backoff{Steps: 8, Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.1}

// ApplyTo is Apply starting from a Pod already read (from an informer cache, say); a conflict
// means the cache was stale and is left to the caller's requeue.
func ApplyTo(ctx context.Context, pods corev1client.PodInterface, pod *corev1.Pod, compute ComputeFunc) (*corev1.Pod, *inplaceupdate.Step, error) {
	written, step, _, err := write(ctx, pods, pod, compute)
	return written, step, err
}

// write takes one step from pod. It returns the Pod as last written, the step, and the
// conditions it wrote (if any).
func write(ctx context.Context, pods corev1client.PodInterface, pod *corev1.Pod, compute ComputeFunc) (*corev1.Pod, *inplaceupdate.Step, []corev1.PodCondition, error) {
	name := fmt.Sprintf("%s/%s", pod.Namespace, pod.Name)
	step, err := compute(pod)
	if err != nil {
		return pod, nil, nil, err
	}
	if step.Done && step.Pod != nil {
		return complete(ctx, pods, pod, step)
	}
	wrote := step.Conditions
	if len(step.Conditions) > 0 {
		// Ask kube-apiserver whether it would take the Pod (and its resize) before taking the Pod
		// out of service: a request it refuses then writes nothing at all.
		if err := dryRun(ctx, pods, pod.Name, step); err != nil {
			return pod, step, nil, fmt.Errorf("pod %s would not accept the update: %w", name, err)
		}
		patched, err := patchConditions(ctx, pods, pod, step)
		if err != nil {
			return pod, step, nil, err
		}
		pod = patched
		// The conditions are written; the rest of the step is computed again from the fresh Pod.
		if step, err = compute(pod); err != nil {
			return pod, nil, wrote, err
		}
	}
	// The resize goes before the Pod update. The update may restart containers (a new image, an
	// env-from-metadata restart): a memory limit decrease that reaches the kubelet after such a
	// restart is refused until the kubelet has memory stats for the new container ("cannot
	// decrease memory limits: missing container memory usage"), which can take minutes. Resized
	// first, the limit is lowered on the container that runs now, or the restart starts the new
	// container with the new resources. It also keeps a refused resize from leaving half an
	// update behind: nothing but the conditions is written yet.
	if len(step.Resize) > 0 {
		patch, err := step.ResizePatch()
		if err != nil {
			return pod, step, wrote, fmt.Errorf("encoding the resize of pod %s: %w", name, err)
		}
		resized, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize")
		if err != nil {
			return pod, step, wrote, fmt.Errorf("resizing pod %s: %w", name, err)
		}
		pod = resized
		if step.Pod != nil {
			step.Pod = onResized(step.Pod, resized)
		}
	}
	if step.Pod != nil {
		updated, err := pods.Update(ctx, step.Pod, metav1.UpdateOptions{})
		if err != nil {
			// After a resize the Pod has its new resources and nothing else of the step: the next
			// compute, on the resized Pod, gives the same Pod update (its resize is a no-op).
			return pod, step, wrote, fmt.Errorf("updating pod %s: %w", name, err)
		}
		pod = updated
	}
	return pod, step, wrote, nil
}

// complete writes the last step of an update. When the step changes only the engine's records
// (the state, the lifecycle label; inplaceupdate.CompletesThroughStatus), the records and any
// conditions that put the Pod back in service go in one write through pods/status, which takes
// labels and annotations along with the status: one write instead of two, and one watch event
// less before the kubelet answers; no Pod update, which other admission webhooks would see.
//
// Otherwise (the step sets labels a user asked for, which a Pod update's admission must see) it
// writes in the opposite order of a start: the Pod first (its state says the update completed),
// then the conditions. Taking a Pod out of service must come first; putting it back must come
// last, once the Pod says it is done. It also spares the requests a Pod kept conflicting on: the
// kubelet answers InPlaceUpdateReady=True at once by writing Ready, which made the Pod update
// after it conflict (409) every other time; it does not answer a metadata change. No dry run is
// needed to put a Pod back in service.
func complete(ctx context.Context, pods corev1client.PodInterface, pod *corev1.Pod, step *inplaceupdate.Step) (*corev1.Pod, *inplaceupdate.Step, []corev1.PodCondition, error) {
	name := fmt.Sprintf("%s/%s", pod.Namespace, pod.Name)
	if inplaceupdate.CompletesThroughStatus(pod, step) {
		updated, err := CompleteThroughStatus(ctx, pods, step)
		if err != nil {
			return pod, step, nil, err
		}
		return updated, step, step.Conditions, nil
	}
	updated, err := pods.Update(ctx, step.Pod, metav1.UpdateOptions{})
	if err != nil {
		return pod, step, nil, fmt.Errorf("updating pod %s: %w", name, err)
	}
	if len(step.Conditions) == 0 {
		// Already back in service: inplace-daemon set InPlaceUpdateReady True when the kubelet
		// ran the new spec, before this step.
		return updated, step, nil, nil
	}
	patched, err := patchConditions(ctx, pods, updated, step)
	if err != nil {
		// The state says completed: the next sync sets the conditions (Progress' completed branch).
		return updated, step, nil, err
	}
	return patched, step, step.Conditions, nil
}

// CompleteThroughStatus writes a completing step that inplaceupdate.CompletesThroughStatus
// accepts: its Pod (the engine's records) and its conditions in one pods/status update. step.Pod
// carries the resourceVersion it was computed from: the write fails with a conflict if the Pod
// moved on since, as a Pod update would.
func CompleteThroughStatus(ctx context.Context, pods corev1client.PodInterface, step *inplaceupdate.Step) (*corev1.Pod, error) {
	done := step.Pod.DeepCopy()
	inplaceupdate.SetConditions(&done.Status, step.Conditions...)
	updated, err := pods.UpdateStatus(ctx, done, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("recording the completed update of pod %s/%s: %w", done.Namespace, done.Name, err)
	}
	return updated, nil
}

// patchConditions writes the step's conditions through pods/status, bound to pod's
// resourceVersion: the precondition keeps them from landing on a Pod that moved on.
func patchConditions(ctx context.Context, pods corev1client.PodInterface, pod *corev1.Pod, step *inplaceupdate.Step) (*corev1.Pod, error) {
	name := fmt.Sprintf("%s/%s", pod.Namespace, pod.Name)
	patch, err := step.StatusPatch()
	if err != nil {
		return nil, fmt.Errorf("encoding the conditions of pod %s: %w", name, err)
	}
	if patch, err = withResourceVersion(patch, pod.ResourceVersion); err != nil {
		return nil, err
	}
	patched, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("setting conditions of pod %s: %w", name, err)
	}
	return patched, nil
}

// dryRun sends the step's Pod update and resize with dryRun=All: admission and validation run,
// nothing is stored.
func dryRun(ctx context.Context, pods corev1client.PodInterface, name string, step *inplaceupdate.Step) error {
	dry := []string{metav1.DryRunAll}
	if step.Pod != nil {
		if _, err := pods.Update(ctx, step.Pod, metav1.UpdateOptions{DryRun: dry}); err != nil {
			return err
		}
	}
	if len(step.Resize) > 0 {
		patch, err := step.ResizePatch()
		if err != nil {
			return err
		}
		if _, err := pods.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{DryRun: dry}, "resize"); err != nil {
			return err
		}
	}
	return nil
}

// previousConditions are the Pod's conditions of the types in wrote, as they were. An
// InPlaceUpdateReady the Pod did not have yet comes back True, what inplace-controller would set.
func previousConditions(pod *corev1.Pod, wrote []corev1.PodCondition) []corev1.PodCondition {
	var prev []corev1.PodCondition
	for _, w := range wrote {
		found := false
		for _, c := range pod.Status.Conditions {
			if c.Type == w.Type {
				prev = append(prev, c)
				found = true
				break
			}
		}
		if !found {
			// The gate's condition was absent: the controller sets it True for such a Pod.
			prev = append(prev, corev1.PodCondition{Type: w.Type, Status: corev1.ConditionTrue,
				Reason: inplaceupdate.ReasonInPlaceUpdateAbandoned, LastTransitionTime: metav1.Now()})
		}
	}
	return prev
}

// restoreConditions puts conditions back after a refused request, best effort: if it fails too,
// inplace-controller sets InPlaceUpdateReady True once inplaceupdate.StartWindow has passed.
func restoreConditions(ctx context.Context, pods corev1client.PodInterface, name string, conds []corev1.PodCondition) {
	// The request may have been cancelled; the restore must still happen.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	patch, err := (&inplaceupdate.Step{Conditions: conds}).StatusPatch()
	if err == nil {
		_, err = pods.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Could not restore the conditions of a pod after a refused in-place update", "pod", name)
	}
}

// onResized is the step's Pod update rebased on the Pod its resize returned: a Pod update must
// carry the resources the Pod has (only pods/resize changes them) and the resourceVersion it was
// read at, so it does not overwrite a change made since.
func onResized(update, resized *corev1.Pod) *corev1.Pod {
	update = update.DeepCopy()
	update.ResourceVersion = resized.ResourceVersion
	for i := range update.Spec.Containers {
		for _, c := range resized.Spec.Containers {
			if c.Name == update.Spec.Containers[i].Name {
				update.Spec.Containers[i].Resources = *c.Resources.DeepCopy()
			}
		}
	}
	return update
}

func withResourceVersion(patch []byte, rv string) ([]byte, error) {
	// A strategic merge patch is a JSON object: add metadata.resourceVersion to it.
	if len(patch) < 2 || patch[0] != '{' {
		return nil, fmt.Errorf("unexpected status patch %q", patch)
	}
	prefix := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},`, rv)
	return append([]byte(prefix), patch[1:]...), nil
}
