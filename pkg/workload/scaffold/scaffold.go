// Package scaffold is what the three workload controllers (CloneSet, Advanced StatefulSet,
// Advanced DaemonSet) have alike, written once: the clients, queue, owner router, Pod and revision
// indexes and expectations each builds in New (Parts.Init), the switch of image pre-download
// (EnableImagePreDownload), the head of a sync (Load) and, for the two whose status ends with the
// revision history, its tail (Finish). Each controller embeds Parts and adds its own informers,
// handlers and steps.
package scaffold

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	informers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
	"github.com/inplace-dev/inplace/pkg/workload/predownload"
)

// Workload is a workload kind's object.
type Workload interface {
	metav1.Object
	runtime.Object
}

// Parts are the parts every workload controller has.
type Parts[W Workload] struct {
	Kube    kubernetes.Interface
	Inplace clientset.Interface
	Owned   ownership.Indexes // the Pods and revisions by controller
	// Synced are the informers the workers wait for.
	Synced []cache.InformerSynced
	Queue  reconcile.Queue
	// Router takes the events of the Pods, claims and revisions to their workload.
	Router   *ownership.Router[W]
	Recorder record.EventRecorder
	Exp      *expectations.Expectations
	Clock    clock.PassiveClock
	// Predl pre-downloads the images of rollouts (EnableImagePreDownload); nil when off.
	Predl *predownload.Writer
	// name is the controller's: the key that names the workload in its log lines.
	name string
}

// Config is what Init needs to know of a workload kind and its controller.
type Config[W Workload] struct {
	// Name is the controller's: its queue's name.
	Name string
	// Kind is the workload's, as its controllerRefs name it; Resource its resource.
	Kind     schema.GroupVersionKind
	Resource string
	// Namespaced reads one namespace's workloads from the cache (the lister's namespace method).
	Namespaced func(namespace string) ownership.NamespaceLister[W]
	// Selector is a workload's Pod selector.
	Selector func(W) *metav1.LabelSelector
	Kube     kubernetes.Interface
	Inplace  clientset.Interface
	Recorder record.EventRecorder
	// Workloads, Pods and Revisions are the informers of the kind, its Pods and its
	// ControllerRevisions; Others the other informers the controller reads.
	Workloads, Pods, Revisions cache.SharedIndexInformer
	Others                     []cache.SharedIndexInformer
	// Deleted is told of a workload deleted; nil forgets its expectations (Parts.Forget).
	Deleted func(W)
}

// Init builds the parts, with the real clock, and enqueues each workload added or updated (Deleted
// is told of one deleted). The controller watches its Pods, revisions and other objects itself.
func (p *Parts[W]) Init(cfg Config[W]) error {
	p.Kube, p.Inplace, p.Recorder, p.name = cfg.Kube, cfg.Inplace, cfg.Recorder, cfg.Name
	p.Synced = []cache.InformerSynced{cfg.Workloads.HasSynced, cfg.Pods.HasSynced, cfg.Revisions.HasSynced}
	for _, inf := range cfg.Others {
		p.Synced = append(p.Synced, inf.HasSynced)
	}
	p.Clock = clock.RealClock{}
	p.Queue = reconcile.NewQueue(cfg.Name)
	p.Exp = expectations.New(partsClock[W]{p})
	p.Router = ownership.NewRouter(cfg.Kind, cfg.Namespaced, cfg.Selector, p.Queue)
	owned, err := ownership.NewIndexes(cfg.Pods, cfg.Revisions)
	if err != nil {
		return err
	}
	p.Owned = owned
	deleted := cfg.Deleted
	if deleted == nil {
		deleted = func(w W) { p.Forget(cache.MetaObjectToName(w).String()) }
	}
	return reconcile.Watch(cfg.Workloads, cfg.Resource, p.Router.WorkloadHandlers(deleted))
}

// partsClock is p.Clock read at each call, for the expectations and the pre-download writer
// built in Init: a test sets its fake clock on the controller after New.
type partsClock[W Workload] struct{ p *Parts[W] }

func (c partsClock[W]) Now() time.Time                  { return c.p.Clock.Now() }
func (c partsClock[W]) Since(t time.Time) time.Duration { return c.p.Clock.Since(t) }

// EnableImagePreDownload makes the workloads pre-download the new images of their rollouts
// (package predownload, with the kind's rules: cmd/controller calls it for each of the three
// workload controllers): it watches the ImagePullJobs the workloads control, whose creation and
// deletion settle the pre-download expectations and bring their workload back. Call it before
// the informers start.
func (p *Parts[W]) EnableImagePreDownload(revisions appsv1client.ControllerRevisionsGetter, jobs informers.ImagePullJobInformer) error {
	w, err := predownload.Enable(p.Inplace, revisions, jobs, p.Recorder, partsClock[W]{p},
		p.Router.OwnerKey, p.Queue.Add)
	if err != nil {
		return err
	}
	p.Predl = w
	p.Synced = append(p.Synced, jobs.Informer().HasSynced)
	return nil
}

// Forget drops the expectations of the workload of key, which is gone: those of its Pods and
// those of its image pre-download jobs.
func (p *Parts[W]) Forget(key string) {
	p.Exp.Forget(key)
	if p.Predl != nil {
		p.Predl.Forget(key)
	}
}

