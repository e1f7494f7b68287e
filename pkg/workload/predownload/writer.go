package predownload

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	appsinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
)

// Event reasons, on the workload.
const (
	ReasonCreated       = "CreatedImagePullJob"
	ReasonFailedCreate  = "FailedCreateImagePullJob"
	ReasonDeleted       = "DeletedImagePullJob"
	ReasonBadAnnotation = "InvalidImagePreDownloadAnnotation"
)

// ownerIndex indexes ImagePullJobs by the UID of their controller.
const ownerIndex = "predownload-controller-uid"

// Writer carries out Decide's plans for one kind of workload.
type Writer struct {
	client    clientset.Interface
	revisions appsv1client.ControllerRevisionsGetter
	informer  cache.SharedIndexInformer
	index     cache.Indexer
	recorder  record.EventRecorder
	// exp holds, per workload key, the jobs it created or deleted that the cache does not show
	// yet: until it does, nothing is decided, so a job is never created twice.
	exp *expectations.Expectations
}

// NewWriter builds a Writer on the shared ImagePullJob informer, which it indexes by controller.
// Watch then reports what that informer shows and requeues the owners.
func NewWriter(client clientset.Interface, revisions appsv1client.ControllerRevisionsGetter, jobs appsinformers.ImagePullJobInformer,
	recorder record.EventRecorder, exp *expectations.Expectations) (*Writer, error) {
	inf := jobs.Informer()
	// Another workload controller may have added the index already.
	if _, ok := inf.GetIndexer().GetIndexers()[ownerIndex]; !ok {
		if err := inf.AddIndexers(cache.Indexers{ownerIndex: controllerUID}); err != nil {
			return nil, fmt.Errorf("indexing imagepulljobs by controller: %w", err)
		}
	}
	return &Writer{client: client, revisions: revisions, informer: inf, index: inf.GetIndexer(), recorder: recorder, exp: exp}, nil
}

func controllerUID(obj any) ([]string, error) {
	job, ok := obj.(*v1alpha1.ImagePullJob)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOf(job); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// OwnerFunc names the workload of the writer's kind that the controller reference points at, or
// says there is none.
type OwnerFunc func(namespace string, ref *metav1.OwnerReference) (cache.ObjectName, bool)

// Watch adds Handler to the ImagePullJob informer. Call it before the informer starts.
func (w *Writer) Watch(owner OwnerFunc, enqueue func(cache.ObjectName)) error {
	return reconcile.Watch(w.informer, "imagepulljobs", w.Handler(owner, enqueue))
}

// Handler is what the ImagePullJob informer reports to the writer: a job's creation and its
// deletion (or deletion timestamp) settle the expectations of the workload owner names, and
// enqueue its key. Status updates of a job do not: the workloads do not read them.
func (w *Writer) Handler(owner OwnerFunc, enqueue func(cache.ObjectName)) reconcile.Handlers[*v1alpha1.ImagePullJob] {
	event := func(job *v1alpha1.ImagePullJob, gone bool) {
		key, ok := owner(job.Namespace, metav1.GetControllerOf(job))
		if !ok {
			return
		}
		if gone || job.DeletionTimestamp != nil {
			w.DeletionObserved(key.String(), job.Name)
		} else {
			w.CreationObserved(key.String(), job.Name)
		}
		enqueue(key)
	}
	return reconcile.Handlers[*v1alpha1.ImagePullJob]{
		Add: func(job *v1alpha1.ImagePullJob) { event(job, false) },
		Update: func(old, job *v1alpha1.ImagePullJob) {
			if old.DeletionTimestamp == nil && job.DeletionTimestamp != nil {
				event(job, true)
			}
		},
		Delete: func(job *v1alpha1.ImagePullJob) { event(job, true) },
	}
}

// Owned lists the jobs the owner controls, from the cache.
func (w *Writer) Owned(owner metav1.Object) ([]*v1alpha1.ImagePullJob, error) {
	objs, err := w.index.ByIndex(ownerIndex, string(owner.GetUID()))
	if err != nil {
		return nil, fmt.Errorf("listing the imagepulljobs of %s/%s: %w", owner.GetNamespace(), owner.GetName(), err)
	}
	var out []*v1alpha1.ImagePullJob
	for _, o := range objs {
		if j, ok := o.(*v1alpha1.ImagePullJob); ok && j.Namespace == owner.GetNamespace() {
			out = append(out, j)
		}
	}
	return out, nil
}

// CreationObserved and DeletionObserved settle the expectations of the workload key: the cache
// showed the job (or showed it gone).
func (w *Writer) CreationObserved(key, job string) { w.exp.CreationObserved(key, job) }
func (w *Writer) DeletionObserved(key, job string) { w.exp.DeletionObserved(key, job) }

// Forget drops the expectations of a workload that is gone.
func (w *Writer) Forget(key string) { w.exp.Forget(key) }

// Sync decides and carries out the next pre-download step of the workload under key. It does
// nothing while the cache lags behind its own earlier writes; it then says when those
// expectations time out, for the caller to look again if no informer event brings it back first.
func (w *Writer) Sync(ctx context.Context, key string, r Rollout) (time.Duration, error) {
	logger := klog.FromContext(ctx).WithValues("workload", klog.KObj(r.Owner), "updateRevision", r.Update.Name)
	if ok, left := w.exp.Satisfied(key, w.jobState(r.Owner.GetNamespace())); !ok {
		logger.V(4).Info("Image pre-download waits for the cache to show its jobs")
		return left, nil
	}
	jobs, err := w.Owned(r.Owner)
	if err != nil {
		return 0, err
	}
	plan, err := Decide(r, jobs)
	if err != nil {
		return 0, fmt.Errorf("deciding the image pre-download of %s/%s: %w", r.Owner.GetNamespace(), r.Owner.GetName(), err)
	}
	for _, p := range plan.Problems {
		w.recorder.Event(r.Owner, corev1.EventTypeWarning, ReasonBadAnnotation, p)
	}
	errs := []error{w.deleteJobs(ctx, key, r.Owner, plan.Delete)}
	createErr := w.createJobs(ctx, key, r.Owner, plan.Create)
	errs = append(errs, createErr)
	// Unlike OpenKruise, which labels the revision even when a job could not be created (and so
	// never tries again), the label waits until every job exists.
	if plan.Mark != "" && createErr == nil {
		if plan.Mark == v1alpha1.ImagePreDownloadIgnoredKey {
			logger.V(2).Info("Not pre-downloading the images of the revision", "reason", plan.Why)
		}
		errs = append(errs, w.markRevision(ctx, r, plan.Mark))
	} else if plan.Why != "" {
		logger.V(5).Info("No image pre-download job to create", "reason", plan.Why)
	}
	return 0, errors.Join(errs...)
}

// jobState is what the cache shows of the jobs of a namespace, for the expectations.
func (w *Writer) jobState(namespace string) expectations.Lookup {
	return func(name string) expectations.Cached {
		obj, ok, err := w.index.GetByKey(namespace + "/" + name)
		if err != nil || !ok {
			return expectations.Cached{}
		}
		job, _ := obj.(*v1alpha1.ImagePullJob)
		return expectations.Cached{Exists: true, Terminating: job != nil && job.DeletionTimestamp != nil}
	}
}

func (w *Writer) createJobs(ctx context.Context, key string, owner Object, jobs []*v1alpha1.ImagePullJob) error {
	var errs []error
	for _, job := range jobs {
		w.exp.ExpectCreations(key, job.Name)
		_, err := w.client.AppsV1alpha1().ImagePullJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			// Created by an earlier sync whose creation the cache has not shown, or someone
			// else's job of that name: either way not ours to create.
			w.exp.CreationObserved(key, job.Name)
		case err != nil:
			w.exp.CreationObserved(key, job.Name)
			w.recorder.Eventf(owner, corev1.EventTypeWarning, ReasonFailedCreate, "failed to create ImagePullJob %s: %v", job.Name, err)
			errs = append(errs, fmt.Errorf("creating imagepulljob %s/%s: %w", job.Namespace, job.Name, err))
		default:
			klog.FromContext(ctx).Info("Created ImagePullJob to pre-download an image", "workload", klog.KObj(owner),
				"imagepulljob", klog.KObj(job), "image", job.Spec.Image)
			w.recorder.Eventf(owner, corev1.EventTypeNormal, ReasonCreated, "created ImagePullJob %s for image: %s", job.Name, job.Spec.Image)
		}
	}
	return errors.Join(errs...)
}

