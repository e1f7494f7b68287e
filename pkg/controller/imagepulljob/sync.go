package imagepulljob

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/imagejob"
	"github.com/inplace-dev/inplace/pkg/imagepull"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
)

// tagWritten is the "revision" a NodeImage is expected at once the job wrote its tag into it.
const tagWritten = "tag-written"

// jitter spreads the TTLs of tags (imagepull.TagPullPolicy).
var jitter imagepull.Jitter = rand.Int32N

// sync takes the next step of one job and says when to look again if time, not an event, is what
// it waits for (its activeDeadlineSeconds, or its TTL once completed).
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	job, err := c.jobs.ImagePullJobs(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.exp.Forget(key.String())
		return 0, c.removeTags(ctx, key, "")
	}
	if err != nil {
		return 0, fmt.Errorf("getting imagepulljob %s: %w", key, err)
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("imagepulljob", klog.KObj(job)))
	if job.DeletionTimestamp != nil {
		c.exp.Forget(key.String())
		return 0, c.removeTags(ctx, key, "")
	}
	// Tags of an earlier job of the same name are not this job's.
	if err := c.removeTags(ctx, key, job.UID); err != nil {
		return 0, err
	}
	now := metav1.NewTime(c.clock.Now())
	if job.Status.CompletionTime != nil {
		return c.expire(ctx, job, now)
	}
	if ok, left := c.exp.Satisfied(key.String(), c.tagState(job)); !ok {
		// The NodeImage update that shows the tag brings the job back.
		return left, nil
	}

	nodeImages, err := c.targets(job)
	if err != nil {
		c.recorder.Eventf(job, corev1.EventTypeWarning, ReasonInvalid, "Cannot select nodes: %v", err)
		return 0, nil // the job's next update brings it back
	}
	secrets := imagepull.PullSecretRefs(job)
	progress, err := imagepull.JobStatus(job, nodeImages, secrets, now)
	if err != nil {
		c.recorder.Eventf(job, corev1.EventTypeWarning, ReasonInvalid, "Cannot compute status: %v", err)
		return 0, nil
	}
	status := progress.Status
	if status.CompletionTime == nil {
		if err := c.start(ctx, job, imagepull.NodesToStart(job, status.Active, progress.NotSynced), secrets, now); err != nil {
			return 0, err
		}
	}
	if err := c.writeStatus(ctx, job, status, now); err != nil {
		return 0, err
	}
	if status.CompletionTime != nil {
		if left, ok := imagepull.TTLLeft(&job.Spec.CompletionPolicy, status.CompletionTime, now); ok {
			return max(left, minRequeue), nil
		}
		return 0, nil
	}
	if left, ok := imagepull.DeadlineLeft(job, status.StartTime, now); ok {
		return max(left, minRequeue), nil
	}
	return 0, nil
}

// targets are the NodeImages of the job's target nodes (imagepull.TargetNodes over the Nodes
// that have a NodeImage).
func (c *Controller) targets(job *v1alpha1.ImagePullJob) ([]*v1alpha1.NodeImage, error) {
	all, err := c.nodeImages.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing nodeimages: %w", err)
	}
	byName := make(map[string]*v1alpha1.NodeImage, len(all))
	for _, ni := range all {
		if ni.DeletionTimestamp == nil {
			byName[ni.Name] = ni
		}
	}
	nodeList, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var nodes []*corev1.Node
	for _, n := range nodeList {
		if _, ok := byName[n.Name]; ok {
			nodes = append(nodes, n)
		}
	}
	var pods []*corev1.Pod
	if job.Spec.PodSelector != nil {
		if pods, err = c.candidatePods(job); err != nil {
			return nil, err
		}
	}
	names, err := imagepull.TargetNodes(job, nodes, pods)
	if err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.NodeImage, 0, len(names))
	for _, n := range names {
		out = append(out, byName[n])
	}
	return out, nil
}

