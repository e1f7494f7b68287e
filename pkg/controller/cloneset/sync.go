package cloneset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
	"github.com/inplace-dev/inplace/pkg/workload/scaffold"
)

// sync reconciles one CloneSet: claim its Pods, settle its revisions, scale, write status, trim
// history. It says when to look again if time, not an event, is what it waits for.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	cs, selector, ok, err := c.Load(key)
	if !ok || err != nil {
		return 0, err
	}
	// Expectations first, then the Pods, as the ReplicaSet controller does: a Pod whose creation
	// settles an expectation is then in the list too. The other way round, a Pod created by the
	// last sync could reach the cache between the two, settle its expectation and be missing from
	// the list: the sync then created one Pod too many (seen in CI: a replacement Pod got a new
	// instance id, leaving the PVCs of the old one unused).
	satisfied, left := c.Exp.Satisfied(key.String(), c.podState(cs.Namespace))
	pods, revisions, err := c.claim(ctx, cs, selector)
	if err != nil {
		return 0, err
	}
	revs, revErr := c.manageRevisions(ctx, cs, revisions)
	if revErr != nil {
		return scaffold.RevisionsFailed(revErr, cs.Status.CollisionCount, revs, func(count *int32) error {
			st := cs.Status.DeepCopy()
			st.CollisionCount = count
			return c.updateStatus(ctx, cs, st)
		})
	}

	active := activePods(pods)
	var requeue time.Duration
	var scaleErr error
	var upd *updateResult
	if cs.DeletionTimestamp == nil {
		if satisfied {
			var acted bool
			// With scaleStrategy.disablePVCReuse, PVCs no active Pod uses go first, as in
			// OpenKruise; a failure there counts as a scaling failure but stops nothing else.
			claimErr := c.cleanUpClaims(ctx, cs, active)
			acted, scaleErr = c.refreshLifecycles(ctx, cs, active, revs.Update.Name)
			if !acted && scaleErr == nil {
				acted, scaleErr = c.scale(ctx, cs, active, revs)
			}
			if !acted && scaleErr == nil {
				// Lifecycle moves, scaling and updating never happen in the same sync: the next
				// one sees the Pods the previous step changed.
				_, rest := splitSpecified(cs, active)
				r := c.rollingUpdate(ctx, cs, rest, revs, revisions)
				upd = &r
			}
			scaleErr = errors.Join(claimErr, scaleErr)
		} else {
			requeue = left
		}
	}

	status, wait := calculateStatus(cs, active, revs, c.Clock.Now())
	if scaleErr != nil {
		setCondition(status, v1alpha1.CloneSetConditionFailedScale, corev1.ConditionTrue, "ScaleFailed", scaleErr.Error(), c.Clock.Now())
	} else if cs.DeletionTimestamp == nil {
		setCondition(status, v1alpha1.CloneSetConditionFailedScale, corev1.ConditionFalse, "", "", c.Clock.Now())
	}
	c.setUpdateCondition(cs, status, upd)
	if err := c.updateStatus(ctx, cs, status); err != nil {
		return 0, errors.Join(scaleErr, err)
	}
	// A failed pre-download step stops nothing else; the sync's error retries it.
	preWait, preErr := c.preDownload(ctx, cs, status, revs)
	if err := c.truncateHistory(ctx, cs, pods, revisions, revs); err != nil {
		return 0, errors.Join(scaleErr, preErr, err)
	}
	if err := c.trimPodsToDelete(ctx, cs, pods); err != nil {
		return 0, errors.Join(scaleErr, preErr, err)
	}
	if err := errors.Join(scaleErr, preErr); err != nil {
		return 0, err
	}
	if upd != nil && upd.err != nil {
		return 0, upd.err
	}
	if upd != nil && len(upd.blocked) > 0 {
		requeue = reconcile.Soonest(requeue, inplacerequest.BudgetRetry)
	}
	// A Pod becoming available, or the progress deadline passing, is not an event.
	return reconcile.Soonest(requeue, wait, preWait), nil
}

// Reasons of the FailedUpdate condition.
const (
	reasonUpdateFailed        = "UpdateFailed"
	reasonCannotUpdateInPlace = "CannotUpdateInPlace"
)

