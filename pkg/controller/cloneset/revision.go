package cloneset

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/workload/history"
)

// revisionData is what a ControllerRevision of a CloneSet stores: history.TemplateData.
func revisionData(cs *v1alpha1.CloneSet) ([]byte, error) {
	return history.TemplateData(&cs.Spec.Template)
}

// revisionTemplate decodes the Pod template a revision stores.
func revisionTemplate(cr *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	return history.Template(cr)
}

func controllerRef(cs *v1alpha1.CloneSet) *metav1.OwnerReference {
	return metav1.NewControllerRef(cs, v1alpha1.SchemeGroupVersion.WithKind("CloneSet"))
}

// revisionOwner is the CloneSet as the owner of its revisions, which carry its template's labels
// (which its selector matches) and the hash of its volumeClaimTemplates.
func revisionOwner(cs *v1alpha1.CloneSet) history.Owner {
	return history.Owner{Object: cs, Ref: controllerRef(cs), Labels: cs.Spec.Template.Labels, Annotations: revisionAnnotations(cs)}
}

// encodedRevisionData is revisionData with its error said in terms of the CloneSet.
func encodedRevisionData(cs *v1alpha1.CloneSet) ([]byte, error) {
	data, err := revisionData(cs)
	if err != nil {
		return nil, fmt.Errorf("encoding the template of CloneSet %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	return data, nil
}

// newRevision builds the revision of the CloneSet's current template, labelled with the
// template's labels and owned by the CloneSet.
func newRevision(cs *v1alpha1.CloneSet, number int64, collisionCount int32) (*appsv1.ControllerRevision, error) {
	data, err := encodedRevisionData(cs)
	if err != nil {
		return nil, err
	}
	return revisionOwner(cs).NewRevision(data, number, collisionCount), nil
}

// manageRevisions finds or creates the revision of the CloneSet's template (the update revision)
// among its revisions (sorted oldest first), and its current revision (status currentRevision
// when it still exists, else the update revision); see history.Manage. The collision count is
// returned even with an error, for the caller to write to status.
func (c *Controller) manageRevisions(ctx context.Context, cs *v1alpha1.CloneSet, revisions []*appsv1.ControllerRevision) (history.Revisions, error) {
	var collisionCount int32
	if cs.Status.CollisionCount != nil {
		collisionCount = *cs.Status.CollisionCount
	}
	data, err := encodedRevisionData(cs)
	if err != nil {
		return history.Revisions{CollisionCount: collisionCount}, err
	}
	return history.Manage(ctx, c.Kube.AppsV1(), revisionOwner(cs), data, revisions, cs.Status.CurrentRevision, collisionCount)
}

// truncateHistory deletes the oldest revisions beyond revisionHistoryLimit, never the current or
// update revision nor one that a Pod is at (a CloneSet Pod's controller-revision-hash label is
// its revision's name). revisions are sorted oldest first.
func (c *Controller) truncateHistory(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod, revisions []*appsv1.ControllerRevision, res history.Revisions) error {
	return history.TruncateUnused(ctx, c.Kube.AppsV1(), revisions, res, pods, history.Limit(cs.Spec.RevisionHistoryLimit))
}
