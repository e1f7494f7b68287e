package cloneset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

// podTemplateHashLabel is the label kube's Deployments give Pods; OpenKruise sets it too.
const podTemplateHashLabel = "pod-template-hash"

// scale deletes the Pods asked for (scaleStrategy.podsToDelete, label specified-delete), then
// creates or deletes Pods until the CloneSet has spec.replicas active Pods. New Pods are at the
// update revision; scaleStrategy.maxUnavailable bounds how many not-ready Pods scaling up may
// leave. pods are the active Pods. It tells whether it created or deleted any Pod (then the rolling
// update waits for the next sync, as OpenKruise's does).
func (c *Controller) scale(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod, update *appsv1.ControllerRevision) (bool, error) {
	replicas := int(ptr.Deref(cs.Spec.Replicas, 1))
	toDelete := sets.New(cs.Spec.ScaleStrategy.PodsToDelete...)
	var specified, rest []*corev1.Pod
	for _, p := range pods {
		if toDelete.Has(p.Name) || p.Labels[v1alpha1.SpecifiedDeleteKey] != "" {
			specified = append(specified, p)
		} else {
			rest = append(rest, p)
		}
	}
	var errs []error
	acted := false
	if len(specified) > 0 {
		acted = true
		errs = append(errs, c.deletePods(ctx, cs, specified, "SpecifiedDelete", "asked for by podsToDelete or label "+v1alpha1.SpecifiedDeleteKey))
	}
	switch diff := len(rest) - replicas; {
	case diff > 0:
		acted = true
		sortForDeletion(rest)
		errs = append(errs, c.deletePods(ctx, cs, rest[:diff], "ScaleDown", fmt.Sprintf("scaling down to %d replicas", replicas)))
	case diff < 0:
		n := -diff
		if mu := cs.Spec.ScaleStrategy.MaxUnavailable; mu != nil {
			limit, err := intstr.GetScaledValueFromIntOrPercent(mu, replicas, true)
			if err != nil {
				return acted, fmt.Errorf("scaleStrategy.maxUnavailable: %w", err)
			}
			notReady := 0
			for _, p := range rest {
				if !podReady(p) {
					notReady++
				}
			}
			n = max(min(n, limit-notReady), 0)
		}
		if n > 0 {
			acted = true
			errs = append(errs, c.createPods(ctx, cs, update, n))
		}
	}
	return acted, errors.Join(errs...)
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
// the revision in the controller-revision-hash and pod-template-hash labels, the
// InPlaceUpdateReady readiness gate, and the CloneSet as controller.
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
	inplaceupdate.InjectReadinessGate(pod)
	return pod
}

// createPods creates n Pods at the update revision, in batches growing 1, 2, 4, … that stop at
// the first failing batch (kube's slow start), each expected before it is sent.
func (c *Controller) createPods(ctx context.Context, cs *v1alpha1.CloneSet, update *appsv1.ControllerRevision, n int) error {
	key := cache.MetaObjectToName(cs).String()
	taken := sets.New[string]()
	newID := func() string {
		for {
			id := rand.String(5)
			name := cs.Name + "-" + id
			if _, err := c.pods.Pods(cs.Namespace).Get(name); err == nil || taken.Has(name) {
				continue
			}
			taken.Insert(name)
			return id
		}
	}
	created := 0
	for batch := 1; created < n; batch *= 2 {
		batch = min(batch, n-created)
		pods := make([]*corev1.Pod, batch)
		names := make([]string, batch)
		for i := range pods {
			pods[i] = newPod(cs, &cs.Spec.Template, update.Name, newID())
			names[i] = pods[i].Name
		}
		c.exp.expectCreations(key, names...)
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for i, pod := range pods {
			wg.Go(func() {
				_, err := c.kube.CoreV1().Pods(cs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					c.exp.creationObserved(key, pod.Name)
					errs[i] = fmt.Errorf("creating pod %s: %w", pod.Name, err)
					c.recorder.Eventf(cs, corev1.EventTypeWarning, "FailedCreate", "failed to create pod %s: %v", pod.Name, err)
					return
				}
				c.recorder.Eventf(cs, corev1.EventTypeNormal, "SuccessfulCreate", "created pod %s", pod.Name)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		created += batch
	}
	return nil
}

// deletePods deletes pods, each expected before it is sent.
func (c *Controller) deletePods(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod, reason, why string) error {
	key := cache.MetaObjectToName(cs).String()
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	c.exp.expectDeletions(key, names...)
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, pod := range pods {
		wg.Go(func() {
			err := c.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &pod.UID}})
			if err != nil && !apierrors.IsNotFound(err) {
				c.exp.deletionObserved(key, pod.Name)
				errs[i] = fmt.Errorf("deleting pod %s: %w", pod.Name, err)
				c.recorder.Eventf(cs, corev1.EventTypeWarning, "FailedDelete", "failed to delete pod %s: %v", pod.Name, err)
				return
			}
			c.recorder.Eventf(cs, corev1.EventTypeNormal, reason, "deleted pod %s: %s", pod.Name, why)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
