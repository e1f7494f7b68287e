package podunavailablebudget

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	inplaceapps "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps"
	inplacelistersv1alpha1 "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	inplacelistersv1beta1 "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1beta1"
)

// Workloads are the informers of the workloads a budget may name or count the Pods of: kube's
// Deployments (through their ReplicaSets), ReplicaSets, StatefulSets and DaemonSets, and inplace's
// CloneSets, Advanced StatefulSets and Advanced DaemonSets.
type Workloads struct {
	Kube    appsinformers.Interface
	Inplace inplaceapps.Interface
}

// workload is what a budget needs of one: its Pod selector, how many Pods it wants, its UID.
type workload struct {
	uid      types.UID
	selector labels.Selector
	replicas int32
	deleting bool
}

// finder looks workloads up in the informers' caches.
type finder struct {
	deployments     appslisters.DeploymentLister
	replicaSets     appslisters.ReplicaSetLister
	statefulSets    appslisters.StatefulSetLister
	daemonSets      appslisters.DaemonSetLister
	cloneSets       inplacelistersv1alpha1.CloneSetLister
	advancedSets    inplacelistersv1beta1.StatefulSetLister
	advancedDaemons inplacelistersv1alpha1.DaemonSetLister
	synced          []cache.InformerSynced
	informers       []cache.SharedIndexInformer
	// byKind reads a workload of each kind a budget can name from its lister.
	byKind map[schema.GroupKind]func(ns, name string) (metav1.Object, error)
}

func newFinder(w Workloads) *finder {
	kube, inplace := w.Kube, w.Inplace
	f := &finder{
		deployments:     kube.Deployments().Lister(),
		replicaSets:     kube.ReplicaSets().Lister(),
		statefulSets:    kube.StatefulSets().Lister(),
		daemonSets:      kube.DaemonSets().Lister(),
		cloneSets:       inplace.V1alpha1().CloneSets().Lister(),
		advancedSets:    inplace.V1beta1().StatefulSets().Lister(),
		advancedDaemons: inplace.V1alpha1().DaemonSets().Lister(),
	}
	f.informers = []cache.SharedIndexInformer{
		kube.Deployments().Informer(), kube.ReplicaSets().Informer(), kube.StatefulSets().Informer(),
		kube.DaemonSets().Informer(), inplace.V1alpha1().CloneSets().Informer(),
		inplace.V1beta1().StatefulSets().Informer(), inplace.V1alpha1().DaemonSets().Informer(),
	}
	for _, inf := range f.informers {
		f.synced = append(f.synced, inf.HasSynced)
	}
	f.byKind = f.getters()
	return f
}

// errUnsupported is a targetRef of a kind the finder does not know.
type errUnsupported struct{ apiVersion, kind string }

func (e errUnsupported) Error() string {
	return fmt.Sprintf("%s %s is not a workload a PodUnavailableBudget can name: name a Deployment, ReplicaSet, StatefulSet, "+
		"DaemonSet, CloneSet, Advanced StatefulSet or Advanced DaemonSet, or use spec.selector", e.apiVersion, e.kind)
}

// getters read a workload of each kind a budget can name from its lister.
func (f *finder) getters() map[schema.GroupKind]func(ns, name string) (metav1.Object, error) {
	return map[schema.GroupKind]func(ns, name string) (metav1.Object, error){
		{Group: appsv1.GroupName, Kind: "Deployment"}:  func(ns, n string) (metav1.Object, error) { return f.deployments.Deployments(ns).Get(n) },
		{Group: appsv1.GroupName, Kind: "ReplicaSet"}:  func(ns, n string) (metav1.Object, error) { return f.replicaSets.ReplicaSets(ns).Get(n) },
		{Group: appsv1.GroupName, Kind: "StatefulSet"}: func(ns, n string) (metav1.Object, error) { return f.statefulSets.StatefulSets(ns).Get(n) },
		{Group: appsv1.GroupName, Kind: "DaemonSet"}:   func(ns, n string) (metav1.Object, error) { return f.daemonSets.DaemonSets(ns).Get(n) },
		{Group: apps.GroupName, Kind: "CloneSet"}:      func(ns, n string) (metav1.Object, error) { return f.cloneSets.CloneSets(ns).Get(n) },
		{Group: apps.GroupName, Kind: "StatefulSet"}:   func(ns, n string) (metav1.Object, error) { return f.advancedSets.StatefulSets(ns).Get(n) },
		{Group: apps.GroupName, Kind: "DaemonSet"}:     func(ns, n string) (metav1.Object, error) { return f.advancedDaemons.DaemonSets(ns).Get(n) },
	}
}

