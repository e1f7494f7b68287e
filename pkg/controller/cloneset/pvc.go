package cloneset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
)

// PVCs of spec.volumeClaimTemplates, as OpenKruise's CloneSet keeps them (pkg/controller/cloneset
// in github.com/openkruise/kruise: sync/cloneset_scale.go, utils/cloneset_utils.go,
// cloneset_controller.go):
//   - each Pod has one PVC per template, named <template>-<cloneset>-<instance id>, labelled with
//     the template's labels, the selector's matchLabels and the instance id, controlled by the
//     CloneSet; it is created before the Pod, and the Pod gets a volume named after the template
//     that claims it (replacing a template volume of that name);
//   - when the CloneSet deletes a Pod itself (scale-in, podsToDelete or specified-delete, after
//     preDelete, recreate for an update) it deletes that Pod's PVCs too;
//   - a PVC whose Pod is gone some other way is kept, and creating Pods reuses the instance ids of
//     such PVCs first, so the replacement gets the data back;
//   - unless scaleStrategy.disablePVCReuse: then PVCs whose instance id no active Pod has are
//     deleted on every sync, and no id is reused.

// claimKeyPrefix marks a PVC in the expectations, which are otherwise by Pod name: "/" cannot be
// in a Pod name.
const claimKeyPrefix = "pvc/"

func claimKey(name string) string { return claimKeyPrefix + name }

// claimName is the PVC of a volumeClaimTemplate for an instance id.
func claimName(cs *v1alpha1.CloneSet, template, id string) string {
	return template + "-" + cs.Name + "-" + id
}

// newClaims are the PVCs of a Pod with an instance id, in template order.
func newClaims(cs *v1alpha1.CloneSet, id string) []*corev1.PersistentVolumeClaim {
	claims := make([]*corev1.PersistentVolumeClaim, 0, len(cs.Spec.VolumeClaimTemplates))
	for i := range cs.Spec.VolumeClaimTemplates {
		t := &cs.Spec.VolumeClaimTemplates[i]
		claim := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name:            claimName(cs, t.Name, id),
				Namespace:       cs.Namespace,
				Labels:          map[string]string{},
				Annotations:     t.DeepCopy().Annotations,
				Finalizers:      slices.Clone(t.Finalizers),
				OwnerReferences: []metav1.OwnerReference{*controllerRef(cs)},
			},
			Spec: *t.Spec.DeepCopy(),
		}
		for k, v := range t.Labels {
			claim.Labels[k] = v
		}
		if cs.Spec.Selector != nil {
			for k, v := range cs.Spec.Selector.MatchLabels {
				claim.Labels[k] = v
			}
		}
		claim.Labels[v1alpha1.CloneSetInstanceID] = id
		claims = append(claims, claim)
	}
	return claims
}

// injectClaimVolumes gives the Pod one volume per volumeClaimTemplate, named after it and claiming
// the Pod's PVC; a template volume of the same name is replaced.
func injectClaimVolumes(cs *v1alpha1.CloneSet, pod *corev1.Pod) {
	if len(cs.Spec.VolumeClaimTemplates) == 0 {
		return
	}
	id := pod.Labels[v1alpha1.CloneSetInstanceID]
	names := sets.New[string]()
	volumes := make([]corev1.Volume, 0, len(cs.Spec.VolumeClaimTemplates)+len(pod.Spec.Volumes))
	for _, t := range cs.Spec.VolumeClaimTemplates {
		names.Insert(t.Name)
		volumes = append(volumes, corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(cs, t.Name, id)}}})
	}
	for _, v := range pod.Spec.Volumes {
		if !names.Has(v.Name) {
			volumes = append(volumes, v)
		}
	}
	pod.Spec.Volumes = volumes
}

