package statefulset

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/availability"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
	"github.com/inplace-dev/inplace/pkg/workload/scaffold"
)

// sync brings one StatefulSet a step closer to its spec: revisions first, then (once the cache
// shows what the last sync did) one of lifecycle moves, scaling or the rolling update, then status
// and history.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	set, selector, ok, err := c.Load(key)
	if !ok || err != nil {
		return 0, err
	}
	// Expectations before the Pods, as in the CloneSet controller: a Pod that settles an
	// expectation is then in the list too.
	satisfied, left := c.Exp.Satisfied(key.String(), c.podState(set.Namespace))
	pods, revisions, err := c.claim(ctx, set, selector)
	if err != nil {
		return 0, err
	}
	revs, err := c.manageRevisions(ctx, set, revisions)
	if err != nil {
		return scaffold.RevisionsFailed(err, set.Status.CollisionCount, revs, func(count *int32) error {
			st := set.Status.DeepCopy()
			st.CollisionCount = count
			return c.updateStatus(ctx, set, st)
		})
	}

	var requeue time.Duration
	var actErr error
	var updated bool // the rolling update ran
	if set.DeletionTimestamp == nil {
		if satisfied {
			var acted bool
			// Before the Pods are touched, as OpenKruise: the first batch of an update starts
			// while the other Pods' nodes pull. A failed pre-download step stops nothing else.
			preWait, preErr := c.preDownload(ctx, set, revs)
			acted, actErr = c.refreshLifecycles(ctx, set, pods, revs.Update.Name)
			if !acted && actErr == nil {
				actErr = c.restoreClaims(ctx, set, pods)
			}
			if !acted && actErr == nil {
				acted, actErr = c.scale(ctx, set, pods, revs)
			}
			if !acted && actErr == nil {
				actErr = c.rollingUpdate(ctx, set, pods, revs, revisions)
				updated = true
			}
			requeue = preWait
			actErr = errors.Join(preErr, actErr)
		} else {
			requeue = left
		}
	}
	status, wait := calculateStatus(set, pods, revs, c.Clock.Now())
	setBudgetCondition(status, updated, actErr, c.Clock.Now())
	// Counted whatever StatefulSetAutoResizePVCGate says, as OpenKruise does.
	claims, err := c.volumeClaimStatus(set, pods)
	if err != nil {
		return 0, errors.Join(actErr, err)
	}
	status.VolumeClaims = claims
	return c.Finish(ctx, actErr, func() error { return c.updateStatus(ctx, set, status) },
		revisions, revs, pods, history.Limit(set.Spec.RevisionHistoryLimit), requeue, wait)
}

// setBudgetCondition shows in the FailedUpdatePod condition the in-place updates
// PodUnavailableBudgets hold back (inplacerequest.SetBudgetCondition).
func setBudgetCondition(st *v1beta1.StatefulSetStatus, updated bool, actErr error, now time.Time) {
	st.Conditions = inplacerequest.SetBudgetCondition(st.Conditions, updated, actErr, now,
		func(c appsv1.StatefulSetCondition) (string, corev1.ConditionStatus, string, metav1.Time) {
			return string(c.Type), c.Status, c.Reason, c.LastTransitionTime
		},
		func(message string, since metav1.Time) appsv1.StatefulSetCondition {
			return appsv1.StatefulSetCondition{Type: inplacerequest.ConditionFailedUpdatePod, Status: corev1.ConditionTrue,
				LastTransitionTime: since, Reason: inplacerequest.ReasonBlockedByBudget, Message: message}
		})
}

// claim returns the set's Pods, lowest ordinal first, and its revisions, oldest first. Like
// kube's StatefulSet, the set adopts the orphan Pods its selector matches whose names are
// <set>-<ordinal> (those of other ordinals are adopted and then condemned, as scaling sees them),
// and the orphan revisions its selector matches; it releases what it owns but no longer wants.
func (c *Controller) claim(ctx context.Context, set *v1beta1.StatefulSet, selector labels.Selector) ([]*corev1.Pod, []*appsv1.ControllerRevision, error) {
	owner := ownership.Owner{Object: set, Ref: controllerRef(set), Wants: ownership.Selects(selector),
		Fresh: func(ctx context.Context) (metav1.Object, error) {
			return c.Inplace.AppsV1beta1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		}}
	revisions, err := ownership.ClaimRevisions(ctx, owner, c.Owned.Revisions, c.Kube.AppsV1())
	if err != nil {
		return nil, nil, err
	}
	owner.Wants = func(o metav1.Object) bool {
		return selector.Matches(labels.Set(o.GetLabels())) && isMember(set, o.GetName())
	}
	pods, err := ownership.ClaimPods(ctx, owner, c.Owned.Pods, c.Kube.CoreV1())
	if err != nil {
		return nil, nil, err
	}
	byOrdinal(set, pods)
	return pods, revisions, nil
}

