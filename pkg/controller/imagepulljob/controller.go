// Package imagepulljob is inplace-controller's ImagePullJob controller. A job never talks to a
// node: it writes its image tag into the NodeImages of its target nodes and reads their status
// back (pkg/imagepull says who writes what). Per job, in pkg/imagepull's order:
//
//  1. TargetNodes: the nodes to pull on, among the Nodes that have a NodeImage;
//  2. JobStatus: the job's status from those NodeImages, written through the status subresource
//     only when it changed;
//  3. NodesToStart and MergeJob: the job's tag written into as many NodeImages as its parallelism
//     leaves room for, each an update at the cached resourceVersion (a conflict requeues the job);
//  4. once the job is deleted (by a user, or by this controller ttlSecondsAfterFinished after it
//     completed), RemoveJob on every NodeImage that still names it.
//
// As in OpenKruise, a completed job leaves its tags in place (their own TTL, set by MergeJob,
// lets the NodeImage controller collect them), and an Always job is looked at again when its
// activeDeadlineSeconds passes. Unlike OpenKruise, pull secrets are not copied into a daemon
// namespace: NodeImages name the job's own secrets (imagepull.PullSecretRefs), and tags are taken
// off NodeImages as soon as the job is gone, not at the NodeImage controller's next GC.
package imagepulljob

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/imagejob"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	appsinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1alpha1"
	appslisters "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/imagepull"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
)

// Name is the controller's name in logs, events and metrics.
const Name = "imagepulljob"

// Event reasons, on the job.
const (
	ReasonPullStarted      = "PullStarted"
	ReasonCompleted        = "Completed"
	ReasonFailed           = "PullFailed"
	ReasonDeadlineExceeded = "DeadlineExceeded"
	ReasonInvalid          = "InvalidJob"
	ReasonTTLExpired       = imagejob.ReasonTTLExpired
)

// jobIndex indexes NodeImages by the ImagePullJobs (namespace/name) that own their tags.
const jobIndex = "job"

// Controller pulls each ImagePullJob's image through the NodeImages of its nodes.
type Controller struct {
	client     clientset.Interface
	jobs       appslisters.ImagePullJobLister
	nodeImages appslisters.NodeImageLister
	niIndex    cache.Indexer
	nodes      corelisters.NodeLister
	pods       corelisters.PodLister
	podIndex   cache.Indexer // the Pods by label (podLabelIndex)
	synced     []cache.InformerSynced
	queue      reconcile.Queue
	recorder   record.EventRecorder
	clock      clock.Clock
	// exp holds, per job, the NodeImages it wrote its tag into that the cache does not show yet,
	// so a slow informer never makes the job start more nodes than its parallelism.
	exp *expectations.Expectations
	// selectors holds the parsed podSelector of each job, for enqueuePodChange.
	selectors podSelectors
}

// podSelectors caches the parsed podSelector of each job by UID and resourceVersion.
// enqueuePodChange matches every job of a namespace against each Pod whose labels change, and
// parsing a selector checks each of its keys and values with regular expressions: during a rollout
// of N Pods with a pre-download job per workload that was the controller's largest cost, growing
// with Pods x jobs.
type podSelectors struct {
	mu    sync.Mutex
	byUID map[types.UID]parsedSelector
}

type parsedSelector struct {
	resourceVersion string
	selector        labels.Selector
	err             error
}

// get returns the job's parsed podSelector; job.Spec.PodSelector must be set.
func (s *podSelectors) get(job *v1alpha1.ImagePullJob) (labels.Selector, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.byUID[job.UID]; ok && p.resourceVersion == job.ResourceVersion {
		return p.selector, p.err
	}
	sel, err := metav1.LabelSelectorAsSelector(&job.Spec.PodSelector.LabelSelector)
	if s.byUID == nil {
		s.byUID = map[types.UID]parsedSelector{}
	}
	s.byUID[job.UID] = parsedSelector{resourceVersion: job.ResourceVersion, selector: sel, err: err}
	return sel, err
}

// forget drops a deleted job's selector.
func (s *podSelectors) forget(obj any) {
	if job, ok := reconcile.ObjectOf[*v1alpha1.ImagePullJob](obj); ok {
		s.mu.Lock()
		delete(s.byUID, job.UID)
		s.mu.Unlock()
	}
}