// tagState is what the expectations see of a NodeImage: whether the cache shows the job's tag.
func (c *Controller) tagState(job *v1alpha1.ImagePullJob) expectations.Lookup {
	return func(name string) expectations.Cached {
		ni, err := c.nodeImages.Get(name)
		if err != nil {
			return expectations.Cached{}
		}
		state := expectations.Cached{Exists: true, Terminating: ni.DeletionTimestamp != nil}
		if owns(ni, job.UID) {
			state.Revision = tagWritten
		}
		return state
	}
}

func owns(ni *v1alpha1.NodeImage, uid types.UID) bool {
	for _, image := range ni.Spec.Images {
		for _, t := range image.Tags {
			for _, r := range t.OwnerReferences {
				if r.UID == uid {
					return true
				}
			}
		}
	}
	return false
}

// start writes the job's tag into the NodeImages of nodes, each an update at the resourceVersion
// the cache holds: a conflict fails the sync and the job is retried on the newer NodeImage.
func (c *Controller) start(ctx context.Context, job *v1alpha1.ImagePullJob, nodes []string, secrets []v1alpha1.ReferenceObject, now metav1.Time) error {
	key := cache.MetaObjectToName(job).String()
	var started []string
	defer func() {
		if len(started) > 0 {
			c.recorder.Eventf(job, corev1.EventTypeNormal, ReasonPullStarted, "Pulling image %s on nodes %s", job.Spec.Image, strings.Join(started, ", "))
		}
	}()
	for _, name := range nodes {
		ni, err := c.nodeImages.Get(name)
		if err != nil {
			return fmt.Errorf("getting nodeimage %s: %w", name, err)
		}
		spec, changed, err := imagepull.MergeJob(ni.Spec, &ni.Status, job, secrets, now, jitter)
		if err != nil {
			return fmt.Errorf("merging the tag into nodeimage %s: %w", name, err)
		}
		if !changed {
			continue
		}
		updated := ni.DeepCopy()
		updated.Spec = spec
		c.exp.ExpectUpdate(key, name, tagWritten)
		if _, err := c.client.AppsV1alpha1().NodeImages().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			c.exp.UpdateObserved(key, name)
			return fmt.Errorf("writing the tag of image %s into nodeimage %s: %w", job.Spec.Image, name, err)
		}
		klog.FromContext(ctx).V(2).Info("Wrote the job's tag into a NodeImage", "nodeimage", name)
		started = append(started, name)
	}
	return nil
}

// writeStatus writes status through the status subresource when it differs from the job's, and
// records the job's completion.
func (c *Controller) writeStatus(ctx context.Context, job *v1alpha1.ImagePullJob, status v1alpha1.ImagePullJobStatus, now metav1.Time) error {
	if apiequality.Semantic.DeepEqual(job.Status, status) {
		return nil
	}
	updated := job.DeepCopy()
	updated.Status = status
	if _, err := c.client.AppsV1alpha1().ImagePullJobs(job.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating the status of imagepulljob %s: %w", klog.KObj(job), err)
	}
	if job.Status.CompletionTime != nil || status.CompletionTime == nil {
		return nil
	}
	klog.FromContext(ctx).Info("ImagePullJob completed", "succeeded", status.Succeeded, "failed", status.Failed, "desired", status.Desired)
	switch left, ok := imagepull.DeadlineLeft(job, status.StartTime, now); {
	case ok && left <= 0:
		c.recorder.Eventf(job, corev1.EventTypeWarning, ReasonDeadlineExceeded,
			"Image %s: activeDeadlineSeconds passed with %d of %d nodes succeeded; failed nodes: %s",
			job.Spec.Image, status.Succeeded, status.Desired, strings.Join(status.FailedNodes, ", "))
	case status.Failed > 0:
		c.recorder.Eventf(job, corev1.EventTypeWarning, ReasonFailed, "Image %s failed to pull on nodes %s (%d of %d succeeded)",
			job.Spec.Image, strings.Join(status.FailedNodes, ", "), status.Succeeded, status.Desired)
	default:
		c.recorder.Eventf(job, corev1.EventTypeNormal, ReasonCompleted, "Image %s pulled on all %d nodes", job.Spec.Image, status.Desired)
	}
	return nil
}

