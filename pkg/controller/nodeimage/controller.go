// Package nodeimage is inplace-controller's NodeImage controller: it keeps one NodeImage per
// Node, named after it, and collects the garbage of NodeImage specs (pkg/imagepull says who
// writes what):
//
//   - a Node that is Ready and has no NodeImage gets one, labelled with the Node's labels (kept in
//     step afterwards, as OpenKruise does); a Node that is gone or being deleted has its NodeImage
//     deleted (OpenKruise deletes it the same way, rather than through an owner reference);
//   - imagepull.GC drops from a NodeImage's spec the owners that are no ImagePullJob any more and
//     the tags past their TTL; the controller looks again after imagepull.NextGC.
//
// NodeImage status is the node's inplace-daemon's alone (pkg/daemon/imagepuller): it writes each
// tag's pull, with its deadline and backoff, and the counts.
//
// Differences from OpenKruise v1.9: no creation delay after the Node turns Ready (OpenKruise waits
// a configurable time), and no status writes here: OpenKruise's controller also marks a tag Failed
// when the node's daemon has not responded for a while; here a job whose node never answers ends
// at its own activeDeadlineSeconds if it has one (imagepull.JobStatus).
package nodeimage

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	appsinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1alpha1"
	appslisters "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/imagepull"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Name is the controller's name in logs, events and metrics.
const Name = "nodeimage"

// Event reasons, on the NodeImage.
const (
	ReasonCreated   = "NodeImageCreated"
	ReasonDeleted   = "NodeImageDeleted"
	ReasonCollected = "TagsCollected"
)

// jobUIDIndex indexes NodeImages by the UIDs of the owners of their tags.
const jobUIDIndex = "jobUID"

// Controller keeps NodeImages in step with Nodes and ImagePullJobs.
type Controller struct {
	client     clientset.Interface
	nodes      corelisters.NodeLister
	nodeImages appslisters.NodeImageLister
	niIndex    cache.Indexer
	jobs       appslisters.ImagePullJobLister
	synced     []cache.InformerSynced
	queue      reconcile.Queue
	recorder   record.EventRecorder
	clock      clock.Clock
}

// New builds the controller on explicit informers and clients.
func New(client clientset.Interface, nodes coreinformers.NodeInformer, nodeImages appsinformers.NodeImageInformer,
	jobs appsinformers.ImagePullJobInformer, recorder record.EventRecorder, clk clock.Clock) (*Controller, error) {
	c := &Controller{
		client:     client,
		nodes:      nodes.Lister(),
		nodeImages: nodeImages.Lister(),
		niIndex:    nodeImages.Informer().GetIndexer(),
		jobs:       jobs.Lister(),
		synced:     []cache.InformerSynced{nodes.Informer().HasSynced, nodeImages.Informer().HasSynced, jobs.Informer().HasSynced},
		recorder:   recorder,
		clock:      clk,
		queue:      reconcile.NewQueue(Name),
	}
	if err := nodeImages.Informer().AddIndexers(cache.Indexers{jobUIDIndex: ownerUIDs}); err != nil {
		return nil, fmt.Errorf("indexing nodeimages by tag owner: %w", err)
	}
	// Nodes and NodeImages are both keyed by the node's name.
	if err := reconcile.Watch(nodes.Informer(), "nodes", reconcile.OnChange(func(n *corev1.Node) { c.enqueue(n.Name) })); err != nil {
		return nil, err
	}
	if err := reconcile.Watch(nodeImages.Informer(), "nodeimages", reconcile.OnChange(func(ni *v1alpha1.NodeImage) { c.enqueue(ni.Name) })); err != nil {
		return nil, err
	}
	// A deleted job's tags are collected at once rather than at the next resync.
	if err := reconcile.Watch(jobs.Informer(), "imagepulljobs", reconcile.Handlers[*v1alpha1.ImagePullJob]{Delete: c.enqueueJobNodeImages}); err != nil {
		return nil, err
	}
	return c, nil
}

// ownerUIDs are the UIDs of the owners of a NodeImage's tags.
var ownerUIDs = imagepull.TagOwnerIndex(func(r corev1.ObjectReference) (string, bool) { return string(r.UID), true })

// enqueue enqueues a node's name: it is the name of its NodeImage too.
func (c *Controller) enqueue(name string) {
	c.queue.Add(cache.ObjectName{Name: name})
}

// enqueueJobNodeImages enqueues the NodeImages that have a tag owned by a deleted job.
func (c *Controller) enqueueJobNodeImages(job *v1alpha1.ImagePullJob) {
	objs, err := c.niIndex.ByIndex(jobUIDIndex, string(job.UID))
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("listing the nodeimages of imagepulljob %s: %w", cache.MetaObjectToName(job), err))
		return
	}
	for _, o := range objs {
		if ni, ok := o.(*v1alpha1.NodeImage); ok {
			c.enqueue(ni.Name)
		}
	}
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.synced...)
}
