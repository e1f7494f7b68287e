package history

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
)

// DefaultRevisionHistoryLimit is how many old revisions a workload keeps when its
// revisionHistoryLimit is unset, as in kube and OpenKruise.
const DefaultRevisionHistoryLimit = 10

// ChangeCauseAnnotation is kubectl's change-cause annotation: what a user wrote on the workload
// about why its template changed. A revision created for the workload's new data carries the
// workload's, so that `rollout history` shows it per revision (kubectl's CHANGE-CAUSE column).
const ChangeCauseAnnotation = "kubernetes.io/change-cause"

// Owner is a workload whose ControllerRevisions live in its namespace, named after it and
// controlled by it (a CloneSet, an Advanced StatefulSet or DaemonSet). What a revision's data is
// (a patch of the Pod template) is the workload controller's business, not the history's.
type Owner struct {
	// Object is the workload: its name prefixes its revisions' names, its UID claims them.
	Object metav1.Object
	// Ref is its controllerRef, which the revisions it creates carry.
	Ref *metav1.OwnerReference
	// Labels label the revisions it creates (a CloneSet's are its template's labels).
	Labels map[string]string
	// Annotations annotate the revisions it creates, and the older revision Manage brings back:
	// what the workload keeps about a revision beside its data (a CloneSet's
	// volumeClaimTemplates hash), which may have changed while the data did not.
	Annotations map[string]string
}

// NewRevision builds the revision of data numbered number, named for collisionCount, labelled with
// a copy of the owner's Labels, annotated with the owner's change-cause and controlled by the owner.
func (o Owner) NewRevision(data []byte, number int64, collisionCount int32) *appsv1.ControllerRevision {
	lbls := make(map[string]string, len(o.Labels))
	for k, v := range o.Labels {
		lbls[k] = v
	}
	annotations := changeCause(o.Object)
	for k, v := range o.Annotations {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[k] = v
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            RevisionName(o.Object.GetName(), HashRevision(data, &collisionCount)),
			Namespace:       o.Object.GetNamespace(),
			Labels:          lbls,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*o.Ref},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
}

// changeCause is the owner's change-cause as a revision's annotations, nil when it has none. Kube's
// StatefulSet and DaemonSet controllers (and OpenKruise's) copy every annotation of the workload;
// only this one is copied here: the others (kubectl.kubernetes.io/last-applied-configuration, a
// whole manifest) would make each revision as large again, and describe the workload, not the
// revision. The revision keeps the cause it was created with: an older template brought back
// (rollout undo) shows why it was first made, as kube's StatefulSet does.
func changeCause(owner metav1.Object) map[string]string {
	cause, ok := owner.GetAnnotations()[ChangeCauseAnnotation]
	if !ok {
		return nil
	}
	return map[string]string{ChangeCauseAnnotation: cause}
}

// Revisions is what Manage decided.
type Revisions struct {
	// Current is the revision the workload's status names current when it still exists, else
	// Update; Update is the revision of the workload's data now.
	Current, Update *appsv1.ControllerRevision
	// CollisionCount is the collision count to write to the workload's status.
	CollisionCount int32
}

// Manage finds or creates the revision of data (the update revision) among the owner's revisions
// (sorted oldest first: SortRevisions), and finds its current revision: the one named
// currentRevision (from the workload's status) when it still exists, else the update revision.
// Like kube's StatefulSet: data equal to an older revision reuses that revision and bumps its
// number; a name taken by a different revision bumps the collision count, which the caller writes
// to status. The collision count is returned even with an error, so that it is not lost: the next
// try must not reuse the taken name.
func Manage(ctx context.Context, client appsv1client.ControllerRevisionsGetter, owner Owner, data []byte,
	revisions []*appsv1.ControllerRevision, currentRevision string, collisionCount int32) (Revisions, error) {
	res := Revisions{CollisionCount: collisionCount}
	next := int64(1)
	if n := len(revisions); n > 0 {
		next = revisions[n-1].Revision + 1
	}
	var equal []*appsv1.ControllerRevision
	for _, r := range revisions {
		if EqualData(r.Data.Raw, data) {
			equal = append(equal, r)
		}
	}
	var err error
	switch {
	case len(equal) > 0 && equal[len(equal)-1] == revisions[len(revisions)-1]:
		res.Update = equal[len(equal)-1]
	case len(equal) > 0:
		// Back to older data: make its revision the newest.
		r := equal[len(equal)-1].DeepCopy()
		r.Revision = next
		for k, v := range owner.Annotations {
			if r.Annotations == nil {
				r.Annotations = map[string]string{}
			}
			r.Annotations[k] = v
		}
		res.Update, err = client.ControllerRevisions(r.Namespace).Update(ctx, r, metav1.UpdateOptions{})
		if err != nil {
			return res, fmt.Errorf("renumbering revision %s: %w", r.Name, err)
		}
	default:
		res.Update, err = Create(ctx, client, owner.Object, owner.NewRevision(data, next, res.CollisionCount), &res.CollisionCount)
		if err != nil {
			return res, err
		}
	}
	res.Current = res.Update
	for _, r := range revisions {
		if r.Name == currentRevision {
			res.Current = r
			break
		}
	}
	return res, nil
}

// Create creates rev, named <owner>-<hash of its data and collisionCount>; when the name is taken
// by a revision that is not this one (another owner's, or other data), it bumps collisionCount
// and retries with the new name. A revision of owner with the same data under the name is taken
// as created by an earlier sync the cache has not shown yet.
func Create(ctx context.Context, client appsv1client.ControllerRevisionsGetter, owner metav1.Object,
	rev *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	revisions := client.ControllerRevisions(owner.GetNamespace())
	for {
		rev.Name = RevisionName(owner.GetName(), HashRevision(rev.Data.Raw, collisionCount))
		created, err := revisions.Create(ctx, rev, metav1.CreateOptions{})
		if err == nil {
			return created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating revision %s: %w", rev.Name, err)
		}
		existing, err := revisions.Get(ctx, rev.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading revision %s: %w", rev.Name, err)
		}
		if metav1.IsControlledBy(existing, owner) && EqualData(existing.Data.Raw, rev.Data.Raw) {
			return existing, nil
		}
		*collisionCount++
	}
}

// Limit is a workload's revisionHistoryLimit as a number: DefaultRevisionHistoryLimit when unset,
// 0 when negative.
func Limit(revisionHistoryLimit *int32) int {
	if revisionHistoryLimit == nil {
		return DefaultRevisionHistoryLimit
	}
	return int(max(*revisionHistoryLimit, 0))
}

// Truncate deletes the oldest of revisions (sorted oldest first) beyond limit, never one named in
// live: the current and update revisions and those that Pods are at, which the caller knows (a
// Pod's controller-revision-hash label is a CloneSet's revision name, a DaemonSet's a hash). The
// deletions carry each revision's UID, so that a revision recreated under the same name stays.
func Truncate(ctx context.Context, client appsv1client.ControllerRevisionsGetter, revisions []*appsv1.ControllerRevision,
	live sets.Set[string], limit int) error {
	var old []*appsv1.ControllerRevision
	for _, r := range revisions {
		if !live.Has(r.Name) {
			old = append(old, r)
		}
	}
	if len(old) <= limit {
		return nil
	}
	for _, r := range old[:len(old)-limit] {
		err := client.ControllerRevisions(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &r.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting old revision %s: %w", r.Name, err)
		}
	}
	return nil
}