// expire deletes a completed job ttlSecondsAfterFinished after its completion, or says when to.
func (c *Controller) expire(ctx context.Context, job *v1alpha1.ImagePullJob, now metav1.Time) (time.Duration, error) {
	return imagejob.Expire(ctx, job, "ImagePullJob", &job.Spec.CompletionPolicy, job.Status.CompletionTime, now, minRequeue,
		c.client.AppsV1alpha1().ImagePullJobs(job.Namespace).Delete, c.recorder)
}

// removeTags takes the jobs named key off the tags of every NodeImage, but for the one of UID
// keep (empty: all of them, the job is gone).
func (c *Controller) removeTags(ctx context.Context, key cache.ObjectName, keep types.UID) error {
	objs, err := c.niIndex.ByIndex(jobIndex, key.String())
	if err != nil {
		return fmt.Errorf("listing the nodeimages of imagepulljob %s: %w", key, err)
	}
	for _, obj := range objs {
		ni := obj.(*v1alpha1.NodeImage)
		uids := sets.New[types.UID]()
		for _, image := range ni.Spec.Images {
			for _, t := range image.Tags {
				for _, r := range t.OwnerReferences {
					if r.Kind == "ImagePullJob" && r.Namespace == key.Namespace && r.Name == key.Name && r.UID != keep {
						uids.Insert(r.UID)
					}
				}
			}
		}
		spec, changed := ni.Spec, false
		for uid := range uids {
			var removed bool
			spec, removed = imagepull.RemoveJob(spec, uid)
			changed = changed || removed
		}
		if !changed {
			continue
		}
		updated := ni.DeepCopy()
		updated.Spec = spec
		if _, err := c.client.AppsV1alpha1().NodeImages().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("removing the tags of imagepulljob %s from nodeimage %s: %w", key, ni.Name, err)
		}
		klog.FromContext(ctx).V(2).Info("Removed a deleted job's tags from a NodeImage", "imagepulljob", key, "nodeimage", ni.Name)
	}
	return nil
}

// candidatePods are the Pods a podSelector job may select, a superset that TargetNodes narrows
// down: those with one of its matchLabels (the smallest key in order), through the Pod label
// index, or all of the namespace's Pods for a selector without matchLabels. Listing the namespace
// for every sync of every job made a rollout of 1000 CloneSets x 10 Pods with their pre-download
// jobs spend two thirds of the controller's CPU matching 10,000 Pods against each job.
func (c *Controller) candidatePods(job *v1alpha1.ImagePullJob) ([]*corev1.Pod, error) {
	ml := job.Spec.PodSelector.MatchLabels
	if len(ml) == 0 {
		pods, err := c.pods.Pods(job.Namespace).List(labels.Everything())
		if err != nil {
			return nil, fmt.Errorf("listing pods of namespace %s: %w", job.Namespace, err)
		}
		return pods, nil
	}
	key := slices.Min(slices.Collect(maps.Keys(ml)))
	objs, err := c.podIndex.ByIndex(podLabelIndex, podLabelKey(job.Namespace, key, ml[key]))
	if err != nil {
		return nil, fmt.Errorf("looking up pods of namespace %s labelled %s=%s: %w", job.Namespace, key, ml[key], err)
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// podLabelIndex indexes Pods by each of their labels, podLabelKey(namespace, key, value).
const podLabelIndex = "imagepulljob-pod-label"

func podLabelKey(namespace, key, value string) string {
	return namespace + "/" + key + "=" + value
}

func podLabelKeys(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	keys := make([]string, 0, len(pod.Labels))
	for k, v := range pod.Labels {
		keys = append(keys, podLabelKey(pod.Namespace, k, v))
	}
	return keys, nil
}
