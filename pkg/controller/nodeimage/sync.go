package nodeimage

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/imagepull"
)

// FakeLabel marks a NodeImage that has no Node and must be kept (OpenKruise's
// apps.kruise.io/fake-nodeimage, used by tests and simulators).
const FakeLabel = "apps.kruise.io/fake-nodeimage"

// minRequeue is the shortest wait for a TTL: tags expiring together are collected in one update.
const minRequeue = time.Second

// sync brings the NodeImage of one node in step with the Node and the ImagePullJobs, and says
// when the next tag reaches its TTL.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	name := key.Name
	logger := klog.FromContext(ctx).WithValues("nodeimage", name)
	ctx = klog.NewContext(ctx, logger)
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		node = nil
	} else if err != nil {
		return 0, fmt.Errorf("getting node %s: %w", name, err)
	}
	ni, err := c.nodeImages.Get(name)
	if apierrors.IsNotFound(err) {
		ni = nil
	} else if err != nil {
		return 0, fmt.Errorf("getting nodeimage %s: %w", name, err)
	}

	switch {
	case node == nil || node.DeletionTimestamp != nil:
		if ni == nil || ni.DeletionTimestamp != nil || ni.Labels[FakeLabel] != "" {
			return 0, nil
		}
		return 0, c.delete(ctx, ni)
	case ni == nil:
		if !isReady(node) {
			// The node's daemon cannot pull yet; the Node's update when it turns Ready brings it back.
			return 0, nil
		}
		return 0, c.create(ctx, node)
	case ni.DeletionTimestamp != nil:
		return 0, nil
	}
	return c.collect(ctx, node, ni)
}

func (c *Controller) delete(ctx context.Context, ni *v1alpha1.NodeImage) error {
	err := c.client.AppsV1alpha1().NodeImages().Delete(ctx, ni.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &ni.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone already, or another NodeImage now holds the name: the next event says.
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting nodeimage %s of a deleted node: %w", ni.Name, err)
	}
	klog.FromContext(ctx).Info("Deleted the NodeImage of a deleted node")
	c.recorder.Eventf(ni, corev1.EventTypeNormal, ReasonDeleted, "Deleted NodeImage: node %s is gone", ni.Name)
	return nil
}

func (c *Controller) create(ctx context.Context, node *corev1.Node) error {
	ni := &v1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: maps.Clone(node.Labels)}}
	created, err := c.client.AppsV1alpha1().NodeImages().Create(ctx, ni, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // the informer has not shown it yet; its add event brings the node back
	}
	if err != nil {
		return fmt.Errorf("creating nodeimage %s: %w", node.Name, err)
	}
	klog.FromContext(ctx).Info("Created the NodeImage of a node")
	c.recorder.Eventf(created, corev1.EventTypeNormal, ReasonCreated, "Created NodeImage for node %s", node.Name)
	return nil
}

// collect copies the Node's labels and drops what imagepull.GC says nobody needs, in one update
// (a conflict is returned: the queue retries on the newer object).
func (c *Controller) collect(ctx context.Context, node *corev1.Node, ni *v1alpha1.NodeImage) (time.Duration, error) {
	live, err := c.liveJobs()
	if err != nil {
		return 0, err
	}
	now := c.clock.Now()
	spec, collected := imagepull.GC(ni.Spec, &ni.Status, live, now)
	relabel := !labels.Equals(ni.Labels, node.Labels)
	if collected || relabel {
		updated := ni.DeepCopy()
		updated.Spec = spec
		updated.Labels = maps.Clone(node.Labels)
		if _, err := c.client.AppsV1alpha1().NodeImages().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("updating nodeimage %s (garbage collection %t, labels %t): %w", ni.Name, collected, relabel, err)
		}
		klog.FromContext(ctx).V(2).Info("Updated NodeImage", "collected", collected, "relabelled", relabel)
		if collected {
			c.recorder.Eventf(ni, corev1.EventTypeNormal, ReasonCollected,
				"Dropped tags and owners no ImagePullJob needs any more (%d images left)", len(spec.Images))
		}
	}
	next, ok := imagepull.NextGC(&spec, &ni.Status, now)
	if !ok {
		return 0, nil
	}
	return max(next, minRequeue), nil
}

// liveJobs are the UIDs of the ImagePullJobs that exist, in every namespace.
func (c *Controller) liveJobs() (sets.Set[types.UID], error) {
	jobs, err := c.jobs.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing imagepulljobs: %w", err)
	}
	live := sets.New[types.UID]()
	for _, j := range jobs {
		live.Insert(j.UID)
	}
	return live, nil
}

func isReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
