// Package imagelistpulljob is inplace-controller's ImageListPullJob controller: a list job pulls
// its images through one ImagePullJob per image, which it creates, replaces and deletes
// (imagepull.Children), and its status sums theirs (imagepull.ListJobStatus). Per list job:
//
//  1. it labels the list job with its template's hash (controller-revision-hash), as OpenKruise;
//  2. once completed, it deletes the list job ttlSecondsAfterFinished later and does nothing else
//     (its children go with it, through their controller reference);
//  3. otherwise it creates and deletes children as imagepull.Children says, remembering what it
//     did until the informer shows it (pkg/workload/expectations), so a slow cache never makes
//     it create an image's child twice;
//  4. it writes the status through the status subresource when it changed.
package imagelistpulljob

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/imagejob"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	appsinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1alpha1"
	appslisters "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
)

// Name is the controller's name in logs, events and metrics.
const Name = "imagelistpulljob"

// Event reasons, on the list job.
const (
	ReasonCreatedJob      = "CreatedImagePullJob"
	ReasonDeletedJob      = "DeletedImagePullJob"
	ReasonFailedCreateJob = "FailedCreateImagePullJob"
	ReasonFailedDeleteJob = "FailedDeleteImagePullJob"
	ReasonCompleted       = "Completed"
	ReasonTTLExpired      = imagejob.ReasonTTLExpired
)

// Controller keeps each ImageListPullJob's ImagePullJobs.
type Controller struct {
	client   clientset.Interface
	listJobs appslisters.ImageListPullJobLister
	jobs     appslisters.ImagePullJobLister
	synced   []cache.InformerSynced
	queue    reconcile.Queue
	recorder record.EventRecorder
	clock    clock.Clock
	exp      *expectations.Expectations
}

// New builds the controller on explicit informers and clients.
func New(client clientset.Interface, listJobs appsinformers.ImageListPullJobInformer, jobs appsinformers.ImagePullJobInformer,
	recorder record.EventRecorder, clk clock.Clock) (*Controller, error) {
	c := &Controller{
		client:   client,
		listJobs: listJobs.Lister(),
		jobs:     jobs.Lister(),
		synced:   []cache.InformerSynced{listJobs.Informer().HasSynced, jobs.Informer().HasSynced},
		recorder: recorder,
		clock:    clk,
		queue:    reconcile.NewQueue(Name),
	}
	c.exp = expectations.New(c.clock)
	if err := reconcile.Watch(listJobs.Informer(), "imagelistpulljobs", reconcile.OnChange(func(lj *v1alpha1.ImageListPullJob) {
		c.queue.Add(cache.MetaObjectToName(lj))
	})); err != nil {
		return nil, err
	}
	if err := reconcile.Watch(jobs.Informer(), "imagepulljobs", reconcile.OnEither(c.enqueueOwner)); err != nil {
		return nil, err
	}
	return c, nil
}

// enqueueOwner enqueues the list job that controls an ImagePullJob.
func (c *Controller) enqueueOwner(job *v1alpha1.ImagePullJob) {
	if ref := metav1.GetControllerOf(job); ref != nil && ref.Kind == "ImageListPullJob" {
		c.queue.Add(cache.ObjectName{Namespace: job.Namespace, Name: ref.Name})
	}
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.synced...)
}

// minRequeue bounds how soon a list job is looked at again for its TTL.
const minRequeue = time.Second