// podState is what the expectations of a StatefulSet in namespace see of the Pod cache.
func (c *Controller) podState(namespace string) expectations.Lookup {
	return expectations.PodLookup(c.pods.Pods(namespace).Get)
}

// manageRevisions finds or creates the revision of the set's template (the update revision) and
// its current revision; see history.Manage.
func (c *Controller) manageRevisions(ctx context.Context, set *v1beta1.StatefulSet, revisions []*appsv1.ControllerRevision) (history.Revisions, error) {
	var collisionCount int32
	if set.Status.CollisionCount != nil {
		collisionCount = *set.Status.CollisionCount
	}
	data, err := history.TemplateData(&set.Spec.Template)
	if err != nil {
		return history.Revisions{CollisionCount: collisionCount}, fmt.Errorf("encoding the template of StatefulSet %s/%s: %w", set.Namespace, set.Name, err)
	}
	owner := history.Owner{Object: set, Ref: controllerRef(set), Labels: set.Spec.Template.Labels}
	return history.Manage(ctx, c.Kube.AppsV1(), owner, data, revisions, set.Status.CurrentRevision, collisionCount)
}

// calculateStatus counts the set's Pods as OpenKruise's and kube's StatefulSet do, and says when
// the next Pod becomes available. A terminating Pod still counts in replicas, and in ready and
// available while it is so (it still serves), but not in current or updated: it is on its way out.
func calculateStatus(set *v1beta1.StatefulSet, pods []*corev1.Pod, revs history.Revisions, now time.Time) (*v1beta1.StatefulSetStatus, time.Duration) {
	st := set.Status.DeepCopy()
	st.ObservedGeneration = set.Generation
	st.UpdateRevision = revs.Update.Name
	st.CollisionCount = &revs.CollisionCount
	st.LabelSelector = metav1.FormatLabelSelector(set.Spec.Selector)
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.CurrentReplicas = 0, 0, 0, 0
	st.UpdatedReplicas, st.UpdatedReadyReplicas, st.UpdatedAvailableReplicas = 0, 0, 0
	minReady := minReadySeconds(set)
	var wait time.Duration
	for _, p := range pods {
		st.Replicas++
		rev := p.Labels[appsv1.ControllerRevisionHashLabelKey]
		ready := availability.Ready(p)
		available, left := availability.Available(p, minReady, now)
		if p.DeletionTimestamp == nil {
			wait = reconcile.Soonest(wait, left)
		}
		if ready {
			st.ReadyReplicas++
		}
		if available {
			st.AvailableReplicas++
		}
		if rev == revs.Update.Name {
			if ready {
				st.UpdatedReadyReplicas++
			}
			if available {
				st.UpdatedAvailableReplicas++
			}
		}
		if p.DeletionTimestamp != nil {
			continue
		}
		if rev == revs.Current.Name {
			st.CurrentReplicas++
		}
		if rev == revs.Update.Name {
			st.UpdatedReplicas++
		}
	}
	// As OpenKruise's StatefulSet: once every wanted Pod is at the update revision and ready, it is
	// current.
	st.CurrentRevision = revs.Current.Name
	if n := int32(len(wantedOrdinals(set))); st.UpdatedReplicas == n && st.Replicas == n && st.ReadyReplicas == n {
		st.CurrentRevision = revs.Update.Name
		st.CurrentReplicas = st.UpdatedReplicas
	}
	return st, wait
}

func minReadySeconds(set *v1beta1.StatefulSet) int32 {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MinReadySeconds != nil {
		return *ru.MinReadySeconds
	}
	return 0
}

// updateStatus writes status when it changed.
func (c *Controller) updateStatus(ctx context.Context, set *v1beta1.StatefulSet, status *v1beta1.StatefulSetStatus) error {
	if equality.Semantic.DeepEqual(&set.Status, status) {
		return nil
	}
	fresh := set.DeepCopy()
	fresh.Status = *status
	_, err := c.Inplace.AppsV1beta1().StatefulSets(set.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("updating the status of StatefulSet %s/%s: %w", set.Namespace, set.Name, err)
	}
	klog.FromContext(ctx).V(4).Info("Updated status", "statefulset", klog.KObj(set), "replicas", status.Replicas,
		"ready", status.ReadyReplicas, "updated", status.UpdatedReplicas)
	return nil
}
