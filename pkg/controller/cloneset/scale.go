package cloneset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

// podTemplateHashLabel is the label kube's Deployments give Pods; OpenKruise sets it too.
const podTemplateHashLabel = "pod-template-hash"

// scale deletes the Pods asked for (scaleStrategy.podsToDelete, label specified-delete, or waiting
// in lifecycle state PreparingDelete), then creates or deletes Pods until the CloneSet has
// spec.replicas other active Pods, plus updateStrategy.maxSurge while an update still misses Pods
// (planScale says which). Deletions honour the preDelete hook. It tells whether it created or
// deleted any Pod or moved one to PreparingDelete (then the rolling update waits for the next
// sync, as OpenKruise's does).
func (c *Controller) scale(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod, revs revisionsResult) (bool, error) {
	plan, err := planScale(cs, pods, revs.update.Name, revs.current.Name, c.now())
	if err != nil {
		return false, err
	}
	var errs []error
	acted := false
	if len(plan.specified) > 0 {
		acted = true
		errs = append(errs, c.deletePods(ctx, cs, plan.specified, "SpecifiedDelete",
			"asked for by scaleStrategy.podsToDelete or label "+v1alpha1.SpecifiedDeleteKey))
	}
	if len(plan.scaleDown) > 0 {
		acted = true
		errs = append(errs, c.deletePods(ctx, cs, plan.scaleDown, "ScaleDown", plan.scaleDownWhy))
	}
	if n := plan.createCurrent + plan.createUpdate; n > 0 {
		// One choice of instance ids for both revisions, so that no free PVC is given twice.
		claims, err := c.ownedClaims(cs)
		if err != nil {
			return acted, errors.Join(append(errs, err)...)
		}
		ch := chooseInstanceIDs(cs, claims, pods, c.podState(cs.Namespace), n, func() string { return rand.String(5) })
		if len(ch.waiting) > 0 {
			klog.FromContext(ctx).V(2).Info("Pods wait for their former Pods to terminate before reusing their PVCs",
				"cloneset", klog.KObj(cs), "instanceIDs", ch.waiting)
		}
		ids, reused := ch.ids(), sets.New(ch.reused...)
		current := min(plan.createCurrent, len(ids))
		if current > 0 {
			acted = true
			errs = append(errs, c.createPods(ctx, cs, revs.current, ids[:current], reused,
				fmt.Sprintf("at the current revision %s, to keep updateStrategy.partition", revs.current.Name)))
		}
		if len(ids) > current {
			acted = true
			errs = append(errs, c.createPods(ctx, cs, revs.update, ids[current:], reused, plan.createWhy))
		}
	}
	return acted, errors.Join(errs...)
}

// scalePlan is what scaling does in one sync.
type scalePlan struct {
	// specified are the Pods asked to be deleted (or waiting in PreparingDelete).
	specified []*corev1.Pod
	// scaleDown are the surplus Pods to delete, and why.
	scaleDown    []*corev1.Pod
	scaleDownWhy string
	// createCurrent Pods are created at the current revision (to keep the partition), createUpdate
	// at the update revision, for createWhy.
	createCurrent, createUpdate int
	createWhy                   string
}

// splitSpecified separates the Pods asked to be deleted (scaleStrategy.podsToDelete, label
// specified-delete, lifecycle state PreparingDelete) from the others.
func splitSpecified(cs *v1alpha1.CloneSet, pods []*corev1.Pod) (specified, rest []*corev1.Pod) {
	toDelete := sets.New(cs.Spec.ScaleStrategy.PodsToDelete...)
	for _, p := range pods {
		if toDelete.Has(p.Name) || p.Labels[v1alpha1.SpecifiedDeleteKey] != "" || lifecycleState(p) == pub.LifecycleStatePreparingDelete {
			specified = append(specified, p)
		} else {
			rest = append(rest, p)
		}
	}
	return specified, rest
}

