// Package ownership is what the workload controllers (CloneSet, Advanced StatefulSet and
// DaemonSet) share about owning Pods and ControllerRevisions through their controllerRef, as kube's
// ControllerRefManager: a workload claims the objects it wants (its selector, and any filter of
// its own) by adopting orphans and releasing those it owns but no longer wants. Both go through a
// strategic merge patch of metadata.ownerReferences that carries the object's UID, so a patch never
// lands on another object recreated under the same name.
package ownership

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/workload/history"
)

// Owner is a workload claiming objects.
type Owner struct {
	// Object is the workload as the cache has it.
	Object metav1.Object
	// Ref is its controllerRef, which adopted objects get.
	Ref *metav1.OwnerReference
	// Wants tells whether the workload wants an object: its selector matches it, and whatever
	// else the workload asks (a StatefulSet wants only Pods named after it).
	Wants func(metav1.Object) bool
	// Fresh reads the workload from the API server, not the cache. Before the first adoption
	// Claim checks that it is still the workload cached and is not being deleted: an adoption
	// racing the workload's deletion would leave an object the garbage collector never deletes
	// (kube #42639).
	Fresh func(ctx context.Context) (metav1.Object, error)
}

// Selects is Owner.Wants for a workload that wants what its selector matches.
func Selects(selector labels.Selector) func(metav1.Object) bool {
	return func(o metav1.Object) bool { return selector.Matches(labels.Set(o.GetLabels())) }
}

// action is what claiming does with one object.
type action int

const (
	ignore  action = iota // not the workload's, and not to become its
	keep                  // the workload's already
	adopt                 // an orphan it wants
	release               // its own, but no longer wanted
)

// decide is kube's ControllerRefManager.ClaimObject without the I/O. A workload being deleted keeps
// what it owns (wanted or not: the garbage collector deletes it with the workload) and adopts
// nothing; an orphan being deleted is not adopted.
func decide(owner Owner, obj metav1.Object) action {
	deleting := owner.Object.GetDeletionTimestamp() != nil
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		switch {
		case ref.UID != owner.Object.GetUID():
			return ignore
		case deleting || owner.Wants(obj):
			return keep
		default:
			return release
		}
	}
	if deleting || obj.GetDeletionTimestamp() != nil || obj.GetNamespace() != owner.Object.GetNamespace() || !owner.Wants(obj) {
		return ignore
	}
	return adopt
}

// Patch applies a strategic merge patch to the metadata of the object named name.
type Patch[T metav1.Object] func(ctx context.Context, name string, patch []byte) (T, error)

// Claim returns the objects the owner has once claiming is done: those it owned and still wants,
// and the orphans it adopted (as the patch returned them). It carries on past a failed patch, so
// one object does not hold the others, and returns the failures together.
func Claim[T metav1.Object](ctx context.Context, owner Owner, objs []T, patch Patch[T]) ([]T, error) {
	canAdopt := sync.OnceValue(func() error { return recheck(ctx, owner) })
	var claimed []T
	var errs []error
	for _, obj := range objs {
		switch decide(owner, obj) {
		case keep:
			claimed = append(claimed, obj)
		case release:
			if err := releaseOne(ctx, owner, obj, patch); err != nil {
				errs = append(errs, err)
			}
		case adopt:
			if err := canAdopt(); err != nil {
				errs = append(errs, fmt.Errorf("cannot adopt %s: %w", obj.GetName(), err))
				continue
			}
			adopted, ok, err := adoptOne(ctx, owner, obj, patch)
			if err != nil {
				errs = append(errs, err)
			} else if ok {
				claimed = append(claimed, adopted)
			}
		}
	}
	return claimed, errors.Join(errs...)
}

// recheck is kube's RecheckDeletionTimestamp: the owner, read uncached, is the same object and is
// not being deleted.
func recheck(ctx context.Context, owner Owner) error {
	fresh, err := owner.Fresh(ctx)
	if err != nil {
		return err
	}
	o := owner.Object
	if fresh.GetUID() != o.GetUID() {
		return fmt.Errorf("%s/%s was recreated (UID %s, cached %s)", o.GetNamespace(), o.GetName(), fresh.GetUID(), o.GetUID())
	}
	if fresh.GetDeletionTimestamp() != nil {
		return fmt.Errorf("%s/%s is being deleted", o.GetNamespace(), o.GetName())
	}
	return nil
}