// Load reads the workload of key from the cache for a sync, with its Pod selector. ok is false
// when there is nothing to sync: the workload is gone (its expectations are forgotten) or its
// selector is invalid (ownership.PodSelector reports it).
func (p *Parts[W]) Load(key cache.ObjectName) (w W, selector labels.Selector, ok bool, err error) {
	w, err = p.Router.Get(key.Namespace, key.Name)
	if apierrors.IsNotFound(err) {
		p.Forget(key.String())
		return w, nil, false, nil
	}
	if err != nil {
		return w, nil, false, err
	}
	selector, ok = ownership.PodSelector(p.Recorder, w, p.Router.Selector(w))
	return w, selector, ok, nil
}

// UpdateInPlace sends POST pods/NAME/inplaceupdate with body, which moves the Pod to revision,
// expected before it is sent so that no sync counts the Pod as available (or asks again) before
// the informer shows it updating. A Pod a PodUnavailableBudget holds back is a wait
// (inplacerequest.Waiting); any other failure is a Warning Event and an error; a request accepted
// a Normal Event and a log line with the spec the body carries out.
func (p *Parts[W]) UpdateInPlace(ctx context.Context, w W, pod *corev1.Pod, spec *inplaceupdate.UpdateSpec, body *v1alpha1.InPlaceUpdate, revision string) error {
	key := cache.MetaObjectToName(w).String()
	p.Exp.ExpectUpdate(key, pod.Name, revision)
	if _, err := p.Inplace.AppsV1alpha1().Pods(pod.Namespace).InPlaceUpdate(ctx, pod.Name, body, metav1.CreateOptions{}); err != nil {
		p.Exp.UpdateObserved(key, pod.Name)
		if wait, ok := inplacerequest.Waiting(p.Recorder, w, pod.Name, err); ok {
			// A PodUnavailableBudget holds the Pod back: the update waits (no error, no backoff).
			return wait
		}
		p.Recorder.Eventf(w, corev1.EventTypeWarning, ownership.ReasonFailedUpdatePodInPlace,
			"failed to update pod %s in place to revision %s: %v", pod.Name, revision, err)
		return fmt.Errorf("updating pod %s in place: %w", pod.Name, err)
	}
	klog.FromContext(ctx).Info("Updating Pod in place", p.name, klog.KObj(w), "pod", klog.KObj(pod),
		"node", pod.Spec.NodeName, "updateRevision", revision, "spec", spec.String())
	p.Recorder.Eventf(w, corev1.EventTypeNormal, ownership.ReasonSuccessfulUpdatePodInPlace,
		"updating pod %s in place to revision %s", pod.Name, revision)
	return nil
}

// DeletePod deletes a Pod of w (only that very Pod: a precondition on its UID), expected first.
// A deletion a PodUnavailableBudget holds back (the budget webhook's 429) is a wait
// (inplacerequest.WaitingToDelete); any other failure is a Warning Event and an error; the caller
// reports the deletion, with its reason.
func (p *Parts[W]) DeletePod(ctx context.Context, w W, pod *corev1.Pod) error {
	key := cache.MetaObjectToName(w).String()
	p.Exp.ExpectDeletions(key, pod.Name)
	err := p.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		p.Exp.DeletionObserved(key, pod.Name)
		if wait, ok := inplacerequest.WaitingToDelete(p.Recorder, w, pod.Name, err); ok {
			return wait
		}
		p.Recorder.Eventf(w, corev1.EventTypeWarning, ownership.ReasonFailedDelete, "failed to delete pod %s: %v", pod.Name, err)
		return fmt.Errorf("deleting pod %s: %w", pod.Name, err)
	}
	return nil
}

// Finish ends a sync whose steps returned actErr: it writes the status the sync computed (write),
// then drops the revisions no Pod uses beyond limit; it returns the first error, joined to
// actErr, or when to look again: the sooner of requeue and wait. Pod updates a
// PodUnavailableBudget held back (inplacerequest.BudgetWait in actErr) are no error: the sync
// looks again after inplacerequest.BudgetRetry.
func (p *Parts[W]) Finish(ctx context.Context, actErr error, write func() error, revisions []*appsv1.ControllerRevision,
	revs history.Revisions, pods []*corev1.Pod, limit int, requeue, wait time.Duration) (time.Duration, error) {
	waits, actErr := inplacerequest.BudgetWaits(actErr)
	if len(waits) > 0 {
		requeue = reconcile.Soonest(requeue, inplacerequest.BudgetRetry)
	}
	if err := write(); err != nil {
		return 0, errors.Join(actErr, err)
	}
	if err := history.TruncateUnused(ctx, p.Kube.AppsV1(), revisions, revs, pods, limit); err != nil {
		return 0, errors.Join(actErr, err)
	}
	if actErr != nil {
		return 0, actErr
	}
	return reconcile.Soonest(requeue, wait), nil
}

// RevisionsFailed ends a sync whose revision management (history.Manage) failed with err. A
// collision count it bumped (revs) that the status (count, nil: 0 not written yet) does not show
// is written (write, given the new count; its own error is dropped, err is what failed): the next
// try must not reuse the taken name.
func RevisionsFailed(err error, count *int32, revs history.Revisions, write func(count *int32) error) (time.Duration, error) {
	if count == nil || *count != revs.CollisionCount {
		_ = write(&revs.CollisionCount)
	}
	return 0, err
}
