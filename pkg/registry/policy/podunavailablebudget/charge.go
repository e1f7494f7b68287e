package podunavailablebudget

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/policy"
	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/pkg/podbudget"
)

// BudgetCause is the type of the StatusCause a refusal carries, naming the budget (as
// pods/eviction's refusals carry policy/v1's DisruptionBudget cause).
const BudgetCause metav1.CauseType = "PodUnavailableBudget"

// statusStore is the budgets' /status: read one, write its status with the resourceVersion read.
type statusStore interface {
	Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error)
	Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
		updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error)
}

// Charger takes a unit of a Pod's budget in the request that disrupts the Pod (pods/inplaceupdate,
// pods/recreate), before the Pod changes, as pods/eviction takes one of a PodDisruptionBudget: from
// the budget's store, in this server, with no webhook between.
type Charger struct {
	status statusStore
}

// NewCharger charges the budgets of storage.
func NewCharger(status statusStore) *Charger {
	return &Charger{status: status}
}

// conflictRetry is how often a charge is tried again when the budget changed under it (another
// charge, the controller's status write), a few milliseconds apart.
var conflictRetry = retry.DefaultRetry

// Charge takes one unit of the budget the Pod names (its related-pub annotation, written by the
// controller) for op, and records the Pod in the budget's status. Nothing is taken — and the
// change may go on — when the operation's gate is off (PodUnavailableBudgetUpdateGate for UPDATE and
// RESIZE, PodUnavailableBudgetDeleteGate for DELETE and EVICT), when the Pod is not available now
// (it counts as unavailable already), is left out of the budget (pub.kruise.io/no-protect,
// spec.ignoredPodSelector), names no budget or one that is gone, when the budget does not
// protect op or wants no Pod available, or when the Pod is recorded already. at is the change's
// time (pods/inplaceupdate's, which its state annotation carries too: the controller releases the
// unit once the Pod shows a change begun at or after it). With dryRun the budget is checked and
// not written. A budget with no unit left is a 429 naming it.
func (c *Charger) Charge(ctx context.Context, pod *corev1.Pod, op policy.PubOperation, at time.Time, dryRun bool) error {
	if !gateOn(op) || !podbudget.Available(pod) {
		return nil
	}
	name := podbudget.Related(pod)
	if name == "" {
		return nil
	}
	// The budget is in the Pod's namespace; a caller outside a request of that namespace (the Pod
	// webhook, served ahead of the request chain) has none in ctx.
	ctx = genericapirequest.WithNamespace(ctx, pod.Namespace)
	return retry.RetryOnConflict(conflictRetry, func() error {
		obj, err := c.status.Get(ctx, name, &metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		pub := obj.(*policy.PodUnavailableBudget)
		ignored, err := podbudget.Ignored(&pub.Spec, pod)
		if err != nil || ignored || !podbudget.Protects(&pub.Spec, op) || pub.Status.DesiredAvailable == 0 {
			return nil
		}
		status, charged, err := podbudget.Charge(pub, pod.Name, op, at)
		var none *podbudget.ErrNoBudget
		if errors.As(err, &none) {
			return refusal(pod, op, none)
		}
		if err != nil || !charged || dryRun {
			return err
		}
		updated := pub.DeepCopy()
		updated.Status = status
		// The resourceVersion read is the write's precondition: when another charge or the
		// controller wrote first, this fails with a conflict and is done again on what they wrote.
		_, _, err = c.status.Update(ctx, name, rest.DefaultUpdatedObjectInfo(updated), nil, nil, false, &metav1.UpdateOptions{})
		if err == nil {
			klog.FromContext(ctx).V(2).Info("Charged PodUnavailableBudget", "pod", klog.KObj(pod), "podUnavailableBudget", name,
				"operation", op, "unavailableAllowed", status.UnavailableAllowed)
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

func gateOn(op policy.PubOperation) bool {
	if op == policy.PubDeleteOperation || op == policy.PubEvictOperation {
		return features.Enabled(features.PodUnavailableBudgetDeleteGate)
	}
	return features.Enabled(features.PodUnavailableBudgetUpdateGate)
}

// refusal is the 429 a refused charge answers, as pods/eviction answers for a
// PodDisruptionBudget: the message says what was refused and why, the cause names the budget.
// Without a Retry-After, as pods/eviction: with one, client-go repeats the request itself for up
// to ten seconds (a workload controller's worker held on one Pod, kubectl hanging), where the
// caller has its own wait (inplacerequest.BudgetRetry, kubectl drain's).
func refusal(pod *corev1.Pod, op policy.PubOperation, none *podbudget.ErrNoBudget) error {
	what := map[policy.PubOperation]string{
		policy.PubUpdateOperation: "update", policy.PubResizeOperation: "resize",
		policy.PubDeleteOperation: "delete", policy.PubEvictOperation: "evict",
	}[op]
	err := apierrors.NewTooManyRequests(fmt.Sprintf("Cannot %s pod %s now: %s", what, pod.Name, none.Message), 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    BudgetCause,
		Message: fmt.Sprintf("The PodUnavailableBudget %s needs %d available pods and has %d currently", none.Name, none.Status.DesiredAvailable, none.Status.CurrentAvailable),
	})
	return err
}
