package statefulset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// OwnedByAnnotation is set on a claim the set resized (OpenKruise's PVCOwnedByStsAnnotationKey).
const OwnedByAnnotation = "apps.kruise.io/owned-by-asts"

// Claims resize with their Pod's rolling update (OpenKruise's StatefulSetAutoResizePVCGate, with
// spec.volumeClaimUpdateStrategy.type OnPodRollingUpdate): when a volumeClaimTemplate asks for
// more storage than a Pod's claim, the rolling update takes that Pod too (even one at the update
// revision), raises its claims' requests (their StorageClass must allow expansion), and moves the
// Pod on only once each claim's resize is done (its capacity reaches the request, or the file
// system resize waits for the Pod: FileSystemResizePending). A Pod whose claims' capacity is below
// their request is not available to the update's budget. Without the gate, a changed template
// applies to claims created afterwards only (OpenKruise's OnDelete).

// autoResize tells whether the set's claims follow its templates' storage requests.
func autoResize(set *v1beta1.StatefulSet) bool {
	return features.Enabled(features.StatefulSetAutoResizePVCGate) &&
		set.Spec.VolumeClaimUpdateStrategy.Type == v1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType
}

// claimPair is a Pod's claim of one template, and the template.
type claimPair struct {
	claim, template *corev1.PersistentVolumeClaim
}

// sameButSize tells whether a claim is the template's but for its size, as OpenKruise's
// IsClaimCompatibleWithoutSize: the same StorageClass (when both name one: an unnamed one is the
// default class) and access modes. Any other difference waits for the claim to be made anew.
func sameButSize(c claimPair) bool {
	if t, got := c.template.Spec.StorageClassName, c.claim.Spec.StorageClassName; t != nil && got != nil && *t != *got {
		return false
	}
	return slices.Equal(c.claim.Spec.AccessModes, c.template.Spec.AccessModes)
}

// compatible: the claim asks at least the template's storage.
func compatible(c claimPair) bool {
	return sameButSize(c) && c.claim.Spec.Resources.Requests.Storage().Cmp(*c.template.Spec.Resources.Requests.Storage()) >= 0
}

// needsExpansion: the claim asks less storage than the template.
func needsExpansion(c claimPair) bool {
	return sameButSize(c) && c.claim.Spec.Resources.Requests.Storage().Cmp(*c.template.Spec.Resources.Requests.Storage()) < 0
}

// ready: the claim's capacity reaches its request.
func ready(c claimPair) bool {
	return c.claim.Status.Capacity.Storage().Cmp(*c.claim.Spec.Resources.Requests.Storage()) >= 0
}

