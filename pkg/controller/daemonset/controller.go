// Package daemonset is the Advanced DaemonSet controller (apps.kruise.io/v1alpha1 DaemonSet): one
// Pod on every node the template's node selector, affinity and tolerations allow (kube's own
// scheduling predicates decide), rolled to a new revision node by node: recreated (Standard), with
// a surge Pod beside the old one (maxSurge), or in place through pods/inplaceupdate
// (InPlaceIfPossible), limited to the nodes rollingUpdate.selector matches, keeping partition Pods
// old. OpenKruise's Advanced DaemonSet and kube's DaemonSet controllers are the references.
package daemonset

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	informers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1alpha1"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
	"github.com/inplace-dev/inplace/pkg/workload/scaffold"
)

// Name is the controller's name in logs, events and metrics.
const Name = "daemonset"

// Controller reconciles Advanced DaemonSets.
type Controller struct {
	scaffold.Parts[*v1alpha1.DaemonSet]
	sets  listers.DaemonSetLister
	nodes corelisters.NodeLister
}

// New builds the controller on the DaemonSet, Pod, Node and ControllerRevision informers.
func New(kube kubernetes.Interface, inplace clientset.Interface, setInf informers.DaemonSetInformer,
	podInf coreinformers.PodInformer, nodeInf coreinformers.NodeInformer,
	revInf appsinformers.ControllerRevisionInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{sets: setInf.Lister(), nodes: nodeInf.Lister()}
	if err := c.Init(scaffold.Config[*v1alpha1.DaemonSet]{
		Name: Name, Kind: v1alpha1.SchemeGroupVersion.WithKind("DaemonSet"), Resource: "daemonsets",
		Namespaced: func(namespace string) ownership.NamespaceLister[*v1alpha1.DaemonSet] {
			return c.sets.DaemonSets(namespace)
		},
		Selector: func(ds *v1alpha1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector },
		Kube:     kube, Inplace: inplace, Recorder: recorder,
		Workloads: setInf.Informer(), Pods: podInf.Informer(), Revisions: revInf.Informer(),
		Others: []cache.SharedIndexInformer{nodeInf.Informer()},
	}); err != nil {
		return nil, err
	}
	observe := func(key string, pod *corev1.Pod, deleted bool) {
		if deleted {
			c.Exp.DeletionObserved(key, pod.Name)
		} else {
			c.Exp.CreationObserved(key, creationKey(pod))
		}
	}
	if err := reconcile.Watch(podInf.Informer(), "pods", c.Router.PodHandlers(observe)); err != nil {
		return nil, err
	}
	// A node added, relabelled, tainted or removed may change where every DaemonSet runs.
	if err := reconcile.Watch(nodeInf.Informer(), "nodes", reconcile.Handlers[*corev1.Node]{
		Add:    func(*corev1.Node) { c.enqueueAll() },
		Update: c.nodeChanged,
		Delete: func(*corev1.Node) { c.enqueueAll() },
	}); err != nil {
		return nil, err
	}
	if err := reconcile.Watch(revInf.Informer(), "controllerrevisions", c.Router.RevisionHandlers()); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueueAll() {
	sets, err := c.sets.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range sets {
		c.Queue.Add(cache.MetaObjectToName(ds))
	}
}

// nodeChanged enqueues every DaemonSet when what decides placement changed: labels, taints,
// schedulability or readiness (a node's heartbeats alone change nothing).
func (c *Controller) nodeChanged(o, n *corev1.Node) {
	if !maps.Equal(o.Labels, n.Labels) || !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
		o.Spec.Unschedulable != n.Spec.Unschedulable {
		c.enqueueAll()
	}
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.Queue, c.sync, c.Synced...)
}
