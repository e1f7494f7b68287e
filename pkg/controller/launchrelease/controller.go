// Package launchrelease is the controller that releases the containers of Pods prepared for
// ordered launch (see package github.com/inplace-dev/inplace/pkg/launchpriority): it creates each
// such Pod's barrier ConfigMap, owned by the Pod, adds its keys one priority at a time as the
// containers of higher priority become ready, and marks the Pod
// apps.kruise.io/container-launch-priority-completed when the last priority is released.
//
// It reads barrier ConfigMaps with a GET rather than an informer: they are few and short-lived
// next to every ConfigMap of the cluster, which an informer would cache.
package launchrelease

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/launchpriority"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Name is the controller's name in logs, events and metrics.
const Name = "launchpriority"

// Event reasons of this controller.
const (
	ReasonBarrierNotOwned = "LaunchBarrierNotOwned"
	ReasonLaunchReleased  = "ContainerLaunchReleased"
)

// notOwnedRetry is how soon a Pod whose barrier name is taken is looked at again: that ConfigMap
// may be a deleted Pod's of the same name, which the garbage collector is about to remove.
const notOwnedRetry = 5 * time.Second

// Controller releases ordered container launches.
type Controller struct {
	kube     kubernetes.Interface
	pods     corelisters.PodLister
	synced   cache.InformerSynced
	queue    reconcile.Queue
	recorder record.EventRecorder
}

// New builds the controller on the shared Pod informer.
func New(kube kubernetes.Interface, pods coreinformers.PodInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		kube:     kube,
		pods:     pods.Lister(),
		synced:   pods.Informer().HasSynced,
		recorder: recorder,
		queue:    reconcile.NewQueue(Name),
	}
	if err := reconcile.Watch(pods.Informer(), "pods", reconcile.EnqueueIf(c.queue, needsWork)); err != nil {
		return nil, err
	}
	return c, nil
}

// needsWork tells the Pods still launching in order.
func needsWork(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && !launchpriority.Completed(pod) && launchpriority.HasBarrier(pod)
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.synced)
}

// sync takes one Pod's launch a step further: the next barrier key, then the completed mark.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	pod, ok, err := reconcile.Found(c.pods.Pods(key.Namespace).Get(key.Name))
	if !ok || err != nil {
		return 0, err
	}
	if !needsWork(pod) {
		return 0, nil
	}
	configMaps := c.kube.CoreV1().ConfigMaps(pod.Namespace)
	name := launchpriority.BarrierName(pod.Name)
	barrier, err := configMaps.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		barrier = nil
	case err != nil:
		return 0, fmt.Errorf("reading the launch barrier %s/%s of pod %s: %w", pod.Namespace, name, key, err)
	case !ownedBy(barrier, pod):
		// A ConfigMap of that name that is not this Pod's: writing keys into it could release
		// another Pod's containers, or be undone by whoever owns it.
		c.recorder.Eventf(pod, corev1.EventTypeWarning, ReasonBarrierNotOwned,
			"ConfigMap %s exists and is not owned by this pod: its containers wait until it is deleted", name)
		return notOwnedRetry, nil
	}
	var data map[string]string
	if barrier != nil {
		data = barrier.Data
	}
	step := launchpriority.Next(pod, data)

	if step.Release != "" {
		if barrier == nil {
			err = c.createBarrier(ctx, pod, step.Release)
		} else {
			err = c.release(ctx, barrier, step.Release)
		}
		if err != nil {
			return 0, err
		}
		c.recorder.Eventf(pod, corev1.EventTypeNormal, ReasonLaunchReleased,
			"containers of launch priority %s may start (key %s of ConfigMap %s)", step.Release[len("p_"):], step.Release, name)
		klog.FromContext(ctx).V(2).Info("Released launch priority", "pod", key, "key", step.Release)
	}
	if step.Complete {
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"true"}}}`, pub.ContainerLaunchPriorityCompletedKey)
		if _, err := c.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return 0, nil
			}
			return 0, fmt.Errorf("marking the launch of pod %s completed: %w", key, err)
		}
	}
	return 0, nil
}

func ownedBy(cm *corev1.ConfigMap, pod *corev1.Pod) bool {
	for _, ref := range cm.OwnerReferences {
		if ref.UID == pod.UID {
			return true
		}
	}
	return false
}

// createBarrier creates the Pod's barrier ConfigMap with its first key. The Pod owns it, so it
// goes with the Pod.
func (c *Controller) createBarrier(ctx context.Context, pod *corev1.Pod, key string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      launchpriority.BarrierName(pod.Name),
			Namespace: pod.Namespace,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			}},
		},
		Data: map[string]string{key: "true"},
	}
	_, err := c.kube.CoreV1().ConfigMaps(pod.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		// AlreadyExists too: a stale cache; the retry reads the ConfigMap.
		return fmt.Errorf("creating the launch barrier of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// release adds one key to the barrier. A merge patch adds it without a resourceVersion
// precondition: keys are only ever added, so concurrent writers cannot undo each other.
func (c *Controller) release(ctx context.Context, barrier *corev1.ConfigMap, key string) error {
	patch, err := json.Marshal(map[string]any{"data": map[string]string{key: "true"}})
	if err != nil {
		return err
	}
	_, err = c.kube.CoreV1().ConfigMaps(barrier.Namespace).Patch(ctx, barrier.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("adding key %s to the launch barrier %s/%s: %w", key, barrier.Namespace, barrier.Name, err)
	}
	return nil
}
