// Package inplacerequest builds the pods/inplaceupdate request a workload controller (CloneSet,
// Advanced StatefulSet, Advanced DaemonSet) sends to move one Pod to a new revision in place: the
// same body whichever workload owns the Pod, so every workload updates through the same engine;
// and how a refusal by a PodUnavailableBudget (a 429) is waited out rather than failed
// (budget.go), by the workloads and the SidecarSet controller alike.
package inplacerequest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/workload/history"
)

// Options are what the workload adds to the change itself.
type Options struct {
	// GracePeriodSeconds is the workload's inPlaceUpdateStrategy.gracePeriodSeconds.
	GracePeriodSeconds int32
	// RevisionLabels are labels of the Pod, beside controller-revision-hash (which the engine
	// writes), that name its revision and must follow it: a CloneSet's pod-template-hash.
	RevisionLabels []string
	// Now stamps the lifecycle state Updating.
	Now time.Time
	// NoLifecycle leaves the lifecycle state labels alone, for a workload that does not move its
	// Pods through lifecycle states.
	NoLifecycle bool
	// StateAfterUpdate, when not empty, is the lifecycle state the Pod moves to when the update
	// completes, written with the completion (spec.completionLabels) instead of by a patch of its
	// own afterwards: Normal for a workload without an inPlaceUpdate hook.
	StateAfterUpdate pub.LifecycleStateType
	// StayInServiceContainers are the containers whose update keeps the Pod in service (the
	// workload's pub.StayInServiceContainersKey annotation): a change of these alone is sent with
	// spec.stayInService and without the grace period, whose only purpose is to drain traffic
	// before a restart.
	StayInServiceContainers []string
}

// Body is the request for spec: each changed container with its new image and resources, the
// labels and annotations to set (the revision labels follow the revision, as on created Pods) and
// to remove (the new template dropped them), the grace period, and the lifecycle state Updating,
// written by the same write that starts the update.
func Body(pod *corev1.Pod, spec *inplaceupdate.UpdateSpec, updateRevision string, o Options) *v1alpha1.InPlaceUpdate {
	body := &v1alpha1.InPlaceUpdate{Spec: v1alpha1.InPlaceUpdateSpec{Revision: updateRevision, GracePeriodSeconds: o.GracePeriodSeconds}}
	names := map[string]bool{}
	for n := range spec.ContainerImages {
		names[n] = true
	}
	for n := range spec.ContainerResources {
		names[n] = true
	}
	// In the Pod's container order, so that equal specs give equal bodies.
	for _, ctr := range pod.Spec.Containers {
		if !names[ctr.Name] {
			continue
		}
		uc := v1alpha1.InPlaceUpdateContainer{Name: ctr.Name, Image: spec.ContainerImages[ctr.Name]}
		if r, ok := spec.ContainerResources[ctr.Name]; ok {
			uc.Resources = r.DeepCopy()
		}
		body.Spec.Containers = append(body.Spec.Containers, uc)
	}
	md := &v1alpha1.InPlaceUpdateMetadata{}
	set := func(m *map[string]string, k, v string) {
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)[k] = v
	}
	if spec.Metadata != nil {
		for k, v := range spec.Metadata.Labels {
			set(&md.Labels, k, v)
		}
		for k, v := range spec.Metadata.Annotations {
			set(&md.Annotations, k, v)
		}
		md.RemoveLabels = slices.Clone(spec.Metadata.RemoveLabels)
		md.RemoveAnnotations = slices.Clone(spec.Metadata.RemoveAnnotations)
	}
	for _, m := range spec.ContainerRefMetadata {
		for k, v := range m.Labels {
			set(&md.Labels, k, v)
		}
		for k, v := range m.Annotations {
			set(&md.Annotations, k, v)
		}
	}
	for _, l := range o.RevisionLabels {
		if v, ok := pod.Labels[l]; ok && v != updateRevision {
			set(&md.Labels, l, updateRevision)
		}
	}
	if !o.NoLifecycle {
		set(&md.Labels, pub.LifecycleStateKey, string(pub.LifecycleStateUpdating))
		set(&md.Annotations, pub.LifecycleTimestampKey, pub.LifecycleTimestamp(o.Now))
		if o.StateAfterUpdate != "" {
			body.Spec.CompletionLabels = map[string]string{pub.LifecycleStateKey: string(o.StateAfterUpdate)}
		}
	}
	if len(md.Labels)+len(md.Annotations)+len(md.RemoveLabels)+len(md.RemoveAnnotations) > 0 {
		body.Spec.Metadata = md
	}
	if staysInService(spec, o.StayInServiceContainers) {
		body.Spec.StayInService, body.Spec.GracePeriodSeconds = true, 0
	}
	return body
}

// staysInService is true when spec changes some containers and every one of them (new image,
// new resources, restarted for a changed env-from-metadata value) is in inService.
func staysInService(spec *inplaceupdate.UpdateSpec, inService []string) bool {
	changed := slices.Concat(slices.Collect(maps.Keys(spec.ContainerImages)),
		slices.Collect(maps.Keys(spec.ContainerResources)), slices.Collect(maps.Keys(spec.ContainerRefMetadata)))
	for _, n := range changed {
		if !slices.Contains(inService, n) {
			return false
		}
	}
	return len(changed) > 0
}

// Decide compares the template of the Pod's revision (its controller-revision-hash label, looked
// up in revisions by name) with the update revision's: the in-place update spec when every change
// can go in place, else why not (a change that cannot, or a revision no longer known, whose
// template cannot be compared).
func Decide(pod *corev1.Pod, revisions map[string]*appsv1.ControllerRevision, update *appsv1.ControllerRevision) (*inplaceupdate.UpdateSpec, string, error) {
	newT, err := history.Template(update)
	if err != nil {
		return nil, "", err
	}
	podRevision := pod.Labels[appsv1.ControllerRevisionHashLabelKey]
	old, ok := revisions[podRevision]
	if !ok {
		return nil, fmt.Sprintf("the pod's revision %q is unknown: its template cannot be compared with the new one", podRevision), nil
	}
	oldT, err := history.Template(old)
	if err != nil {
		return nil, "", err
	}
	spec, err := inplaceupdate.CalculateSpec(oldT, newT, update.Name)
	var notInPlace *inplaceupdate.NotInPlaceError
	switch {
	case errors.As(err, &notInPlace):
		return nil, notInPlace.Error(), nil
	case err != nil:
		return nil, "", fmt.Errorf("comparing the templates of revisions %s and %s: %w", podRevision, update.Name, err)
	}
	return spec, "", nil
}
