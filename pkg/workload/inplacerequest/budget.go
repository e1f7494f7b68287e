package inplacerequest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// ReasonBlockedByBudget is the Event reason (and the FailedUpdate condition's reason) of a Pod
// update that a PodUnavailableBudget holds back: pods/inplaceupdate or pods/recreate answered 429,
// or the budget's Pod webhook refused the deletion of a recreate update with a 429.
const ReasonBlockedByBudget = "PodUnavailableBudget"

// BudgetRetry is how soon a workload whose update a budget held back looks again when nothing
// else wakes it: a Pod that becomes available again (an event) usually does first.
const BudgetRetry = 5 * time.Second

// BudgetWait is an update a PodUnavailableBudget holds back: not a failure to retry with backoff,
// a wait (the message is the server's: which budget, how many Pods it has and needs).
type BudgetWait struct {
	Pod     string
	Message string
}

func (w *BudgetWait) Error() string { return "pod " + w.Pod + ": " + w.Message }

// AsBudgetWait is err as a *BudgetWait when the server refused the update of pod with a 429 (a
// PodUnavailableBudget with no unit left), else err unchanged.
func AsBudgetWait(pod string, err error) error {
	var status apierrors.APIStatus
	if apierrors.IsTooManyRequests(err) && errors.As(err, &status) {
		return &BudgetWait{Pod: pod, Message: status.Status().Message}
	}
	return err
}

// Waiting is how a workload takes the error of its in-place update of pod: a refusal by a
// PodUnavailableBudget (a 429) becomes a *BudgetWait, told in a Normal Event about the workload
// obj; ok is false for any other error, which is the caller's to report.
func Waiting(recorder record.EventRecorder, obj runtime.Object, pod string, err error) (wait *BudgetWait, ok bool) {
	return waiting(recorder, obj, pod, "update pod "+pod+" in place", err)
}

// WaitingToDelete is Waiting for the deletion of pod that a workload's recreate update sends:
// the budget's Pod webhook refuses a deletion beyond the budget with the same 429.
func WaitingToDelete(recorder record.EventRecorder, obj runtime.Object, pod string, err error) (wait *BudgetWait, ok bool) {
	return waiting(recorder, obj, pod, "delete pod "+pod, err)
}

func waiting(recorder record.EventRecorder, obj runtime.Object, pod, doing string, err error) (wait *BudgetWait, ok bool) {
	if wait, ok = AsBudgetWait(pod, err).(*BudgetWait); ok {
		recorder.Eventf(obj, corev1.EventTypeNormal, ReasonBlockedByBudget, "waiting to %s: %s", doing, wait.Message)
	}
	return wait, ok
}

// ConditionFailedUpdatePod is the condition an Advanced StatefulSet or DaemonSet shows while
// PodUnavailableBudgets hold its in-place updates back (OpenKruise's StatefulSet condition type of
// a Pod update that failed; a CloneSet shows its FailedUpdate condition instead), with reason
// ReasonBlockedByBudget.
const ConditionFailedUpdatePod = "FailedUpdatePod"

// BudgetCondition is what a workload's budget condition says after a sync that returned actErr,
// whose rolling update ran (updated) or not: while budgets hold Pod updates back (waits in
// actErr), hold is true and message names the first Pod and budget and how many more Pods wait;
// once a rolling update ran with nothing held back, drop is true (a condition of reason
// ReasonBlockedByBudget goes). A sync whose update did not run changes nothing.
func BudgetCondition(updated bool, actErr error) (message string, hold, drop bool) {
	waits, _ := BudgetWaits(actErr)
	if len(waits) == 0 {
		return "", false, updated
	}
	return WaitMessage(waits), true, false
}

// SetBudgetCondition returns conds, a workload status's conditions of type C, with its
// ConditionFailedUpdatePod condition as BudgetCondition says: set True (its transition time kept
// while it holds) or dropped. info reads a condition's type, status, reason and transition time;
// held builds the True condition from its message and transition time. conds itself (the cached
// object's) is not modified.
func SetBudgetCondition[C any](conds []C, updated bool, actErr error, now time.Time,
	info func(C) (typ string, status corev1.ConditionStatus, reason string, since metav1.Time),
	held func(message string, since metav1.Time) C) []C {
	message, hold, drop := BudgetCondition(updated, actErr)
	i := slices.IndexFunc(conds, func(c C) bool { typ, _, _, _ := info(c); return typ == ConditionFailedUpdatePod })
	switch {
	case hold:
		since := metav1.NewTime(now)
		if i < 0 {
			return append(slices.Clone(conds), held(message, since))
		}
		if _, status, _, t := info(conds[i]); status == corev1.ConditionTrue {
			since = t
		}
		conds = slices.Clone(conds)
		conds[i] = held(message, since)
	case drop && i >= 0:
		if _, _, reason, _ := info(conds[i]); reason == ReasonBlockedByBudget {
			return slices.Delete(slices.Clone(conds), i, i+1)
		}
	}
	return conds
}

// WaitMessage says what waits (not empty): the first Pod with its budget's message, and how many
// more Pods wait.
func WaitMessage(waits []*BudgetWait) string {
	message := waits[0].Error()
	if n := len(waits) - 1; n > 0 {
		message += fmt.Sprintf(" (and %d more pods)", n)
	}
	return message
}

// BudgetWaits splits err (a join of Pod update errors, joins of joins too) into the budget waits
// and the rest.
func BudgetWaits(err error) (waits []*BudgetWait, rest error) {
	var others []error
	var split func(error)
	split = func(err error) {
		if err == nil {
			return
		}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				split(e)
			}
			return
		}
		var w *BudgetWait
		if errors.As(err, &w) {
			waits = append(waits, w)
		} else {
			others = append(others, err)
		}
	}
	split(err)
	return waits, errors.Join(others...)
}
