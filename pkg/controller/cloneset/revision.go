package cloneset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/history"
)

// revisionData is what a ControllerRevision of a CloneSet stores, as OpenKruise stores it: a patch
// that replaces the whole Pod template, {"spec":{"template":{..., "$patch":"replace"}}}. Keys are
// sorted (json.Marshal of maps), so equal templates give equal bytes.
func revisionData(cs *v1alpha1.CloneSet) ([]byte, error) {
	raw, err := json.Marshal(&cs.Spec.Template)
	if err != nil {
		return nil, err
	}
	template := map[string]any{}
	if err := json.Unmarshal(raw, &template); err != nil {
		return nil, err
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// revisionTemplate decodes the Pod template a revision stores.
func revisionTemplate(cr *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var patch struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(cr.Data.Raw, &patch); err != nil {
		return nil, fmt.Errorf("decoding the template of revision %s: %w", cr.Name, err)
	}
	return &patch.Spec.Template, nil
}

func controllerRef(cs *v1alpha1.CloneSet) *metav1.OwnerReference {
	return metav1.NewControllerRef(cs, v1alpha1.SchemeGroupVersion.WithKind("CloneSet"))
}

// newRevision builds the revision of the CloneSet's current template, labelled with the
// template's labels (which the selector matches) and owned by the CloneSet.
func newRevision(cs *v1alpha1.CloneSet, number int64, collisionCount int32) (*appsv1.ControllerRevision, error) {
	data, err := revisionData(cs)
	if err != nil {
		return nil, fmt.Errorf("encoding the template of CloneSet %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	labels := make(map[string]string, len(cs.Spec.Template.Labels))
	for k, v := range cs.Spec.Template.Labels {
		labels[k] = v
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            history.RevisionName(cs.Name, history.HashRevision(data, &collisionCount)),
			Namespace:       cs.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*controllerRef(cs)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}, nil
}

// revisionsResult is what manageRevisions decided.
type revisionsResult struct {
	current, update *appsv1.ControllerRevision
	collisionCount  int32
}

// manageRevisions finds or creates the revision of the CloneSet's template (the update revision)
// among its revisions (sorted oldest first), and finds its current revision (status
// currentRevision when it still exists, else the update revision). Like kube's StatefulSet: a
// template equal to an older revision reuses that revision and bumps its number; a name taken by
// a different revision bumps the collision count, which the caller writes to status. The
// collision count is returned even with an error, so that it is not lost.
func (c *Controller) manageRevisions(ctx context.Context, cs *v1alpha1.CloneSet, revisions []*appsv1.ControllerRevision) (revisionsResult, error) {
	res := revisionsResult{}
	if cs.Status.CollisionCount != nil {
		res.collisionCount = *cs.Status.CollisionCount
	}
	next := int64(1)
	if n := len(revisions); n > 0 {
		next = revisions[n-1].Revision + 1
	}
	want, err := newRevision(cs, next, res.collisionCount)
	if err != nil {
		return res, err
	}
	var equal []*appsv1.ControllerRevision
	for _, r := range revisions {
		if bytes.Equal(r.Data.Raw, want.Data.Raw) {
			equal = append(equal, r)
		}
	}
	switch {
	case len(equal) > 0 && equal[len(equal)-1] == revisions[len(revisions)-1]:
		res.update = equal[len(equal)-1]
	case len(equal) > 0:
		// Back to an older template: make its revision the newest.
		r := equal[len(equal)-1].DeepCopy()
		r.Revision = next
		res.update, err = c.kube.AppsV1().ControllerRevisions(r.Namespace).Update(ctx, r, metav1.UpdateOptions{})
		if err != nil {
			return res, fmt.Errorf("renumbering revision %s: %w", r.Name, err)
		}
	default:
		res.update, err = c.createRevision(ctx, cs, want, &res.collisionCount)
		if err != nil {
			return res, err
		}
	}
	res.current = res.update
	for _, r := range revisions {
		if r.Name == cs.Status.CurrentRevision {
			res.current = r
			break
		}
	}
	return res, nil
}

// createRevision creates rev; when its name is taken by a revision that is not this one (another
// owner, or other data), it bumps collisionCount and retries with the new name.
func (c *Controller) createRevision(ctx context.Context, cs *v1alpha1.CloneSet, rev *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	client := c.kube.AppsV1().ControllerRevisions(cs.Namespace)
	for {
		rev.Name = history.RevisionName(cs.Name, history.HashRevision(rev.Data.Raw, collisionCount))
		created, err := client.Create(ctx, rev, metav1.CreateOptions{})
		if err == nil {
			return created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating revision %s: %w", rev.Name, err)
		}
		existing, err := client.Get(ctx, rev.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading revision %s: %w", rev.Name, err)
		}
		if metav1.IsControlledBy(existing, cs) && bytes.Equal(existing.Data.Raw, rev.Data.Raw) {
			// Created by an earlier sync the cache has not shown yet.
			return existing, nil
		}
		*collisionCount++
	}
}

// truncateHistory deletes the oldest revisions beyond revisionHistoryLimit, never the current or
// update revision nor one that a Pod is at. revisions are sorted oldest first.
func (c *Controller) truncateHistory(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod, revisions []*appsv1.ControllerRevision, res revisionsResult) error {
	live := sets.New(res.current.Name, res.update.Name)
	for _, pod := range pods {
		if r := pod.Labels[appsv1.ControllerRevisionHashLabelKey]; r != "" {
			live.Insert(r)
		}
	}
	var history []*appsv1.ControllerRevision
	for _, r := range revisions {
		if !live.Has(r.Name) {
			history = append(history, r)
		}
	}
	limit := 10
	if cs.Spec.RevisionHistoryLimit != nil {
		limit = int(max(*cs.Spec.RevisionHistoryLimit, 0))
	}
	if len(history) <= limit {
		return nil
	}
	for _, r := range history[:len(history)-limit] {
		err := c.kube.AppsV1().ControllerRevisions(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &r.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting old revision %s: %w", r.Name, err)
		}
	}
	return nil
}
