package imagelistpulljob

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/imagejob"
	"github.com/inplace-dev/inplace/pkg/imagepull"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
)

// sync takes the next step of one list job and says when to look again if its TTL, not an event,
// is what it waits for.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	lj, err := c.listJobs.ImageListPullJobs(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.exp.Forget(key.String())
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("getting imagelistpulljob %s: %w", key, err)
	}
	if lj.DeletionTimestamp != nil {
		return 0, nil
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("imagelistpulljob", klog.KObj(lj)))
	if lj, err = c.label(ctx, lj); err != nil {
		return 0, err
	}
	now := metav1.NewTime(c.clock.Now())
	if lj.Status.CompletionTime != nil {
		return c.expire(ctx, lj, now)
	}
	if ok, left := c.exp.Satisfied(key.String(), c.jobState(key.Namespace)); !ok {
		// The informer's event for the child created or deleted brings the list job back.
		return left, nil
	}
	jobs, err := c.jobs.ImagePullJobs(key.Namespace).List(labels.Everything())
	if err != nil {
		return 0, fmt.Errorf("listing the imagepulljobs of namespace %s: %w", key.Namespace, err)
	}
	actions := imagepull.Children(lj, jobs)
	if err := c.create(ctx, lj, actions.Create); err != nil {
		return 0, err
	}
	if err := c.delete(ctx, lj, actions.Delete); err != nil {
		return 0, err
	}
	status := imagepull.ListJobStatus(lj, actions.Current, now)
	if err := c.writeStatus(ctx, lj, status); err != nil {
		return 0, err
	}
	if left, ok := imagepull.TTLLeft(&lj.Spec.CompletionPolicy, status.CompletionTime, now); ok {
		return max(left, minRequeue), nil
	}
	return 0, nil
}

// label labels the list job with its template's hash, and returns the list job as written.
func (c *Controller) label(ctx context.Context, lj *v1alpha1.ImageListPullJob) (*v1alpha1.ImageListPullJob, error) {
	hash := imagepull.TemplateHash(&lj.Spec.ImagePullJobTemplate)
	if lj.Labels[appsv1.ControllerRevisionHashLabelKey] == hash {
		return lj, nil
	}
	updated := lj.DeepCopy()
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	updated.Labels[appsv1.ControllerRevisionHashLabelKey] = hash
	written, err := c.client.AppsV1alpha1().ImageListPullJobs(lj.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("labelling imagelistpulljob %s with its template hash: %w", klog.KObj(lj), err)
	}
	return written, nil
}

// jobState is what the expectations see: the namespace's ImagePullJobs by name.
func (c *Controller) jobState(namespace string) expectations.Lookup {
	return func(name string) expectations.Cached {
		job, err := c.jobs.ImagePullJobs(namespace).Get(name)
		if err != nil {
			return expectations.Cached{}
		}
		return expectations.Cached{Exists: true, Terminating: job.DeletionTimestamp != nil}
	}
}

func (c *Controller) create(ctx context.Context, lj *v1alpha1.ImageListPullJob, children []*v1alpha1.ImagePullJob) error {
	key := cache.MetaObjectToName(lj).String()
	for _, child := range children {
		created, err := c.client.AppsV1alpha1().ImagePullJobs(lj.Namespace).Create(ctx, child, metav1.CreateOptions{})
		if err != nil {
			c.recorder.Eventf(lj, corev1.EventTypeWarning, ReasonFailedCreateJob, "Failed to create the ImagePullJob of image %s: %v", child.Spec.Image, err)
			return fmt.Errorf("creating the imagepulljob of image %s: %w", child.Spec.Image, err)
		}
		c.exp.ExpectCreations(key, created.Name)
		klog.FromContext(ctx).V(2).Info("Created ImagePullJob", "imagepulljob", created.Name, "image", child.Spec.Image)
		c.recorder.Eventf(lj, corev1.EventTypeNormal, ReasonCreatedJob, "Created ImagePullJob %s for image %s", created.Name, child.Spec.Image)
	}
	return nil
}

func (c *Controller) delete(ctx context.Context, lj *v1alpha1.ImageListPullJob, children []*v1alpha1.ImagePullJob) error {
	key := cache.MetaObjectToName(lj).String()
	for _, child := range children {
		c.exp.ExpectDeletions(key, child.Name)
		err := c.client.AppsV1alpha1().ImagePullJobs(child.Namespace).Delete(ctx, child.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &child.UID}})
		if apierrors.IsNotFound(err) {
			c.exp.DeletionObserved(key, child.Name)
			continue
		}
		if err != nil {
			c.exp.DeletionObserved(key, child.Name)
			c.recorder.Eventf(lj, corev1.EventTypeWarning, ReasonFailedDeleteJob, "Failed to delete ImagePullJob %s (image %s): %v", child.Name, child.Spec.Image, err)
			return fmt.Errorf("deleting imagepulljob %s (image %s): %w", child.Name, child.Spec.Image, err)
		}
		klog.FromContext(ctx).V(2).Info("Deleted ImagePullJob", "imagepulljob", child.Name, "image", child.Spec.Image)
		c.recorder.Eventf(lj, corev1.EventTypeNormal, ReasonDeletedJob, "Deleted ImagePullJob %s of image %s", child.Name, child.Spec.Image)
	}
	return nil
}

// writeStatus writes status through the status subresource when it differs from the list job's.
func (c *Controller) writeStatus(ctx context.Context, lj *v1alpha1.ImageListPullJob, status v1alpha1.ImageListPullJobStatus) error {
	if apiequality.Semantic.DeepEqual(lj.Status, status) {
		return nil
	}
	updated := lj.DeepCopy()
	updated.Status = status
	if _, err := c.client.AppsV1alpha1().ImageListPullJobs(lj.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating the status of imagelistpulljob %s: %w", klog.KObj(lj), err)
	}
	if lj.Status.CompletionTime == nil && status.CompletionTime != nil {
		klog.FromContext(ctx).Info("ImageListPullJob completed", "succeeded", status.Succeeded, "desired", status.Desired)
		c.recorder.Eventf(lj, corev1.EventTypeNormal, ReasonCompleted, "%d of %d images pulled on every node", status.Succeeded, status.Desired)
	}
	return nil
}

// expire deletes a completed list job ttlSecondsAfterFinished after its completion, or says when to.
func (c *Controller) expire(ctx context.Context, lj *v1alpha1.ImageListPullJob, now metav1.Time) (time.Duration, error) {
	return imagejob.Expire(ctx, lj, "ImageListPullJob", &lj.Spec.CompletionPolicy, lj.Status.CompletionTime, now, minRequeue,
		c.client.AppsV1alpha1().ImageListPullJobs(lj.Namespace).Delete, c.recorder)
}