// resized: compatible, and the volume has grown (or only the file system waits for the Pod).
func resized(c claimPair) bool {
	if !compatible(c) {
		return false
	}
	if ready(c) {
		return true
	}
	for _, cond := range c.claim.Status.Conditions {
		if cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// claimState is what the rolling update needs to know of a Pod's claims.
type claimState struct {
	// compatible: no claim asks less than its template; ready: every claim's capacity reaches
	// its request; resized: every claim is done resizing.
	compatible, ready, resized bool
	claims                     []claimPair
}

// podClaims are a Pod's claims from the cache, one per template; missing and terminating ones
// are left out, as OpenKruise leaves them (the claim is made anew, from the template).
func (c *Controller) podClaims(set *v1beta1.StatefulSet, pod *corev1.Pod) ([]claimPair, error) {
	ordinal := ordinalOf(set, pod)
	var out []claimPair
	for i := range set.Spec.VolumeClaimTemplates {
		t := &set.Spec.VolumeClaimTemplates[i]
		claim, err := c.claims.PersistentVolumeClaims(set.Namespace).Get(claimName(set, t.Name, ordinal))
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if claim.DeletionTimestamp == nil {
			out = append(out, claimPair{claim: claim, template: t})
		}
	}
	return out, nil
}

// claimStates are the claim states of the Pods, by name; nil when the set's claims do not follow
// its templates.
func (c *Controller) claimStates(set *v1beta1.StatefulSet, pods []*corev1.Pod) (map[string]claimState, error) {
	if !autoResize(set) {
		return nil, nil
	}
	out := make(map[string]claimState, len(pods))
	for _, p := range pods {
		pairs, err := c.podClaims(set, p)
		if err != nil {
			return nil, fmt.Errorf("reading the claims of pod %s: %w", p.Name, err)
		}
		st := claimState{compatible: true, ready: true, resized: true, claims: pairs}
		for _, pair := range pairs {
			st.compatible = st.compatible && !needsExpansion(pair) && sameButSize(pair)
			st.ready = st.ready && compatible(pair) && ready(pair)
			st.resized = st.resized && resized(pair)
		}
		out[p.Name] = st
	}
	return out, nil
}

// volumeClaimStatus is status.volumeClaims, as OpenKruise counts it: per template, the Pods of
// the wanted ordinals whose claim asks at least the template's storage (compatibleReplicas), and
// of those the ones whose capacity reaches the request (compatibleReadyReplicas).
func (c *Controller) volumeClaimStatus(set *v1beta1.StatefulSet, pods []*corev1.Pod) ([]v1beta1.VolumeClaimStatus, error) {
	out := make([]v1beta1.VolumeClaimStatus, len(set.Spec.VolumeClaimTemplates))
	index := map[string]*v1beta1.VolumeClaimStatus{}
	for i, t := range set.Spec.VolumeClaimTemplates {
		out[i].VolumeClaimName = t.Name
		index[t.Name] = &out[i]
	}
	wanted := map[int]bool{}
	for _, o := range wantedOrdinals(set) {
		wanted[o] = true
	}
	for _, p := range pods {
		if !wanted[ordinalOf(set, p)] {
			continue
		}
		pairs, err := c.podClaims(set, p)
		if err != nil {
			return nil, fmt.Errorf("reading the claims of pod %s: %w", p.Name, err)
		}
		for _, pair := range pairs {
			if compatible(pair) {
				st := index[pair.template.Name]
				st.CompatibleReplicas++
				if ready(pair) {
					st.CompatibleReadyReplicas++
				}
			}
		}
	}
	return out, nil
}

// resizeClaims raises the requests of the Pod's claims that ask less than their template, once
// their StorageClass allows expansion (else the rolling update of this Pod waits, with an event);
// a claim that differs from its template in more than its size is not changed (it waits to be
// made anew), as in OpenKruise.
func (c *Controller) resizeClaims(ctx context.Context, set *v1beta1.StatefulSet, pod *corev1.Pod, claims []claimPair) error {
	var errs []error
	for _, pair := range claims {
		if compatible(pair) {
			continue
		}
		if !needsExpansion(pair) {
			c.Recorder.Eventf(set, corev1.EventTypeWarning, ReasonFailedUpdatePVC,
				"failed to update pvc %s: contains diff other than spec resource, wait pvc to be deleted", pair.claim.Name)
			errs = append(errs, fmt.Errorf("claim %s of pod %s differs from its template in more than its size", pair.claim.Name, pod.Name))
			continue
		}
		if err := c.checkExpandable(pair.claim); err != nil {
			c.Recorder.Eventf(set, corev1.EventTypeWarning, ReasonFailedUpdatePVC, "failed to resize pvc %s: %v", pair.claim.Name, err)
			errs = append(errs, fmt.Errorf("resizing claim %s of pod %s: %w", pair.claim.Name, pod.Name, err))
			continue
		}
		claim := pair.claim.DeepCopy()
		if claim.Annotations == nil {
			claim.Annotations = map[string]string{}
		}
		claim.Annotations[OwnedByAnnotation] = set.Name
		claim.Spec.Resources = *pair.template.Spec.Resources.DeepCopy()
		if _, err := c.Kube.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
			c.Recorder.Eventf(set, corev1.EventTypeWarning, ReasonFailedResize, "Resize Claim %s for Pod %s in StatefulSet %s failed error: %v",
				claim.Name, pod.Name, set.Name, err)
			errs = append(errs, fmt.Errorf("resizing claim %s of pod %s: %w", claim.Name, pod.Name, err))
			continue
		}
		klog.FromContext(ctx).Info("Resized claim", "statefulset", klog.KObj(set), "pod", klog.KObj(pod), "claim", klog.KObj(claim),
			"storage", claim.Spec.Resources.Requests.Storage().String())
		c.Recorder.Eventf(set, corev1.EventTypeNormal, ReasonSuccessfulResize, "Resize Claim %s Pod %s in StatefulSet %s success",
			claim.Name, pod.Name, set.Name)
	}
	return errors.Join(errs...)
}

// checkExpandable says why the claim's StorageClass does not allow expansion; nil when it does or
// the claim names none.
func (c *Controller) checkExpandable(claim *corev1.PersistentVolumeClaim) error {
	name := claim.Spec.StorageClassName
	if name == nil || *name == "" {
		return nil
	}
	if c.classes == nil {
		return fmt.Errorf("storage classes are not watched")
	}
	sc, err := c.classes.Get(*name)
	if err != nil {
		return fmt.Errorf("getting storage class %s: %w", *name, err)
	}
	if sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
		return fmt.Errorf("storage class %s does not support volume expansion", *name)
	}
	return nil
}

// WatchClaimResize sets up what claims need: changes of the claims bring their sets back (their
// status.volumeClaims counts them, and a resize under StatefulSetAutoResizePVCGate waits for
// them), and the StorageClasses say whether a claim may grow. Call it before the informers start.
func (c *Controller) WatchClaimResize(claimInf coreinformers.PersistentVolumeClaimInformer, classInf storageinformers.StorageClassInformer) error {
	c.classes = classInf.Lister()
	c.Synced = append(c.Synced, classInf.Informer().HasSynced)
	return reconcile.Watch(claimInf.Informer(), "persistentvolumeclaims", reconcile.Handlers[*corev1.PersistentVolumeClaim]{Update: c.claimChanged})
}

// claimChanged brings back the sets a claim belongs to (by its name <template>-<set>-<ordinal>)
// when its request, capacity or conditions changed: a resize it waits for may be done.
func (c *Controller) claimChanged(o, n *corev1.PersistentVolumeClaim) {
	if maps.EqualFunc(o.Spec.Resources.Requests, n.Spec.Resources.Requests, func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }) &&
		maps.EqualFunc(o.Status.Capacity, n.Status.Capacity, func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }) &&
		len(o.Status.Conditions) == len(n.Status.Conditions) {
		return
	}
	c.enqueueClaimSets(n)
}

func (c *Controller) enqueueClaimSets(obj any) {
	claim, ok := reconcile.ObjectOf[*corev1.PersistentVolumeClaim](obj)
	if !ok {
		return
	}
	sets, err := c.sets.StatefulSets(claim.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, set := range sets {
		for _, t := range set.Spec.VolumeClaimTemplates {
			if strings.HasPrefix(claim.Name, t.Name+"-"+set.Name+"-") {
				c.Queue.Add(cache.MetaObjectToName(set))
				break
			}
		}
	}
}
