package podunavailablebudget

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/inplace-dev/inplace/pkg/apis/policy"
	"github.com/inplace-dev/inplace/pkg/apis/policy/v1beta1"
	"github.com/inplace-dev/inplace/pkg/podbudget"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// sync writes one budget's status from its Pods, annotating those that do not name it yet. It
// asks to look again when the first recorded Pod's entry times out.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	cached, ok, err := reconcile.Found(c.budgets.PodUnavailableBudgets(key.Namespace).Get(key.Name))
	if !ok || err != nil {
		return 0, err
	}
	if cached.DeletionTimestamp != nil {
		return 0, nil
	}
	pub := &policy.PodUnavailableBudget{}
	if err := v1beta1.Convert_v1beta1_PodUnavailableBudget_To_policy_PodUnavailableBudget(cached, pub, nil); err != nil {
		return 0, err
	}

	pods, total, err := c.podsOf(pub)
	var unsupported errUnsupported
	if errors.As(err, &unsupported) {
		c.recorder.Event(cached, corev1.EventTypeWarning, ReasonTargetUnsupported, err.Error())
		pods, total = nil, 0
	} else if err != nil {
		return 0, fmt.Errorf("listing the pods of PodUnavailableBudget %s: %w", key, err)
	}
	if err := c.annotate(ctx, pub, pods); err != nil {
		return 0, err
	}
	desired, err := podbudget.DesiredAvailable(&pub.Spec, total)
	if err != nil {
		c.recorder.Eventf(cached, corev1.EventTypeWarning, ReasonCountFailed, "Failed to calculate the number of expected pods: %v", err)
		return 0, err
	}
	status, recheck := podbudget.Status(pub, pods, total, desired, c.clock.Now())
	if equality.Semantic.DeepEqual(pub.Status, status) {
		return c.syncedAt(recheck), nil
	}
	if len(pods) == 0 {
		c.recorder.Event(cached, corev1.EventTypeNormal, ReasonNoPods, "No matching pods found")
	}
	updated := cached.DeepCopy()
	if err := v1beta1.Convert_policy_PodUnavailableBudgetStatus_To_v1beta1_PodUnavailableBudgetStatus(&status, &updated.Status, nil); err != nil {
		return 0, err
	}
	// The resourceVersion read goes with the write: a writer that charged the budget since makes
	// it fail with a conflict, and the retry counts the charge.
	if _, err := c.inplace.PolicyV1beta1().PodUnavailableBudgets(key.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("writing the status of PodUnavailableBudget %s: %w", key, err)
	}
	logger(ctx, key).V(2).Info("Updated status", "totalReplicas", status.TotalReplicas, "desiredAvailable", status.DesiredAvailable,
		"currentAvailable", status.CurrentAvailable, "unavailableAllowed", status.UnavailableAllowed,
		"disruptedPods", len(status.DisruptedPods), "unavailablePods", len(status.UnavailablePods))
	return c.syncedAt(recheck), nil
}

// podsOf are the budget's active Pods and the number it protects: the Pods of the workload its
// targetRef names (the workload's replicas), or those its selector matches (the replicas of their
// controllers added up); spec.protectTotalReplicas, when set, is the number instead.
func (c *Controller) podsOf(pub *policy.PodUnavailableBudget) ([]*corev1.Pod, int32, error) {
	var (
		pods  []*corev1.Pod
		total int32
		err   error
	)
	if ref := pub.Spec.TargetReference; ref != nil {
		pods, total, err = c.workloadPods(pub.Namespace, ref)
	} else {
		pods, err = c.selectedPods(pub)
		if err == nil && pub.Spec.ProtectTotalReplicas == nil {
			total, err = c.finder.expectedScale(pods)
		}
	}
	if err != nil {
		return nil, 0, err
	}
	if n := pub.Spec.ProtectTotalReplicas; n != nil {
		total = *n
	}
	return pods, total, nil
}

func (c *Controller) workloadPods(ns string, ref *policy.TargetReference) ([]*corev1.Pod, int32, error) {
	w, err := c.finder.get(ns, ref.APIVersion, ref.Kind, ref.Name)
	if err != nil || w == nil {
		return nil, 0, err
	}
	owners, err := c.finder.owners(ns, ref.Kind, w)
	if err != nil {
		return nil, 0, err
	}
	all, err := c.pods.Pods(ns).List(w.selector)
	if err != nil {
		return nil, 0, err
	}
	var pods []*corev1.Pod
	for _, pod := range all {
		if ctl := metav1.GetControllerOf(pod); ctl != nil && owners[ctl.UID] && podbudget.Active(pod) {
			pods = append(pods, pod)
		}
	}
	return pods, w.replicas, nil
}

func (c *Controller) selectedPods(pub *policy.PodUnavailableBudget) ([]*corev1.Pod, error) {
	if pub.Spec.Selector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(pub.Spec.Selector)
	if err != nil || sel.Empty() {
		// Validation refuses both; a budget stored before that protects nothing.
		return nil, nil
	}
	all, err := c.pods.Pods(pub.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for _, pod := range all {
		if podbudget.Active(pod) {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// annotate writes the budget's name on the Pods that name none (both keys, as OpenKruise master
// does), so that the writers that charge budgets find it. A Pod that names another budget keeps it.
func (c *Controller) annotate(ctx context.Context, pub *policy.PodUnavailableBudget, pods []*corev1.Pod) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q,%q:%q}}}`,
		policy.PodRelatedPubAnnotation, pub.Name, policy.DeprecatedPodRelatedPubAnnotation, pub.Name)
	for _, pod := range pods {
		if podbudget.Related(pod) != "" {
			continue
		}
		_, err := c.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("annotating pod %s/%s with its PodUnavailableBudget %s: %w", pod.Namespace, pod.Name, pub.Name, err)
		}
	}
	return nil
}