// adoptOne makes the owner the object's controller. An object gone, or recreated under its name
// (the UID in the patch no longer matches: Invalid), is not adopted and is no error.
func adoptOne[T metav1.Object](ctx context.Context, owner Owner, obj T, patch Patch[T]) (T, bool, error) {
	var none T
	ref := owner.Ref
	data := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":%q,"kind":%q,"name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}],"uid":%q}}`,
		ref.APIVersion, ref.Kind, ref.Name, ref.UID, obj.GetUID())
	adopted, err := patch(ctx, obj.GetName(), []byte(data))
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return none, false, nil
	}
	if err != nil {
		return none, false, fmt.Errorf("adopting %s: %w", obj.GetName(), err)
	}
	klog.FromContext(ctx).V(2).Info("Adopted orphan", "owner", klog.KObj(owner.Object), "kind", ref.Kind, "object", obj.GetName())
	return adopted, true, nil
}

// releaseOne removes the owner's reference from the object; gone or recreated is no error.
func releaseOne[T metav1.Object](ctx context.Context, owner Owner, obj T, patch Patch[T]) error {
	data := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":%q}}`, owner.Object.GetUID(), obj.GetUID())
	_, err := patch(ctx, obj.GetName(), []byte(data))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
		return fmt.Errorf("releasing %s: %w", obj.GetName(), err)
	}
	klog.FromContext(ctx).V(2).Info("Released", "owner", klog.KObj(owner.Object), "kind", owner.Ref.Kind, "object", obj.GetName())
	return nil
}

// controllerIndex indexes a shared informer (Pods, ControllerRevisions) by controller: an object
// under its controller's UID, an orphan under orphanKey(namespace). A workload reads its own
// objects and the orphans it could adopt, not every object of its namespace: with 1,000 CloneSets x
// 10 Pods in one namespace, listing and deciding the namespace's 10,000 Pods on each sync was a
// quarter of inplace-controller's CPU in a rollout (hack/bench-scale.sh's profile), and the 2,000
// ControllerRevisions of the namespace another 1.7%. kube-controller-manager's ReplicaSet
// controller indexes Pods by controller UID the same way.
const controllerIndex = "inplace-controller"

// orphanKey is the index key of a namespace's objects without a controller. It cannot be a UID.
func orphanKey(namespace string) string { return "orphan/" + namespace }

func controllerKeys(obj any) ([]string, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return []string{orphanKey(o.GetNamespace())}, nil
}

// Index finds the objects of a shared informer's cache by their controller.
type Index[T metav1.Object] struct {
	indexer cache.Indexer
}

// PodIndex finds Pods by their controller.
type PodIndex = Index[*corev1.Pod]

// RevisionIndex finds ControllerRevisions by their controller.
type RevisionIndex = Index[*appsv1.ControllerRevision]

// NewIndex adds the controller index to a shared informer of T, unless another workload
// controller did already; it must be called before the informer starts.
func NewIndex[T metav1.Object](inf cache.SharedIndexInformer) (Index[T], error) {
	if _, ok := inf.GetIndexer().GetIndexers()[controllerIndex]; !ok {
		if err := inf.AddIndexers(cache.Indexers{controllerIndex: controllerKeys}); err != nil {
			return Index[T]{}, fmt.Errorf("indexing by controller: %w", err)
		}
	}
	return Index[T]{indexer: inf.GetIndexer()}, nil
}

// Indexes are the controller indexes of the shared Pod and ControllerRevision informers, what a
// workload controller claims through.
type Indexes struct {
	Pods      PodIndex
	Revisions RevisionIndex
}

// NewIndexes adds the controller index to the shared Pod and ControllerRevision informers (once
// each, whichever workload controller comes first); it must be called before they start.
func NewIndexes(pods, revisions cache.SharedIndexInformer) (Indexes, error) {
	var x Indexes
	var err error
	if x.Pods, err = NewIndex[*corev1.Pod](pods); err != nil {
		return Indexes{}, err
	}
	if x.Revisions, err = NewIndex[*appsv1.ControllerRevision](revisions); err != nil {
		return Indexes{}, err
	}
	return x, nil
}

// Claim claims the owner's revisions (ClaimRevisions, oldest first), then its Pods (ClaimPods).
func (x Indexes) Claim(ctx context.Context, owner Owner, kube kubernetes.Interface) ([]*corev1.Pod, []*appsv1.ControllerRevision, error) {
	revisions, err := ClaimRevisions(ctx, owner, x.Revisions, kube.AppsV1())
	if err != nil {
		return nil, nil, err
	}
	pods, err := ClaimPods(ctx, owner, x.Pods, kube.CoreV1())
	if err != nil {
		return nil, nil, err
	}
	return pods, revisions, nil
}