// New builds the controller on explicit informers and clients.
func New(client clientset.Interface, jobs appsinformers.ImagePullJobInformer, nodeImages appsinformers.NodeImageInformer,
	nodes coreinformers.NodeInformer, pods coreinformers.PodInformer, recorder record.EventRecorder, clk clock.Clock) (*Controller, error) {
	c := &Controller{
		client:     client,
		jobs:       jobs.Lister(),
		nodeImages: nodeImages.Lister(),
		niIndex:    nodeImages.Informer().GetIndexer(),
		nodes:      nodes.Lister(),
		pods:       pods.Lister(),
		podIndex:   pods.Informer().GetIndexer(),
		synced: []cache.InformerSynced{jobs.Informer().HasSynced, nodeImages.Informer().HasSynced,
			nodes.Informer().HasSynced, pods.Informer().HasSynced},
		recorder: recorder,
		clock:    clk,
		queue:    reconcile.NewQueue(Name),
	}
	c.exp = expectations.New(c.clock)
	if err := pods.Informer().AddIndexers(cache.Indexers{podLabelIndex: podLabelKeys}); err != nil {
		return nil, fmt.Errorf("indexing pods by label: %w", err)
	}
	if err := nodeImages.Informer().AddIndexers(cache.Indexers{jobIndex: ownerJobs}); err != nil {
		return nil, fmt.Errorf("indexing nodeimages by tag owner: %w", err)
	}
	if err := reconcile.Watch(jobs.Informer(), "imagepulljobs", reconcile.Handlers[*v1alpha1.ImagePullJob]{
		Add:    c.enqueue,
		Update: func(_, job *v1alpha1.ImagePullJob) { c.enqueue(job) },
		Delete: func(job *v1alpha1.ImagePullJob) {
			c.selectors.forget(job)
			c.enqueue(job) // the sync of a job that is gone takes its tags off NodeImages
		},
	}); err != nil {
		return nil, err
	}
	all := func(*v1alpha1.ImagePullJob) bool { return true }
	if err := reconcile.Watch(nodeImages.Informer(), "nodeimages", reconcile.Handlers[*v1alpha1.NodeImage]{
		// A new or deleted NodeImage changes the candidate nodes of every running job.
		Add:    func(*v1alpha1.NodeImage) { c.enqueueRunning(all) },
		Update: func(old, ni *v1alpha1.NodeImage) { c.enqueueOwners(old); c.enqueueOwners(ni) },
		Delete: func(ni *v1alpha1.NodeImage) {
			c.enqueueOwners(ni)
			c.enqueueRunning(all)
		},
	}); err != nil {
		return nil, err
	}
	if err := reconcile.Watch(nodes.Informer(), "nodes", reconcile.Handlers[*corev1.Node]{
		Update: func(o, n *corev1.Node) {
			if !labels.Equals(o.Labels, n.Labels) {
				c.enqueueRunning(selectsNodes)
			}
		},
		// Added and deleted Nodes reach jobs through their NodeImages.
	}); err != nil {
		return nil, err
	}
	if err := reconcile.Watch(pods.Informer(), "pods", reconcile.Handlers[*corev1.Pod]{
		Add: func(pod *corev1.Pod) { c.enqueuePodChange(nil, pod) },
		Update: func(o, n *corev1.Pod) {
			if podTargetChanged(o, n) {
				c.enqueuePodChange(o, n)
			}
		},
		Delete: func(pod *corev1.Pod) { c.enqueuePodChange(pod, nil) },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// ownerJobs are the ImagePullJobs (namespace/name) that own a NodeImage's tags.
var ownerJobs = imagepull.TagOwnerIndex(func(r corev1.ObjectReference) (string, bool) {
	return r.Namespace + "/" + r.Name, r.Kind == "ImagePullJob"
})

func (c *Controller) enqueue(job *v1alpha1.ImagePullJob) {
	c.queue.Add(cache.MetaObjectToName(job))
}

// enqueueOwners enqueues the jobs that own a tag of a NodeImage: its status moved.
func (c *Controller) enqueueOwners(ni *v1alpha1.NodeImage) {
	keys, _ := ownerJobs(ni)
	for _, k := range keys {
		name, err := cache.ParseObjectName(k)
		if err != nil {
			utilruntime.HandleError(err)
			continue
		}
		c.queue.Add(name)
	}
}

// enqueueRunning enqueues the jobs not completed yet that match.
func (c *Controller) enqueueRunning(match func(*v1alpha1.ImagePullJob) bool) {
	jobs, err := c.jobs.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("listing imagepulljobs: %w", err))
		return
	}
	for _, j := range jobs {
		if j.Status.CompletionTime == nil && match(j) {
			c.enqueue(j)
		}
	}
}

// selectsNodes says whether a job picks nodes by their labels (a Node's labels changed).
func selectsNodes(j *v1alpha1.ImagePullJob) bool {
	return j.Spec.PodSelector == nil && (j.Spec.Selector == nil || len(j.Spec.Selector.Names) == 0)
}

// podTargetChanged says whether a Pod update can change which nodes a job's podSelector targets:
// its labels, or whether it wants images (placed, not leaving). Nearly every Pod update is a
// status write that changes neither; looking up the namespace's jobs for each of them cost an
// in-place rollout of 1000 Pods more controller CPU than the CloneSet controller itself
// (hack/bench-scale.sh with BENCH_PROFILE, while pre-download jobs were running).
func podTargetChanged(o, n *corev1.Pod) bool {
	return !labels.Equals(o.Labels, n.Labels) || o.Spec.NodeName != n.Spec.NodeName ||
		imagepull.PodWantsImages(o) != imagepull.PodWantsImages(n)
}

// enqueuePodChange enqueues the running podSelector jobs of the Pod's namespace whose target nodes
// the change can move: those that target a node through the Pod before or after the change, but
// not the same node both times (old is nil for a Pod added, updated for a Pod deleted). A label
// that changes on a Pod a job selects either way (an in-place update's lifecycle label, say)
// leaves its jobs alone: each such sync lists the namespace's Pods.
func (c *Controller) enqueuePodChange(old, updated *corev1.Pod) {
	pod := updated
	if pod == nil {
		pod = old
	}
	jobs, err := c.jobs.ImagePullJobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("listing imagepulljobs of namespace %s: %w", pod.Namespace, err))
		return
	}
	for _, j := range jobs {
		if j.Status.CompletionTime != nil || j.Spec.PodSelector == nil {
			continue
		}
		sel, err := c.selectors.get(j)
		if err != nil {
			continue // the job's sync reports it
		}
		before, after := targetsThrough(sel, old), targetsThrough(sel, updated)
		if before != after || (before && old.Spec.NodeName != updated.Spec.NodeName) {
			c.enqueue(j)
		}
	}
}

// targetsThrough says whether a job with this podSelector targets the Pod's node because of the
// Pod (nil: no Pod).
func targetsThrough(sel labels.Selector, pod *corev1.Pod) bool {
	return pod != nil && imagepull.PodWantsImages(pod) && sel.Matches(labels.Set(pod.Labels))
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.synced...)
}

// minRequeue bounds how soon a job is looked at again for a deadline or TTL.
const minRequeue = time.Second