// planScale decides the creations and deletions of one sync, as OpenKruise's CloneSet does:
//   - the Pods asked for are deleted, and do not count towards spec.replicas;
//   - while Pods at the old revision beyond the partition wait for the update revision, up to
//     maxSurge extra Pods are created at the update revision (fewer when fewer Pods wait); once
//     they are no longer needed the surplus is deleted, Pods at old revisions beyond the partition
//     first, and then no more available Pods than maxUnavailable allows;
//   - scaling up creates Pods at the current revision while fewer than partition Pods are at old
//     revisions, so that the partition keeps its meaning; scaleStrategy.maxUnavailable bounds how
//     many not-ready Pods scaling up may leave;
//   - scaling down deletes the surplus in sortForDeletion's order, old revisions beyond the
//     partition first.
func planScale(cs *v1alpha1.CloneSet, pods []*corev1.Pod, updateRevision, currentRevision string, now time.Time) (scalePlan, error) {
	var plan scalePlan
	limits, err := updateLimitsOf(cs)
	if err != nil {
		return plan, err
	}
	plan.specified, pods = splitSpecified(cs, pods)
	replicas := limits.replicas
	var atUpdate, atOld []*corev1.Pod
	unavailable := 0
	for _, p := range pods {
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] == updateRevision {
			atUpdate = append(atUpdate, p)
		} else {
			atOld = append(atOld, p)
		}
		if !availableForUpdate(cs, p, now) {
			unavailable++
		}
	}
	surge := 0
	if limits.maxSurge > 0 {
		waiting := max(len(atOld)-limits.partition, 0)
		missing := max(replicas-limits.partition-len(atUpdate), 0)
		surge = min(limits.maxSurge, waiting, missing)
	}
	target := replicas + surge
	switch diff := len(pods) - target; {
	case diff > 0:
		plan.scaleDown = chooseForDeletion(atOld, atUpdate, diff, len(atOld)-limits.partition)
		plan.scaleDownWhy = fmt.Sprintf("scaling down to %d replicas", replicas)
		if limits.maxSurge > 0 {
			plan.scaleDownWhy = fmt.Sprintf("%d replicas and %d surge pods are enough", replicas, surge)
			// Deleting surplus Pods must not leave fewer than replicas-maxUnavailable available.
			readyBudget := max(limits.maxUnavailable+len(pods)-replicas-unavailable, 0)
			var kept []*corev1.Pod
			for _, p := range plan.scaleDown {
				if availableForUpdate(cs, p, now) {
					if readyBudget == 0 {
						continue
					}
					readyBudget--
				}
				kept = append(kept, p)
			}
			plan.scaleDown = kept
		}
	case diff < 0:
		n := -diff
		if mu := cs.Spec.ScaleStrategy.MaxUnavailable; mu != nil {
			limit, err := intstr.GetScaledValueFromIntOrPercent(mu, replicas, true)
			if err != nil {
				return plan, fmt.Errorf("scaleStrategy.maxUnavailable: %w", err)
			}
			notReady := 0
			for _, p := range pods {
				if !podReady(p) {
					notReady++
				}
			}
			n = max(min(n, limit-notReady), 0)
		}
		if currentRevision != updateRevision {
			plan.createCurrent = min(n, max(limits.partition-len(atOld), 0))
		}
		plan.createUpdate = n - plan.createCurrent
		plan.createWhy = fmt.Sprintf("scaling up to %d replicas", replicas)
		if surge > 0 {
			plan.createWhy = fmt.Sprintf("%d replicas and %d surge pods (updateStrategy.maxSurge) for the update", replicas, surge)
		}
	}
	return plan, nil
}

// chooseForDeletion picks n Pods to delete: first up to oldExcess Pods at old revisions (those
// beyond the partition), then Pods at the update revision, then other old ones; each group in
// sortForDeletion's order.
func chooseForDeletion(atOld, atUpdate []*corev1.Pod, n, oldExcess int) []*corev1.Pod {
	atOld, atUpdate = slices.Clone(atOld), slices.Clone(atUpdate)
	sortForDeletion(atOld)
	sortForDeletion(atUpdate)
	take := func(from []*corev1.Pod, k int) ([]*corev1.Pod, []*corev1.Pod) {
		k = max(min(k, len(from)), 0)
		return from[:k], from[k:]
	}
	first, atOld := take(atOld, min(n, oldExcess))
	second, _ := take(atUpdate, n-len(first))
	third, _ := take(atOld, n-len(first)-len(second))
	return slices.Concat(first, second, third)
}

// sortForDeletion orders Pods the first to delete first: not on a node, pending before running,
// not ready, newest.
func sortForDeletion(pods []*corev1.Pod) {
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		if d := boolRank(a.Spec.NodeName != "") - boolRank(b.Spec.NodeName != ""); d != 0 {
			return d
		}
		if d := phaseRank(a) - phaseRank(b); d != 0 {
			return d
		}
		if d := boolRank(podReady(a)) - boolRank(podReady(b)); d != 0 {
			return d
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			if b.CreationTimestamp.Before(&a.CreationTimestamp) {
				return -1
			}
			return 1
		}
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
}

// newPod builds a CloneSet Pod of a revision: OpenKruise's instance id as name suffix and label,
// the revision in the controller-revision-hash and pod-template-hash labels, its first lifecycle
// state, a volume per volumeClaimTemplate claiming its PVC, the InPlaceUpdateReady readiness gate
// (and KruisePodReady when a lifecycle hook marks Pods not ready), and the CloneSet as controller.
func newPod(cs *v1alpha1.CloneSet, template *corev1.PodTemplateSpec, revision, id string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            cs.Name + "-" + id,
			Namespace:       cs.Namespace,
			Labels:          map[string]string{},
			Annotations:     map[string]string{},
			Finalizers:      slices.Clone(template.Finalizers),
			OwnerReferences: []metav1.OwnerReference{*controllerRef(cs)},
		},
		Spec: *template.Spec.DeepCopy(),
	}
	for k, v := range template.Labels {
		pod.Labels[k] = v
	}
	for k, v := range template.Annotations {
		pod.Annotations[k] = v
	}
	pod.Labels[v1alpha1.CloneSetInstanceID] = id
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = revision
	pod.Labels[podTemplateHashLabel] = revision
	pod.Labels[pub.LifecycleStateKey] = string(initialLifecycleState)
	injectClaimVolumes(cs, pod)
	inplaceupdate.InjectReadinessGate(pod)
	if marksPodNotReady(cs) {
		injectKruisePodReadyGate(pod)
	}
	return pod
}