// owned are the objects the owner controls, from the cache.
func (x Index[T]) owned(owner metav1.Object) ([]T, error) {
	return x.byKey(owner, string(owner.GetUID()), nil)
}

// candidates are the objects claiming can act on: those the owner controls (to keep or release)
// and the orphans of its namespace (to adopt). Other controllers' objects are ignored by Claim
// anyway.
func (x Index[T]) candidates(owner metav1.Object) ([]T, error) {
	owned, err := x.owned(owner)
	if err != nil {
		return nil, err
	}
	return x.byKey(owner, orphanKey(owner.GetNamespace()), owned)
}

// byKey appends to out the objects of owner's namespace under key.
func (x Index[T]) byKey(owner metav1.Object, key string, out []T) ([]T, error) {
	objs, err := x.indexer.ByIndex(controllerIndex, key)
	if err != nil {
		return nil, fmt.Errorf("listing the objects of %s/%s from the cache: %w", owner.GetNamespace(), owner.GetName(), err)
	}
	for _, obj := range objs {
		// A controllerRef across namespaces is not one (the garbage collector ignores it too).
		if o, ok := obj.(T); ok && o.GetNamespace() == owner.GetNamespace() {
			out = append(out, o)
		}
	}
	return out, nil
}

// ClaimPods claims the owner's Pods and its namespace's orphans, from the cache: those it owns
// but no longer wants are released, not overlooked.
func ClaimPods(ctx context.Context, owner Owner, index PodIndex, client corev1client.PodsGetter) ([]*corev1.Pod, error) {
	pods, err := index.candidates(owner.Object)
	if err != nil {
		return nil, err
	}
	return Claim(ctx, owner, pods, PodPatch(client, owner.Object.GetNamespace()))
}

// ClaimRevisions claims the owner's ControllerRevisions and its namespace's orphans, from the
// cache, and returns what it has then oldest first (history.SortRevisions).
func ClaimRevisions(ctx context.Context, owner Owner, index RevisionIndex,
	client appsv1client.ControllerRevisionsGetter) ([]*appsv1.ControllerRevision, error) {
	candidates, err := index.candidates(owner.Object)
	if err != nil {
		return nil, err
	}
	revisions, err := Claim(ctx, owner, candidates, RevisionPatch(client, owner.Object.GetNamespace()))
	history.SortRevisions(revisions)
	return revisions, err
}

// Adopters are the workloads whose selector matches an orphan (an empty or invalid selector
// matches nothing): those to enqueue when the orphan appears or changes, so that one adopts it.
// An orphan being deleted has none.
func Adopters[W any](orphan metav1.Object, workloads []W, selectorOf func(W) *metav1.LabelSelector) []W {
	if orphan.GetDeletionTimestamp() != nil {
		return nil
	}
	var out []W
	for _, w := range workloads {
		sel, err := metav1.LabelSelectorAsSelector(selectorOf(w))
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(orphan.GetLabels())) {
			out = append(out, w)
		}
	}
	return out
}

// PodPatch patches Pods of namespace.
func PodPatch(client corev1client.PodsGetter, namespace string) Patch[*corev1.Pod] {
	return func(ctx context.Context, name string, patch []byte) (*corev1.Pod, error) {
		return client.Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	}
}

// RevisionPatch patches ControllerRevisions of namespace.
func RevisionPatch(client appsv1client.ControllerRevisionsGetter, namespace string) Patch[*appsv1.ControllerRevision] {
	return func(ctx context.Context, name string, patch []byte) (*appsv1.ControllerRevision, error) {
		return client.ControllerRevisions(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	}
}

// NewPod is a Pod of the workload ref names as controller, in namespace, from template at
// revision: copies of the template's labels (never nil, plus controller-revision-hash: revision),
// annotations (never nil), finalizers and spec. The workload's controller names it and adds what
// its kind does.
func NewPod(template *corev1.PodTemplateSpec, namespace string, ref *metav1.OwnerReference, revision string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       namespace,
			Labels:          make(map[string]string, len(template.Labels)+1),
			Annotations:     maps.Clone(template.Annotations),
			Finalizers:      slices.Clone(template.Finalizers),
			OwnerReferences: []metav1.OwnerReference{*ref},
		},
		Spec: *template.Spec.DeepCopy(),
	}
	maps.Copy(pod.Labels, template.Labels)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = revision
	return pod
}
