// Package sidecarset is inplace-controller's SidecarSet controller. Injection happens when a Pod is
// created (the Pod webhook, package github.com/inplace-dev/inplace/pkg/sidecarcontrol); from then on
// the sidecars belong to their SidecarSet, and this controller
//
//   - records each SidecarSet's revisions as ControllerRevisions in inplace's namespace (which
//     injectionStrategy.revision names) and keeps revisionHistoryLimit of them;
//   - keeps status right (matchedPods, updatedPods, readyPods, updatedReadyPods, latestRevision,
//     observedGeneration) as Pods come and go;
//   - upgrades the sidecars of existing Pods in place when only their images changed
//     (updateStrategy RollingUpdate, within partition and maxUnavailable, in the update order of
//     package updatesort), through the pods/inplaceupdate subresource with spec.sidecarSet — the
//     in-place engine's own track for SidecarSets, which runs beside a CloneSet's update of the
//     same Pod — and marks Pods whose sidecars changed in more than images with the
//     SidecarSetUpgradable=False condition;
//   - drives hot upgrades (a pair of containers per sidecar) one step at a time.
//
// The decisions are pure functions of pkg/sidecarcontrol (upgrade.go); this package reads, writes and
// records events. All progress of an upgrade lives in the Pods (kruise.io/sidecarset-hash,
// kruise.io/sidecarset-inplace-update-state), so a restarted controller carries on.
package sidecarset

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilsets "k8s.io/apimachinery/pkg/util/sets"
	appsinformersv1 "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslistersv1 "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	appsinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1alpha1"
	appslisters "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Name is the controller's name in logs, events and metrics.
const Name = "sidecarset"

// Event reasons. On the SidecarSet (`kubectl describe sidecarset NAME`): Upgrading (the Pods a
// pass started), Upgraded (after Pods to upgrade, every matched Pod runs its current sidecars,
// ready), NotUpgradable (Pods newly marked). On the Pod: Upgrading, UpgradeFailed, NotUpgradable, HotUpgradeStep.
const (
	ReasonUpgrading      = "SidecarUpgrading"
	ReasonUpgraded       = "SidecarUpgraded"
	ReasonUpgradeFailed  = "SidecarUpgradeFailed"
	ReasonNotUpgradable  = "SidecarNotUpgradable"
	ReasonHotUpgradeStep = "SidecarHotUpgrade"
)

// Controller reconciles SidecarSets.
type Controller struct {
	kube      kubernetes.Interface
	client    clientset.Interface
	sets      appslisters.SidecarSetLister
	pods      corelisters.PodLister
	podIndex  cache.Indexer
	nsLister  corelisters.NamespaceLister
	revisions appslistersv1.ControllerRevisionLister
	// revisionNamespace is where the SidecarSets' ControllerRevisions live (a SidecarSet is
	// cluster-scoped): inplace's own namespace.
	revisionNamespace string
	synced            []cache.InformerSynced
	queue             reconcile.Queue
	recorder          record.EventRecorder
	clock             clock.PassiveClock
	expectations      expectations
	// upgrading are the SidecarSets with Pods to upgrade seen since their last SidecarUpgraded.
	upgradingMu sync.Mutex
	upgrading   utilsets.Set[string]
}

// injectedIndex indexes Pods by the SidecarSets injected into them (kruise.io/sidecarset-injected-list).
const injectedIndex = "sidecarset"

// New builds the controller. revisions must be an informer of revisionNamespace's
// ControllerRevisions.
func New(kube kubernetes.Interface, client clientset.Interface, sets appsinformers.SidecarSetInformer,
	pods coreinformers.PodInformer, namespaces coreinformers.NamespaceInformer,
	revisions appsinformersv1.ControllerRevisionInformer, revisionNamespace string, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		kube:              kube,
		client:            client,
		sets:              sets.Lister(),
		pods:              pods.Lister(),
		podIndex:          pods.Informer().GetIndexer(),
		nsLister:          namespaces.Lister(),
		revisions:         revisions.Lister(),
		revisionNamespace: revisionNamespace,
		synced: []cache.InformerSynced{sets.Informer().HasSynced, pods.Informer().HasSynced,
			namespaces.Informer().HasSynced, revisions.Informer().HasSynced},
		recorder:  recorder,
		clock:     clock.RealClock{},
		upgrading: utilsets.New[string](),
		queue:     reconcile.NewQueue(Name),
	}
	if err := pods.Informer().AddIndexers(cache.Indexers{injectedIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		return injectedSets(pod), nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing pods by sidecarset: %w", err)
	}
	if err := reconcile.Watch(sets.Informer(), "sidecarsets", reconcile.Handlers[*v1alpha1.SidecarSet]{
		Add:    c.enqueueSet,
		Update: func(_, set *v1alpha1.SidecarSet) { c.enqueueSet(set) },
	}); err != nil {
		return nil, err
	}
	// The SidecarSets injected into the Pod, before and after the change.
	if err := reconcile.Watch(pods.Informer(), "pods", reconcile.OnEither(c.enqueuePod)); err != nil {
		return nil, err
	}
	return c, nil
}