// ownedClaims lists the CloneSet's PVCs from the cache, terminating ones included.
func (c *Controller) ownedClaims(cs *v1alpha1.CloneSet) ([]*corev1.PersistentVolumeClaim, error) {
	all, err := c.claims.PersistentVolumeClaims(cs.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing the PVCs of CloneSet %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	var owned []*corev1.PersistentVolumeClaim
	for _, pvc := range all {
		if metav1.IsControlledBy(pvc, cs) {
			owned = append(owned, pvc)
		}
	}
	return owned, nil
}

// idChoice is the instance ids of the Pods one scale-up creates.
type idChoice struct {
	// reused are ids of PVCs no active Pod uses; fresh are new ids.
	reused, fresh []string
	// waiting are ids of free PVCs whose former Pod, of the same name, is still terminating: their
	// Pods are created once it is gone (its deletion triggers a sync).
	waiting []string
}

func (ch idChoice) ids() []string { return slices.Concat(ch.reused, ch.fresh) }

// chooseInstanceIDs picks the ids of n new Pods, as OpenKruise's getOrGenAvailableIDs does: first
// the ids of the CloneSet's PVCs (not being deleted) that no active Pod has, unless
// scaleStrategy.disablePVCReuse; then new random ids that no Pod name nor PVC of the CloneSet
// uses. A free id whose Pod name is still taken by a terminating Pod waits for it (one slot less
// now); one taken by a finished Pod is not reused (the name is not free).
func chooseInstanceIDs(cs *v1alpha1.CloneSet, claims []*corev1.PersistentVolumeClaim, active []*corev1.Pod,
	state expectations.Lookup, n int, randID func() string) idChoice {
	var ch idChoice
	inUse := sets.New[string]()
	for _, p := range active {
		if id := p.Labels[v1alpha1.CloneSetInstanceID]; id != "" {
			inUse.Insert(id)
		}
	}
	claimIDs, free := sets.New[string](), sets.New[string]()
	for _, pvc := range claims {
		id := pvc.Labels[v1alpha1.CloneSetInstanceID]
		if id == "" {
			continue
		}
		claimIDs.Insert(id)
		if pvc.DeletionTimestamp == nil && !inUse.Has(id) {
			free.Insert(id)
		}
	}
	if !cs.Spec.ScaleStrategy.DisablePVCReuse {
		for _, id := range sets.List(free) {
			switch s := state(cs.Name + "-" + id); {
			case !s.Exists:
				if len(ch.reused) < n {
					ch.reused = append(ch.reused, id)
				}
			case s.Terminating:
				ch.waiting = append(ch.waiting, id)
			}
		}
	}
	taken := claimIDs.Union(inUse)
	for len(ch.reused)+len(ch.waiting)+len(ch.fresh) < n {
		id := randID()
		if taken.Has(id) || state(cs.Name+"-"+id).Exists {
			continue
		}
		taken.Insert(id)
		ch.fresh = append(ch.fresh, id)
	}
	if extra := len(ch.reused) + len(ch.waiting) - n; extra > 0 {
		ch.waiting = ch.waiting[:len(ch.waiting)-extra]
	}
	return ch
}

// unusedClaims are the PVCs (not being deleted) whose instance id no active Pod has: what
// scaleStrategy.disablePVCReuse deletes.
func unusedClaims(claims []*corev1.PersistentVolumeClaim, active []*corev1.Pod) []*corev1.PersistentVolumeClaim {
	inUse := sets.New[string]()
	for _, p := range active {
		if id := p.Labels[v1alpha1.CloneSetInstanceID]; id != "" {
			inUse.Insert(id)
		}
	}
	var out []*corev1.PersistentVolumeClaim
	for _, pvc := range claims {
		if pvc.DeletionTimestamp == nil && !inUse.Has(pvc.Labels[v1alpha1.CloneSetInstanceID]) {
			out = append(out, pvc)
		}
	}
	return out
}

// claimsOf are the PVCs (not being deleted) of the Pod's instance id.
func claimsOf(claims []*corev1.PersistentVolumeClaim, pod *corev1.Pod) []*corev1.PersistentVolumeClaim {
	id := pod.Labels[v1alpha1.CloneSetInstanceID]
	if id == "" {
		return nil
	}
	var out []*corev1.PersistentVolumeClaim
	for _, pvc := range claims {
		if pvc.DeletionTimestamp == nil && pvc.Labels[v1alpha1.CloneSetInstanceID] == id {
			out = append(out, pvc)
		}
	}
	return out
}

// cleanUpClaims deletes, with scaleStrategy.disablePVCReuse, the PVCs no active Pod uses (their
// Pod was deleted outside the CloneSet, or its creation failed). OpenKruise hands a PVC whose Pod
// still exists (terminating or finished) over to that Pod for the garbage collector; deleting it
// has the same end: the kubernetes.io/pvc-protection finalizer keeps it while a Pod uses it.
func (c *Controller) cleanUpClaims(ctx context.Context, cs *v1alpha1.CloneSet, active []*corev1.Pod) error {
	if !cs.Spec.ScaleStrategy.DisablePVCReuse {
		return nil
	}
	claims, err := c.ownedClaims(cs)
	if err != nil {
		return err
	}
	unused := unusedClaims(claims, active)
	if len(unused) == 0 {
		return nil
	}
	return c.deleteClaims(ctx, cs, unused, "no active pod has instance id; scaleStrategy.disablePVCReuse is true")
}

// deleteClaimsOf deletes the PVCs of Pods the CloneSet deleted.
func (c *Controller) deleteClaimsOf(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	claims, err := c.ownedClaims(cs)
	if err != nil {
		return err
	}
	var errs []error
	for _, pod := range pods {
		if own := claimsOf(claims, pod); len(own) > 0 {
			errs = append(errs, c.deleteClaims(ctx, cs, own, "its pod "+pod.Name+" was deleted by the CloneSet"))
		}
	}
	return errors.Join(errs...)
}

// deleteClaims deletes PVCs, each expected before it is sent (so that no later sync reuses its
// instance id while the cache still shows it); why goes into the events.
func (c *Controller) deleteClaims(ctx context.Context, cs *v1alpha1.CloneSet, claims []*corev1.PersistentVolumeClaim, why string) error {
	key := cache.MetaObjectToName(cs).String()
	var errs []error
	for _, pvc := range claims {
		c.Exp.ExpectDeletions(key, claimKey(pvc.Name))
		err := c.Kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Delete(ctx, pvc.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &pvc.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone already, or a different PVC of that name now: not ours to delete.
			c.Exp.DeletionObserved(key, claimKey(pvc.Name))
			continue
		}
		if err != nil {
			c.Exp.DeletionObserved(key, claimKey(pvc.Name))
			errs = append(errs, fmt.Errorf("deleting pvc %s: %w", pvc.Name, err))
			c.Recorder.Eventf(cs, corev1.EventTypeWarning, ownership.ReasonFailedDelete, "failed to delete pvc %s: %v", pvc.Name, err)
			continue
		}
		klog.FromContext(ctx).V(2).Info("Deleted PVC", "cloneset", klog.KObj(cs), "pvc", klog.KObj(pvc), "why", why)
		c.Recorder.Eventf(cs, corev1.EventTypeNormal, ownership.ReasonSuccessfulDelete, "deleted pvc %s: %s", pvc.Name, why)
	}
	return errors.Join(errs...)
}

// ensureClaims creates the PVCs of a Pod about to be created. A PVC of that name already there is
// reused if the CloneSet controls it and it is not being deleted; otherwise the Pod cannot be
// created (it would claim a PVC that is not its own, or one about to vanish).
func (c *Controller) ensureClaims(ctx context.Context, cs *v1alpha1.CloneSet, pod *corev1.Pod) error {
	for _, claim := range newClaims(cs, pod.Labels[v1alpha1.CloneSetInstanceID]) {
		_, err := c.Kube.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{})
		if err == nil {
			klog.FromContext(ctx).V(2).Info("Created PVC", "cloneset", klog.KObj(cs), "pvc", klog.KObj(claim), "pod", klog.KObj(pod))
			c.Recorder.Eventf(cs, corev1.EventTypeNormal, ownership.ReasonSuccessfulCreate, "created pvc %s for pod %s", claim.Name, pod.Name)
			continue
		}
		if !apierrors.IsAlreadyExists(err) {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return fmt.Errorf("creating pvc %s for pod %s: %w", claim.Name, pod.Name, err)
			}
			c.Recorder.Eventf(cs, corev1.EventTypeWarning, ownership.ReasonFailedCreate, "failed to create pvc %s for pod %s: %v", claim.Name, pod.Name, err)
			return fmt.Errorf("creating pvc %s for pod %s: %w", claim.Name, pod.Name, err)
		}
		existing, err := c.Kube.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading the existing pvc %s for pod %s: %w", claim.Name, pod.Name, err)
		}
		var problem string
		switch {
		case !metav1.IsControlledBy(existing, cs):
			problem = "is not controlled by this CloneSet"
		case existing.DeletionTimestamp != nil:
			problem = "is being deleted"
		}
		if problem != "" {
			c.Recorder.Eventf(cs, corev1.EventTypeWarning, ownership.ReasonFailedCreate, "pvc %s for pod %s already exists and %s", claim.Name, pod.Name, problem)
			return fmt.Errorf("pvc %s for pod %s already exists and %s", claim.Name, pod.Name, problem)
		}
		klog.FromContext(ctx).V(2).Info("Reusing PVC", "cloneset", klog.KObj(cs), "pvc", klog.KObj(existing), "pod", klog.KObj(pod))
	}
	return nil
}

// enqueueClaimOwner enqueues the CloneSet controlling a PVC, and settles a deletion expected of it.
func (c *Controller) enqueueClaimOwner(pvc *corev1.PersistentVolumeClaim, deleted bool) {
	key, ok := c.Router.OwnerKey(pvc.Namespace, metav1.GetControllerOf(pvc))
	if !ok {
		return
	}
	if deleted || pvc.DeletionTimestamp != nil {
		c.Exp.DeletionObserved(key.String(), claimKey(pvc.Name))
	}
	c.Queue.Add(key)
}

// claimState looks a PVC up in the cache, for the expectations.
func (c *Controller) claimState(namespace, name string) expectations.Cached {
	pvc, err := c.claims.PersistentVolumeClaims(namespace).Get(name)
	if err != nil {
		return expectations.Cached{}
	}
	return expectations.Cached{Exists: true, Terminating: pvc.DeletionTimestamp != nil}
}

// isClaimKey splits an expectation name into a PVC name, if it is one.
func isClaimKey(name string) (string, bool) {
	return strings.CutPrefix(name, claimKeyPrefix)
}
