package sidecarset

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
	"github.com/inplace-dev/inplace/pkg/workload/history"
)

// defaultRevisionHistoryLimit is how many ControllerRevisions a SidecarSet keeps by default.
const defaultRevisionHistoryLimit = 10

// syncRevisions records the SidecarSet's current spec as its latest ControllerRevision, as
// OpenKruise does (registerLatestRevision): in the revision namespace, named <set>-<hash>, labelled
// kruise.io/sidecarset-name (and the SidecarSet's labels, so its
// apps.kruise.io/sidecarset-custom-version), carrying its annotations (the hashes), owned by it.
// A spec equal to an older revision takes that revision back (with the next number); then history
// beyond revisionHistoryLimit is deleted, except revisions Pods record or
// injectionStrategy.revision names. It returns the latest revision's name and the collision count.
func (c *Controller) syncRevisions(ctx context.Context, set *v1alpha1.SidecarSet, pods []*corev1.Pod) (string, *int32, error) {
	selector := labels.SelectorFromSet(labels.Set{sidecarcontrol.RevisionSetLabel: set.Name})
	listed, err := c.revisions.ControllerRevisions(c.revisionNamespace).List(selector)
	if err != nil {
		return "", nil, err
	}
	revisions := make([]*appsv1.ControllerRevision, len(listed))
	copy(revisions, listed)
	history.SortRevisions(revisions)
	var collisionCount int32
	if set.Status.CollisionCount != nil {
		collisionCount = *set.Status.CollisionCount
	}
	data, err := sidecarcontrol.RevisionData(set)
	if err != nil {
		return "", nil, err
	}
	client := c.kube.AppsV1().ControllerRevisions(c.revisionNamespace)

	var latest *appsv1.ControllerRevision
	var equal *appsv1.ControllerRevision
	for _, r := range revisions {
		if bytes.Equal(r.Data.Raw, data) {
			equal = r
		}
	}
	next := int64(1)
	if n := len(revisions); n > 0 {
		next = revisions[n-1].Revision + 1
	}
	switch {
	case equal != nil && equal == revisions[len(revisions)-1]:
		latest = equal
	case equal != nil:
		// Back to an older spec: that revision becomes the latest again.
		r := equal.DeepCopy()
		r.Revision = next
		if latest, err = client.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
			return "", nil, fmt.Errorf("renumbering ControllerRevision %s: %w", r.Name, err)
		}
		revisions = slices.DeleteFunc(revisions, func(r *appsv1.ControllerRevision) bool { return r == equal })
		revisions = append(revisions, latest)
	default:
		if latest, err = c.createRevision(ctx, set, data, next, &collisionCount); err != nil {
			return "", nil, err
		}
		revisions = append(revisions, latest)
	}

	if v := set.Labels[v1alpha1.SidecarSetCustomVersionLabel]; v != "" && latest.Labels[v1alpha1.SidecarSetCustomVersionLabel] != v {
		r := latest.DeepCopy()
		r.Labels[v1alpha1.SidecarSetCustomVersionLabel] = v
		if latest, err = client.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
			return "", nil, fmt.Errorf("labelling ControllerRevision %s with its custom version: %w", r.Name, err)
		}
	}
	if err := c.truncateHistory(ctx, set, pods, revisions, latest); err != nil {
		return "", nil, err
	}
	return latest.Name, &collisionCount, nil
}

// createRevision creates the revision of data, bumping collisionCount while its name is taken by
// different data.
func (c *Controller) createRevision(ctx context.Context, set *v1alpha1.SidecarSet, data []byte, number int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	client := c.kube.AppsV1().ControllerRevisions(c.revisionNamespace)
	revLabels := maps.Clone(set.Labels)
	if revLabels == nil {
		revLabels = map[string]string{}
	}
	revLabels[sidecarcontrol.RevisionSetLabel] = set.Name
	for {
		r := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{
				Name:            history.RevisionName(set.Name, history.HashRevision(data, collisionCount)),
				Namespace:       c.revisionNamespace,
				Labels:          revLabels,
				Annotations:     maps.Clone(set.Annotations),
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, v1alpha1.SchemeGroupVersion.WithKind("SidecarSet"))},
			},
			Data:     runtime.RawExtension{Raw: data},
			Revision: number,
		}
		created, err := client.Create(ctx, r, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return nil, fmt.Errorf("creating ControllerRevision %s: %w", r.Name, err)
			}
			return created, nil
		}
		existing, err := client.Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if bytes.Equal(existing.Data.Raw, data) {
			return existing, nil
		}
		*collisionCount++
	}
}

// truncateHistory deletes the oldest revisions beyond revisionHistoryLimit (at least 1) that
// neither a Pod records (its kruise.io/sidecarset-hash controllerRevision) nor
// injectionStrategy.revision names, never the latest.
func (c *Controller) truncateHistory(ctx context.Context, set *v1alpha1.SidecarSet, pods []*corev1.Pod,
	revisions []*appsv1.ControllerRevision, latest *appsv1.ControllerRevision) error {
	limit := defaultRevisionHistoryLimit
	if set.Spec.RevisionHistoryLimit != nil {
		limit = max(1, int(*set.Spec.RevisionHistoryLimit))
	}
	excess := len(revisions) - limit
	if excess <= 0 {
		return nil
	}
	active := sets.New(latest.Name)
	for _, pod := range pods {
		if hashes, err := inplaceupdate.SidecarSetHashes(pod, pub.SidecarSetHashKey); err == nil && hashes[set.Name].ControllerRevision != "" {
			active.Insert(hashes[set.Name].ControllerRevision)
		}
	}
	if sidecarcontrol.WantsRevision(set) {
		if named := set.Spec.InjectionStrategy.Revision.RevisionName; named != nil {
			active.Insert(*named)
		}
		var values []appsv1.ControllerRevision
		for _, r := range revisions {
			values = append(values, *r)
		}
		if r, err := sidecarcontrol.PickRevision(set, values); err == nil {
			active.Insert(r.Name)
		}
	}
	client := c.kube.AppsV1().ControllerRevisions(c.revisionNamespace)
	for _, r := range revisions {
		if excess == 0 {
			break
		}
		if active.Has(r.Name) {
			continue
		}
		if err := client.Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ControllerRevision %s beyond revisionHistoryLimit: %w", r.Name, err)
		}
		excess--
	}
	return nil
}