// injectedSets names the SidecarSets a Pod records as injected.
func injectedSets(pod *corev1.Pod) []string {
	list := pod.Annotations[v1alpha1.SidecarSetListAnnotation]
	if list == "" {
		return nil
	}
	return strings.Split(list, ",")
}

func (c *Controller) enqueueSet(set *v1alpha1.SidecarSet) {
	c.queue.Add(cache.ObjectName{Name: set.Name})
}

// enqueuePod enqueues the SidecarSets injected into the Pod.
func (c *Controller) enqueuePod(pod *corev1.Pod) {
	for _, name := range injectedSets(pod) {
		c.queue.Add(cache.ObjectName{Name: name})
	}
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.synced...)
}

// injectedPods are the Pods that record the SidecarSet as injected.
func (c *Controller) injectedPods(name string) ([]*corev1.Pod, error) {
	objs, err := c.podIndex.ByIndex(injectedIndex, name)
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*corev1.Pod))
	}
	return pods, nil
}

// namespaceLabels reads a namespace's labels from the cache (nil when it is gone).
func (c *Controller) namespaceLabels(name string) map[string]string {
	ns, err := c.nsLister.Get(name)
	if err != nil {
		return nil
	}
	return ns.Labels
}

// sync reconciles one SidecarSet.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	name := key.Name
	set, err := c.sets.Get(name)
	if apierrors.IsNotFound(err) {
		c.forgetUpgrade(name)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	set = set.DeepCopy()
	all, err := c.injectedPods(name)
	if err != nil {
		return 0, err
	}
	var pods []*corev1.Pod
	for _, p := range all {
		if sidecarcontrol.IsMatched(p, c.namespaceLabels(p.Namespace), set) {
			pods = append(pods, p)
		}
	}
	latest, collisionCount, err := c.syncRevisions(ctx, set, pods)
	if err != nil {
		return 0, fmt.Errorf("recording the revision of sidecarset %s: %w", name, err)
	}
	set.Status.LatestRevision, set.Status.CollisionCount = latest, collisionCount
	// The status first, as OpenKruise: it says what the Pods run whatever the upgrade does next;
	// the Pods' changes bring the SidecarSet back here.
	status, err := c.updateStatus(ctx, set, pods)
	if err != nil {
		return 0, fmt.Errorf("updating the status of sidecarset %s: %w", name, err)
	}
	c.noteUpgrade(set, &status)
	return c.upgrade(ctx, set, pods)
}

// updateStatus writes the SidecarSet's status when it changed, and returns it.
func (c *Controller) updateStatus(ctx context.Context, set *v1alpha1.SidecarSet, pods []*corev1.Pod) (v1alpha1.SidecarSetStatus, error) {
	status := sidecarcontrol.ComputeStatus(set, pods)
	status.LatestRevision, status.CollisionCount = set.Status.LatestRevision, set.Status.CollisionCount
	current, err := c.sets.Get(set.Name)
	if err != nil {
		return status, err
	}
	if statusEqual(&current.Status, &status) {
		return status, nil
	}
	out := current.DeepCopy()
	out.Status = status
	_, err = c.client.AppsV1alpha1().SidecarSets().UpdateStatus(ctx, out, metav1.UpdateOptions{})
	return status, err
}

// noteUpgrade remembers a SidecarSet whose status shows matched Pods not updated (an upgrade to
// do), and says SidecarUpgraded on it once every matched Pod is updated and ready. A Pod created
// with the current sidecars, or one that only became ready again, ends no upgrade. The memory is
// the process's: after a restart mid-upgrade, the Pods still to upgrade bring it back.
func (c *Controller) noteUpgrade(set *v1alpha1.SidecarSet, st *v1alpha1.SidecarSetStatus) {
	c.upgradingMu.Lock()
	defer c.upgradingMu.Unlock()
	switch {
	case st.UpdatedPods < st.MatchedPods:
		c.upgrading.Insert(set.Name)
	case st.MatchedPods > 0 && st.UpdatedReadyPods == st.MatchedPods && c.upgrading.Has(set.Name):
		c.upgrading.Delete(set.Name)
		c.recorder.Eventf(set, corev1.EventTypeNormal, ReasonUpgraded,
			"All %d matched Pod(s) run the sidecars of revision %s and are ready", st.MatchedPods, st.LatestRevision)
	}
}

// forgetUpgrade drops a deleted SidecarSet from the upgrades remembered.
func (c *Controller) forgetUpgrade(name string) {
	c.upgradingMu.Lock()
	defer c.upgradingMu.Unlock()
	c.upgrading.Delete(name)
}

func statusEqual(a, b *v1alpha1.SidecarSetStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration && a.MatchedPods == b.MatchedPods && a.UpdatedPods == b.UpdatedPods &&
		a.ReadyPods == b.ReadyPods && a.UpdatedReadyPods == b.UpdatedReadyPods && a.LatestRevision == b.LatestRevision &&
		ptrEqual(a.CollisionCount, b.CollisionCount)
}

func ptrEqual(a, b *int32) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