// get is the workload named by apiVersion, kind and name in ns; nil when it does not exist.
func (f *finder) get(ns, apiVersion, kind, name string) (*workload, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	get, ok := f.byKind[schema.GroupKind{Group: gv.Group, Kind: kind}]
	if !ok {
		return nil, errUnsupported{apiVersion: apiVersion, kind: kind}
	}
	obj, err := get(ns, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sel, replicas := shape(obj)
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("the selector of %s: %w", name, err)
	}
	return &workload{uid: obj.GetUID(), selector: selector, replicas: replicas, deleting: obj.GetDeletionTimestamp() != nil}, nil
}

// shape is a workload object's Pod selector and how many Pods it wants (a DaemonSet's desired
// number scheduled); replicas is -1 for an object of another kind.
func shape(obj any) (*metav1.LabelSelector, int32) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Spec.Selector, ptr.Deref(o.Spec.Replicas, 1)
	case *appsv1.ReplicaSet:
		return o.Spec.Selector, ptr.Deref(o.Spec.Replicas, 1)
	case *appsv1.StatefulSet:
		return o.Spec.Selector, ptr.Deref(o.Spec.Replicas, 1)
	case *appsv1.DaemonSet:
		return o.Spec.Selector, o.Status.DesiredNumberScheduled
	case *v1alpha1.CloneSet:
		return o.Spec.Selector, ptr.Deref(o.Spec.Replicas, 1)
	case *v1beta1.StatefulSet:
		return o.Spec.Selector, ptr.Deref(o.Spec.Replicas, 1)
	case *v1alpha1.DaemonSet:
		return o.Spec.Selector, o.Status.DesiredNumberScheduled
	}
	return nil, -1
}

// owners are the UIDs whose Pods belong to w: w itself and, for a Deployment, its ReplicaSets.
func (f *finder) owners(ns, kind string, w *workload) (map[types.UID]bool, error) {
	uids := map[types.UID]bool{w.uid: true}
	if kind != "Deployment" {
		return uids, nil
	}
	sets, err := f.replicaSets.ReplicaSets(ns).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, rs := range sets {
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == w.uid {
			uids[rs.UID] = true
		}
	}
	return uids, nil
}

// expectedScale is how many Pods the controllers of pods want, added up, as OpenKruise counts a
// budget's total when it names no workload: each controller once (a ReplicaSet of a Deployment
// counts as the Deployment); Pods without a controller, and controllers being deleted or of kinds
// the finder does not know, add nothing.
func (f *finder) expectedScale(pods []*corev1.Pod) (int32, error) {
	seen := map[types.UID]bool{}
	var total int32
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil || seen[ref.UID] {
			continue
		}
		seen[ref.UID] = true
		apiVersion, kind, name, uid := ref.APIVersion, ref.Kind, ref.Name, ref.UID
		if kind == "ReplicaSet" {
			if rs, err := f.replicaSets.ReplicaSets(pod.Namespace).Get(name); err == nil {
				if owner := metav1.GetControllerOf(rs); owner != nil && owner.Kind == "Deployment" {
					apiVersion, kind, name, uid = owner.APIVersion, owner.Kind, owner.Name, owner.UID
					if seen[uid] {
						continue
					}
					seen[uid] = true
				}
			}
		}
		w, err := f.get(pod.Namespace, apiVersion, kind, name)
		if _, unsupported := err.(errUnsupported); unsupported {
			continue
		}
		if err != nil {
			return 0, err
		}
		// A workload of that name with another UID is a newer one: the Pod is an orphan.
		if w != nil && !w.deleting && w.uid == uid {
			total += w.replicas
		}
	}
	return total, nil
}
