// Package podunavailablebudget is the controller of PodUnavailableBudgets (policy.kruise.io): it
// counts each budget's Pods — those of the workload its targetRef names, or those its selector
// matches — and writes the budget's status: how many must stay available, how many are, and so
// how many more may be made unavailable (status.unavailableAllowed). The writers that take a
// unit of it (pods/inplaceupdate and pods/recreate in inplace-apiserver, the Pod webhook) record
// the Pod in status.unavailablePods or status.disruptedPods; this controller drops those entries
// when the Pod is gone or their time is up (package github.com/inplace-dev/inplace/pkg/podbudget
// holds the arithmetic). It also annotates each Pod with the budget that protects it
// (pub.kruise.io/related-pub and OpenKruise v1.9's kruise.io/related-pub), which is how the
// writers find the budget of a Pod.
//
// Its status writes carry the resourceVersion read (an Update, not a Patch): a write based on a
// status that a writer has charged since fails with a conflict and is done again on the new one,
// so no charge is ever lost.
package podunavailablebudget

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/policy/v1beta1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	policyinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/policy/v1beta1"
	policylisters "github.com/inplace-dev/inplace/pkg/generated/listers/policy/v1beta1"
	"github.com/inplace-dev/inplace/pkg/podbudget"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Name is the controller's name in logs, events and metrics.
const Name = "podunavailablebudget"

// Event reasons of this controller, OpenKruise's where it has one.
const (
	ReasonNoPods            = "NoPods"
	ReasonCountFailed       = "CalculateExpectedPodCountFailed"
	ReasonTargetUnsupported = "TargetNotSupported"
)

// Controller keeps PodUnavailableBudgets' status.
type Controller struct {
	kube     kubernetes.Interface
	inplace  clientset.Interface
	budgets  policylisters.PodUnavailableBudgetLister
	pods     corelisters.PodLister
	finder   *finder
	synced   []cache.InformerSynced
	queue    reconcile.Queue
	recorder record.EventRecorder
	clock    clock.PassiveClock
}

// New builds the controller on the shared informers of budgets, Pods and workloads.
func New(kube kubernetes.Interface, inplace clientset.Interface, budgets policyinformers.PodUnavailableBudgetInformer,
	pods coreinformers.PodInformer, workloads Workloads, recorder record.EventRecorder, clk clock.PassiveClock) (*Controller, error) {
	c := &Controller{
		kube:     kube,
		inplace:  inplace,
		budgets:  budgets.Lister(),
		pods:     pods.Lister(),
		finder:   newFinder(workloads),
		queue:    reconcile.NewQueue(Name),
		recorder: recorder,
		clock:    clk,
	}
	c.synced = append([]cache.InformerSynced{budgets.Informer().HasSynced, pods.Informer().HasSynced}, c.finder.synced...)
	if err := reconcile.Watch(budgets.Informer(), "podunavailablebudgets", reconcile.OnChange(func(pub *v1beta1.PodUnavailableBudget) {
		c.queue.Add(cache.MetaObjectToName(pub))
	})); err != nil {
		return nil, err
	}
	if err := reconcile.Watch(pods.Informer(), "pods", reconcile.Handlers[*corev1.Pod]{
		Add:    c.podChanged,
		Update: func(old, pod *corev1.Pod) { c.podUpdated(old, pod) },
		Delete: c.podChanged,
	}); err != nil {
		return nil, err
	}
	// A workload's size is a budget's total: a workload that comes, goes or changes its size may
	// change the budgets of its namespace (a handful each).
	for _, inf := range c.finder.informers {
		if err := reconcile.Watch(inf, "workloads", reconcile.Handlers[metav1.Object]{
			Add: c.workloadChanged,
			Update: func(old, obj metav1.Object) {
				if replicasOf(old) != replicasOf(obj) {
					c.workloadChanged(obj)
				}
			},
			Delete: c.workloadChanged,
		}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.synced...)
}

// podUpdated enqueues the budget of a Pod whose availability, labels or budget changed; other
// updates (most of a Pod's status) leave every budget as it was.
func (c *Controller) podUpdated(old, pod *corev1.Pod) {
	if podbudget.Available(old) == podbudget.Available(pod) && labels.Equals(old.Labels, pod.Labels) &&
		podbudget.Related(old) == podbudget.Related(pod) && podbudget.Active(old) == podbudget.Active(pod) {
		return
	}
	if podbudget.Related(old) != podbudget.Related(pod) {
		c.podChanged(old)
	}
	c.podChanged(pod)
}

// podChanged enqueues the budget the Pod is annotated with, or, for a Pod that names none yet,
// every budget of its namespace that may protect it.
func (c *Controller) podChanged(pod *corev1.Pod) {
	if name := podbudget.Related(pod); name != "" {
		c.queue.Add(cache.ObjectName{Namespace: pod.Namespace, Name: name})
		return
	}
	budgets, err := c.budgets.PodUnavailableBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pub := range budgets {
		if pub.Spec.TargetReference != nil || selects(pub, pod) {
			c.queue.Add(cache.MetaObjectToName(pub))
		}
	}
}

func selects(pub *v1beta1.PodUnavailableBudget, pod *corev1.Pod) bool {
	if pub.Spec.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(pub.Spec.Selector)
	return err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels))
}

func replicasOf(obj any) int32 {
	_, n := shape(obj)
	return n
}

// workloadChanged enqueues every budget of the workload's namespace.
func (c *Controller) workloadChanged(obj metav1.Object) {
	budgets, err := c.budgets.PodUnavailableBudgets(obj.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pub := range budgets {
		c.queue.Add(cache.MetaObjectToName(pub))
	}
}

// logger is the sync's logger with the budget's key.
func logger(ctx context.Context, key cache.ObjectName) klog.Logger {
	return klog.FromContext(ctx).WithValues("podUnavailableBudget", key)
}

// syncedAt is a requeue for a recheck time: how long from now.
func (c *Controller) syncedAt(recheck *time.Time) time.Duration {
	if recheck == nil {
		return 0
	}
	return max(recheck.Sub(c.clock.Now()), time.Millisecond)
}