func (w *Writer) deleteJobs(ctx context.Context, key string, owner Object, jobs []*v1alpha1.ImagePullJob) error {
	var errs []error
	for _, job := range jobs {
		w.exp.ExpectDeletions(key, job.Name)
		// The UID precondition spares a job created again under the same name meanwhile.
		err := w.client.AppsV1alpha1().ImagePullJobs(job.Namespace).Delete(ctx, job.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &job.UID}})
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			w.exp.DeletionObserved(key, job.Name)
		case err != nil:
			w.exp.DeletionObserved(key, job.Name)
			errs = append(errs, fmt.Errorf("deleting imagepulljob %s/%s: %w", job.Namespace, job.Name, err))
		default:
			klog.FromContext(ctx).Info("Deleted ImagePullJob", "workload", klog.KObj(owner), "imagepulljob", klog.KObj(job))
			w.recorder.Eventf(owner, corev1.EventTypeNormal, ReasonDeleted, "deleted ImagePullJob %s", job.Name)
		}
	}
	return errors.Join(errs...)
}

// markRevision labels the update revision so its jobs are not considered again.
func (w *Writer) markRevision(ctx context.Context, r Rollout, label string) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, label)
	_, err := w.revisions.ControllerRevisions(r.Update.Namespace).Patch(ctx, r.Update.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil // truncated meanwhile: nothing left to remember
	}
	if err != nil {
		return fmt.Errorf("labelling revision %s/%s %s: %w", r.Update.Namespace, r.Update.Name, label, err)
	}
	return nil
}

// Enable is what a workload controller's EnableImagePreDownload does: a Writer on the ImagePullJob
// informer, with expectations of its own on clk, watching the jobs (owner names the workload of a
// job, enqueue brings it back). Call it before the informer starts.
func Enable(client clientset.Interface, revisions appsv1client.ControllerRevisionsGetter, jobs appsinformers.ImagePullJobInformer,
	recorder record.EventRecorder, clk clock.PassiveClock, owner OwnerFunc, enqueue func(cache.ObjectName)) (*Writer, error) {
	w, err := NewWriter(client, revisions, jobs, recorder, expectations.New(clk))
	if err != nil {
		return nil, err
	}
	return w, w.Watch(owner, enqueue)
}