// createPods creates a Pod at a revision for each instance id, in batches growing 1, 2, 4, … that
// stop at the first failing batch (kube's slow start), each expected before it is sent; a Pod's
// PVCs (spec.volumeClaimTemplates) are created before it. reused are the ids whose PVCs are
// reused; why goes into the events.
func (c *Controller) createPods(ctx context.Context, cs *v1alpha1.CloneSet, revision *appsv1.ControllerRevision, ids []string,
	reused sets.Set[string], why string) error {
	key := cache.MetaObjectToName(cs).String()
	template, err := revisionTemplate(revision)
	if err != nil {
		return fmt.Errorf("reading the template of revision %s: %w", revision.Name, err)
	}
	n := len(ids)
	created := 0
	var nsTerminating atomic.Bool
	for batch := 1; created < n; batch *= 2 {
		batch = min(batch, n-created)
		pods := make([]*corev1.Pod, batch)
		names := make([]string, batch)
		for i := range pods {
			pods[i] = newPod(cs, template, revision.Name, ids[created+i])
			pods[i].Annotations[pub.LifecycleTimestampKey] = lifecycleTimestamp(c.now())
			names[i] = pods[i].Name
		}
		c.exp.expectCreations(key, names...)
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for i, pod := range pods {
			wg.Go(func() {
				err := c.ensureClaims(ctx, cs, pod)
				if err == nil {
					_, err = c.kube.CoreV1().Pods(cs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
					if err != nil {
						err = fmt.Errorf("creating pod %s: %w", pod.Name, err)
						if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
							c.recorder.Eventf(cs, corev1.EventTypeWarning, "FailedCreate", "failed to create pod %s: %v", pod.Name, err)
						}
					}
				}
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					// The namespace is going away with the CloneSet: nothing to create, nothing to report.
					c.exp.creationObserved(key, pod.Name)
					nsTerminating.Store(true)
					return
				}
				if err != nil {
					c.exp.creationObserved(key, pod.Name)
					errs[i] = err
					return
				}
				msg := fmt.Sprintf("created pod %s (revision %s): %s", pod.Name, revision.Name, why)
				if id := pod.Labels[v1alpha1.CloneSetInstanceID]; reused.Has(id) {
					msg += fmt.Sprintf("; it reuses the PVCs of instance id %s", id)
				}
				c.recorder.Eventf(cs, corev1.EventTypeNormal, "SuccessfulCreate", "%s", msg)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if nsTerminating.Load() {
			return nil
		}
		created += batch
	}
	return nil
}

// deletePods deletes pods, each expected before it is sent. A Pod the preDelete hook holds is not
// deleted: it moves to lifecycle state PreparingDelete (if not there yet) and waits there until
// the hook releases it; a later sync deletes it then.
func (c *Controller) deletePods(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod, reason, why string) error {
	key := cache.MetaObjectToName(cs).String()
	var errs []error
	if hook := preDeleteHook(cs); hook != nil {
		var free []*corev1.Pod
		for _, p := range pods {
			if !hooked(hook, p) {
				free = append(free, p)
				continue
			}
			if lifecycleState(p) != pub.LifecycleStatePreparingDelete {
				klog.FromContext(ctx).Info("Pod held by the preDelete hook", "cloneset", klog.KObj(cs), "pod", klog.KObj(p), "why", why)
				errs = append(errs, c.setLifecycle(ctx, cs, p, pub.LifecycleStatePreparingDelete, nil))
			}
		}
		pods = free
	}
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	c.exp.expectDeletions(key, names...)
	delErrs := make([]error, len(pods))
	deleted := make([]bool, len(pods))
	var wg sync.WaitGroup
	for i, pod := range pods {
		wg.Go(func() {
			err := c.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &pod.UID}})
			if err != nil && !apierrors.IsNotFound(err) {
				c.exp.deletionObserved(key, pod.Name)
				delErrs[i] = fmt.Errorf("deleting pod %s: %w", pod.Name, err)
				c.recorder.Eventf(cs, corev1.EventTypeWarning, "FailedDelete", "failed to delete pod %s: %v", pod.Name, err)
				return
			}
			deleted[i] = true
			c.recorder.Eventf(cs, corev1.EventTypeNormal, reason, "deleted pod %s: %s", pod.Name, why)
		})
	}
	wg.Wait()
	// The PVCs of the Pods the CloneSet deletes go with them, as in OpenKruise (whatever the
	// reason: scale-in, podsToDelete, specified-delete, recreate for an update); only a Pod deleted
	// some other way leaves its PVCs for its replacement.
	var gone []*corev1.Pod
	for i, pod := range pods {
		if deleted[i] {
			gone = append(gone, pod)
		}
	}
	if err := c.deleteClaimsOf(ctx, cs, gone); err != nil {
		delErrs = append(delErrs, fmt.Errorf("deleting the PVCs of deleted pods: %w", err))
	}
	return errors.Join(append(errs, delErrs...)...)
}