// setUpdateCondition sets FailedUpdate from what the rolling update did: True when a Pod's update
// failed, or when InPlaceOnly refused a change that cannot go in place (with a Warning event when
// the condition becomes so); False when the update ran without either (a paused update runs and
// refuses nothing). When the update did not run (upd nil: scaling acted or failed, expectations
// pending, CloneSet being deleted) the condition stays as it was.
func (c *Controller) setUpdateCondition(cs *v1alpha1.CloneSet, status *v1alpha1.CloneSetStatus, upd *updateResult) {
	if upd == nil {
		return
	}
	var reason, message string
	switch {
	case upd.err != nil:
		reason, message = reasonUpdateFailed, upd.err.Error()
	case len(upd.blocked) > 0:
		// Not a failure of the Pods, but the rollout is stopped, as OpenKruise shows a budget's
		// refusal (its webhook fails the Pod update): FailedUpdate with the budget's reason.
		reason, message = inplacerequest.ReasonBlockedByBudget, inplacerequest.WaitMessage(upd.blocked)
	case len(upd.refused) > 0:
		reason = reasonCannotUpdateInPlace
		message = "updateStrategy.type is InPlaceOnly and the change cannot be made in place: " + upd.refused[0]
		if n := len(upd.refused) - 1; n > 0 {
			message += fmt.Sprintf(" (and %d more pods)", n)
		}
	default:
		setCondition(status, v1alpha1.CloneSetConditionFailedUpdate, corev1.ConditionFalse, "", "", c.Clock.Now())
		return
	}
	if reason == reasonCannotUpdateInPlace && !hasCondition(&cs.Status, v1alpha1.CloneSetConditionFailedUpdate, reason, message) {
		c.Recorder.Eventf(cs, corev1.EventTypeWarning, ReasonFailedUpdatePodInPlaceOnly, "%s", message)
	}
	setCondition(status, v1alpha1.CloneSetConditionFailedUpdate, corev1.ConditionTrue, reason, message, c.Clock.Now())
}

// hasCondition tells whether the status has the condition True with that reason and message.
func hasCondition(st *v1alpha1.CloneSetStatus, t v1alpha1.CloneSetConditionType, reason, message string) bool {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue && c.Reason == reason && c.Message == message
		}
	}
	return false
}

// podState is what the expectations of a CloneSet in namespace see of the informers' caches: Pods
// by name, and its PVCs under their claimKey names.
func (c *Controller) podState(namespace string) expectations.Lookup {
	pods := expectations.PodLookup(c.pods.Pods(namespace).Get)
	return func(name string) expectations.Cached {
		if claim, ok := isClaimKey(name); ok {
			return c.claimState(namespace, claim)
		}
		return pods(name)
	}
}

// claim returns the CloneSet's Pods (terminating ones included) and its revisions, oldest first.
// Like kube's ReplicaSet and StatefulSet (and OpenKruise's CloneSet, which counts the orphan
// revisions its selector matches as its own), it adopts the orphan Pods and revisions its selector
// matches and releases those it owns but no longer matches (see ownership.Claim). A CloneSet
// deleted with --cascade=orphan and created again so finds its Pods and the revision they are at:
// without the revision, its name would be taken (a collision) and every adopted Pod rolled to a
// new one.
func (c *Controller) claim(ctx context.Context, cs *v1alpha1.CloneSet, selector labels.Selector) ([]*corev1.Pod, []*appsv1.ControllerRevision, error) {
	owner := ownership.Owner{Object: cs, Ref: controllerRef(cs), Wants: ownership.Selects(selector),
		Fresh: func(ctx context.Context) (metav1.Object, error) {
			return c.Inplace.AppsV1alpha1().CloneSets(cs.Namespace).Get(ctx, cs.Name, metav1.GetOptions{})
		}}
	return c.Owned.Claim(ctx, owner, c.Kube)
}

// activePods are the Pods that count: not terminating, not finished.
func activePods(pods []*corev1.Pod) []*corev1.Pod {
	var active []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			active = append(active, p)
		}
	}
	return active
}

func (c *Controller) updateStatus(ctx context.Context, cs *v1alpha1.CloneSet, status *v1alpha1.CloneSetStatus) error {
	if apiequality.Semantic.DeepEqual(&cs.Status, status) {
		return nil
	}
	cs = cs.DeepCopy()
	cs.Status = *status
	_, err := c.Inplace.AppsV1alpha1().CloneSets(cs.Namespace).UpdateStatus(ctx, cs, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("updating the status of CloneSet %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	klog.FromContext(ctx).V(4).Info("Updated CloneSet status", "cloneset", klog.KObj(cs), "replicas", status.Replicas,
		"ready", status.ReadyReplicas, "updated", status.UpdatedReplicas)
	return nil
}

// trimPodsToDelete removes from spec.scaleStrategy.podsToDelete the names of Pods the CloneSet no
// longer has (deleted, or never its own), as OpenKruise does, so the list does not grow forever
// nor delete a later Pod that reuses a name. The patch is conditional on the cached
// resourceVersion: a concurrent edit wins, and the next sync looks again.
func (c *Controller) trimPodsToDelete(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod) error {
	names := cs.Spec.ScaleStrategy.PodsToDelete
	if len(names) == 0 || cs.DeletionTimestamp != nil {
		return nil
	}
	have := make(map[string]bool, len(pods))
	for _, p := range pods {
		have[p.Name] = true
	}
	kept := make([]string, 0, len(names))
	for _, n := range names {
		if have[n] {
			kept = append(kept, n)
		}
	}
	if len(kept) == len(names) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": cs.ResourceVersion},
		"spec":     map[string]any{"scaleStrategy": map[string]any{"podsToDelete": kept}},
	})
	if err != nil {
		return err
	}
	_, err = c.Inplace.AppsV1alpha1().CloneSets(cs.Namespace).Patch(ctx, cs.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing deleted pods from spec.scaleStrategy.podsToDelete of CloneSet %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Trimmed podsToDelete", "cloneset", klog.KObj(cs), "kept", kept)
	return nil
}
